package templateupdate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/e2e/internal/resizer"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// Reasons the module writes (contract of issue 13).
const (
	reasonClaimUpdating      = "ClaimUpdating"
	reasonPartitionHeld      = "PartitionHeld"
	reasonPartitionReleased  = "PartitionReleased"
	reasonClassNoExpansion   = "StorageClassDoesNotAllowExpansion"
	reasonClaimUpdateFailed  = "ClaimUpdateFailed"
	reasonComplete           = "Complete"
	reasonClaimsUpdating     = "ClaimsUpdating"
	reasonWaitingRecreation  = "WaitingForClaimRecreation"
	kindVCU                  = "VolumeClaimUpdate"
	condProgressing          = "Progressing"
	condBlocked              = "Blocked"
	vcuInPlace, vcuOnDelete  = "InPlace", "OnDelete"
	vcuLockStep, vcuAsync    = "LockStep", "Async"
	templateLabel, userLabel = "tier", "owner"
)

// TestTemplateUpdate plays the proposal's user stories and the issue's
// edge cases, each in its own namespace, all at once, against one host
// running templateupdate and retention.
func TestTemplateUpdate(t *testing.T) {
	w := startWorld(t)
	for _, sc := range []struct {
		name string
		run  func(t *testing.T, w *world)
	}{
		{"story1-inplace-lockstep", func(t *testing.T, w *world) { batchExpand(t, w, nil) }},
		{"story1-inplace-lockstep-partition-1", func(t *testing.T, w *world) { batchExpand(t, w, ptr.To[int32](1)) }},
		{"story2-ondelete-storage-class", changeClass},
		{"story4-ondelete-shrink", shrink},
		{"story5-ondelete-asymmetric", func(t *testing.T, w *world) { handTuned(t, w, vcuOnDelete) }},
		{"story5-inplace-async-hand-tuned", func(t *testing.T, w *world) { handTuned(t, w, vcuInPlace) }},
		{"scale-up-after-update", scaleUp},
		{"expansion-fails", expansionFails},
		{"class-without-expansion", classWithoutExpansion},
		{"manual-expansion-in-flight", manualExpansion},
		{"user-label-kept", userLabelKept},
		{"inplace-volume-attributes-class", attributesClass},
		{"retention-scale-down", retentionScaleDown},
		{"recover-failed-expansion", recoverFailedExpansion},
		{"unavailable-replica-stops-walk", unavailableStopsTheWalk},
		{"lockstep-ondelete-needs-user", lockStepOnDelete},
		{"vcu-deleted-mid-lockstep", deletedMidLockStep},
		{"parallel-unavailable-first", parallelUnavailableFirst},
	} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			sc.run(t, w)
		})
	}
}

