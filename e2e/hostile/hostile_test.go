package hostile

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
	corpus "github.com/kubeplug/kubeplug/host/runtime/hostile"
)

// wait bounds every wait of these tests: a hung host or test, not a
// performance assertion.
const wait = testenv.Timeout

// entry is one module of a host configuration.
type entry struct {
	name   string // in host.yaml, logs and metrics
	mod    corpus.Module
	yaml   string // the entry's lines after path, name, namespaces and limits
	limits string // the entry's limits besides instances, e.g. "maxOutput: 4Mi"
	pv     bool   // subject persistentvolume: cluster-scoped, no namespaces
	want   string // what the log must say beside the name; "" for nothing
	orWant string // or this instead (corpus.Module.OrWant)
	quiet  bool   // runs with nothing to report (shadow mode)
}

const allowEvent = "  allow: [{action: event, resources: [statefulsets]}]\n"

// guestTimeout is the limit the Go guests and warnretain run under (entries).
const guestTimeout = "timeout: 10s"

// entries says how each module of the corpus runs in the live host: with an
// allow: that grants exactly what its manifest asks for, so that what stops
// it is the host's own rules. A module not listed (the raw modules) runs with
// the default limits and an empty allow: list.
//
// The Go guests get a deadline of 10 s: they attack with what they return,
// not with time, and the raw modules beside them keep both cores busy for
// their whole 1 s deadlines, long enough to starve a Go guest's
// _initialize past a 1 s deadline of its own.
func entries(m corpus.Module, w *world) []entry {
	e := entry{name: m.Class, mod: m, want: m.Want, orWant: m.OrWant, limits: guestTimeout}
	switch m.Class {
	case "invalid-utf8-type", "invalid-utf8-version", "unknown-types", "empty-actions", "event-flood":
		e.yaml = allowEvent
	case "claim-shrink":
		e.yaml = "  allow: [{action: applyClaim, resources: [persistentvolumeclaims]}]\n"
	case "requeue-1ms", "requeue-huge":
		e.yaml = "  allow: []\n"
	case "beyond-allow":
		// Without allow: it may run in shadow mode only, and writes
		// nothing; refusedAtLoad runs it with a narrower allow:.
		e.yaml, e.quiet = "  mode: shadow\n", true
	case "owner-unrelated":
		allow := "  allow: [{action: updateOwnerReferences, resources: [persistentvolumeclaims]}]\n"
		pod, sc := e, e
		pod.name, pod.yaml = "owner-unrelated-pod", allow+fmt.Sprintf("  config: {owner: pod, pod: {name: other-0, uid: %s}}\n", w.otherPod)
		sc.name, sc.yaml = "owner-unrelated-sc", allow+"  config: {owner: storageclass}\n"
		return []entry{pod, sc}
	default:
		e.yaml, e.limits = "  allow: []\n", ""
	case "deep-recursion":
		// What it must show is the stack overflow trap: on a loaded
		// machine 1 s of a starved core may end the call before the
		// stack does, so the deadline is not what the test is about.
		e.yaml = "  allow: []\n"
	case "finalizer-flood":
		// 9,000 actions on one claim encode to about 1 MiB, more than
		// the default action cap: with both raised they reach the
		// executor, which must carry them out as one patch, silently.
		// (The cap itself stops unknown-types and empty-actions.)
		e.yaml = "  allow: [{action: addFinalizer, resources: [persistentvolumeclaims]}]\n"
		e.limits, e.want = guestTimeout+", maxOutput: 4Mi, maxActions: 10000", ""
	case "delete-bound-volume":
		e.pv = true
		e.yaml = "  labelSelector: hostile=bound\n" +
			"  allow: [{action: deleteVolume}, {action: deleteObject, resources: [persistentvolumeclaims, persistentvolumes]}]\n"
	case "named-secret":
		e.pv = true
		e.yaml = "  labelSelector: hostile=secret\n  allow: [{action: deleteVolume}]\n" +
			fmt.Sprintf("  config: {secret: {namespace: %s, name: hostile-chosen}}\n", w.ns)
	}
	return []entry{e}
}

