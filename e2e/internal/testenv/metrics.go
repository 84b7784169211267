package testenv

import (
	"fmt"
	"net/http"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics is one scrape of /metrics: the families by name.
type Metrics map[string]*dto.MetricFamily

// Scrape reads the host's /metrics.
func (h *Host) Scrape() (Metrics, error) { return Scrape(h.Addr) }

// Scrape reads the /metrics of the host whose metrics server is at addr.
func Scrape(addr string) (Metrics, error) {
	code, body, err := Get(addr, "/metrics")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("/metrics: status %d", code)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("/metrics: %w", err)
	}
	return Metrics(fams), nil
}

// Sum adds the values of the counter or gauge series of family name whose
// labels include every pair of match (given as "label", "value", ...).
func (m Metrics) Sum(name string, match ...string) float64 {
	f, ok := m[name]
	if !ok {
		return 0
	}
	var sum float64
	for _, s := range f.Metric {
		if !labelsMatch(s.Label, match) {
			continue
		}
		switch {
		case s.Counter != nil:
			sum += s.Counter.GetValue()
		case s.Gauge != nil:
			sum += s.Gauge.GetValue()
		case s.Histogram != nil:
			sum += float64(s.Histogram.GetSampleCount())
		}
	}
	return sum
}

// Has reports whether family name has a series whose labels include match.
func (m Metrics) Has(name string, match ...string) bool {
	f, ok := m[name]
	if !ok {
		return false
	}
	for _, s := range f.Metric {
		if labelsMatch(s.Label, match) {
			return true
		}
	}
	return false
}

// Writes counts the requests that change something (POST, PUT, PATCH,
// DELETE) the host made to the API server.
func (m Metrics) Writes() float64 {
	var n float64
	for _, method := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		n += m.Sum("kubeplug_api_requests_total", "method", method)
	}
	return n
}

func labelsMatch(have []*dto.LabelPair, want []string) bool {
	for i := 0; i+1 < len(want); i += 2 {
		found := false
		for _, l := range have {
			if l.GetName() == want[i] && l.GetValue() == want[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