// batchExpand is story 1: three replicas' volumes grown from 1Gi to 2Gi
// with InPlace and LockStep while the pod template changes. The module
// holds the partition; each replica's claim grows before its pod is rolled,
// highest ordinal first; replicas below the user's partition are touched
// by neither; the partition ends where the user had it.
func batchExpand(t *testing.T, w *world, partition *int32) {
	e := newEnv(t, w, setOptions{replicas: 3, partition: partition, delay: 2 * time.Second})
	u := ptr.Deref(partition, 0)
	e.applyVCU(vcuInPlace, vcuLockStep, vcuTemplate{class: expandable, size: "2Gi"})
	v := e.awaitVCU("a held partition", func(v *vcu) bool { return v.Status.HeldPartition != nil })
	if got := v.Status.UserPartition; !equalPtr(got, partition) {
		t.Errorf("status.userPartition %v, want the user's %v", fmtPtr(got), fmtPtr(partition))
	}
	// The status is written after the set (the set carries the hold's own
	// record): wait until the set has the partition the status says is
	// held (it moves down as replicas are done), so that the pod template
	// changes under the hold.
	await(t, "the hold on the set", func() (bool, error) {
		held := e.vcu().Status.HeldPartition
		return held == nil || partitionOf(e.set()) == *held, nil
	}, func() string { return fmt.Sprintf("%+v", e.set().Spec.UpdateStrategy) })
	templateRV := e.changePodTemplate()

	var released error
	v = e.awaitVCU("the update done", func(v *vcu) bool {
		if v.Status.HeldPartition != nil {
			return false
		}
		// The module returns the partition (and removes the set's record of
		// the hold) before it clears the status: read after the status, the
		// set must have the user's partition back. Nobody else changes it here; a module that takes its own
		// hold for the user's will never finish.
		s := e.set()
		if p := partitionOf(s); p != u {
			released = fmt.Errorf("the hold was released at partition %d, not the user's %d", p, u)
			return true
		}
		return v.is(condProgressing, metav1.ConditionFalse, "") && v.template().CompatibleReplicas == 3-u
	})
	if released != nil {
		t.Fatalf("%v; PartitionReleased events: %v", released, eventMessages(e.events("StatefulSet", setName, reasonPartitionReleased)))
	}
	e.awaitRollout(3, 3-u)
	s := e.set()
	if got := partitionOf(s); got != u {
		t.Errorf("partition %d at the end, want the user's %d", got, u)
	}
	if u == 0 && !v.is(condProgressing, metav1.ConditionFalse, reasonComplete) {
		t.Errorf("Progressing %+v, want False %s", v.condition(condProgressing), reasonComplete)
	}
	if !v.is(condBlocked, metav1.ConditionFalse, "") {
		t.Errorf("Blocked %+v, want False", v.condition(condBlocked))
	}
	if ts := v.template(); ts.UpdatingReplicas != 0 || !sameQuantity(ts.TotalCapacity, fmt.Sprintf("%dGi", 2*(3-u)+u)) {
		t.Errorf("template status %+v, want 0 updating and %dGi in all", ts, 2*(3-u)+u)
	}

	h := e.rec.history()
	defer func() {
		if t.Failed() {
			t.Logf("pod template changed at %s; history:%s", templateRV, format(h))
		}
	}()
	changed := mustInt(t, templateRV)
	for ord := int32(2); ord >= 0; ord-- {
		claim, pod := claimName(ord), fmt.Sprintf("%s-%d", setName, ord)
		patch, resize := first(h, "patch "+claim+" 2Gi"), first(h, "resize "+claim+" 2Gi")
		roll := first(h, "delete "+pod+" ")
		if ord < u {
			if patch != 0 || roll != 0 {
				t.Errorf("replica %d, below the user's partition %d, was touched (claim patched at %d, pod deleted at %d)", ord, u, patch, roll)
			}
			if c := e.claim(ord); request(c) != "1Gi" {
				t.Errorf("claim %s requests %s, want 1Gi: it is below the partition", claim, request(c))
			}
			continue
		}
		if patch == 0 || resize == 0 || roll == 0 {
			t.Errorf("replica %d: claim patched at %d, resized at %d, pod deleted at %d: want all three", ord, patch, resize, roll)
			continue
		}
		if !(patch < resize && resize < roll) {
			t.Errorf("replica %d: claim patched at %d, resized at %d, pod deleted at %d: want its claim grown before its pod is rolled", ord, patch, resize, roll)
		}
		if ord == 2 {
			continue
		}
		// Highest ordinal first: the replica above was done before this
		// one's claim was touched; and, once the pod template had
		// changed, its pod was rolled (LockStep) before too.
		above := claimName(ord + 1)
		if prev := first(h, "resize "+above+" 2Gi"); prev == 0 || prev > patch {
			t.Errorf("claim %s patched at %d before %s was resized (%d): want highest ordinal first", claim, patch, above, prev)
		}
		if changed < patch {
			rolled := first(h, fmt.Sprintf("create %s-%d %s", setName, ord+1, s.Status.UpdateRevision))
			if rolled == 0 || rolled > patch {
				t.Errorf("claim %s patched at %d before pod %s-%d was rolled (%d): want LockStep to wait for it", claim, patch, setName, ord+1, rolled)
			}
		}
	}
	for ord := u; ord < 3; ord++ {
		e.awaitEvent("PersistentVolumeClaim", claimName(ord), corev1.EventTypeNormal, reasonClaimUpdating, "")
	}
	e.awaitEvent("StatefulSet", setName, corev1.EventTypeNormal, reasonPartitionHeld, "")
	e.awaitEvent("StatefulSet", setName, corev1.EventTypeNormal, reasonPartitionReleased, "")
	want := []string{}
	for ord := int32(2); ord >= u; ord-- {
		want = append(want, fmt.Sprintf("%s/%s=2Gi", e.ns, claimName(ord)))
	}
	if got := e.r.Resized(); !slices.Equal(got, want) {
		t.Errorf("resizes %v, want %v", got, want)
	}
}

