package templateupdate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/e2e/internal/setctl"
)

// Scenarios of issue 23: where the module once departed from KEP-4650, each
// quoting the sentence it now follows. TestTemplateUpdate runs them.

// Reasons issue 23 adds.
const (
	reasonClaimNeedsRecreation = "ClaimNeedsRecreation"
	reasonWaitingReplicaReady  = "WaitingForReplicaReady"
	reasonBlocked              = "Blocked"
)

// recoverFailedExpansion: "Note that decrease the size can help recover
// from a failed expansion". The resizer finds replica 1's expansion to 10Gi
// infeasible; the user lowers the template to 2Gi; kubeplug lowers the
// request it set to 2Gi, which kube-apiserver accepts while it stays above
// status.capacity (RecoverVolumeExpansionFailure), the resizer grows the
// volume to 2Gi, and the update goes on to the end.
func recoverFailedExpansion(t *testing.T, w *world) {
	e := newEnv(t, w, setOptions{replicas: 2})
	e.r.Fail(e.ns, claimName(1), "volume quota exceeded")
	e.applyVCU(vcuInPlace, vcuAsync, vcuTemplate{size: "10Gi"})
	e.awaitVCU("blocked on the failed expansion", func(v *vcu) bool { return v.is(condBlocked, metav1.ConditionTrue, reasonClaimUpdateFailed) })
	c := e.claim(1)
	if request(c) != "10Gi" || c.Annotations[abi.AnnotationAppliedStorage] != "10Gi" {
		t.Fatalf("claim %s requests %s, record %q: want kubeplug's 10Gi, recorded", c.Name, request(c), c.Annotations[abi.AnnotationAppliedStorage])
	}

	e.setVCUSize("2Gi")
	v := e.awaitVCU("the update done", func(v *vcu) bool {
		return v.is(condProgressing, metav1.ConditionFalse, reasonComplete) && v.template().CompatibleReplicas == 2
	})
	if !v.is(condBlocked, metav1.ConditionFalse, "") {
		t.Errorf("Blocked %+v, want False", v.condition(condBlocked))
	}
	for _, ord := range []int32{0, 1} {
		if c := e.claim(ord); request(c) != "2Gi" || capacity(c) != "2Gi" {
			t.Errorf("claim %s requests %s, capacity %s: want 2Gi", c.Name, request(c), capacity(c))
		}
	}
	if c := e.claim(1); c.Status.AllocatedResourceStatuses[corev1.ResourceStorage] != "" {
		t.Errorf("claim %s still reports %s", c.Name, c.Status.AllocatedResourceStatuses[corev1.ResourceStorage])
	}
	if got := e.r.Resized(); !slices.Contains(got, e.ns+"/"+claimName(1)+"=2Gi") {
		t.Errorf("resizes %v, want %s grown to 2Gi", got, claimName(1))
	}
}

// unavailableStopsTheWalk (issue 36): "we update the PVC whenever we would
// re-create the Pod", and kube-controller-manager 1.37 re-creates no pod of
// an OrderedReady set while any replica is unavailable (processReplica stops
// at it). Pod web-0, below the walk, is not Ready: no claim is grown, and
// Progressing names web-0; once it is Ready again the update runs to the
// end, one replica at a time.
func unavailableStopsTheWalk(t *testing.T, w *world) {
	e := newEnv(t, w, setOptions{replicas: 3, orderedReady: true})
	release := w.kl.HoldUnready(e.ns, setctl.PodName(setName, 0))
	defer release()
	await(t, "pod web-0 not Ready", func() (bool, error) { return !podReady(e.pod(0)), nil }, func() string { return fmt.Sprintf("%+v", e.pod(0).Status.Conditions) })
	e.applyVCU(vcuInPlace, vcuAsync, vcuTemplate{size: "2Gi"})
	v := e.awaitVCU("waiting for replica 0", func(v *vcu) bool {
		return v.is(condProgressing, metav1.ConditionTrue, reasonWaitingReplicaReady) && v.observed()
	})
	if msg := v.condition(condProgressing).Message; !strings.Contains(msg, setctl.PodName(setName, 0)) {
		t.Errorf("Progressing message %q does not name the replica", msg)
	}
	// The module decided to wait in a reconcile that saw web-0 not Ready:
	// it grew nothing.
	e.assertUntouched(expandable, "1Gi", 0, 1, 2)

	release()
	e.awaitVCU("the update done", func(v *vcu) bool {
		return v.is(condProgressing, metav1.ConditionFalse, reasonComplete) && v.template().CompatibleReplicas == 3
	})
	h := e.rec.history()
	if patch, resized := first(h, "patch "+claimName(1)+" 2Gi"), first(h, "resize "+claimName(2)+" 2Gi"); patch == 0 || resized == 0 || patch < resized {
		t.Errorf("claim %s grown at %d, %s resized at %d: want both, one replica at a time:%s", claimName(1), patch, claimName(2), resized, format(h))
	}
}

