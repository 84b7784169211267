package metrics

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Namespace prefixes every series.
const Namespace = "kubeplug"

// Metrics are the host's series, registered in their own registry.
type Metrics struct {
	Registry *prometheus.Registry

	// Reconciles counts reconciles by module and result (success,
	// requeue, conflict, refused, error).
	Reconciles *prometheus.CounterVec
	// ReconcileSeconds is the latency of a whole reconcile: snapshot,
	// guest call and execution.
	ReconcileSeconds *prometheus.HistogramVec
	// GuestCallSeconds is the latency of the guest call alone.
	GuestCallSeconds *prometheus.HistogramVec
	// Actions counts actions by module, action type and result (executed,
	// unchanged, refused, conflict, failed, shadow, skipped).
	Actions *prometheus.CounterVec
	// GuestErrors counts failed guest calls by module and kind (deadline,
	// trap, memory, output, status, ...).
	GuestErrors *prometheus.CounterVec
	// QueueDepth is the number of keys waiting in each module's queue.
	QueueDepth *prometheus.GaugeVec
	// APIRequests counts requests to the API server by HTTP method and
	// status code.
	APIRequests *prometheus.CounterVec
	// Leader is 1 while this host holds the leader lease (or runs without
	// leader election), else 0.
	Leader prometheus.Gauge
	// Panics counts reconciles that panicked, by module: each was
	// recovered, logged with its key, and retried with backoff.
	Panics *prometheus.CounterVec
	// StaleInputs counts reconciles put off, by module, because the input
	// still showed an object as it was before the host's own last write
	// to it (the caches had not caught up); they are not reconciles, and
	// the other reconcile series do not count them.
	StaleInputs *prometheus.CounterVec
	// ModuleInfo is 1 for each loaded module, labelled with its manifest
	// version, subject, mode, file digest and generation (1 for the module
	// the host started with, one more for each swap).
	ModuleInfo *prometheus.GaugeVec
	// HookCalls counts calls of hooks other than reconcile (which has the
	// series above) by module, hook and result: for admit, allowed,
	// mutated, denied, failed-open and failed-closed (the failure policy
	// answered).
	HookCalls *prometheus.CounterVec
	// HookErrors counts the failures among them by module, hook and
	// reason (request, call, patch).
	HookErrors *prometheus.CounterVec
	// HookSeconds is the latency of one such call, from the request to
	// the answer.
	HookSeconds *prometheus.HistogramVec
	// ModuleSwaps counts attempts to replace or add a module while the host
	// runs, by module and result: success, or failed (the module serving
	// before, if any, goes on serving).
	ModuleSwaps *prometheus.CounterVec
	// ConfigReloads counts reloads of the host configuration by result:
	// success; partial (the file changed settings that take a restart, such
	// as csiDrivers, and the rest of it was applied); or failed (the file
	// did not validate and nothing of it was applied). Each starts at 0.
	ConfigReloads *prometheus.CounterVec
	// ConfigLastReloadSuccessful is 1 when the host's last reload of its
	// configuration was applied, wholly or partly, or none has run since
	// it started; 0 when it was refused. Prometheus' own
	// prometheus_config_last_reload_successful says the same of Prometheus:
	// an alert on it lasts until a reload succeeds, where one on the
	// counter would end by itself with the file still refused.
	ConfigLastReloadSuccessful prometheus.Gauge
	// CSIDriverReady is 1 while a configured CSI driver answers the host's
	// probe (its name, its capabilities), else 0, by driver.
	CSIDriverReady *prometheus.GaugeVec
	// ShadowAgreements and ShadowDisagreements count the reconciles on
	// which a shadow module with compareWith decided as, or otherwise than,
	// the module it names, by shadow module and compared module; and for a
	// shadow module without compareWith (compare_with "cluster"), the
	// reconciles on which the cluster already was as it would make it, and
	// the subjects where the cluster stayed otherwise past the settle time.
	ShadowAgreements, ShadowDisagreements *prometheus.CounterVec

	// queues are client-go's workqueue_* series (WorkQueues).
	queues *queueSeries
	// ShadowDiffering is, for each shadow module compared with the
	// cluster, the subjects whose last reconcile asked for writes the
	// cluster does not show: not settled yet, or disagreements.
	ShadowDiffering *prometheus.GaugeVec
}

