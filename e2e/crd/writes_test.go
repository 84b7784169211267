package crd

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// What host/memcluster mimics of the templateupdate module's writes, on the
// real API server: memcluster's tests (templateupdate_test.go) assert the
// same outcomes and messages.

func TestPartitionPatchAsMemcluster(t *testing.T) {
	ctx := context.Background()
	_, ns := vcus(t)
	sets := cp.Client().AppsV1().StatefulSets(ns)
	newSet := func(name string, strategy appsv1.StatefulSetUpdateStrategyType) *appsv1.StatefulSet {
		set, err := sets.Create(ctx, &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.StatefulSetSpec{
				Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: strategy},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
				},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	patch := func(set *appsv1.StatefulSet, p string) (*appsv1.StatefulSet, error) {
		return sets.Patch(ctx, set.Name, types.MergePatchType, []byte(`{"metadata":{"uid":"`+string(set.UID)+`","resourceVersion":"`+set.ResourceVersion+`"},"spec":{"updateStrategy":{"rollingUpdate":{"partition":`+p+`}}}}`), metav1.PatchOptions{FieldManager: "kubeplug"})
	}

	web := newSet("web", appsv1.RollingUpdateStatefulSetStrategyType)
	got, err := patch(web, "2")
	if err != nil {
		t.Fatal(err)
	}
	if got.Generation != web.Generation+1 || *got.Spec.UpdateStrategy.RollingUpdate.Partition != 2 {
		t.Errorf("partition patch: generation %d partition %d", got.Generation, *got.Spec.UpdateStrategy.RollingUpdate.Partition)
	}
	got, err = patch(got, "0")
	if err != nil || got.Spec.UpdateStrategy.RollingUpdate.Partition == nil || *got.Spec.UpdateStrategy.RollingUpdate.Partition != 0 {
		t.Errorf("partition 0: %v %+v", err, got.Spec.UpdateStrategy.RollingUpdate)
	}
	if _, err := patch(got, "-1"); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.updateStrategy.rollingUpdate.partition") || !strings.Contains(err.Error(), "must be greater than or equal to 0") {
		t.Errorf("negative partition: got %v", err)
	}
	if _, err := patch(web, "1"); !apierrors.IsConflict(err) {
		t.Errorf("stale partition patch: got %v, want a conflict", err)
	}
	onDelete := newSet("db", appsv1.OnDeleteStatefulSetStrategyType)
	if _, err := patch(onDelete, "1"); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.updateStrategy.rollingUpdate") || !strings.Contains(err.Error(), "only allowed for updateStrategy 'RollingUpdate'") {
		t.Errorf("partition under OnDelete: got %v", err)
	}
}

