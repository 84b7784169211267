package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kubeplug/kubeplug/e2e/internal/kubelet"
	"github.com/kubeplug/kubeplug/e2e/internal/resizer"
	"github.com/kubeplug/kubeplug/e2e/internal/tcpproxy"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
	"github.com/kubeplug/kubeplug/host/actions"
	"github.com/kubeplug/kubeplug/host/csi/csitest"
)

const (
	class = "faults"
	// converge bounds the wait for the cluster to settle after the last
	// fault: a hung run, not a performance assertion.
	converge = 4 * time.Minute
	// quiet is the fixed window over which writes are counted once the
	// cluster has converged.
	quiet = 5 * time.Second
	// settle is how long the cluster must go without a write before the
	// quiet window starts.
	settle = 2 * time.Second
	// leaseArgs make a lost Lease matter within a run.
	leaseDuration = "4s"
)

var vcuGVR = schema.GroupVersionResource{Group: "kubeplug.dev", Version: "v1alpha1", Resource: "volumeclaimupdates"}

// world is what the runs share: the clients, the kubelet stand-in, the
// guest modules.
type world struct {
	c       kubernetes.Interface
	dyn     dynamic.Interface
	kl      *kubelet.Kubelet
	modules map[string]string // guest dir -> .wasm
	// target is kube-apiserver's host:port, behind each host's proxy.
	target string
	// rev reads creation revisions from the control plane's etcd.
	rev *revisions
}

func startWorld(t *testing.T) *world {
	t.Helper()
	ctx := t.Context()
	cfg := rest.CopyConfig(cp.Config)
	cfg.UserAgent = "kubeplug-e2e-faults"
	cfg.QPS, cfg.Burst = -1, 0
	w := &world{c: kubernetes.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg), modules: map[string]string{}}
	if err := testenv.InstallCRDs(ctx, cp.Config, testenv.ClaimUpdateCRD()); err != nil {
		t.Fatal(err)
	}
	_, err := w.c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: class},
		Provisioner:          resizer.Driver,
		ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimDelete),
		AllowVolumeExpansion: ptr.To(true),
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	kc := rest.CopyConfig(cfg)
	kc.UserAgent = "kubeplug-e2e-kubelet"
	if w.kl, err = kubelet.Start(ctx, kubernetes.NewForConfigOrDie(kc), ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.kl.Stop)
	for _, dir := range []string{"guests/retention", "guests/reclaim", "guests/templateupdate"} {
		if w.modules[dir], err = testenv.Guest(dir); err != nil {
			t.Fatal(err)
		}
	}
	u, err := url.Parse(cp.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	w.target = u.Host
	rev, closeRev, err := newRevisions(cp.EtcdURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeRev() })
	w.rev = rev
	return w
}

// run is one seeded run.
type run struct {
	t    *testing.T
	w    *world
	s    schedule
	ns   string
	ctx  context.Context
	pick *rand.Rand // for choices that are not targets (the racer's pace)

	driver *csitest.Driver
	csi    *csiFaults
	tr     *tracker

	config      string
	configPath  string // the hosts' configuration, for webhook-config
	proxies     []*tcpproxy.Proxy
	kubeconfigs []string
	hosts       []*testenv.Host
	downUntil   []time.Time
	// lives are the times each slot's host processes ran.
	lives       hostLives
	partitioned []bool
	apiDown     bool
	restarts    int

	// The admit hooks: each slot's webhook address, the run's serving
	// certificate and CA, and the reviews the hosts answered.
	webhookAddrs    []string
	certDir, caFile string
	admits          admitCalls

	created   int // sets of s.created made so far
	faults    map[kind]int
	lastFault time.Time
	racer     context.CancelFunc
	racerDone chan struct{}
	// restarted gets each API server restart that ended, from the
	// goroutine that restarts it; restarting counts those under way.
	restarted  chan restart
	restarting sync.WaitGroup
	// restartTook is how long each restart took until the new server
	// answered.
	restartTook []time.Duration
	// stranded counts the pods kube-controller-manager created on a claim
	// the workload had deleted, which the workload then deleted (freeStranded).
	stranded int
	// orphans counts the claims kube-controller-manager created for a set
	// already deleted, which the workload then deleted (bornOrphan).
	orphans int
	// unserved counts the claims created while no host served admission
	// reviews, for a set deleted before one did, which the workload then deleted
	// (bornOrphan).
	unserved int
}

// restart is one API server restart that ended: when, and how long it took.
type restart struct {
	ended time.Time
	took  time.Duration
}

// result is what a run gives the campaign's figures.
type result struct {
	seed       uint64
	faults     map[kind]int
	violations []string
	converged  time.Duration   // after the last fault ended; -1 when it did not
	restarts   []time.Duration // how long each API server restart took
	writes     int
	// othersWrote counts the quiet windows tried again because every write
	// in them was by others than kubeplug (quietWindow).
	othersWrote int
	admits      map[string]float64 // admission reviews the hosts answered, by result
	// What the invariants had to judge: claim deletions seen, DeleteVolume
	// calls that reached the driver, backing volumes made and deleted.
	claimsDeleted, deleteCalls, volumesMade, volumesDeleted int
	// The run's claims as first seen: all, with the template's label, owned
	// by their set.
	claimsSeen, claimsLabelled, claimsOwned int
	// Pods kube-controller-manager created on a claim being deleted, which
	// the workload deleted as upstream tells a user to (freeStranded).
	stranded int
	// Claims kube-controller-manager created for a set the workload had
	// deleted, which the workload deleted as KEP-1847 tells a user to; and
	// claims created while no host served, for a set deleted before one did.
	orphans, unserved int
}