// New creates the metrics in a new registry, with Go and process collectors
// and client-go's series (clientgo.go).
func New() *Metrics {
	latency := []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "reconciles_total",
			Help: "Reconciles by module and result (success, requeue, conflict, refused, error).",
		}, []string{"module", "result"}),
		ReconcileSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "reconcile_duration_seconds",
			Help:    "Time from dequeue to done of one reconcile: snapshot, guest call and execution.",
			Buckets: latency,
		}, []string{"module"}),
		GuestCallSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "guest_call_duration_seconds",
			Help:    "Time of one call into a module's reconcile export, encode and decode included.",
			Buckets: latency,
		}, []string{"module"}),
		Actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "actions_total",
			Help: "Actions returned by modules, by module, type and result (executed, unchanged, refused, conflict, failed, shadow, skipped).",
		}, []string{"module", "type", "result"}),
		GuestErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "guest_errors_total",
			Help: "Failed guest calls by module and kind.",
		}, []string{"module", "kind"}),
		QueueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "queue_depth",
			Help: "Keys waiting in each module's work queue.",
		}, []string{"module"}),
		APIRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "api_requests_total",
			Help: "Requests made to the API server, by HTTP method and status code (0: no response).",
		}, []string{"method", "code"}),
		Leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "leader",
			Help: "1 while this host is the leader (or runs without leader election).",
		}),
		Panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "reconcile_panics_total",
			Help: "Reconciles that panicked, by module; each was recovered and retried with backoff.",
		}, []string{"module"}),
		StaleInputs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "reconcile_stale_inputs_total",
			Help: "Reconciles put off because the caches did not yet show the host's own last write, by module.",
		}, []string{"module"}),
		ModuleInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "module_info",
			Help: "1 for each loaded module, with its version, subject, mode, sha256 and generation.",
		}, []string{"module", "version", "subject", "mode", "sha256", "generation"}),
		HookCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "hook_calls_total",
			Help: "Calls of a module's hooks other than reconcile, by module, hook and result (admit: allowed, mutated, denied, failed-open, failed-closed).",
		}, []string{"module", "hook", "result"}),
		HookErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "hook_errors_total",
			Help: "Failed hook calls answered by the module's failure policy, by module, hook and reason (request, call, patch).",
		}, []string{"module", "hook", "reason"}),
		HookSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "hook_duration_seconds",
			Help:    "Time of one hook call other than reconcile, from request to answer.",
			Buckets: latency,
		}, []string{"module", "hook"}),
		ModuleSwaps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "module_swaps_total",
			Help: "Modules replaced or added while the host runs, by module and result (success, failed: the old module keeps serving).",
		}, []string{"module", "result"}),
		ConfigReloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "config_reloads_total",
			Help: "Reloads of the host configuration by result (success; partial: settings that take a restart were not applied, the rest was; failed: nothing of the file was applied).",
		}, []string{"result"}),
		ConfigLastReloadSuccessful: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "config_last_reload_successful",
			Help: "1 when the last reload of the host configuration was applied (wholly or partly), or none has run since start; 0 when it was refused.",
		}),
		CSIDriverReady: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "csi_driver_ready",
			Help: "1 while a configured CSI driver answers the host's probe as the driver configured, able to delete volumes; else 0. By driver.",
		}, []string{"driver"}),
		ShadowAgreements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "shadow_agreements_total",
			Help: "Reconciles on which a shadow module decided as the module it is compared with, or (compare_with=\"cluster\") found the cluster already as it would make it.",
		}, []string{"module", "compare_with"}),
		ShadowDisagreements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "shadow_disagreements_total",
			Help: "Reconciles on which a shadow module decided otherwise than the module it is compared with, or (compare_with=\"cluster\") subjects the cluster kept otherwise than it would make them past the settle time; the log has each.",
		}, []string{"module", "compare_with"}),
		queues: newQueueSeries(),
		ShadowDiffering: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "shadow_differing_subjects",
			Help: "Subjects a shadow module compared with the cluster would write, as of their last reconcile: within the settle time or disagreements.",
		}, []string{"module"}),
	}
	// Each result is there from the start, so that the first failure is an
	// increase an alert sees, not a new series.
	for _, r := range []string{"success", "partial", "failed"} {
		m.ConfigReloads.WithLabelValues(r)
	}
	m.ConfigLastReloadSuccessful.Set(1) // a host starts only on a configuration it accepted
	installRequestMetrics()
	m.Registry.MustRegister(processCollectors()...)
	m.Registry.MustRegister(m.queues.collectors()...)
	m.Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.Reconciles, m.ReconcileSeconds, m.GuestCallSeconds, m.Actions,
		m.GuestErrors, m.QueueDepth, m.APIRequests, m.Leader, m.Panics, m.StaleInputs, m.ModuleInfo,
		m.HookCalls, m.HookErrors, m.HookSeconds,
		m.ModuleSwaps, m.ConfigReloads, m.ConfigLastReloadSuccessful, m.CSIDriverReady,
		m.ShadowAgreements, m.ShadowDisagreements, m.ShadowDiffering,
	)
	return m
}