// changeClass is story 2: a new storage class with OnDelete. Only the
// replica whose claim and pod the user deletes gets it, through the
// admission webhook on the claim's creation.
func changeClass(t *testing.T, w *world) {
	e := newEnv(t, w, setOptions{replicas: 3})
	e.applyVCU(vcuOnDelete, vcuAsync, vcuTemplate{class: fast, size: "1Gi"})
	e.awaitVCU("claims counted", func(v *vcu) bool { return v.template().CompatibleReplicas == 0 })
	c := e.replaceReplica(1, 3)
	if got := ptr.Deref(c.Spec.StorageClassName, ""); got != fast {
		t.Errorf("recreated claim %s of class %q, want %q", c.Name, got, fast)
	}
	e.assertUntouched(expandable, "1Gi", 0, 2)
	v := e.awaitVCU("the recreated claim counted", func(v *vcu) bool { return v.template().CompatibleReplicas == 1 })
	if !v.is(condProgressing, metav1.ConditionFalse, reasonWaitingRecreation) {
		t.Errorf("Progressing %+v, want False %s", v.condition(condProgressing), reasonWaitingRecreation)
	}
}

// shrink is story 4: a smaller request with OnDelete. The larger claims are
// compatible (capacity ≥ request) and counted overSized; the replica the
// user recreates gets the smaller request.
func shrink(t *testing.T, w *world) {
	e := newEnv(t, w, setOptions{replicas: 3, size: "2Gi"})
	e.applyVCU(vcuOnDelete, vcuAsync, vcuTemplate{size: "1Gi"})
	e.awaitVCU("claims counted", func(v *vcu) bool {
		ts := v.template()
		return ts.CompatibleReplicas == 3 && ts.OverSizedReplicas == 3
	})
	c := e.replaceReplica(1, 3)
	if request(c) != "1Gi" || capacity(c) != "1Gi" {
		t.Errorf("recreated claim %s requests %s, capacity %s: want 1Gi", c.Name, request(c), capacity(c))
	}
	e.assertUntouched(expandable, "2Gi", 0, 2)
	v := e.awaitVCU("the recreated claim counted", func(v *vcu) bool {
		ts := v.template()
		return ts.CompatibleReplicas == 3 && ts.OverSizedReplicas == 2 && sameQuantity(ts.TotalCapacity, "5Gi")
	})
	if !v.is(condProgressing, metav1.ConditionFalse, reasonComplete) {
		t.Errorf("Progressing %+v, want False %s", v.condition(condProgressing), reasonComplete)
	}
}