func (r *run) logf(format string, args ...any) {
	r.t.Logf("%s "+format, append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

func runSeed(t *testing.T, w *world, seed uint64) result {
	s := newSchedule(seed)
	t.Logf("%s", s)
	t.Logf("replay: FAULTS_SEED=%d make faults", seed)
	ctx := t.Context()
	r := &run{t: t, w: w, s: s, ctx: ctx, faults: map[kind]int{}, pick: rand.New(rand.NewPCG(seed, 1)), restarted: make(chan restart, 8)}
	r.ns = testenv.Namespace(t, w.c)
	// A restart still under way when the run ends (it failed) finishes
	// before the next run starts, and before t is done.
	t.Cleanup(r.restarting.Wait)

	// The CSI driver, with its fault knob in front.
	r.driver = csitest.New(resizer.Driver)
	r.csi = &csiFaults{}
	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "csi.sock")
	stop, err := r.driver.Serve(socket, r.csi.interceptor())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	if r.tr, err = newTracker(ctx, w.c, r.ns, r.driver, w.rev); err != nil {
		t.Fatal(err)
	}
	r.csi.check = r.tr.checkDelete

	// external-provisioner and external-resizer's stand-in, creating each
	// volume in the driver, and each PersistentVolume with
	// external-provisioner's finalizer as it does by default since 1.31.
	// FAULTS_BARE_PV=1 creates them bare, as a provisioner without
	// HonorPVReclaimPolicy does: then a PV created and deleted while no
	// host can act leaks its volume (e2e/README.md, "Fault campaign").
	rc := rest.CopyConfig(cp.Config)
	rc.UserAgent = "kubeplug-e2e-resizer"
	rc.QPS, rc.Burst = -1, 0
	resizer.Start(ctx, kubernetes.NewForConfigOrDie(rc), resizer.Options{Namespace: r.ns, Delay: 300 * time.Millisecond, Provision: true,
		Protect: os.Getenv("FAULTS_BARE_PV") == "",
		CreateVolume: func(ctx context.Context, name string, bytes int64) (string, error) {
			resp, err := r.driver.Controller().CreateVolume(ctx, &csipb.CreateVolumeRequest{Name: name, CapacityRange: &csipb.CapacityRange{RequiredBytes: bytes}})
			if err != nil {
				return "", err
			}
			id := resp.GetVolume().GetVolumeId()
			r.tr.mu.Lock()
			r.tr.pvOf[id] = name
			r.tr.mu.Unlock()
			return id, nil
		},
		DeleteVolume: func(ctx context.Context, handle string) error {
			_, err := r.driver.Controller().DeleteVolume(ctx, &csipb.DeleteVolumeRequest{VolumeId: handle})
			return err
		}})
	w.kl.Serve(r.ns)

	m := w.modules
	r.config = fmt.Sprintf("modules:\n"+
		"- name: retention\n  path: %s\n  workers: 2\n  namespaces: [%s]\n%s"+admission+
		"- name: reclaim\n  path: %s\n  workers: 2\n%s"+
		"- name: templateupdate\n  path: %s\n  workers: 2\n  namespaces: [%s]\n%s"+admission+
		"csiDrivers:\n- name: %s\n  endpoint: unix://%s\n  timeout: 3s\n",
		m["guests/retention"], r.ns, testenv.Allow["guests/retention"],
		m["guests/reclaim"], testenv.Allow["guests/reclaim"],
		m["guests/templateupdate"], r.ns, testenv.Allow["guests/templateupdate"],
		resizer.Driver, socket)
	n := 1
	if s.twoHosts {
		n = 2
	}
	r.webhooks(n)
	r.admits = admitCalls{total: map[string]float64{}, last: make([]map[string]float64, n), read: make([]time.Time, n)}
	for i := range n {
		p, err := tcpproxy.New(w.target)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		r.proxies = append(r.proxies, p)
		r.kubeconfigs = append(r.kubeconfigs, testenv.KubeconfigVia(t, cp.Kubeconfig, p.URL()))
		r.hosts = append(r.hosts, nil)
		r.downUntil = append(r.downUntil, time.Time{})
		r.lives = append(r.lives, nil)
		r.partitioned = append(r.partitioned, false)
		r.startHost(i)
	}
	for _, h := range r.hosts {
		h.WaitReady(t)
	}
	r.registerWebhooks()
	for _, spec := range s.sets {
		r.createSet(spec)
	}
	r.awaitWebhooks()
	r.awaitConverged(time.Now()) // the starting state, before any fault

	res := result{seed: seed, faults: r.faults, converged: -1}
	r.play()
	res.converged = r.awaitConverged(r.lastFault)
	res.restarts = r.restartTook
	res.stranded, res.orphans, res.unserved = r.stranded, r.orphans, r.unserved
	if res.converged >= 0 {
		res.writes, res.othersWrote = r.quietWindow()
	}
	res.admits = r.admitResults()
	r.tr.mu.Lock()
	res.violations = slices.Clone(r.tr.violations)
	res.claimsDeleted = r.tr.judged
	res.claimsSeen, res.claimsLabelled, res.claimsOwned = r.tr.firstSeen, r.tr.firstLabelled, r.tr.firstOwned
	for _, n := range r.tr.deletes {
		res.deleteCalls += n
	}
	res.volumesMade = len(r.tr.pvOf)
	left := map[string]bool{}
	for _, h := range r.driver.Volumes() {
		left[h] = true
	}
	for h := range r.tr.pvOf {
		if !left[h] {
			res.volumesDeleted++
		}
	}
	r.tr.mu.Unlock()
	for _, v := range res.violations {
		t.Errorf("seed %d: %s", seed, v)
	}
	if len(res.violations) > 0 {
		t.Errorf("replay this run: FAULTS_SEED=%d make faults", seed)
		for _, h := range r.hosts {
			if h != nil {
				t.Logf("log of %s:\n%s", h.Name, tail(h.Log(), 20000))
			}
		}
	}
	return res
}

// why picks the lines of a host's log that say why it exited: its errors
// other than the reflectors' complaints about broken watches.
func why(log string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "level=ERROR") && !strings.Contains(l, "Failed to watch") {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return tail(log, 600)
	}
	return tail(strings.Join(out, "\n"), 2000)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// startHost starts the host of slot i behind its proxy.
func (r *run) startHost(i int) {
	var args []string
	if r.s.twoHosts {
		args = []string{"--leader-elect", "--leader-elect-namespace", r.ns, "--leader-elect-name", "kubeplug",
			"--leader-elect-identity", string(rune('a' + i)),
			"--leader-elect-lease-duration", leaseDuration, "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms"}
	}
	if r.hosts[i] != nil {
		r.ended(i)
	}
	r.lives.start(i, time.Now())
	r.hosts[i] = testenv.StartHost(r.t, testenv.HostOptions{
		Name: fmt.Sprintf("%s-%c-%d", r.ns, 'a'+i, r.restarts), Kubeconfig: r.kubeconfigs[i], Config: r.config,
		Args: append(args, r.webhookArgs(i)...),
	})
	r.restarts++
}

// supervise restarts, as a Deployment would, every host that is dead and
// not held down by a fault, at most once a second: a restart ends a fault.
func (r *run) supervise() {
	for i, h := range r.hosts {
		r.lives.serving(i, h.Log)
		if !h.Exited() {
			r.tally(i, false)
		}
		if !h.Exited() || time.Now().Before(r.downUntil[i]) || time.Since(r.lives.latest(i)) < time.Second {
			continue
		}
		r.lives.end(i, time.Now()) // no earlier than it exited
		if code := h.ExitCode(); code != -1 {
			r.logf("host %s exited by itself with %d: %s", h.Name, code, why(h.Log()))
		}
		r.startHost(i)
		r.lastFault = time.Now()
	}
}

// play runs the schedule's events at their times, then heals everything.
func (r *run) play() {
	r.lastFault = time.Time{}
	start := time.Now()
	next := 0
	for {
		for next < len(r.s.events) && r.s.events[next].at <= time.Since(start) {
			r.do(r.s.events[next])
			next++
		}
		r.supervise()
		r.restartsEnded()
		if next == len(r.s.events) && time.Since(start) >= load {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Heal what is still broken; every host runs again.
	r.restarting.Wait()
	r.restartsEnded()
	r.stopRacer()
	r.csi.set(csiOK, 0)
	for i, p := range r.proxies {
		p.Heal()
		r.partitioned[i] = false
		r.downUntil[i] = time.Time{}
	}
	r.apiDown = false
	r.supervise()
	if r.lastFault.IsZero() {
		r.lastFault = time.Now()
	}
}

// restartsEnded takes the end of each API server restart finished since the
// last call as the end of a fault.
func (r *run) restartsEnded() {
	for {
		select {
		case rs := <-r.restarted:
			if rs.ended.After(r.lastFault) {
				r.lastFault = rs.ended
			}
			r.restartTook = append(r.restartTook, rs.took)
		default:
			return
		}
	}
}

func (r *run) fault(k kind) {
	r.faults[k]++
	r.lastFault = time.Now()
}

// leader is the slot of the Lease's holder, or pick's slot if none holds it.
func (r *run) leader(pick int) int {
	if i, _, ok := r.holder(); ok {
		return i
	}
	return pick % len(r.hosts)
}

// holder reads the Lease: the slot of the host holding it and when it took
// it (zero if the Lease does not say); ok is false when no host of the run
// holds it.
func (r *run) holder() (slot int, acquired time.Time, ok bool) {
	l, err := r.w.c.CoordinationV1().Leases(r.ns).Get(r.ctx, "kubeplug", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil || len(*l.Spec.HolderIdentity) != 1 {
		return 0, time.Time{}, false
	}
	slot = int((*l.Spec.HolderIdentity)[0]) - 'a'
	if l.Spec.AcquireTime != nil {
		acquired = l.Spec.AcquireTime.Time
	}
	return slot, acquired, slot >= 0 && slot < len(r.hosts)
}

func (r *run) do(e event) {
	r.logf("%s", e)
	switch e.what {
	case faultKill, faultLeader:
		i := e.pick % len(r.hosts)
		if e.what == faultLeader {
			i = r.leader(e.pick)
		}
		r.tally(i, true)
		r.hosts[i].Kill()
		r.lives.serving(i, r.hosts[i].Log)
		r.lives.end(i, time.Now())
		r.downUntil[i] = time.Now().Add(time.Duration(e.arg) * time.Millisecond)
		r.fault(e.what)
	case faultPartition:
		i := r.leader(e.pick)
		r.partitioned[i] = true
		r.proxies[i].Cut()
		r.fault(e.what)
	case opHealPartition:
		for i, p := range r.proxies {
			if r.partitioned[i] && !r.apiDown {
				p.Heal()
			}
			r.partitioned[i] = false
		}
		r.lastFault = time.Now()
	case faultAPI:
		r.apiDown = true
		for _, p := range r.proxies {
			p.Cut()
		}
		r.fault(e.what)
	case faultRestart:
		r.fault(e.what)
		r.restarting.Add(1)
		go func() {
			defer r.restarting.Done()
			start := time.Now()
			if err := cp.RestartAPIServer(r.ctx); err != nil {
				r.t.Errorf("kube-apiserver did not come back: %v", err)
				return
			}
			took := time.Since(start)
			r.logf("kube-apiserver back %v after the restart began", took.Round(time.Millisecond))
			r.restarted <- restart{ended: time.Now(), took: took}
		}()
	case opHealAPI:
		r.apiDown = false
		for i, p := range r.proxies {
			if !r.partitioned[i] {
				p.Heal()
			}
		}
		r.lastFault = time.Now()
	case faultWatch:
		closed, open := 0, 0
		for _, p := range r.proxies {
			open += p.Open()
			closed += p.Break(time.Duration(e.arg) * time.Millisecond)
		}
		r.logf("closed %d of %d connections", closed, open)
		r.fault(e.what)
	case faultCSIFail:
		r.csi.set(csiFail, 0)
		r.fault(e.what)
	case faultCSIHang:
		r.csi.set(csiHang, 0)
		r.fault(e.what)
	case faultCSISlow:
		r.csi.set(csiSlow, time.Duration(1000+e.pick%4000)*time.Millisecond)
		r.fault(e.what)
	case opHealCSI:
		r.csi.set(csiOK, 0)
		r.lastFault = time.Now()
	case faultRacer:
		r.startRacer(e.pick)
		r.fault(e.what)
	case opRacerStop:
		r.stopRacer()
		r.lastFault = time.Now()
	default:
		r.op(e)
	}
}

// liveSets are the names of the sets not deleted, sorted.
func (r *run) liveSets() []string {
	r.tr.mu.Lock()
	defer r.tr.mu.Unlock()
	var out []string
	for name, s := range r.tr.sets {
		if !s.deleted {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func (r *run) op(e event) {
	sets := r.liveSets()
	var set string
	if len(sets) > 0 {
		set = sets[e.pick%len(sets)]
	}
	switch e.what {
	case opCreateSet:
		if r.created < len(r.s.created) {
			r.createSet(r.s.created[r.created])
			r.created++
		}
	case opScaleUp, opScaleDown:
		if set == "" {
			return
		}
		r.tr.mu.Lock()
		rec := r.tr.sets[set]
		n := rec.replicas[len(rec.replicas)-1].n
		r.tr.mu.Unlock()
		if e.what == opScaleUp {
			n = min(n+e.arg, 4)
		} else {
			n = max(n-e.arg, 0)
		}
		if !r.check(r.updateSet(set, func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To(int32(n)) })) {
			return
		}
		r.tr.mu.Lock()
		rec.replicas = append(rec.replicas, replicasAt{at: time.Now(), n: n})
		r.tr.mu.Unlock()
	case opDeleteSet:
		if set == "" {
			return
		}
		r.tr.mu.Lock()
		r.tr.sets[set].deleted = true
		r.tr.mu.Unlock()
		err := r.retried(func() error { return r.w.c.AppsV1().StatefulSets(r.ns).Delete(r.ctx, set, metav1.DeleteOptions{}) })
		r.tr.mu.Lock()
		r.tr.sets[set].deletedAt = time.Now().UTC()
		r.tr.mu.Unlock()
		if !r.check(err) && !apierrors.IsNotFound(err) {
			r.tr.mu.Lock()
			r.tr.sets[set].deleted = false
			r.tr.mu.Unlock()
		}
	case opGrowTemplate:
		if set == "" {
			return
		}
		r.tr.mu.Lock()
		rec := r.tr.sets[set]
		if rec.size >= 4 {
			r.tr.mu.Unlock()
			return
		}
		rec.size++
		size := rec.size
		r.tr.mu.Unlock()
		grown := r.check(r.retried(func() error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				u, err := r.w.dyn.Resource(vcuGVR).Namespace(r.ns).Get(r.ctx, set, metav1.GetOptions{})
				if err != nil {
					return err
				}
				ts, _, _ := unstructured.NestedSlice(u.Object, "spec", "volumeClaimTemplates")
				if len(ts) != 1 {
					return fmt.Errorf("VolumeClaimUpdate %s has %d templates", set, len(ts))
				}
				if err := unstructured.SetNestedField(ts[0].(map[string]any), fmt.Sprintf("%dGi", size), "spec", "resources", "requests", "storage"); err != nil {
					return err
				}
				if err := unstructured.SetNestedSlice(u.Object, ts, "spec", "volumeClaimTemplates"); err != nil {
					return err
				}
				_, err = r.w.dyn.Resource(vcuGVR).Namespace(r.ns).Update(r.ctx, u, metav1.UpdateOptions{})
				return err
			})
		}))
		if !grown {
			r.tr.mu.Lock()
			rec.size--
			r.tr.mu.Unlock()
		}
	case opRollTemplate:
		if set == "" {
			return
		}
		r.check(r.updateSet(set, func(s *appsv1.StatefulSet) {
			if s.Spec.Template.Annotations == nil {
				s.Spec.Template.Annotations = map[string]string{}
			}
			s.Spec.Template.Annotations["faults.kubeplug.dev/revision"] = strconv.Itoa(e.pick)
		}))
	case opDeleteClaim, opDeletePV:
		var claims *corev1.PersistentVolumeClaimList
		err := r.retried(func() (err error) {
			claims, err = r.w.c.CoreV1().PersistentVolumeClaims(r.ns).List(r.ctx, metav1.ListOptions{})
			return err
		})
		if err != nil || len(claims.Items) == 0 {
			r.check(err)
			return
		}
		slices.SortFunc(claims.Items, func(a, b corev1.PersistentVolumeClaim) int { return strings.Compare(a.Name, b.Name) })
		cl := claims.Items[e.pick%len(claims.Items)]
		if e.what == opDeletePV {
			// KEP-2644's order: the volume first, then its claim.
			if cl.Spec.VolumeName == "" {
				return
			}
			r.check(r.retried(func() error {
				return r.w.c.CoreV1().PersistentVolumes().Delete(r.ctx, cl.Spec.VolumeName, metav1.DeleteOptions{})
			}))
		}
		r.deleteReplica(cl)
	}
}

// deleteReplica deletes a claim and its pod, as a user replacing a
// replica's storage does.
func (r *run) deleteReplica(cl corev1.PersistentVolumeClaim) {
	r.tr.mu.Lock()
	r.tr.userDelete[cl.UID] = true
	r.tr.mu.Unlock()
	r.check(r.retried(func() error {
		return r.w.c.CoreV1().PersistentVolumeClaims(r.ns).Delete(r.ctx, cl.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cl.UID}})
	}))
	if set, ord, ok := parseClaim(cl.Name); ok {
		// The pod is read first and deleted by its UID, and every pod the
		// workload read is recorded: a pod that later mounts the claim
		// and is not one of them was created after the claim's deletion
		// (freeStranded).
		name := fmt.Sprintf("%s-%d", set, ord)
		r.check(r.retried(func() error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				p, err := r.w.c.CoreV1().Pods(r.ns).Get(r.ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				r.tr.mu.Lock()
				r.tr.podsAtDelete[cl.UID] = append(r.tr.podsAtDelete[cl.UID], p.UID)
				r.tr.mu.Unlock()
				return r.w.c.CoreV1().Pods(r.ns).Delete(r.ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
			})
		}))
	}
}

