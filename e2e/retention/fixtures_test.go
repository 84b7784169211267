package retention

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/kubeplug/kubeplug/e2e/internal/kubelet"
	"github.com/kubeplug/kubeplug/e2e/internal/setctl"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

const (
	// setName and template name the StatefulSet of every scenario and its
	// one claim template: the claims are data-web-0 and data-web-1.
	setName  = "web"
	template = "data"
	// testAgent is the user agent, hence the field manager, of the test's
	// own writes, so that they are not taken for kube-controller-manager's
	// (whose field manager is the test binary's name: it runs in this
	// process).
	testAgent = "kubeplug-e2e-test"
)

// kcmManager is kube-controller-manager's field manager here: the API server
// takes it from the user agent, which client-go builds from the name of the
// running binary, this test binary.
var kcmManager = strings.SplitN(rest.DefaultKubernetesUserAgent(), "/", 2)[0]

func client(t testing.TB) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(cp.Config)
	cfg.UserAgent = testAgent
	cfg.QPS, cfg.Burst = -1, 0 // no client-side throttling: many scenarios share this client's limits otherwise
	return kubernetes.NewForConfigOrDie(cfg)
}

// phase is where a claim's replica stands, which decides the references
// the policy gives it.
type phase int

const (
	inRange   phase = iota // its ordinal is below replicas
	condemned              // scaled down, its pod not yet deleted
	orphaned               // its set was deleted with propagation Orphan
)

// target is the shape of the references (refsShape) the policy gives the
// claim of ordinal in phase.
func target(p setctl.Policy, ordinal int32, ph phase) string {
	if ph == orphaned {
		return "none"
	}
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: setName}, Spec: appsv1.StatefulSetSpec{PersistentVolumeClaimRetentionPolicy: p.Spec()}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: setctl.PodName(setName, ordinal)}}
	return refsShape(setctl.Owners(set, pod, ph == condemned))
}

// mode is how a scenario's set manages its pods, and whether they run.
type mode int

const (
	// parallel: podManagementPolicy Parallel and no node. The pods stay
	// Pending and unscheduled, and kube-apiserver deletes them at once.
	parallel mode = iota
	// ordered: podManagementPolicy OrderedReady, and the kubelet stand-in
	// (internal/kubelet) binds the pods, makes them Running and Ready and
	// completes their graceful deletions, as on a real cluster: the set
	// creates, deletes and replaces its pods one at a time.
	ordered
)

func (m mode) String() string { return [...]string{"parallel", "ordered"}[m] }

// env is one scenario's world: a namespace, the recorder of its claims and
// the StatefulSet web with its policy and its mode.
type env struct {
	t      *testing.T
	ctx    context.Context
	c      kubernetes.Interface
	ns     string
	policy setctl.Policy
	mode   mode
	// kl runs the pods in mode ordered.
	kl  *kubelet.Kubelet
	rec *recorder
}

