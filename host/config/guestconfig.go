package config

import (
	"encoding/json"
	"math"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kubeplug/kubeplug/host/internal/input"
)

// maxConfigNodes bounds the nodes one module's configuration may expand to
// through aliases, so that a few lines of nested aliases ("billion laughs")
// cannot make the host build gigabytes of JSON.
const maxConfigNodes = 100_000

// guestConfig converts a module's config: from YAML to the JSON the guest
// receives. Scalars keep their YAML types (numbers, booleans, null); keys
// must be scalars, as JSON keys are strings.
func (p *parser) guestConfig(n *yaml.Node, field string) []byte {
	v, ok := p.jsonValue(n, field)
	if !ok {
		return nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		p.addf(n, field, "cannot be written as JSON: %v", err)
		return nil
	}
	return out
}

// jsonValue converts one node into a value encoding/json can marshal. The
// document is within budget (see parser.document), so the recursion ends
// and the value is bounded however the node's aliases nest.
func (p *parser) jsonValue(n *yaml.Node, field string) (any, bool) {
	n = deref(n)
	switch n.Kind {
	case yaml.MappingNode:
		obj := map[string]any{}
		ok := true
		for _, kv := range p.pairs(n, field) {
			if isNull(kv.Key) {
				p.addf(kv.Key, field, "a null key has no JSON form; quote it if you mean the string")
				ok = false
				continue
			}
			v, vok := p.jsonValue(kv.Value, join(field, kv.Key.Value))
			obj[kv.Key.Value] = v
			ok = ok && vok
		}
		return obj, ok
	case yaml.SequenceNode:
		arr := make([]any, len(n.Content))
		ok := true
		for i, e := range n.Content {
			v, vok := p.jsonValue(e, index(field, i))
			arr[i] = v
			ok = ok && vok
		}
		return arr, ok
	case yaml.ScalarNode:
		return p.jsonScalar(n, field)
	}
	p.addf(n, field, "cannot be converted to JSON (%s)", describe(n))
	return nil, false
}

// jsonScalar converts a scalar by its resolved YAML tag.
func (p *parser) jsonScalar(n *yaml.Node, field string) (any, bool) {
	switch n.Tag {
	case "!!str", "!!timestamp":
		// A timestamp stays the text the user wrote: JSON has no time type,
		// and reformatting it would surprise the guest.
		return n.Value, true
	}
	var v any
	if err := n.Decode(&v); err != nil {
		p.addf(n, field, "%s cannot be read: %v", input.Quote(n.Value), err)
		return nil, false
	}
	switch x := v.(type) {
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			p.addf(n, field, "%s has no JSON form; use a finite number or quote it", n.Value)
			return nil, false
		}
	case time.Time:
		return n.Value, true
	}
	return v, true
}