// handTuned is story 5, asymmetric replicas: claims a user tuned by hand,
// one larger (5Gi), one annotated, under a 2Gi template with Async. With
// OnDelete (the proposal's way: new replicas get the template, the
// controller does not interfere with existing ones) no claim is touched;
// with InPlace the larger is compatible and left alone and the others grow,
// the annotated one keeping its annotation. Either way the larger one is
// counted overSized, and no pod is rolled.
func handTuned(t *testing.T, w *world, update string) {
	e := newEnv(t, w, setOptions{replicas: 3})
	e.patchClaim(1, `{"spec":{"resources":{"requests":{"storage":"5Gi"}}}}`)
	e.awaitCapacity(1, "5Gi")
	e.patchClaim(2, `{"metadata":{"annotations":{"example.com/tuned":"by hand"}}}`)
	e.applyVCU(update, vcuAsync, vcuTemplate{size: "2Gi"})
	var v *vcu
	if update == vcuInPlace {
		v = e.awaitVCU("every claim compatible", func(v *vcu) bool {
			return v.is(condProgressing, metav1.ConditionFalse, reasonComplete) && v.template().CompatibleReplicas == 3
		})
		if ts := v.template(); ts.OverSizedReplicas != 1 || ts.UpdatingReplicas != 0 || !sameQuantity(ts.TotalCapacity, "9Gi") {
			t.Errorf("template status %+v, want 1 overSized, 0 updating, 9Gi in all", ts)
		}
		for _, ord := range []int32{0, 2} {
			if c := e.claim(ord); request(c) != "2Gi" || capacity(c) != "2Gi" {
				t.Errorf("claim %s requests %s, capacity %s: want 2Gi", c.Name, request(c), capacity(c))
			}
		}
	} else {
		v = e.awaitVCU("claims counted", func(v *vcu) bool { return len(v.Status.VolumeClaimTemplates) == 1 })
		if ts := v.template(); ts.CompatibleReplicas != 1 || ts.OverSizedReplicas != 1 || ts.UpdatingReplicas != 0 || !sameQuantity(ts.TotalCapacity, "7Gi") {
			t.Errorf("template status %+v, want 1 compatible (the larger), 1 overSized, 0 updating, 7Gi in all", ts)
		}
		if !v.is(condProgressing, metav1.ConditionFalse, reasonWaitingRecreation) {
			t.Errorf("Progressing %+v, want False %s", v.condition(condProgressing), reasonWaitingRecreation)
		}
		e.assertUntouched(expandable, "1Gi", 0, 2)
	}
	if c := e.claim(2); c.Annotations["example.com/tuned"] != "by hand" {
		t.Errorf("claim %s annotations %v: the user's was removed", c.Name, c.Annotations)
	}
	big := e.claim(1)
	if request(big) != "5Gi" || len(managed(t, big, kubeplugManager)) != 0 {
		t.Errorf("claim %s requests %s, kubeplug owns %v: want it left alone", big.Name, request(big), managed(t, big, kubeplugManager))
	}
	if evs := e.events("PersistentVolumeClaim", big.Name, reasonClaimUpdating); len(evs) != 0 {
		t.Errorf("%s events on %s, left alone: %v", reasonClaimUpdating, big.Name, evs)
	}
	for _, s := range e.rec.history() {
		if strings.HasPrefix(s.what, deleted+" ") {
			t.Errorf("a pod was rolled (%s): Async with an unchanged pod template rolls none", s.what)
		}
	}
}

// scaleUp: after an OnDelete update, the claim of a new replica has the new
// template, labels included; the old claims keep theirs.
func scaleUp(t *testing.T, w *world) {
	e := newEnv(t, w, setOptions{replicas: 2})
	e.applyVCU(vcuOnDelete, vcuAsync, vcuTemplate{size: "2Gi", labels: map[string]string{templateLabel: "gold"}})
	e.awaitVCU("claims counted", func(v *vcu) bool { return len(v.Status.VolumeClaimTemplates) == 1 })
	e.scale(3)
	e.awaitSet(3)
	c := e.claim(2)
	if request(c) != "2Gi" || capacity(c) != "2Gi" || c.Labels[templateLabel] != "gold" || c.Labels["app"] != setName {
		t.Errorf("new claim %s requests %s, capacity %s, labels %v: want 2Gi and the template's label beside the set's",
			c.Name, request(c), capacity(c), c.Labels)
	}
	e.assertUntouched(expandable, "1Gi", 0, 1)
	v := e.awaitVCU("the new claim counted", func(v *vcu) bool { return v.template().CompatibleReplicas == 1 })
	if !v.is(condProgressing, metav1.ConditionFalse, reasonWaitingRecreation) {
		t.Errorf("Progressing %+v, want False %s", v.condition(condProgressing), reasonWaitingRecreation)
	}
}