// refuseBound bounds how long kubeplug run may take to refuse a module.
const refuseBound = time.Minute

// refusedAtLoad are the entries the host must refuse to load: the corpus's
// load-stage modules, and beyond-allow with an allow: narrower than its
// manifest.
func refusedAtLoad(mods []corpus.Module, w *world) []entry {
	var out []entry
	for _, m := range mods {
		switch {
		case m.Stage == corpus.StageLoad && m.Class == "beyond-allow":
			out = append(out, entry{name: m.Class, mod: m, want: m.Want, orWant: m.OrWant, yaml: allowEvent})
		case m.Stage == corpus.StageLoad:
			out = append(out, entries(m, w)...)
		}
	}
	return out
}

var (
	corpusOnce sync.Once
	corpusMods []corpus.Module
	corpusErr  error
)

// buildCorpus builds the corpus once per test binary.
func buildCorpus(t *testing.T) []corpus.Module {
	t.Helper()
	corpusOnce.Do(func() {
		dir := filepath.Join(cacheDir, "corpus")
		if corpusErr = os.MkdirAll(dir, 0o755); corpusErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		var guests []corpus.Module
		guests, corpusErr = corpus.Guests(ctx, "go", dir)
		corpusMods = append(corpus.Raw(), guests...)
	})
	if corpusErr != nil {
		t.Fatal(corpusErr)
	}
	return corpusMods
}

// moduleYAML writes e's module file and returns its host.yaml entry.
func moduleYAML(t *testing.T, e entry, ns string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), e.name+".wasm")
	if err := os.WriteFile(path, e.mod.Wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	s := fmt.Sprintf("- path: %s\n  name: %s\n", path, e.name)
	if !e.pv {
		s += fmt.Sprintf("  namespaces: [%s]\n", ns)
	}
	limits := "instances: 2"
	if e.limits != "" {
		limits += ", " + e.limits
	}
	return s + "  limits: {" + limits + "}\n" + e.yaml
}

