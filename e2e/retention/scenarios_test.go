package retention

import (
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/e2e/internal/setctl"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// scenario is one item of KEP-1847's test plan, played on a StatefulSet of
// two replicas whose claims already carry their in-range references.
type scenario struct {
	name string
	// modes are the modes it runs in; nil: every mode.
	modes []mode
	// run does the scenario's steps and waits until kube-controller-manager
	// is done with them.
	run func(e *env)
	// want is what becomes of the claim of each ordinal under p.
	want func(p setctl.Policy) [2]outcome
	// end is the phase whose references a claim that survives ends with.
	end phase
	// phases is what the first claim of each ordinal goes through; they
	// bound its changes and say which references it may carry.
	phases [2][]phase
	// reborn is what a claim created during the scenario goes through;
	// nil: it is in range throughout.
	reborn [2][]phase
}

var scenarios = []scenario{
	{
		name: "scale-down",
		run: func(e *env) {
			e.scale(1)
			e.awaitPods(1)
		},
		want:   func(p setctl.Policy) [2]outcome { return [2]outcome{present, deletedWhen(p.WhenScaled)} },
		phases: [2][]phase{{inRange}, {inRange, condemned}},
	},
	{
		name: "scale-down-and-up",
		run: func(e *env) {
			e.scale(1)
			e.awaitPods(1)
			e.awaitClaim(1, deletedWhen(e.policy.WhenScaled), inRange)
			e.scale(2)
			e.awaitPods(2)
		},
		want: func(setctl.Policy) [2]outcome { return [2]outcome{present, present} },
		// Under whenScaled Delete the first data-web-1 is gone before the
		// scale-up; under Retain it is back in range with the references
		// it had when condemned.
		phases: [2][]phase{{inRange}, {inRange, condemned}},
	},
	{
		name: "delete-set",
		run: func(e *env) {
			if err := e.c.AppsV1().StatefulSets(e.ns).Delete(e.ctx, setName, metav1.DeleteOptions{}); err != nil {
				e.t.Fatal(err)
			}
			e.awaitNoSetNorPods()
		},
		want: func(p setctl.Policy) [2]outcome {
			return [2]outcome{deletedWhen(p.WhenDeleted), deletedWhen(p.WhenDeleted)}
		},
		phases: [2][]phase{{inRange}, {inRange}},
	},
	{
		name: "delete-one-pod",
		run: func(e *env) {
			old := e.podUIDs()
			e.deletePod(1)
			e.awaitReplaced(old, 1)
		},
		want:   func(setctl.Policy) [2]outcome { return [2]outcome{present, present} },
		phases: [2][]phase{{inRange}, {inRange}},
	},
	{
		name: "delete-all-pods",
		run: func(e *env) {
			old := e.podUIDs()
			err := e.c.CoreV1().Pods(e.ns).DeleteCollection(e.ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=" + setName})
			if err != nil {
				e.t.Fatal(err)
			}
			e.awaitReplaced(old, 0, 1)
		},
		want:   func(setctl.Policy) [2]outcome { return [2]outcome{present, present} },
		phases: [2][]phase{{inRange}, {inRange}},
	},
	{
		// The pod is gone before the scale-down is seen, or recreated
		// first and then condemned: which one, the order in which
		// kube-controller-manager (and the host) see the two changes
		// decides. Upstream reaches a condemned claim only through its
		// pod, so in the first case the claim keeps its in-range
		// references even under whenScaled Delete. With no node the pod
		// is deleted at once, so either can happen.
		name:  "delete-pod-then-scale-down",
		modes: []mode{parallel},
		run: func(e *env) {
			e.deletePod(1)
			e.scale(1)
			e.awaitPods(1)
		},
		want: func(p setctl.Policy) [2]outcome {
			if p.WhenScaled == setctl.Delete {
				return [2]outcome{present, either}
			}
			return [2]outcome{present, present}
		},
		phases: [2][]phase{{inRange}, {inRange, condemned}},
		// When the claim goes before the scale-down is seen (a pod
		// reference written on a view where the old pod still existed),
		// kube-controller-manager may create it again for the pod it
		// recreated, and the new claim is then condemned in its turn.
		reborn: [2][]phase{nil, {inRange, condemned}},
	},
	{
		// On a node the deleted pod terminates while its containers stop,
		// and the scale-down comes meanwhile: the kubelet stand-in holds
		// the termination until kube-controller-manager has seen the
		// scale-down and, under whenScaled Delete, the claim points at the
		// terminating pod, now condemned. Both writers reach it through
		// that pod, and the garbage collector deletes it after the pod:
		// one outcome, no race. (Were the pod gone before either writer
		// saw the scale-down, the claim would keep its in-range references,
		// as in mode parallel.)
		name:  "delete-pod-then-scale-down",
		modes: []mode{ordered},
		run: func(e *env) {
			release := e.kl.HoldTerminations(e.ns)
			defer release()
			e.deletePod(1)
			e.scale(1)
			e.awaitObserved()
			e.awaitClaim(1, present, condemned)
			release()
			e.awaitPods(1)
		},
		want: func(p setctl.Policy) [2]outcome {
			return [2]outcome{present, deletedWhen(p.WhenScaled)}
		},
		phases: [2][]phase{{inRange}, {inRange, condemned}},
	},
	{
		// With Parallel, kube-controller-manager replaces at once every
		// pod that is not available, which with no kubelet is all of them.
		name:  "rolling-update",
		modes: []mode{parallel},
		run: func(e *env) {
			old, rev := e.podUIDs(), e.set().Status.UpdateRevision
			e.changeTemplate()
			e.awaitReplaced(old, 0, 1)
			testenv.Eventually(e.t, testenv.Timeout, "pods at the update revision", func() (bool, error) {
				s := e.set()
				if s.Status.UpdateRevision == rev {
					return false, nil
				}
				for ord := range int32(2) {
					if p := e.pod(ord); p == nil || p.Labels[appsv1.ControllerRevisionHashLabelKey] != s.Status.UpdateRevision {
						return false, nil
					}
				}
				return true, nil
			})
		},
		want:   func(setctl.Policy) [2]outcome { return [2]outcome{present, present} },
		phases: [2][]phase{{inRange}, {inRange}},
	},
	{
		// With OrderedReady and running pods, a real rolling update: one
		// pod at a time, the highest ordinal first, each replaced only
		// once the one before is Running and Ready (see rollOut).
		name:   "rolling-update",
		modes:  []mode{ordered},
		run:    (*env).rollOut,
		want:   func(setctl.Policy) [2]outcome { return [2]outcome{present, present} },
		phases: [2][]phase{{inRange}, {inRange}},
	},
	{
		name: "delete-set-orphan",
		run: func(e *env) {
			orphan := metav1.DeletePropagationOrphan
			if err := e.c.AppsV1().StatefulSets(e.ns).Delete(e.ctx, setName, metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
				e.t.Fatal(err)
			}
			testenv.Eventually(e.t, testenv.Timeout, "set gone, pods orphaned", func() (bool, error) {
				if _, err := e.c.AppsV1().StatefulSets(e.ns).Get(e.ctx, setName, metav1.GetOptions{}); err == nil {
					return false, nil
				}
				for ord := range int32(2) {
					if p := e.pod(ord); p == nil || len(p.OwnerReferences) > 0 {
						return false, nil
					}
				}
				return true, nil
			})
		},
		want:   func(setctl.Policy) [2]outcome { return [2]outcome{present, present} },
		end:    orphaned,
		phases: [2][]phase{{inRange, orphaned}, {inRange, orphaned}},
	},
}

// runsIn reports whether sc runs in mode m.
func (sc scenario) runsIn(m mode) bool { return sc.modes == nil || slices.Contains(sc.modes, m) }

// deletedWhen is gone under Delete and present under Retain.
func deletedWhen(v appsv1.PersistentVolumeClaimRetentionPolicyType) outcome {
	if v == setctl.Delete {
		return gone
	}
	return present
}

func (e *env) podUIDs() [2]types.UID {
	e.t.Helper()
	var out [2]types.UID
	for ord := range int32(2) {
		if p := e.pod(ord); p != nil {
			out[ord] = p.UID
		}
	}
	return out
}

// awaitReplaced waits until the pods of ordinals exist again, created
// anew, and kube-controller-manager is done.
func (e *env) awaitReplaced(old [2]types.UID, ordinals ...int32) {
	e.t.Helper()
	testenv.Eventually(e.t, testenv.Timeout, fmt.Sprintf("pods %v of %s replaced", ordinals, e.ns), func() (bool, error) {
		for _, ord := range ordinals {
			if p := e.pod(ord); p == nil || p.UID == old[ord] {
				return false, nil
			}
		}
		return true, nil
	})
	e.awaitPods(2)
}

// awaitNoSetNorPods waits until the set and its pods are gone.
func (e *env) awaitNoSetNorPods() {
	e.t.Helper()
	testenv.Eventually(e.t, testenv.Timeout, "set and pods gone", func() (bool, error) {
		if _, err := e.c.AppsV1().StatefulSets(e.ns).Get(e.ctx, setName, metav1.GetOptions{}); err == nil {
			return false, nil
		}
		pods, err := e.c.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: "app=" + setName})
		return err == nil && len(pods.Items) == 0, err
	})
}