// check logs a workload write that failed, and reports whether it was
// made: the workload goes on either way.
func (r *run) check(err error) bool {
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		r.logf("workload: %v", err)
	}
	return err == nil
}

// workloadBackoff is how the workload's user retries a command the API
// server does not answer: every 250ms for two minutes, well beyond a
// restart's seconds under load. (No Cap: wait.Backoff stops at its cap.)
var workloadBackoff = wait.Backoff{Duration: 250 * time.Millisecond, Factor: 1, Steps: 480}

// retried runs a workload command, again while the API server does not
// answer (a restart: connections refused or closed, 429 or 503 while it
// shuts down or starts), as a user retries kubectl. Any other error ends
// it. A command retried after its connection broke may have been done:
// the caller takes NotFound or AlreadyExists as done.
func (r *run) retried(fn func() error) error {
	return retry.OnError(workloadBackoff, func(err error) bool {
		if r.ctx.Err() != nil {
			return false
		}
		// A 4xx other than 429 and 408 is the API server's answer; a
		// 5xx, or a transport error (client-go may wrap one as a status
		// with no code), is no answer.
		var st apierrors.APIStatus
		if errors.As(err, &st) {
			code := st.Status().Code
			return code == 0 || code >= 500 || code == http.StatusTooManyRequests || code == http.StatusRequestTimeout
		}
		return true
	}, fn)
}