// TestCorpusInOneHost runs every module of the corpus that loads in one
// host, beside the well-behaved examples/warnretain, on objects each of them
// would harm if it could.
func TestCorpusInOneHost(t *testing.T) {
	mods := buildCorpus(t)
	well, err := testenv.Guest("examples/warnretain")
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t, cp.Client())
	w := createWorld(t, ns)
	driver, sock := serveDriver(t)

	var loaded []entry
	cfg := fmt.Sprintf("resync: 2s\ncsiDrivers:\n- name: %s\n  endpoint: unix://%s\n  timeout: 10s\nmodules:\n", driverName, sock)
	cfg += fmt.Sprintf("- path: %s\n  name: warnretain\n  namespaces: [%s]\n  allow: [{action: event, resources: [statefulsets]}]\n  limits: {%s}\n", well, ns, guestTimeout)
	for _, m := range mods {
		if m.Stage == corpus.StageLoad {
			continue
		}
		for _, e := range entries(m, w) {
			loaded = append(loaded, e)
			cfg += moduleYAML(t, e, ns)
		}
	}
	h := startHost(t, cfg)

	// Every hostile module reconciles its subjects, and keeps being
	// called: the first reconcile of each is its class's time in the log.
	first := map[string]time.Duration{}
	var peakSampled float64
	exercised := until(wait, func() bool {
		if h.exited() {
			return true
		}
		m, err := h.scrape()
		if err != nil {
			return false
		}
		peakSampled = max(peakSampled, m.Sum("process_resident_memory_bytes")/(1<<20))
		done := true
		for _, e := range loaded {
			n := m.Sum("kubeplug_reconciles_total", "module", e.name)
			if _, ok := first[e.name]; !ok && n >= 1 {
				first[e.name] = time.Since(h.start)
			}
			done = done && n >= 2
		}
		return done
	})
	final, _ := h.scrape()
	for _, e := range loaded {
		if d, ok := first[e.name]; ok {
			n, mean := reconcileTimes(final, e.name)
			t.Logf("class %s (module %s, stage %s at default limits, limits {%s}): first reconcile done %v after the host started; %v reconciles, %v each on average",
				e.mod.Class, e.name, e.mod.Stage, e.limits, d.Round(time.Millisecond), n, mean.Round(time.Millisecond))
		} else {
			t.Errorf("module %s (class %s) never finished a reconcile", e.name, e.mod.Class)
		}
	}
	if h.exited() {
		t.Fatalf("the host exited with status %d while running the corpus:\n%s", h.exitCode(), tail(h.Log(), 20000))
	}
	if !exercised {
		t.Errorf("not every hostile module reconciled twice within %v", wait)
	}

	t.Run("well-behaved module keeps reconciling", func(t *testing.T) {
		m, err := h.scrape()
		if err != nil {
			t.Fatal(err)
		}
		before := m.Sum("kubeplug_reconciles_total", "module", "warnretain", "result", "success")
		if !until(wait, func() bool {
			m, err := h.scrape()
			return err == nil && m.Sum("kubeplug_reconciles_total", "module", "warnretain", "result", "success") >= before+3
		}) {
			t.Errorf("warnretain's successful reconciles stayed near %v for %v beside the corpus", before, wait)
		}
		if !until(wait, func() bool { return len(events(t, ns, "ClaimsRetainedForever")) > 0 }) {
			t.Errorf("warnretain's ClaimsRetainedForever event on web was never recorded")
		}
	})

	t.Run("metrics answer, with no series per unknown action type", func(t *testing.T) {
		m, err := h.scrape()
		if err != nil {
			t.Fatal(err)
		}
		unknown := map[string]bool{}
		if f, ok := m["kubeplug_actions_total"]; ok {
			for _, s := range f.Metric {
				for _, l := range s.Label {
					if l.GetName() == "type" && !slices.Contains(abi.ActionTypes(), l.GetValue()) {
						unknown[l.GetValue()] = true
					}
				}
			}
		}
		if len(unknown) > 1 {
			t.Errorf("kubeplug_actions_total has %d type labels no host knows (e.g. %q); want them all under one fixed label",
				len(unknown), slices.Sorted(maps.Keys(unknown))[:min(3, len(unknown))])
		}
		code, _, err := h.get("/healthz")
		if err != nil || code != 200 {
			t.Errorf("/healthz: %d, %v", code, err)
		}
	})

	t.Run("each hostile module's error names it and the reason", func(t *testing.T) {
		// Two reconciles of a module may both be of subjects outside its
		// label selector; the one its error is about may come later on a
		// host whose cores the corpus keeps busy.
		for _, e := range loaded {
			if e.quiet || e.want == "" {
				continue
			}
			if !until(wait, func() bool { return logNames(h.Log(), e.name, e.want, e.orWant) }) {
				t.Errorf("no log line names module %s and %q (class %s)", e.name, e.want, e.mod.Class)
			}
		}
	})

	t.Run("nothing forbidden happened", func(t *testing.T) {
		checkUnharmed(t, w)
		if n := driver.CallsFor("DeleteVolume", w.volBound); n != 0 {
			t.Errorf("%d DeleteVolume calls for the Bound volume %s", n, w.volBound)
		}
		if n := driver.CallsFor("DeleteVolume", w.volRetain); n != 0 {
			t.Errorf("%d DeleteVolume calls for the Retain volume %s", n, w.volRetain)
		}
		if driver.CallsFor("DeleteVolume", w.volReleased) > 0 && !maps.Equal(driver.LastSecrets(), hostSecret) {
			t.Errorf("DeleteVolume of %s got secrets %v; want the StorageClass's provisioner secret %v, never the module's choice",
				w.volReleased, driver.LastSecrets(), hostSecret)
		}
		for _, e := range events(t, ns, "HostileFlood") {
			if len(e.Message) >= 1_000_000 {
				t.Errorf("event-flood's event was recorded with its whole message of %d bytes", len(e.Message))
				break
			}
		}
		m, err := h.scrape()
		if err != nil {
			t.Fatal(err)
		}
		// 9,000 finalizers one PATCH each would show here; coalesced, the
		// whole corpus writes a handful of objects and events.
		if writes := m.Writes(); writes >= 1000 {
			t.Errorf("the host sent %v writes to the API server for the corpus; finalizer-flood's actions must be coalesced", writes)
		}
		// A requeue of 2^62 ms must not wrap into an immediate one.
		huge, well := m.Sum("kubeplug_reconciles_total", "module", "requeue-huge"), m.Sum("kubeplug_reconciles_total", "module", "warnretain")
		if huge > 3*well+10 {
			t.Errorf("requeue-huge reconciled %v times while warnretain reconciled %v: its requeue delay was not clamped", huge, well)
		}
		// A requeue of 1 ms must be raised to the documented minimum, not
		// keep a worker busy: warnretain is reconciled every 2s resync.
		if fast := m.Sum("kubeplug_reconciles_total", "module", "requeue-1ms"); fast > 5*well+20 {
			t.Errorf("requeue-1ms reconciled %v times while warnretain reconciled %v: its requeue delay was not clamped", fast, well)
		}
	})

	t.Run("SIGTERM ends the host", func(t *testing.T) {
		code, err := h.stop(syscall.SIGTERM, drainBound)
		if err != nil {
			t.Fatal(err)
		}
		if code != 0 {
			t.Errorf("exit status %d after SIGTERM, want 0", code)
		}
	})
	t.Logf("host with the corpus: ran %v, peak RSS %.1f MiB (VmHWM), %.1f MiB (largest process_resident_memory_bytes seen)",
		time.Since(h.start).Round(time.Millisecond), h.peakRSS(), peakSampled)
}