// expansionFails: the resizer fails the first replica's expansion. The
// update is blocked, says so in a condition and a Warning event, and no
// further replica's claim is touched.
func expansionFails(t *testing.T, w *world) {
	e := newEnv(t, w, setOptions{replicas: 3})
	e.r.Fail(e.ns, claimName(2), "volume quota exceeded")
	e.applyVCU(vcuInPlace, vcuAsync, vcuTemplate{size: "2Gi"})
	v := e.awaitVCU("blocked", func(v *vcu) bool { return v.is(condBlocked, metav1.ConditionTrue, reasonClaimUpdateFailed) })
	if c := v.condition(condBlocked); !strings.Contains(c.Message, claimName(2)) {
		t.Errorf("Blocked message %q does not name the claim %s", c.Message, claimName(2))
	}
	e.awaitEvent(kindVCU, vcuName, corev1.EventTypeWarning, reasonClaimUpdateFailed, "")
	c := e.claim(2)
	if c.Status.AllocatedResourceStatuses[corev1.ResourceStorage] != corev1.PersistentVolumeClaimControllerResizeInfeasible {
		t.Errorf("claim %s status %+v: want the resizer's failure", c.Name, c.Status)
	}
	e.assertUntouched(expandable, "1Gi", 0, 1)
	if got := e.r.Resized(); len(got) != 0 {
		t.Errorf("resizes %v, want none", got)
	}
}

// classWithoutExpansion: the claims' StorageClass does not allow expansion:
// the template's label is applied ("to the extent possible"), the growth the
// API server would refuse is not, and the update is blocked with a condition
// and an event; Progressing is Unknown, not False, while it needs the user.
func classWithoutExpansion(t *testing.T, w *world) {
	e := newEnv(t, w, setOptions{replicas: 2, class: fixed})
	e.applyVCU(vcuInPlace, vcuAsync, vcuTemplate{size: "2Gi", labels: map[string]string{templateLabel: "gold"}})
	v := e.awaitVCU("blocked", func(v *vcu) bool { return v.is(condBlocked, metav1.ConditionTrue, reasonClassNoExpansion) })
	if c := v.condition(condProgressing); c == nil || c.Status != metav1.ConditionUnknown {
		t.Errorf("Progressing %+v, want Unknown", c)
	}
	e.awaitEvent(kindVCU, vcuName, corev1.EventTypeWarning, reasonClassNoExpansion, "")
	await(t, "the template's label on "+claimName(1), func() (bool, error) { return e.claim(1).Labels[templateLabel] == "gold", nil },
		func() string { return fmt.Sprintf("%v", e.claim(1).Labels) })
	if c := e.claim(1); request(c) != "1Gi" || ptr.Deref(c.Spec.StorageClassName, "") != fixed {
		t.Errorf("claim %s of class %s requests %s: want %s, 1Gi", c.Name, ptr.Deref(c.Spec.StorageClassName, ""), request(c), fixed)
	}
	e.assertUntouched(fixed, "1Gi", 0)
}

