package resizer_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kubeplug/kubeplug/e2e/internal/resizer"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// fixture is one test's namespace, its StorageClass and a running stand-in.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	c     kubernetes.Interface
	ns    string
	class string
	r     *resizer.Resizer
}

// newFixture creates a namespace and a StorageClass of its own (expand says
// whether it allows expansion) and starts a provisioning stand-in on the
// namespace with delay.
func newFixture(t *testing.T, expand bool, delay time.Duration) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: t.Context(), c: cp.Client()}
	f.ns = testenv.Namespace(t, f.c)
	f.class = "sc-" + f.ns
	_, err := f.c.StorageV1().StorageClasses().Create(f.ctx, &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: f.class},
		Provisioner:          resizer.Driver,
		AllowVolumeExpansion: ptr.To(expand),
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.c.StorageV1().StorageClasses().Delete(context.Background(), f.class, metav1.DeleteOptions{})
	})
	f.r = resizer.Start(f.ctx, f.c, resizer.Options{Namespace: f.ns, Delay: delay, Provision: true})
	return f
}

// bound creates a claim of size (and volumeAttributesClassName vac when not
// empty) and waits until the stand-in has bound it.
func (f *fixture) bound(name, size, vac string) *corev1.PersistentVolumeClaim {
	f.t.Helper()
	f.createVAC(name, size, vac)
	got := f.awaitBound(name)
	if q := got.Status.Capacity[corev1.ResourceStorage]; q.Cmp(resource.MustParse(size)) != 0 {
		f.t.Fatalf("claim %s bound with capacity %s, want %s", name, q.String(), size)
	}
	if vac != "" && ptr.Deref(got.Status.CurrentVolumeAttributesClassName, "") != vac {
		f.t.Fatalf("claim %s bound with currentVolumeAttributesClassName %v, want %s", name, got.Status.CurrentVolumeAttributesClassName, vac)
	}
	return got
}

// create creates a claim of size.
func (f *fixture) create(name, size string) *corev1.PersistentVolumeClaim {
	f.t.Helper()
	return f.createVAC(name, size, "")
}