// newEnv creates the namespace, starts recording its claims, creates the
// set with two replicas and waits until kube-controller-manager has made
// both pods and both claims and the claims carry their in-range references.
// In mode ordered, kl runs the namespace's pods.
func newEnv(t *testing.T, p setctl.Policy, m mode, kl *kubelet.Kubelet) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), c: client(t), policy: p, mode: m}
	e.ns = testenv.Namespace(t, e.c)
	e.rec = record(t, e.ns)
	set := setctl.NewStatefulSet(e.ns, setName, template, p, 2)
	if m == ordered {
		e.kl = kl
		kl.Serve(e.ns)
		set.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if _, err := e.c.AppsV1().StatefulSets(e.ns).Create(e.ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.awaitPods(2)
	for ord := range int32(2) {
		e.awaitClaim(ord, present, inRange)
	}
	return e
}

func (e *env) set() *appsv1.StatefulSet {
	e.t.Helper()
	s, err := e.c.AppsV1().StatefulSets(e.ns).Get(e.ctx, setName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) updateSet(change func(*appsv1.StatefulSet)) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := e.c.AppsV1().StatefulSets(e.ns).Get(e.ctx, setName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(s)
		_, err = e.c.AppsV1().StatefulSets(e.ns).Update(e.ctx, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) scale(n int32) { e.updateSet(func(s *appsv1.StatefulSet) { s.Spec.Replicas = &n }) }

func (e *env) pod(ordinal int32) *corev1.Pod {
	e.t.Helper()
	p, err := e.c.CoreV1().Pods(e.ns).Get(e.ctx, setctl.PodName(setName, ordinal), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) claim(ordinal int32) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	c, err := e.c.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, setctl.ClaimName(template, setName, ordinal), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) deletePod(ordinal int32) {
	e.t.Helper()
	if err := e.c.CoreV1().Pods(e.ns).Delete(e.ctx, setctl.PodName(setName, ordinal), metav1.DeleteOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// awaitPods waits until kube-controller-manager is done with spec.replicas
// = n: it has observed the set's generation, and exactly the pods 0..n-1
// exist, none terminating; in mode ordered, all of them Running and Ready.
func (e *env) awaitPods(n int32) {
	e.t.Helper()
	testenv.Eventually(e.t, testenv.Timeout, fmt.Sprintf("%d pods of %s/%s", n, e.ns, setName), func() (bool, error) {
		s := e.set()
		if s.Status.ObservedGeneration != s.Generation || s.Status.Replicas != n {
			return false, nil
		}
		if e.mode == ordered && s.Status.ReadyReplicas != n {
			return false, nil
		}
		pods, err := e.c.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: "app=" + setName})
		if err != nil {
			return false, err
		}
		if int32(len(pods.Items)) != n {
			return false, nil
		}
		for ord := range n {
			p := e.pod(ord)
			if p == nil || p.DeletionTimestamp != nil || e.mode == ordered && !kubelet.RunningAndReady(p) {
				return false, nil
			}
		}
		return true, nil
	})
}

// awaitObserved waits until kube-controller-manager has synced the set's
// current generation.
func (e *env) awaitObserved() {
	e.t.Helper()
	testenv.Eventually(e.t, testenv.Timeout, fmt.Sprintf("%s/%s observed", e.ns, setName), func() (bool, error) {
		s := e.set()
		return s.Status.ObservedGeneration == s.Generation, nil
	})
}

// outcome is what becomes of a claim.
type outcome int

const (
	present outcome = iota // it exists, with the references of its phase
	gone                   // no claim of that name exists
	either                 // a race the scenario documents decides
)

func (o outcome) String() string { return [...]string{"present", "gone", "present or gone"}[o] }

// awaitClaim waits until the claim of ordinal is as o says. Present means:
// not being deleted, its references of the shape the policy gives in phase
// ph, each naming a StatefulSet or Pod that exists with that UID, so that
// neither controller nor the garbage collector has anything left to do
// with it. Either accepts gone, or present with its in-range references.
func (e *env) awaitClaim(ordinal int32, o outcome, ph phase) {
	e.t.Helper()
	name := setctl.ClaimName(template, setName, ordinal)
	want := target(e.policy, ordinal, ph)
	last := "not looked at yet"
	defer func() {
		if e.t.Failed() {
			e.t.Logf("claim %s/%s last seen: %s", e.ns, name, last)
		}
	}()
	testenv.Eventually(e.t, testenv.Timeout, fmt.Sprintf("claim %s/%s %s (%s)", e.ns, name, o, want), func() (bool, error) {
		c := e.claim(ordinal)
		if c == nil {
			last = "gone"
			return o != present, nil
		}
		last = refsShape(c.OwnerReferences)
		if o == gone || c.DeletionTimestamp != nil || last != want {
			return false, nil
		}
		return e.ownersExist(c.OwnerReferences), nil
	})
}

// ownersExist reports whether every reference names a live object of that
// UID.
func (e *env) ownersExist(refs []metav1.OwnerReference) bool {
	e.t.Helper()
	for _, r := range refs {
		var uid string
		switch r.Kind {
		case "StatefulSet":
			s, err := e.c.AppsV1().StatefulSets(e.ns).Get(e.ctx, r.Name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			uid = string(s.UID)
		case "Pod":
			p, err := e.c.CoreV1().Pods(e.ns).Get(e.ctx, r.Name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			uid = string(p.UID)
		default:
			return false
		}
		if uid != string(r.UID) {
			return false
		}
	}
	return true
}