func TestClaimApplyAsMemcluster(t *testing.T) {
	ctx := context.Background()
	_, ns := vcus(t)
	claims := cp.Client().CoreV1().PersistentVolumeClaims(ns)
	// A claim's request grows only in a class that allows expansion.
	expand := true
	class, err := cp.Client().StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "expandable-"}, Provisioner: "csi.example.com", AllowVolumeExpansion: &expand,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Client().StorageV1().StorageClasses().Delete(context.Background(), class.Name, metav1.DeleteOptions{})
	})
	c := createClaim(t, ns, "a", class.Name)
	// A pending claim's request cannot change.
	pendingBody := `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"a","namespace":"` + ns + `"},"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`
	force := true
	if _, err := claims.Patch(ctx, "a", types.ApplyPatchType, []byte(pendingBody), metav1.PatchOptions{FieldManager: "kubeplug", Force: &force}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims") {
		t.Errorf("storage of a pending claim: got %v", err)
	}
	c.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}
	if c, err = claims.UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The executor's body, with the claim's preconditions.
	body := `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"a","namespace":"` + ns + `","uid":"` + string(c.UID) + `","resourceVersion":"` + c.ResourceVersion + `",
		"labels":{"tier":"gold"}},"spec":{"resources":{"requests":{"storage":"2048Mi"}},"volumeAttributesClassName":"gold"}}`
	got, err := claims.Patch(ctx, "a", types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: "kubeplug", Force: &force})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"app": "web", "tier": "gold"}; !equalMaps(got.Labels, want) {
		t.Errorf("labels %v, want %v: a user's labels are kept", got.Labels, want)
	}
	if q := got.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "2Gi" {
		t.Errorf("storage request stored as %s, want the canonical 2Gi", q.String())
	}
	// The same apply again (the quantity spelled canonically) is no write.
	again := strings.Replace(strings.Replace(body, c.ResourceVersion, got.ResourceVersion, 1), "2048Mi", "2Gi", 1)
	same, err := claims.Patch(ctx, "a", types.ApplyPatchType, []byte(again), metav1.PatchOptions{FieldManager: "kubeplug", Force: &force})
	if err != nil {
		t.Fatal(err)
	}
	if same.ResourceVersion != got.ResourceVersion {
		t.Errorf("an apply that changes nothing wrote resourceVersion %s over %s", same.ResourceVersion, got.ResourceVersion)
	}
	// A stale one is a conflict.
	if _, err := claims.Patch(ctx, "a", types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: "kubeplug", Force: &force}); !apierrors.IsConflict(err) {
		t.Errorf("stale apply: got %v, want a conflict", err)
	}
	// A claim outside an expandable class cannot grow.
	fixed := createClaim(t, ns, "fixed", "")
	fixed.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}
	if _, err := claims.UpdateStatus(ctx, fixed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := claims.Patch(ctx, "fixed", types.MergePatchType, []byte(`{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`), metav1.PatchOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize") {
		t.Errorf("growing a claim without an expandable class: got %v", err)
	}
	// What memcluster refuses of a bound claim, as the API server does.
	for _, tt := range []struct{ name, spec, want string }{
		{"limits", `{"resources":{"limits":{"storage":"4Gi"}}}`, "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"},
		{"storage class", `{"storageClassName":"fast"}`, "spec is immutable after creation"},
		{"storage below capacity", `{"resources":{"requests":{"storage":"512Mi"}}}`, "spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"},
	} {
		if _, err := claims.Patch(ctx, "a", types.MergePatchType, []byte(`{"spec":`+tt.spec+`}`), metav1.PatchOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want Invalid saying %q", tt.name, err, tt.want)
		}
	}
	// Lower, but above status.capacity: the API server accepts it
	// (RecoverVolumeExpansionFailure); kubeplug's executor lowers only a
	// request kubeplug set. Down to exactly the capacity it refuses.
	if _, err := claims.Patch(ctx, "a", types.MergePatchType, []byte(`{"spec":{"resources":{"requests":{"storage":"1536Mi"}}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("lower request above capacity: %v", err)
	}
	if _, err := claims.Patch(ctx, "a", types.MergePatchType, []byte(`{"spec":{"resources":{"requests":{"storage":"1Gi"}}}}`), metav1.PatchOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.resources.requests.storage: Forbidden: field can not be less than status.capacity") {
		t.Errorf("request down to exactly the capacity: got %v, want Invalid", err)
	}
	// A class once applied cannot be removed.
	cur, err := claims.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gold := "gold"
	cur.Status.CurrentVolumeAttributesClassName = &gold
	if _, err := claims.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := claims.Patch(ctx, "a", types.MergePatchType, []byte(`{"spec":{"volumeAttributesClassName":null}}`), metav1.PatchOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "update to nil is forbidden when status.currentVolumeAttributesClassName is not nil") {
		t.Errorf("class removed: got %v", err)
	}
}

// createClaim creates a pending 1Gi claim labelled app=web in class ("" for
// none).
func createClaim(t *testing.T, ns, name, class string) *corev1.PersistentVolumeClaim {
	t.Helper()
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if class != "" {
		c.Spec.StorageClassName = &class
	}
	got, err := cp.Client().CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), c, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// The sequence memcluster's TestApplyDropsOnlyWhatItOwnsAlone runs, on the
// real API server.
func TestApplyOwnershipAsMemcluster(t *testing.T) {
	ctx := context.Background()
	_, ns := vcus(t)
	claims := cp.Client().CoreV1().PersistentVolumeClaims(ns)
	createClaim(t, ns, "a", "")
	force := true
	apply := func(labels string) map[string]string {
		t.Helper()
		body := `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"a","namespace":"` + ns + `","labels":` + labels + `}}`
		got, err := claims.Patch(ctx, "a", types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: "kubeplug", Force: &force})
		if err != nil {
			t.Fatal(err)
		}
		return got.Labels
	}
	apply(`{"app":"web","tier":"gold","zone":"a","user":"x"}`)
	if _, err := claims.Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"labels":{"user":"y"}}}`), metav1.PatchOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	if got, want := apply(`{"tier":"gold"}`), map[string]string{"app": "web", "tier": "gold", "user": "y"}; !equalMaps(got, want) {
		t.Errorf("labels %v, want %v", got, want)
	}
	if got, want := apply(`{}`), map[string]string{"app": "web", "user": "y"}; !equalMaps(got, want) {
		t.Errorf("labels %v, want %v", got, want)
	}
}