// lockStepOnDelete: LockStep with volumeClaimUpdateStrategy OnDelete must
// "wait for the user to delete/update the old PVC manually" and "Provide
// accurate status and error messages to users". Blocked names the claim and
// the pod to delete, as ImmutableFieldChanged does under InPlace, while
// Progressing stays Unknown, so that `kubectl wait
// --for=condition=Progressing=False` returns only at the end; the user
// recreates each replica in turn, and the hold ends where it began.
func lockStepOnDelete(t *testing.T, w *world) {
	e := newEnv(t, w, setOptions{replicas: 2})
	e.applyVCU(vcuOnDelete, vcuLockStep, vcuTemplate{size: "2Gi"})
	for _, ord := range []int32{1, 0} {
		v := e.awaitVCU(fmt.Sprintf("blocked on replica %d", ord), func(v *vcu) bool {
			c := v.condition(condBlocked)
			return c != nil && c.Status == metav1.ConditionTrue && c.Reason == reasonClaimNeedsRecreation && strings.Contains(c.Message, claimName(ord))
		})
		if msg := v.condition(condBlocked).Message; !strings.Contains(msg, "pod "+setctl.PodName(setName, ord)) || !strings.Contains(msg, "delete") {
			t.Errorf("Blocked message %q does not say to delete pod %s", msg, setctl.PodName(setName, ord))
		}
		if !v.is(condProgressing, metav1.ConditionUnknown, reasonBlocked) {
			t.Errorf("Progressing %+v, want Unknown %s while the update waits for the user", v.condition(condProgressing), reasonBlocked)
		}
		if h := v.Status.HeldPartition; h == nil || *h != ord+1 {
			t.Errorf("heldPartition %v, want %d", fmtPtr(h), ord+1)
		}
		e.awaitEvent(kindVCU, vcuName, corev1.EventTypeWarning, reasonClaimNeedsRecreation, claimName(ord))
		if c := e.replaceReplica(ord, 2); request(c) != "2Gi" {
			t.Errorf("recreated claim %s requests %s, want the template's 2Gi", c.Name, request(c))
		}
	}
	v := e.awaitVCU("the update done", func(v *vcu) bool {
		return v.is(condProgressing, metav1.ConditionFalse, reasonComplete) && v.Status.HeldPartition == nil
	})
	if !v.is(condBlocked, metav1.ConditionFalse, "") {
		t.Errorf("Blocked %+v, want False", v.condition(condBlocked))
	}
	if p := partitionOf(e.set()); p != 0 {
		t.Errorf("partition %d at the end, want the user's 0", p)
	}
}

// setVCUSize changes the size the VolumeClaimUpdate's template asks for, as
// a user editing it would.
func (e *env) setVCUSize(size string) {
	e.t.Helper()
	u, err := e.dyn.Resource(vcuGVR).Namespace(e.ns).Get(e.ctx, vcuName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	templates := u.Object["spec"].(map[string]any)["volumeClaimTemplates"].([]any)
	templates[0].(map[string]any)["spec"].(map[string]any)["resources"] = map[string]any{"requests": map[string]any{"storage": size}}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": u.GetResourceVersion()},
		"spec":     map[string]any{"volumeClaimTemplates": templates},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.dyn.Resource(vcuGVR).Namespace(e.ns).Patch(e.ctx, vcuName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