// TestRefusedAtLoad: a module the host refuses at load stops `kubeplug run`
// with exit status 2, naming the module and why, one short run per module.
func TestRefusedAtLoad(t *testing.T) {
	mods := buildCorpus(t)
	ns := testenv.Namespace(t, cp.Client())
	w := &world{ns: ns}
	for _, e := range refusedAtLoad(mods, w) {
		t.Run(e.name, func(t *testing.T) {
			h := startHost(t, "modules:\n"+moduleYAML(t, e, ns))
			// A refusal comes before the host connects to the cluster; the
			// bound is for a host that never refuses.
			if !h.wait(refuseBound) {
				t.Fatalf("kubeplug run still running %v after it started with a module it must refuse", refuseBound)
			}
			t.Logf("class %s (stage %s): exited %d after %v, peak RSS %.1f MiB",
				e.mod.Class, e.mod.Stage, h.exitCode(), time.Since(h.start).Round(time.Millisecond), h.peakRSS())
			if code := h.exitCode(); code != 2 {
				t.Errorf("exit status %d, want 2 (a refused module)", code)
			}
			if !logNames(h.Log(), e.name, e.want, e.orWant) {
				t.Errorf("the output does not name module %s and %q:\n%s", e.name, e.want, tail(h.Log(), 4000))
			}
		})
	}
}

// reconcileTimes returns how many reconciles of module m counted, and their
// mean duration (dequeue to done: snapshot, guest call, execution).
func reconcileTimes(m testenv.Metrics, module string) (uint64, time.Duration) {
	f, ok := m["kubeplug_reconcile_duration_seconds"]
	if !ok {
		return 0, 0
	}
	for _, s := range f.Metric {
		for _, l := range s.Label {
			if l.GetName() == "module" && l.GetValue() == module && s.Histogram != nil && s.Histogram.GetSampleCount() > 0 {
				n := s.Histogram.GetSampleCount()
				return n, time.Duration(s.Histogram.GetSampleSum() / float64(n) * float64(time.Second))
			}
		}
	}
	return 0, 0
}