// manualExpansion: a user's expansion to 3Gi is in flight (the resizer
// has not acted) when an InPlace template of 2Gi arrives: the module does
// not lower the request, and counts the claim as updating.
func manualExpansion(t *testing.T, w *world) {
	e := newEnv(t, w, setOptions{replicas: 1, delay: time.Hour})
	e.patchClaim(0, `{"spec":{"resources":{"requests":{"storage":"3Gi"}}}}`)
	e.applyVCU(vcuInPlace, vcuAsync, vcuTemplate{size: "2Gi"})
	v := e.awaitVCU("the claim counted updating", func(v *vcu) bool { return v.template().UpdatingReplicas == 1 })
	if !v.is(condProgressing, metav1.ConditionTrue, reasonClaimsUpdating) {
		t.Errorf("Progressing %+v, want True %s", v.condition(condProgressing), reasonClaimsUpdating)
	}
	c := e.claim(0)
	if request(c) != "3Gi" || capacity(c) != "1Gi" {
		t.Errorf("claim %s requests %s, capacity %s: want the user's 3Gi still in flight", c.Name, request(c), capacity(c))
	}
	for _, f := range managed(t, c, kubeplugManager) {
		if strings.Contains(f, "f:resources") {
			t.Errorf("kubeplug owns %s of %s: want the user's request left to the user", f, c.Name)
		}
	}
	if h := e.rec.history(); first(h, "patch "+c.Name+" 2Gi") != 0 {
		t.Errorf("claim %s was patched to 2Gi:%s", c.Name, format(h))
	}
}

// userLabelKept: an InPlace update that adds a label and grows the claims
// keeps a user's own label, and kubeplug's field manager owns only the
// template's keys.
func userLabelKept(t *testing.T, w *world) {
	e := newEnv(t, w, setOptions{replicas: 2})
	e.patchClaim(0, `{"metadata":{"labels":{"`+userLabel+`":"alice"}}}`)
	e.applyVCU(vcuInPlace, vcuAsync, vcuTemplate{size: "2Gi", labels: map[string]string{templateLabel: "gold"}})
	e.awaitVCU("every claim compatible", func(v *vcu) bool {
		return v.is(condProgressing, metav1.ConditionFalse, reasonComplete) && v.template().CompatibleReplicas == 2
	})
	// Besides the template's keys, the host's record of the request it
	// applied (abi.AnnotationAppliedStorage).
	allowed := []string{"f:metadata.f:labels.f:" + templateLabel, "f:spec.f:resources.f:requests.f:storage",
		"f:metadata.f:annotations.f:" + abi.AnnotationAppliedStorage}
	for ord := range int32(2) {
		c := e.claim(ord)
		if c.Labels[templateLabel] != "gold" || c.Labels["app"] != setName || request(c) != "2Gi" {
			t.Errorf("claim %s labels %v, request %s: want the template's label beside the set's, and 2Gi", c.Name, c.Labels, request(c))
		}
		owned := managed(t, c, kubeplugManager)
		if !slices.Contains(owned, allowed[0]) {
			t.Errorf("kubeplug owns %v of %s: want the template's label among them", owned, c.Name)
		}
		for _, f := range owned {
			if !slices.Contains(allowed, f) {
				t.Errorf("kubeplug owns %s of %s: want only the template's keys %v", f, c.Name, allowed)
			}
		}
		e.awaitEvent("PersistentVolumeClaim", c.Name, corev1.EventTypeNormal, reasonClaimUpdating, "")
	}
	if c := e.claim(0); c.Labels[userLabel] != "alice" {
		t.Errorf("claim %s labels %v: the user's %s was removed", c.Name, c.Labels, userLabel)
	}
}