// createVAC creates a claim of size and, when not empty,
// volumeAttributesClassName vac.
func (f *fixture) createVAC(name, size, vac string) *corev1.PersistentVolumeClaim {
	f.t.Helper()
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &f.class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
	if vac != "" {
		c.Spec.VolumeAttributesClassName = &vac
	}
	c, err := f.c.CoreV1().PersistentVolumeClaims(f.ns).Create(f.ctx, c, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// awaitBound waits until the stand-in has bound the claim and its volume.
func (f *fixture) awaitBound(name string) *corev1.PersistentVolumeClaim {
	f.t.Helper()
	var got *corev1.PersistentVolumeClaim
	testenv.Eventually(f.t, testenv.Timeout, "claim "+name+" bound", func() (bool, error) {
		got = f.claim(name)
		if got.Status.Phase != corev1.ClaimBound || got.Spec.VolumeName == "" {
			return false, nil
		}
		pv, err := f.c.CoreV1().PersistentVolumes().Get(f.ctx, got.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return pv.Status.Phase == corev1.VolumeBound && pv.Spec.ClaimRef.UID == got.UID, nil
	})
	return got
}

func (f *fixture) claim(name string) *corev1.PersistentVolumeClaim {
	f.t.Helper()
	c, err := f.c.CoreV1().PersistentVolumeClaims(f.ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fixture) volume(c *corev1.PersistentVolumeClaim) *corev1.PersistentVolume {
	f.t.Helper()
	pv, err := f.c.CoreV1().PersistentVolumes().Get(f.ctx, c.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return pv
}

// patch merge-patches the claim's spec.
func (f *fixture) patch(name, spec string) error {
	_, err := f.c.CoreV1().PersistentVolumeClaims(f.ns).Patch(f.ctx, name, types.MergePatchType,
		[]byte(`{"spec":`+spec+`}`), metav1.PatchOptions{})
	return err
}

func (f *fixture) expand(name, size string) {
	f.t.Helper()
	if err := f.patch(name, fmt.Sprintf(`{"resources":{"requests":{"storage":%q}}}`, size)); err != nil {
		f.t.Fatal(err)
	}
}

// awaitCapacity waits until the claim's status.capacity.storage is size.
func (f *fixture) awaitCapacity(name, size string) *corev1.PersistentVolumeClaim {
	f.t.Helper()
	var c *corev1.PersistentVolumeClaim
	testenv.Eventually(f.t, testenv.Timeout, "claim "+name+" at "+size, func() (bool, error) {
		c = f.claim(name)
		q := c.Status.Capacity[corev1.ResourceStorage]
		return q.Cmp(resource.MustParse(size)) == 0, nil
	})
	return c
}

func storage(l corev1.ResourceList) string {
	q, ok := l[corev1.ResourceStorage]
	if !ok {
		return "none"
	}
	return q.String()
}

func TestExpansion(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true, 500*time.Millisecond)
	f.bound("data", "1Gi", "")
	f.expand("data", "2Gi")
	c := f.awaitCapacity("data", "2Gi")
	if got := storage(c.Status.AllocatedResources); got != "2Gi" {
		t.Errorf("allocatedResources.storage %s, want 2Gi", got)
	}
	if got := storage(f.volume(c).Spec.Capacity); got != "2Gi" {
		t.Errorf("volume capacity %s, want 2Gi", got)
	}
	f.expand("data", "3Gi")
	f.awaitCapacity("data", "3Gi")
	want := []string{f.ns + "/data=2Gi", f.ns + "/data=3Gi"}
	if got := f.r.Resized(); !slices.Equal(got, want) {
		t.Errorf("Resized() = %v, want %v", got, want)
	}
}

func TestFail(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true, 0)
	f.bound("data", "1Gi", "")
	f.r.Fail(f.ns, "data", "out of space")
	f.expand("data", "2Gi")
	var c *corev1.PersistentVolumeClaim
	testenv.Eventually(t, testenv.Timeout, "expansion failed", func() (bool, error) {
		c = f.claim("data")
		return c.Status.AllocatedResourceStatuses[corev1.ResourceStorage] == corev1.PersistentVolumeClaimControllerResizeInfeasible, nil
	})
	if !hasCondition(c, corev1.PersistentVolumeClaimControllerResizeError, "out of space") {
		t.Errorf("conditions %+v, want ControllerResizeError True saying out of space", c.Status.Conditions)
	}
	testenv.Eventually(t, testenv.Timeout, "VolumeResizeFailed event", func() (bool, error) {
		for _, e := range testenv.Events(t, f.c, f.ns, resizer.ReasonResizeFailed) {
			if e.InvolvedObject.Name == "data" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "out of space") {
				return true, nil
			}
		}
		return false, nil
	})
	if got := storage(c.Status.Capacity); got != "1Gi" {
		t.Errorf("capacity %s after a failed expansion, want 1Gi", got)
	}
	if got := storage(f.volume(c).Spec.Capacity); got != "1Gi" {
		t.Errorf("volume capacity %s after a failed expansion, want 1Gi", got)
	}
	// A new request is tried again, and succeeds: Fail was for one.
	f.expand("data", "3Gi")
	c = f.awaitCapacity("data", "3Gi")
	if len(c.Status.AllocatedResourceStatuses) != 0 || hasCondition(c, corev1.PersistentVolumeClaimControllerResizeError, "") {
		t.Errorf("status after a successful expansion keeps the failure: %+v", c.Status)
	}
	if got, want := f.r.Resized(), []string{f.ns + "/data=3Gi"}; !slices.Equal(got, want) {
		t.Errorf("Resized() = %v, want %v", got, want)
	}
}

// TestNoExpansion: a claim of a class without allowVolumeExpansion whose
// request exceeds its capacity (as a claim restored from a snapshot may)
// is left alone. The API server refuses to expand such a bound claim.
func TestNoExpansion(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false, 0)
	c := f.bound("data", "1Gi", "")
	if err := f.patch("data", `{"resources":{"requests":{"storage":"2Gi"}}}`); err == nil {
		t.Fatal("the API server expanded a claim of a class without allowVolumeExpansion")
	}
	c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("512Mi")}
	if _, err := f.c.CoreV1().PersistentVolumeClaims(f.ns).UpdateStatus(f.ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A claim synced after the update shows the stand-in has seen it.
	f.bound("later", "1Gi", "")
	if got := storage(f.claim("data").Status.Capacity); got != "512Mi" {
		t.Errorf("capacity %s, want 512Mi: the stand-in grew a claim of a class without allowVolumeExpansion", got)
	}
	if got := f.r.Resized(); len(got) != 0 {
		t.Errorf("Resized() = %v, want none", got)
	}
}

func TestVolumeAttributesClass(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true, 0)
	for _, name := range []string{"silver-" + f.ns, "gold-" + f.ns} {
		_, err := f.c.StorageV1().VolumeAttributesClasses().Create(f.ctx, &storagev1.VolumeAttributesClass{
			ObjectMeta: metav1.ObjectMeta{Name: name}, DriverName: resizer.Driver, Parameters: map[string]string{"iops": name},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = f.c.StorageV1().VolumeAttributesClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	f.bound("data", "1Gi", "silver-"+f.ns)
	if err := f.patch("data", fmt.Sprintf(`{"volumeAttributesClassName":%q}`, "gold-"+f.ns)); err != nil {
		t.Fatal(err)
	}
	var c *corev1.PersistentVolumeClaim
	testenv.Eventually(t, testenv.Timeout, "class gold current", func() (bool, error) {
		c = f.claim("data")
		return ptr.Deref(c.Status.CurrentVolumeAttributesClassName, "") == "gold-"+f.ns, nil
	})
	if got := ptr.Deref(f.volume(c).Spec.VolumeAttributesClassName, ""); got != "gold-"+f.ns {
		t.Errorf("volume's volumeAttributesClassName %q, want gold-%s", got, f.ns)
	}
	if got := storage(c.Status.Capacity); got != "1Gi" {
		t.Errorf("capacity %s, want 1Gi", got)
	}
	if got := f.r.Resized(); len(got) != 0 {
		t.Errorf("Resized() = %v, want none: a class change is no expansion", got)
	}
}

func hasCondition(c *corev1.PersistentVolumeClaim, typ corev1.PersistentVolumeClaimConditionType, msg string) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == typ && cond.Status == corev1.ConditionTrue && strings.Contains(cond.Message, msg) {
			return true
		}
	}
	return false
}

// refusePVCreates fails every create of a PersistentVolume made through it
// while refuse is set, as an API server going away mid-request would.
type refusePVCreates struct {
	next   http.RoundTripper
	refuse *atomic.Bool
}

func (t refusePVCreates) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.refuse.Load() && req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/persistentvolumes") {
		return nil, errors.New("connection reset by the test")
	}
	return t.next.RoundTrip(req)
}