func (r *run) updateSet(name string, change func(*appsv1.StatefulSet)) error {
	return r.retried(func() error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s, err := r.w.c.AppsV1().StatefulSets(r.ns).Get(r.ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			change(s)
			_, err = r.w.c.AppsV1().StatefulSets(r.ns).Update(r.ctx, s, metav1.UpdateOptions{})
			return err
		})
	})
}

// createSet creates a set of spec and its VolumeClaimUpdate (InPlace,
// Async, the claims at 1Gi with the label tier=gold), and tracks it.
func (r *run) createSet(spec setSpec) {
	set := testenv.StatefulSet(spec.name, class, "1Gi", int32(spec.replicas))
	set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.PersistentVolumeClaimRetentionPolicyType(spec.whenDeleted),
		WhenScaled:  appsv1.PersistentVolumeClaimRetentionPolicyType(spec.whenScaled),
	}
	vcu := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeplug.dev/v1alpha1",
		"kind":       "VolumeClaimUpdate",
		"metadata":   map[string]any{"name": spec.name, "namespace": r.ns},
		"spec": map[string]any{
			"statefulSetName":           spec.name,
			"volumeClaimUpdateStrategy": "InPlace",
			"volumeClaimSyncStrategy":   "Async",
			"volumeClaimTemplates": []any{map[string]any{
				"metadata": map[string]any{"name": template, "labels": map[string]any{"tier": "gold"}},
				"spec": map[string]any{
					"accessModes":      []any{"ReadWriteOnce"},
					"storageClassName": class,
					"resources":        map[string]any{"requests": map[string]any{"storage": "1Gi"}},
				},
			}},
		},
	}}
	err := r.retried(func() error {
		_, err := r.w.dyn.Resource(vcuGVR).Namespace(r.ns).Create(r.ctx, vcu, metav1.CreateOptions{})
		return err
	})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		r.t.Fatal(err)
	}
	var got *appsv1.StatefulSet
	err = r.retried(func() (err error) {
		got, err = r.w.c.AppsV1().StatefulSets(r.ns).Create(r.ctx, set, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) { // made by an attempt whose answer was lost
			got, err = r.w.c.AppsV1().StatefulSets(r.ns).Get(r.ctx, set.Name, metav1.GetOptions{})
		}
		return err
	})
	if err != nil {
		r.t.Fatal(err)
	}
	r.tr.mu.Lock()
	r.tr.sets[spec.name] = &setRecord{spec: spec, uid: got.UID, size: 1, replicas: []replicasAt{{at: time.Now(), n: spec.replicas}}}
	r.tr.mu.Unlock()
}

