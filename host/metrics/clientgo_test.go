package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubeplug/kubeplug/host/metrics"
)

// sample returns the value of the series name whose labels include want
// (a histogram's count of observations), and whether there is one.
func sample(t *testing.T, g prometheus.Gatherer, name string, want map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, s := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue series
				}
			}
			switch {
			case s.Counter != nil:
				return s.Counter.GetValue(), true
			case s.Gauge != nil:
				return s.Gauge.GetValue(), true
			case s.Histogram != nil:
				return float64(s.Histogram.GetSampleCount()), true
			}
		}
	}
	return 0, false
}

// A queue given WorkQueues reports in the workqueue_* series under the
// names and labels of kube-controller-manager and controller-runtime (name,
// and controller), and Forget removes them.
func TestWorkQueues(t *testing.T) {
	m := metrics.New()
	wq := m.WorkQueues()
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "retention", MetricsProvider: wq})
	q.Add("default/web")
	q.Add("default/db")
	key, _ := q.Get()
	q.AddAfter(key, time.Hour) // a retry, long after the test
	q.Done(key)

	series := map[string]string{"name": "retention", "controller": "retention"}
	for _, tc := range []struct {
		name string
		want float64 // -1: any value (the queue sets it on a clock of its own)
	}{
		{"workqueue_adds_total", 2},
		{"workqueue_depth", 1},
		{"workqueue_retries_total", 1},
		{"workqueue_queue_duration_seconds", 1},
		{"workqueue_work_duration_seconds", 1},
		{"workqueue_unfinished_work_seconds", -1},
		{"workqueue_longest_running_processor_seconds", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := sample(t, m.Registry, tc.name, series)
			require.True(t, ok, "no %s%v", tc.name, series)
			if tc.want >= 0 {
				require.Equal(t, tc.want, got)
			}
		})
	}
	q.ShutDown()
	wq.Forget("retention")
	_, ok := sample(t, m.Registry, "workqueue_adds_total", series)
	require.False(t, ok, "a forgotten queue leaves no series")
	_, ok = sample(t, metrics.New().Registry, "workqueue_adds_total", nil)
	require.False(t, ok, "the work queue series are each Metrics' own")
}

// Every request a client-go client makes is counted in
// rest_client_requests_total and timed in
// rest_client_request_duration_seconds, by the API server's host, without
// the path; every Metrics shows them, as client-go has one seam for the
// process.
func TestRESTClientSeries(t *testing.T) {
	m := metrics.New()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/api/v1/namespaces/default" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}`))
	}))
	defer srv.Close()
	host, err := url.Parse(srv.URL)
	require.NoError(t, err)
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	_, err = client.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{})
	require.NoError(t, err)
	_, err = client.CoreV1().Namespaces().Get(t.Context(), "absent", metav1.GetOptions{})
	require.Error(t, err)

	for _, g := range []prometheus.Gatherer{m.Registry, metrics.New().Registry} {
		n, ok := sample(t, g, "rest_client_requests_total", map[string]string{"code": "200", "method": "GET", "host": host.Host})
		require.True(t, ok)
		require.GreaterOrEqual(t, n, 1.0)
		n, ok = sample(t, g, "rest_client_requests_total", map[string]string{"code": "404", "method": "GET", "host": host.Host})
		require.True(t, ok)
		require.GreaterOrEqual(t, n, 1.0)
		n, ok = sample(t, g, "rest_client_request_duration_seconds", map[string]string{"verb": "GET", "host": host.Host})
		require.True(t, ok)
		require.GreaterOrEqual(t, n, 2.0)
	}
	mfs, err := m.Registry.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "rest_client_request_duration_seconds" {
			for _, s := range mf.GetMetric() {
				for _, l := range s.GetLabel() {
					require.NotEqual(t, "url", l.GetName(), "one series per path would grow without bound")
					require.NotEqual(t, "path", l.GetName(), "one series per path would grow without bound")
				}
			}
		}
	}
}

// metrics.LeaderElection sets leader_election_master_status by the Lease's
// name; host/app hands it to client-go's elector (TestLeaderSeries there).
func TestLeaderElectionSeries(t *testing.T) {
	m := metrics.New()
	metrics.LeaderElection.Off("kubeplug-metrics-test")
	v, ok := sample(t, m.Registry, "leader_election_master_status", map[string]string{"name": "kubeplug-metrics-test"})
	require.True(t, ok)
	require.Zero(t, v)
	metrics.LeaderElection.On("kubeplug-metrics-test")
	v, _ = sample(t, m.Registry, "leader_election_master_status", map[string]string{"name": "kubeplug-metrics-test"})
	require.Equal(t, 1.0, v)
}