// logNames reports whether one line of log names module and says want, or
// orWant when that is set.
func logNames(log, module, want, orWant string) bool {
	name := regexp.MustCompile(`(^|[^a-z0-9-])` + regexp.QuoteMeta(module) + `($|[^a-z0-9-])`)
	for _, line := range strings.Split(log, "\n") {
		says := strings.Contains(line, want) || (orWant != "" && strings.Contains(line, orWant))
		if says && name.MatchString(line) {
			return true
		}
	}
	return false
}

// checkUnharmed fails t for each object of w that is gone, being deleted,
// or whose claim got an owner other than its StatefulSet or that set's pods.
func checkUnharmed(t *testing.T, w *world) {
	t.Helper()
	ctx := context.Background()
	c := cp.Client()
	alive := func(kind, name string, meta *metav1.ObjectMeta, err error) {
		t.Helper()
		switch {
		case err != nil:
			t.Errorf("%s %s: %v", kind, name, err)
		case meta.DeletionTimestamp != nil:
			t.Errorf("%s %s is being deleted", kind, name)
		}
	}
	for _, name := range []string{w.fast, w.keep} {
		sc, err := c.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{})
		alive("StorageClass", name, metaOf(sc, err), err)
	}
	for _, name := range []string{"web", "other"} {
		set, err := c.AppsV1().StatefulSets(w.ns).Get(ctx, name, metav1.GetOptions{})
		alive("StatefulSet", name, metaOf(set, err), err)
	}
	for _, name := range []string{"web-0", "web-1", "other-0"} {
		pod, err := c.CoreV1().Pods(w.ns).Get(ctx, name, metav1.GetOptions{})
		alive("Pod", name, metaOf(pod, err), err)
	}
	webOwners := []types.UID{w.web.UID}
	for _, name := range []string{"web-0", "web-1"} {
		if pod, err := c.CoreV1().Pods(w.ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			webOwners = append(webOwners, pod.UID)
		}
	}
	for _, name := range []string{"data-web-0", "data-web-1", "data-db-0"} {
		claim, err := c.CoreV1().PersistentVolumeClaims(w.ns).Get(ctx, name, metav1.GetOptions{})
		alive("PersistentVolumeClaim", name, metaOf(claim, err), err)
		if err != nil {
			continue
		}
		if q := claim.Spec.Resources.Requests[corev1.ResourceStorage]; q.Cmp(resource.MustParse("1Gi")) != 0 {
			t.Errorf("claim %s requests %s of storage, not its 1Gi", name, q.String())
		}
		for _, o := range claim.OwnerReferences {
			if !slices.Contains(webOwners, o.UID) {
				t.Errorf("claim %s got an owner reference to %s %s (uid %s), neither its StatefulSet nor one of its pods", name, o.Kind, o.Name, o.UID)
			}
		}
	}
	for _, name := range []string{w.pvBound, w.pvRetain, w.pvReleased} {
		pv, err := c.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		alive("PersistentVolume", name, metaOf(pv, err), err)
	}
	for _, name := range []string{"csi-provisioner", "hostile-chosen"} {
		s, err := c.CoreV1().Secrets(w.ns).Get(ctx, name, metav1.GetOptions{})
		alive("Secret", name, metaOf(s, err), err)
	}
}

// metaOf is obj's metadata, or nil when err says there is no obj.
func metaOf[T interface{ GetObjectMeta() metav1.Object }](obj T, err error) *metav1.ObjectMeta {
	if err != nil {
		return nil
	}
	m, _ := obj.GetObjectMeta().(*metav1.ObjectMeta)
	return m
}

// events lists the events of ns with the given reason.
func events(t *testing.T, ns, reason string) []corev1.Event {
	t.Helper()
	return testenv.Events(t, cp.Client(), ns, reason)
}