// WatchEventsPending registers kubeplug_events_pending, read from pending
// at each scrape: events recorded and not yet stored, refused or given up
// on (kube.EventSink.Pending). Call it once.
func (m *Metrics) WatchEventsPending(pending func() int) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "events_pending",
		Help: "Events recorded for modules and not yet stored, refused or given up on: what an unreachable API server holds back.",
	}, func() float64 { return float64(pending()) }))
}

// WatchReadiness registers kubeplug_ready, read from ready at each scrape:
// 1 while /readyz answers 200, else 0, for an alert on a host that stays
// unready (modules loading, caches syncing). Call it once.
func (m *Metrics) WatchReadiness(ready *Readiness) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "ready",
		Help: "1 while the host is ready (/readyz answers 200: modules loaded, caches synced, webhook serving), else 0.",
	}, func() float64 {
		if ready.Reason() != "" {
			return 0
		}
		return 1
	}))
}

// GuestCallClass is one class of calls into modules (admit, reconcile) at
// the host's guest call seats (runtime.Engine.GuestCalls).
type GuestCallClass struct {
	Class            string
	Running, Waiting int
	// WaitedSeconds is the time calls waited for the seat they got, in
	// all; GaveUp counts calls that waited until their caller gave up.
	WaitedSeconds float64
	GaveUp        int64
}

// WatchGuestCalls registers kubeplug_guest_calls_running,
// kubeplug_guest_calls_waiting, kubeplug_guest_call_wait_seconds_total and
// kubeplug_guest_calls_gave_up_total, each by class, read from classes at
// each scrape. Call it once.
func (m *Metrics) WatchGuestCalls(classes func() []GuestCallClass) {
	m.Registry.MustRegister(guestCalls(classes))
}

// guestCalls collects the guest call series at each scrape.
type guestCalls func() []GuestCallClass

var (
	guestCallsRunning = prometheus.NewDesc(Namespace+"_guest_calls_running",
		"Calls into modules running now, by class (admit, reconcile); each class at most --guest-calls.", []string{"class"}, nil)
	guestCallsWaiting = prometheus.NewDesc(Namespace+"_guest_calls_waiting",
		"Calls into modules waiting for a seat, by class: a host whose modules need more CPU than it has.", []string{"class"}, nil)
	guestCallWait = prometheus.NewDesc(Namespace+"_guest_call_wait_seconds_total",
		"Time calls into modules waited for the seat they got, by class.", []string{"class"}, nil)
	guestCallsGaveUp = prometheus.NewDesc(Namespace+"_guest_calls_gave_up_total",
		"Calls into modules that waited for a seat until their caller gave up (an admission's deadline, a reconcile's timeout), by class: a starved class.", []string{"class"}, nil)
)

func (g guestCalls) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{guestCallsRunning, guestCallsWaiting, guestCallWait, guestCallsGaveUp} {
		ch <- d
	}
}

func (g guestCalls) Collect(ch chan<- prometheus.Metric) {
	for _, c := range g() {
		ch <- prometheus.MustNewConstMetric(guestCallsRunning, prometheus.GaugeValue, float64(c.Running), c.Class)
		ch <- prometheus.MustNewConstMetric(guestCallsWaiting, prometheus.GaugeValue, float64(c.Waiting), c.Class)
		ch <- prometheus.MustNewConstMetric(guestCallWait, prometheus.CounterValue, c.WaitedSeconds, c.Class)
		ch <- prometheus.MustNewConstMetric(guestCallsGaveUp, prometheus.CounterValue, float64(c.GaveUp), c.Class)
	}
}

// maxLabel bounds the length of a label value that comes from a module.
const maxLabel = 128

// Label returns s fit to be a label value when it comes from a module (a
// manifest's version, say): invalid UTF-8, on which client_golang panics,
// replaced, and cut to at most 128 bytes.
func Label(s string) string { return Clip(s, maxLabel) }

// Clip returns s with invalid UTF-8 replaced, cut to at most n bytes on a
// character boundary: for strings a module chose, on their way into a label
// or a log line.
func Clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// ObserveRequest counts one API request; it is a kube.RequestObserver.
func (m *Metrics) ObserveRequest(method string, code int) {
	m.APIRequests.WithLabelValues(method, strconv.Itoa(code)).Inc()
}
