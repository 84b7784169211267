package config

import (
	"time"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeplug/kubeplug/host/internal/input"
)

// duration returns a Go duration (500ms, 2s, 10m) that is positive, or also
// zero when zeroOK. example completes "use e.g. ..." in messages.
func (p *parser) duration(n *yaml.Node, field string, zeroOK bool, example string) (time.Duration, bool) {
	s, ok := p.scalar(n, field, example)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		p.addf(n, field, "%s is not a duration; use e.g. %s (units: ms, s, m, h)", input.Quote(s), example)
		return 0, false
	case d < 0 && zeroOK:
		p.addf(n, field, "%s is negative; use e.g. %s", s, example)
		return 0, false
	case d <= 0 && !zeroOK:
		p.addf(n, field, "%s must be more than 0; use e.g. %s", s, example)
		return 0, false
	}
	return d, true
}

// byteSize returns a Kubernetes quantity of bytes (64Mi, 1G, 1048576) in
// (0, most].
func (p *parser) byteSize(n *yaml.Node, field string, most int64, example string) (int64, bool) {
	s, ok := p.scalar(n, field, example)
	if !ok {
		return 0, false
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		p.addf(n, field, "%s is not a quantity; use e.g. %s", input.Quote(s), example)
		return 0, false
	}
	limit := resource.NewQuantity(most, resource.BinarySI)
	v, whole := q.AsInt64()
	switch {
	case q.Cmp(*limit) > 0:
		p.addf(n, field, "%s is more than %s; use e.g. %s", s, limit, example)
		return 0, false
	case !whole:
		p.addf(n, field, "%s is not a whole number of bytes; use e.g. %s", s, example)
		return 0, false
	case v <= 0:
		p.addf(n, field, "%s must be more than 0 bytes; use e.g. %s", s, example)
		return 0, false
	}
	return v, true
}