// attributesClass: an InPlace template that names a VolumeAttributesClass
// the claims lack: each claim gets it in place, and is compatible once the
// resizer stand-in reports it current; nothing is expanded.
func attributesClass(t *testing.T, w *world) {
	e := newEnv(t, w, setOptions{replicas: 2})
	gold := "gold-" + e.ns
	_, err := e.c.StorageV1().VolumeAttributesClasses().Create(e.ctx, &storagev1.VolumeAttributesClass{
		ObjectMeta: metav1.ObjectMeta{Name: gold}, DriverName: resizer.Driver, Parameters: map[string]string{"iops": "3000"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.c.StorageV1().VolumeAttributesClasses().Delete(context.Background(), gold, metav1.DeleteOptions{})
	})
	e.applyVCU(vcuInPlace, vcuAsync, vcuTemplate{size: "1Gi", vac: gold})
	e.awaitVCU("every claim compatible", func(v *vcu) bool {
		return v.is(condProgressing, metav1.ConditionFalse, reasonComplete) && v.template().CompatibleReplicas == 2
	})
	for ord := range int32(2) {
		c := e.claim(ord)
		if ptr.Deref(c.Spec.VolumeAttributesClassName, "") != gold || ptr.Deref(c.Status.CurrentVolumeAttributesClassName, "") != gold {
			t.Errorf("claim %s volumeAttributesClassName %v, current %v: want %s", c.Name,
				fmtStr(c.Spec.VolumeAttributesClassName), fmtStr(c.Status.CurrentVolumeAttributesClassName), gold)
		}
		if request(c) != "1Gi" {
			t.Errorf("claim %s requests %s, want 1Gi", c.Name, request(c))
		}
		e.awaitEvent("PersistentVolumeClaim", c.Name, corev1.EventTypeNormal, reasonClaimUpdating, "")
	}
	if got := e.r.Resized(); len(got) != 0 {
		t.Errorf("resizes %v, want none: only the class changed", got)
	}
}

// retentionScaleDown: the retention module on the same host still does its
// part: a scale-down under whenScaled Delete removes the condemned claim.
func retentionScaleDown(t *testing.T, w *world) {
	e := newEnv(t, w, setOptions{replicas: 2, whenScaled: appsv1.DeletePersistentVolumeClaimRetentionPolicyType})
	e.scale(1)
	e.awaitSet(1)
	testenv.Eventually(t, testenv.Timeout, "claim "+claimName(1)+" deleted", func() (bool, error) {
		return e.claimOrNil(1) == nil, nil
	})
	if c := e.claim(0); c.DeletionTimestamp != nil {
		t.Errorf("claim %s of a replica in range is being deleted", c.Name)
	}
	m, err := w.host.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	if m.Sum("kubeplug_reconciles_total", "module", "retention") == 0 {
		t.Error("the retention module never reconciled")
	}
}

// assertUntouched checks that the claims of ordinals are of class and
// request size, and that kubeplug's field manager owns nothing of them.
func (e *env) assertUntouched(class, size string, ordinals ...int32) {
	e.t.Helper()
	for _, ord := range ordinals {
		c := e.claim(ord)
		if request(c) != size || ptr.Deref(c.Spec.StorageClassName, "") != class {
			e.t.Errorf("claim %s of class %v requests %s: want it untouched, %s and %s", c.Name, ptr.Deref(c.Spec.StorageClassName, ""), request(c), class, size)
		}
		if owned := managed(e.t, c, kubeplugManager); len(owned) != 0 {
			e.t.Errorf("kubeplug owns %v of claim %s: want it untouched", owned, c.Name)
		}
	}
}

func equalPtr(a, b *int32) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func fmtStr(p *string) string {
	if p == nil {
		return "nil"
	}
	return *p
}

func fmtPtr(p *int32) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func mustInt(t *testing.T, rv string) int64 {
	t.Helper()
	var n int64
	if _, err := fmt.Sscan(rv, &n); err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return n
}

// partitionOf is the set's rollingUpdate.partition, 0 when unset.
func partitionOf(s *appsv1.StatefulSet) int32 {
	if s.Spec.UpdateStrategy.RollingUpdate == nil {
		return 0
	}
	return ptr.Deref(s.Spec.UpdateStrategy.RollingUpdate.Partition, 0)
}