// TestVolumeOfAClaimGoneBeforeItsPVIsSaved: a backing volume made for a
// claim whose PersistentVolume could not be created is deleted once the
// claim is deleted, and kept (its PV saved on a retry) while the claim
// stays.
func TestVolumeOfAClaimGoneBeforeItsPVIsSaved(t *testing.T) {
	f := &fixture{t: t, ctx: t.Context(), c: cp.Client()}
	f.ns = testenv.Namespace(t, f.c)
	f.class = "sc-" + f.ns
	if _, err := f.c.StorageV1().StorageClasses().Create(f.ctx, &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: f.class}, Provisioner: resizer.Driver,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.c.StorageV1().StorageClasses().Delete(context.Background(), f.class, metav1.DeleteOptions{})
	})
	var refuse atomic.Bool
	rc := rest.CopyConfig(cp.Config)
	rc.WrapTransport = func(next http.RoundTripper) http.RoundTripper { return refusePVCreates{next, &refuse} }
	var mu sync.Mutex
	made, deleted := map[string]string{}, []string{} // PV name → handle; handles deleted
	resizer.Start(f.ctx, kubernetes.NewForConfigOrDie(rc), resizer.Options{Namespace: f.ns, Provision: true,
		CreateVolume: func(_ context.Context, name string, _ int64) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			made[name] = "vol-" + name
			return made[name], nil
		},
		DeleteVolume: func(_ context.Context, handle string) error {
			mu.Lock()
			defer mu.Unlock()
			deleted = append(deleted, handle)
			return nil
		}})
	deletedOf := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(deleted)
	}
	madeFor := func(c *corev1.PersistentVolumeClaim) string {
		mu.Lock()
		defer mu.Unlock()
		return made["pvc-"+string(c.UID)]
	}

	refuse.Store(true)
	gone := f.create("gone", "1Gi")
	testenv.Eventually(t, testenv.Timeout, "a volume made for claim gone", func() (bool, error) { return madeFor(gone) != "", nil })
	if err := f.c.CoreV1().PersistentVolumeClaims(f.ns).Delete(f.ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, testenv.Timeout, "the volume of claim gone deleted", func() (bool, error) {
		return slices.Contains(deletedOf(), madeFor(gone)), nil
	})

	kept := f.create("kept", "1Gi")
	testenv.Eventually(t, testenv.Timeout, "a volume made for claim kept", func() (bool, error) { return madeFor(kept) != "", nil })
	refuse.Store(false)
	bound := f.awaitBound("kept")
	if pv := f.volume(bound); pv.Spec.CSI.VolumeHandle != madeFor(kept) {
		t.Fatalf("claim kept bound to %s of handle %s, want the handle made for it, %s", pv.Name, pv.Spec.CSI.VolumeHandle, madeFor(kept))
	}
	if d := deletedOf(); !slices.Equal(d, []string{madeFor(gone)}) {
		t.Fatalf("volumes deleted: %v, want only %s (claim gone's)", d, madeFor(gone))
	}
}
