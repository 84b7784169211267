package metrics

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/workqueue"
)

// client-go's own series, under the names, labels and buckets that
// kube-controller-manager (k8s.io/component-base's adapters) and
// controller-runtime (pkg/metrics) give them: dashboards and alerts written
// for any controller read the host's work queues, API requests and leader
// election as they are. They carry no kubeplug_ prefix for that reason.

// queueBuckets are controller-runtime's for the work queue's latencies:
// 10 ns to 1,000 s by powers of ten. kube-controller-manager stops at 10 s;
// a reconcile may run for reconcileTimeout (30 s) and a key may wait out a
// rate limiter's 1,000 s backoff, which its buckets would lump together.
var queueBuckets = prometheus.ExponentialBuckets(10e-9, 10, 12)

// requestBuckets are both projects' for an API request's latency.
var requestBuckets = []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60}

// queueSeries are client-go's work queue series (workqueue_*), by queue:
// the host names each module's queue after the module. Unlike client-go's
// other seams, a queue takes its provider when it is made
// (workqueue.TypedQueueConfig.MetricsProvider), so they belong to one
// Metrics, as the host's own series do.
type queueSeries struct {
	depth, unfinished, longest *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	queued, work               *prometheus.HistogramVec
}

// queueLabels are controller-runtime's: name, and controller, the same
// value (controller-runtime names a controller's queue after it).
var queueLabels = []string{"name", "controller"}

func newQueueSeries() *queueSeries {
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: name, Help: help}, queueLabels)
	}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: name, Help: help}, queueLabels)
	}
	histogram := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: name, Help: help, Buckets: queueBuckets}, queueLabels)
	}
	return &queueSeries{
		depth: gauge("depth", "Current depth of workqueue: keys waiting in a module's queue."),
		unfinished: gauge("unfinished_work_seconds",
			"Seconds of work in progress not yet observed by work_duration; a value that keeps growing means a stuck worker."),
		longest: gauge("longest_running_processor_seconds", "Seconds the longest running worker of the queue has been at its key."),
		adds:    counter("adds_total", "Total number of adds handled by workqueue."),
		retries: counter("retries_total", "Total number of keys added with a delay: rate-limited retries and requested requeues."),
		queued:  histogram("queue_duration_seconds", "How long in seconds a key stays in workqueue before a worker takes it."),
		work:    histogram("work_duration_seconds", "How long in seconds processing a key from workqueue takes."),
	}
}

func (q *queueSeries) collectors() []prometheus.Collector {
	return []prometheus.Collector{q.depth, q.unfinished, q.longest, q.adds, q.retries, q.queued, q.work}
}

// WorkQueues is the provider of the workqueue_* series (a
// workqueue.MetricsProvider) for the host's work queues.
type WorkQueues struct{ *queueSeries }

var _ workqueue.MetricsProvider = (*WorkQueues)(nil)

// WorkQueues returns the provider of m's workqueue_* series, to pass to
// each queue the live host makes.
func (m *Metrics) WorkQueues() *WorkQueues { return &WorkQueues{m.queues} }

// Forget deletes the series of the queue name, once it is shut down for
// good (its module removed, or its controller replaced): otherwise its last
// unfinished_work_seconds would stay on, and read as a stuck worker.
func (w *WorkQueues) Forget(name string) {
	for _, v := range []*prometheus.MetricVec{w.depth.MetricVec, w.unfinished.MetricVec, w.longest.MetricVec,
		w.adds.MetricVec, w.retries.MetricVec, w.queued.MetricVec, w.work.MetricVec} {
		v.DeletePartialMatch(prometheus.Labels{"name": name})
	}
}

// The provider's methods: each queue's series, labelled name and controller.

func (w *WorkQueues) NewDepthMetric(n string) workqueue.GaugeMetric {
	return w.depth.WithLabelValues(n, n)
}

func (w *WorkQueues) NewAddsMetric(n string) workqueue.CounterMetric {
	return w.adds.WithLabelValues(n, n)
}

func (w *WorkQueues) NewLatencyMetric(n string) workqueue.HistogramMetric {
	return w.queued.WithLabelValues(n, n)
}

func (w *WorkQueues) NewWorkDurationMetric(n string) workqueue.HistogramMetric {
	return w.work.WithLabelValues(n, n)
}

func (w *WorkQueues) NewUnfinishedWorkSecondsMetric(n string) workqueue.SettableGaugeMetric {
	return w.unfinished.WithLabelValues(n, n)
}

func (w *WorkQueues) NewLongestRunningProcessorSecondsMetric(n string) workqueue.SettableGaugeMetric {
	return w.longest.WithLabelValues(n, n)
}

func (w *WorkQueues) NewRetriesMetric(n string) workqueue.CounterMetric {
	return w.retries.WithLabelValues(n, n)
}

// The API client's and the leader election's series are the process's:
// client-go takes one provider for each, for every client and elector of
// the process, once (tools/metrics.Register, leaderelection.SetProvider;
// a later call changes nothing). Every Metrics registers these same
// collectors, and the first New installs them with client-go.
var (
	restRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rest_client_requests_total",
		Help: "Number of HTTP requests to the API server, partitioned by status code, method, and host.",
	}, []string{"code", "method", "host"})
	restLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_request_duration_seconds",
		Help:    "Request latency in seconds. Broken down by verb and host.",
		Buckets: requestBuckets,
	}, []string{"verb", "host"})
	restThrottled = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_rate_limiter_duration_seconds",
		Help:    "Client side rate limiter latency in seconds (apiQPS). Broken down by verb and host.",
		Buckets: requestBuckets,
	}, []string{"verb", "host"})
	leaderStatus = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "leader_election_master_status",
		Help: "1 while this host holds the Lease named name, 0 while another does.",
	}, []string{"name"})
	leaderSlowpath = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "leader_election_slowpath_total",
		Help: "Renewals of the Lease named name that had to read it back from the API server first.",
	}, []string{"name"})

	installClientGo sync.Once
)

func processCollectors() []prometheus.Collector {
	return []prometheus.Collector{restRequests, restLatency, restThrottled, leaderStatus, leaderSlowpath}
}

// installRequestMetrics hands the API client's series to client-go, once
// per process.
func installRequestMetrics() {
	installClientGo.Do(func() {
		clientmetrics.Register(clientmetrics.RegisterOpts{
			RequestResult:      requestResult{},
			RequestLatency:     requestLatency{restLatency},
			RateLimiterLatency: requestLatency{restThrottled},
		})
	})
}

type requestResult struct{}

func (requestResult) Increment(_ context.Context, code, method, host string) {
	restRequests.WithLabelValues(code, method, host).Inc()
}

type requestLatency struct{ *prometheus.HistogramVec }

// Observe drops the URL's path, as both projects now do: one series per
// object read would grow without bound.
func (l requestLatency) Observe(_ context.Context, verb string, u url.URL, d time.Duration) {
	l.WithLabelValues(verb, u.Host).Observe(d.Seconds())
}

// LeaderElection is client-go's leaderelection.LeaderMetric for
// leader_election_master_status: the host hands it to client-go through a
// leaderelection.MetricsProvider (host/app, which imports the elector; this
// package does not, to keep the clientset out of its dependencies).
var LeaderElection leaderMetric

type leaderMetric struct{}

func (leaderMetric) On(name string)                { leaderStatus.WithLabelValues(name).Set(1) }
func (leaderMetric) Off(name string)               { leaderStatus.WithLabelValues(name).Set(0) }
func (leaderMetric) SlowpathExercised(name string) { leaderSlowpath.WithLabelValues(name).Inc() }
