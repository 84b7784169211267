package templateupdate

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/e2e/internal/setctl"
)

// Scenarios of issue 36's hold-out cases. TestTemplateUpdate runs them.

// deletedMidLockStep (item 3): a VolumeClaimUpdate deleted while LockStep
// holds the partition must not leave the set held for good. The user's
// partition is 1; the update needs the user (volumeClaimUpdateStrategy
// OnDelete and a larger template: replica 2's claim must be recreated), so
// the module holds the set at 3 and a pod template change rolls no pod.
// The user deletes the VolumeClaimUpdate instead: the module finds the
// record of the hold on the set, gives the partition back to 1 and removes
// the record, and kube-controller-manager rolls pods 2 and 1 to the new
// revision, leaving pod 0 below the user's partition.
func deletedMidLockStep(t *testing.T, w *world) {
	e := newEnv(t, w, setOptions{replicas: 3, partition: ptr.To[int32](1)})
	e.applyVCU(vcuOnDelete, vcuLockStep, vcuTemplate{size: "2Gi"})
	e.awaitVCU("the partition held for replica 2", func(v *vcu) bool {
		return v.is(condBlocked, metav1.ConditionTrue, reasonClaimNeedsRecreation) && v.Status.HeldPartition != nil && *v.Status.HeldPartition == 3
	})
	await(t, "the hold and its record on the set", func() (bool, error) {
		s := e.set()
		return partitionOf(s) == 3 && s.Annotations[abi.AnnotationHeldPartition] == "3" && s.Annotations[abi.AnnotationUserPartition] == "1", nil
	}, func() string { return fmt.Sprintf("%+v %v", e.set().Spec.UpdateStrategy, e.set().Annotations) })
	e.changePodTemplate()
	await(t, "kube-controller-manager sees the new revision and rolls no pod", func() (bool, error) {
		s := e.set()
		return s.Status.ObservedGeneration == s.Generation && s.Status.UpdateRevision != s.Status.CurrentRevision && s.Status.UpdatedReplicas == 0, nil
	}, func() string { return fmt.Sprintf("%+v", e.set().Status) })

	if err := e.dyn.Resource(vcuGVR).Namespace(e.ns).Delete(e.ctx, vcuName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.dyn.Resource(vcuGVR).Namespace(e.ns).Get(e.ctx, vcuName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("VolumeClaimUpdate still there after its deletion (%v): nothing may hold it", err)
	}
	e.awaitRollout(3, 2)
	s := e.set()
	if p := partitionOf(s); p != 1 {
		t.Errorf("partition %d, want the user's 1", p)
	}
	for _, k := range []string{abi.AnnotationHeldPartition, abi.AnnotationUserPartition} {
		if v, ok := s.Annotations[k]; ok {
			t.Errorf("annotation %s=%q left on the set after the hold ended", k, v)
		}
	}
	for ord := int32(0); ord < 3; ord++ {
		want := s.Status.UpdateRevision
		if ord < 1 {
			want = s.Status.CurrentRevision
		}
		if got := e.pod(ord).Labels["controller-revision-hash"]; got != want {
			t.Errorf("pod %s at revision %s, want %s", setctl.PodName(setName, ord), got, want)
		}
	}
	e.awaitEvent("StatefulSet", setName, corev1.EventTypeNormal, reasonPartitionReleased, "the VolumeClaimUpdate that held it is gone")
	e.assertUntouched(expandable, "1Gi", 0, 1, 2)
}

// parallelUnavailableFirst (item 4): under Parallel kube-controller-manager
// 1.37 spends maxUnavailable on the unavailable replicas first: it re-creates
// the old pod that is not Ready, and no other while that one is unavailable.
// So the module grows the claim of web-0, which is not Ready, before any
// other, and replicas 2 and 1 wait until web-0 is available again.
func parallelUnavailableFirst(t *testing.T, w *world) {
	e := newEnv(t, w, setOptions{replicas: 3})
	release := w.kl.HoldUnready(e.ns, setctl.PodName(setName, 0))
	defer release()
	await(t, "pod web-0 not Ready", func() (bool, error) { return !podReady(e.pod(0)), nil }, func() string { return fmt.Sprintf("%+v", e.pod(0).Status.Conditions) })
	e.applyVCU(vcuInPlace, vcuAsync, vcuTemplate{size: "2Gi"})
	e.awaitCapacity(0, "2Gi")
	v := e.awaitVCU("waiting for replica 0", func(v *vcu) bool {
		return v.is(condProgressing, metav1.ConditionTrue, reasonWaitingReplicaReady) && v.template().CompatibleReplicas == 1
	})
	if msg := v.condition(condProgressing).Message; !strings.Contains(msg, setctl.PodName(setName, 0)) {
		t.Errorf("Progressing message %q does not name web-0", msg)
	}
	e.assertUntouched(expandable, "1Gi", 1, 2)

	release()
	e.awaitVCU("the update done", func(v *vcu) bool {
		return v.is(condProgressing, metav1.ConditionFalse, reasonComplete) && v.template().CompatibleReplicas == 3
	})
}