// startRacer starts a second writer that patches the run's claims' labels
// as fast as it can, without preconditions, until stopRacer.
func (r *run) startRacer(pick int) {
	if r.racer != nil {
		return
	}
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan struct{})
	r.racer, r.racerDone = cancel, done
	pace := time.Duration(20+pick%150) * time.Millisecond
	go func() {
		defer close(done)
		for i := 0; ctx.Err() == nil; i++ {
			claims, err := r.w.c.CoreV1().PersistentVolumeClaims(r.ns).List(ctx, metav1.ListOptions{})
			if err == nil {
				for _, cl := range claims.Items {
					patch := fmt.Sprintf(`{"metadata":{"labels":{"faults.kubeplug.dev/racer":"%d"}}}`, i)
					_, _ = r.w.c.CoreV1().PersistentVolumeClaims(r.ns).Patch(ctx, cl.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(pace):
			}
		}
	}()
}

func (r *run) stopRacer() {
	if r.racer != nil {
		r.racer()
		<-r.racerDone
		r.racer = nil
	}
}

// awaitConverged waits, within converge, until nothing is unmet, and
// returns how long after since that was; -1 (and a violation) when the
// bound passed first.
func (r *run) awaitConverged(since time.Time) time.Duration {
	deadline := time.Now().Add(converge)
	var last []string
	for {
		r.supervise()
		r.freeStranded()
		unmet, err := r.tr.unmet(r.ctx, false)
		if err != nil {
			unmet = []string{err.Error()}
		}
		if len(unmet) == 0 {
			d := time.Since(since)
			r.logf("converged %v after the last fault; syncs of sets kube-controller-manager put off in the run, its informer behind its own write: %s",
				d.Round(time.Millisecond), r.tr.staleSkips())
			return d
		}
		last = unmet
		if time.Now().After(deadline) {
			if detailed, err := r.tr.unmet(r.ctx, true); err == nil && len(detailed) > 0 {
				last = detailed
			}
			r.tr.violate("not converged %v after the last fault: %s", converge, strings.Join(last, "; "))
			return -1
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// freeStranded does what upstream leaves to a user in two states that
// kube-controller-manager's stale informer makes and no kubeplug write
// can: it deletes a claim born an orphan (bornOrphan), and each pod that
// kube-controller-manager's StatefulSet controller created on a claim after
// the workload had deleted that claim. The controller refuses to create a
// pod whose claim is being deleted, but it reads the claim from its
// informer, which can lag (across an API server restart, most of all); the
// pod then runs on the terminating claim, pvc-protection holds the claim
// for as long as the pod runs, and nothing upstream deletes the pod
// (kubernetes/kubernetes#74374, open: the user must delete the pod too).
// Only that state is touched: a claim the workload deleted, held by no
// finalizer but pvc-protection, mounted by a scheduled pod of its set
// created after the claim's deletionTimestamp. (pvc-protection counts only
// scheduled pods; the stand-in schedules no pod whose claim is being
// deleted, as the scheduler's VolumeBinding, so this is the race of a
// claim deleted between that check and the binding.) A claim kubeplug
// deleted, or held by anything else, stays for the invariants to judge.
func (r *run) freeStranded() {
	c := r.w.c
	claims, err := c.CoreV1().PersistentVolumeClaims(r.ns).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	pods, err := c.CoreV1().Pods(r.ns).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, cl := range claims.Items {
		r.tr.mu.Lock()
		user := r.tr.userDelete[cl.UID]
		known := slices.Clone(r.tr.podsAtDelete[cl.UID])
		var set setRecord
		name, _, ok := parseClaim(cl.Name)
		if ok && r.tr.sets[name] != nil {
			set = *r.tr.sets[name]
		}
		r.tr.mu.Unlock()
		b, rev := birthUnknown, int64(0)
		if set.deleted && len(cl.OwnerReferences) == 0 {
			b, rev = r.tr.birth(r.ctx, &cl, name)
		}
		if why := bornOrphan(&cl, set, r.lives, b); why != notOrphan {
			r.logf("claim %s created at %s, %s, owned by nothing: deleting it as a user would",
				cl.Name, cl.CreationTimestamp.UTC().Format("15:04:05"), why.describe(set.deletedAt, b, rev))
			uid := cl.UID
			r.tr.mu.Lock()
			r.tr.userDelete[uid] = true
			r.tr.mu.Unlock()
			if r.check(c.CoreV1().PersistentVolumeClaims(r.ns).Delete(r.ctx, cl.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})) {
				if why == createdUnserved {
					r.unserved++
				} else {
					r.orphans++
				}
			}
			continue
		}
		if !user || cl.DeletionTimestamp == nil || !slices.Equal(cl.Finalizers, []string{"kubernetes.io/pvc-protection"}) {
			continue
		}
		for _, p := range stranded(pods.Items, &cl, known) {
			r.logf("claim %s deleted at %s, held by pvc-protection for pod %s that kube-controller-manager created at %s: deleting the pod as a user would",
				cl.Name, cl.DeletionTimestamp.UTC().Format("15:04:05"), p.Name, p.CreationTimestamp.UTC().Format("15:04:05"))
			uid := p.UID
			if r.check(c.CoreV1().Pods(r.ns).Delete(r.ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})) {
				r.stranded++
			}
		}
	}
}

// orphanKind is why a claim of a deleted set was born owned by nothing in
// a way that no kubeplug write could have prevented.
type orphanKind int

const (
	notOrphan orphanKind = iota
	// createdAfter: kube-controller-manager created the claim, from its
	// stale informer, after the set's deletion: at a revision where etcd
	// no longer held the set, or, where etcd's history is gone, in a later
	// second than the deletion was answered. No webhook can stamp it: the
	// set's UID is gone.
	createdAfter
	// createdUnserved: the claim was created while no host served admission
	// reviews (none ran, or each was still syncing its caches), and the set
	// was deleted before one served again. Retention's admit hook is served
	// with failurePolicy Ignore, as README.md says to, so the API server
	// admitted the claim unstamped, as kube-controller-manager creates it
	// (its own owner reference comes in a later sync, which a deleted set
	// does not get): upstream's window, with no host to close it.
	createdUnserved
)

// describe says when the claim was created, for the log, against the
// set's deletion at deletedAt, and where etcd placed it.
func (k orphanKind) describe(deletedAt time.Time, b birth, rev int64) string {
	at := deletedAt.Format("15:04:05.000")
	where := ""
	if rev != 0 {
		where = fmt.Sprintf(" (created at revision %d, %s)", rev, b)
	}
	switch k {
	case createdAfter:
		return "after its set was deleted at " + at + where
	case createdUnserved:
		return "while no host served admission, its set deleted at " + at + " before one did" + where
	}
	return "not an orphan (set deleted at " + at + ")" + where
}

// bornOrphan reports whether cl is a claim of set, deleted with
// whenDeleted: Delete, that was born owned by nothing where no host could
// stamp it, and why: created after the deletion (b, etcd's order, or when
// etcd cannot tell, in a later second than the deletion was answered), or
// while no host served admission reviews from the claim's creation (its second's start: the
// timestamp is whole seconds) until the deletion. KEP-1847's remedy for a
// claim a policy missed is to delete it by hand.
func bornOrphan(cl *corev1.PersistentVolumeClaim, set setRecord, lives hostLives, b birth) orphanKind {
	if !set.deleted || set.spec.whenDeleted != "Delete" || set.deletedAt.IsZero() || cl.DeletionTimestamp != nil ||
		len(cl.OwnerReferences) != 0 {
		return notOrphan
	}
	switch {
	case b == bornAfter, b == birthUnknown && cl.CreationTimestamp.After(set.deletedAt):
		return createdAfter
	case !lives.served(cl.CreationTimestamp.Time, set.deletedAt):
		return createdUnserved
	}
	return notOrphan
}

// hostLives are, for each host slot, the times its processes ran: from the
// start to the kill or to when the exit was seen (never earlier than it
// ended), the last open while it runs; and when each began to serve
// admission reviews, which it does only once its caches have synced.
type hostLives [][]life

type life struct{ from, served, to time.Time }

func (l hostLives) start(slot int, at time.Time) { l[slot] = append(l[slot], life{from: at}) }

// latest is when slot's newest host process started; zero if none has.
func (l hostLives) latest(slot int) time.Time {
	if n := len(l[slot]); n > 0 {
		return l[slot][n-1].from
	}
	return time.Time{}
}

// serving records when slot's newest process began to serve, from its
// log (servingSince), unless already known.
func (l hostLives) serving(slot int, log func() string) {
	if n := len(l[slot]); n > 0 && l[slot][n-1].served.IsZero() {
		l[slot][n-1].served = servingSince(log())
	}
}

func (l hostLives) end(slot int, at time.Time) {
	if n := len(l[slot]); n > 0 && l[slot][n-1].to.IsZero() {
		l[slot][n-1].to = at
	}
}

// served reports whether any host process served admission reviews at
// some time in [from, to]. A process still syncing its caches listens but
// holds each review until they have synced; one that waits past its
// deadline is answered by failurePolicy Ignore, the object admitted as it
// came. Before the listener, kube-apiserver's call is refused, with the
// same answer.
func (l hostLives) served(from, to time.Time) bool {
	for _, slot := range l {
		for _, s := range slot {
			if !s.served.IsZero() && !s.served.After(to) && (s.to.IsZero() || !s.to.Before(from)) {
				return true
			}
		}
	}
	return false
}

// servingSince is the time of the host log's "serving admission webhooks"
// line (kubeplug run's, host/app/webhook.go), zero if it has none yet.
func servingSince(log string) time.Time {
	for line := range strings.Lines(log) {
		if !strings.Contains(line, `msg="serving admission webhooks"`) {
			continue
		}
		v, ok := strings.CutPrefix(line, "time=")
		if !ok {
			continue
		}
		if i := strings.IndexByte(v, ' '); i > 0 {
			if t, err := time.Parse(time.RFC3339Nano, v[:i]); err == nil {
				return t
			}
		}
	}
	return time.Time{}
}

// stranded returns the pods of cl's StatefulSet that mount cl, are not
// being deleted, and were created after cl's deletion: none of the pods
// the workload read when it deleted the claim's replica (known, read after
// the claim's delete was answered), and not created in an earlier second
// than cl's deletionTimestamp (both are in whole seconds).
func stranded(pods []corev1.Pod, cl *corev1.PersistentVolumeClaim, known []types.UID) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		owner := metav1.GetControllerOf(&p)
		if p.DeletionTimestamp != nil || owner == nil || owner.Kind != "StatefulSet" || p.Spec.NodeName == "" ||
			slices.Contains(known, p.UID) || p.CreationTimestamp.Before(cl.DeletionTimestamp) {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == cl.Name {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// awaitQuiet waits, within converge, for a settle period without a write
// to the run's objects: a host catching up after the last fault (its event
// sink retrying what an outage held back, a status it could not write) is
// not a write loop. It reports false, with a violation, when the bound
// passes first: writes that never stop.
func (r *run) awaitQuiet() bool {
	deadline := time.Now().Add(converge)
	for {
		if !r.leaderSettled() {
			if time.Now().After(deadline) {
				r.tr.violate("no host held the Lease for %v within %v after the cluster converged", settle, converge)
				return false
			}
			time.Sleep(250 * time.Millisecond)
			continue
		}
		if pending := r.eventsPending(); pending != "" {
			if time.Now().After(deadline) {
				r.tr.violate("events still pending %v after the cluster converged: %s", converge, pending)
				return false
			}
			time.Sleep(250 * time.Millisecond)
			continue
		}
		if r.countWrites(settle) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			r.tr.violate("writes did not stop within %v after the cluster converged", converge)
			return false
		}
	}
}

// leaderSettled reports whether, in a run with leader election, a host
// that is up and not partitioned has held the Lease for at least settle: a
// host that has just taken over catches up (statuses, events) as it should,
// and the quiet window must not start before it has. A run of one host
// has nothing to wait for.
func (r *run) leaderSettled() bool {
	if len(r.hosts) < 2 {
		return true
	}
	r.supervise() // a host that exited is started again, or no one may ever lead
	i, acquired, ok := r.holder()
	return ok && !acquired.IsZero() && !r.hosts[i].Exited() && !r.partitioned[i] && time.Now().After(r.downUntil[i]) &&
		time.Since(acquired) >= settle
}

// eventsPending names each running host with events still to send
// (kubeplug_events_pending above 0, or no answer from its metrics), ""
// when none has: after an outage client-go's broadcaster sends what it held
// back one event after the other, waiting up to 10 s after each failure,
// which is catching up, not a write loop, and longer than settle.
func (r *run) eventsPending() string {
	var out []string
	for _, h := range r.hosts {
		if h.Exited() {
			continue
		}
		m, err := h.Scrape()
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", h.Name, err))
			continue
		}
		f, ok := m["kubeplug_events_pending"]
		if !ok || len(f.Metric) != 1 {
			out = append(out, h.Name+": no kubeplug_events_pending")
			continue
		}
		if n := f.Metric[0].GetGauge().GetValue(); n > 0 {
			out = append(out, fmt.Sprintf("%s: %v", h.Name, n))
		}
	}
	return strings.Join(out, ", ")
}

// quietWindow waits for the cluster to settle (awaitQuiet), then counts the
// writes over the quiet window: any write by a host, or by a writer it
// cannot name, is a violation. A window whose writes all come from others
// (kube-controller-manager catching up from a stale informer after an API
// server restart, its events aggregated each time it retries) is logged,
// counted apart, and tried again, within the convergence bound: writes that
// stop are catching up; writes that do not are a violation whoever makes
// them. It returns the writes of the last window and how many windows were
// tried again.
func (r *run) quietWindow() (writes, retried int) {
	deadline := time.Now().Add(converge)
	for {
		if !r.awaitQuiet() {
			return 0, retried
		}
		ws := r.windowWrites(quiet)
		hosts := slices.ContainsFunc(ws, byHost)
		switch {
		case len(ws) == 0:
			return 0, retried
		case hosts:
			r.tr.violate("%d writes in the %v after the cluster converged, with the load stopped", len(ws), quiet)
			return len(ws), retried
		case time.Now().After(deadline):
			r.tr.violate("writes by others than kubeplug did not stop within %v after the cluster converged: %d in the last %v", converge, len(ws), quiet)
			return len(ws), retried
		}
		r.logf("all %d writes in the window by others than kubeplug: waiting for them to stop", len(ws))
		retried++
	}
}

// byHost reports whether a write, as writeWatch describes it, was made by
// a host (field manager kubeplug) or by a writer the object does not name.
func byHost(desc string) bool {
	i := strings.Index(desc, " (")
	if i < 0 {
		return true
	}
	j := strings.IndexByte(desc[i:], ')')
	return j < 0 || desc[i+2:i+j] == actions.FieldManager
}

// windowWrites watches the run's objects for window and returns the
// writes, logged.
func (r *run) windowWrites(window time.Duration) []string {
	writes, err := countFor(r.ctx, r.w.dyn, r.ns, window)
	if err != nil {
		writes = []string{err.Error()}
	}
	if len(writes) > 0 {
		r.logf("writes in %v: %s", window, strings.Join(writes, "; "))
	}
	return writes
}

// countWrites counts the changes of the run's objects over the quiet
// window (writeWatch): claims, pods, sets, VolumeClaimUpdates and events of
// the namespace, and the volumes of its claims. Leases are left out: a
// leader renews its Lease by writing it, by design. Informers that do not
// list count as a write: a window not watched is not a quiet one.
func (r *run) countWrites(window time.Duration) int {
	return len(r.windowWrites(window))
}
