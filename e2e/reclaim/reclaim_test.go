package reclaim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

const (
	wait = testenv.Timeout
	// extFinalizer is external-provisioner's finalizer, which the module
	// puts on the volumes of the drivers the host acts for.
	extFinalizer = "external-provisioner.volume.kubernetes.io/finalizer"
)

// startHost runs kubeplug run with the reclaim module, acting for driver.
func startHost(t *testing.T, name string) *testenv.Host {
	t.Helper()
	wasm, err := testenv.Guest("guests/reclaim")
	if err != nil {
		t.Fatal(err)
	}
	h := testenv.StartHost(t, testenv.HostOptions{
		Name:       name,
		Kubeconfig: cp.Kubeconfig,
		Config: fmt.Sprintf("modules:\n- path: %s\n  name: reclaim\ncsiDrivers:\n- name: %s\n  endpoint: unix://%s\n  timeout: 10s\n",
			wasm, driverName, socket),
	})
	h.WaitReady(t)
	return h
}

// pair is a PersistentVolume bound to a claim, provisioned by drv.
type pair struct {
	ns, claim, pv, handle string
}

// provision does what a CSI external provisioner does for a claim: creates
// the backing volume in the driver and a PersistentVolume pre-bound to the
// claim; the binder then binds them. It waits until both are Bound.
func provision(t *testing.T, drv string, policy corev1.PersistentVolumeReclaimPolicy) pair {
	t.Helper()
	ctx := context.Background()
	c := cp.Client()
	ns := namespace(t)
	p := pair{ns: ns, claim: "data", pv: "pv-" + ns}
	p.handle = driver.AddVolume(p.pv)
	class := "csi-" + strings.ToLower(string(policy))
	_, err := c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta:    metav1.ObjectMeta{Name: class},
		Provisioner:   drv,
		ReclaimPolicy: &policy,
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: p.pv, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": drv}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: policy,
			StorageClassName:              class,
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: p.claim},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: drv, VolumeHandle: p.handle,
			}},
		},
	}
	if _, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.claim},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			VolumeName:       p.pv,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "volume and claim bound", func() (bool, error) {
		v, err := c.CoreV1().PersistentVolumes().Get(ctx, p.pv, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cl, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, p.claim, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return v.Status.Phase == corev1.VolumeBound && cl.Status.Phase == corev1.ClaimBound, nil
	})
	return p
}

func namespace(t *testing.T) string {
	t.Helper()
	return testenv.Namespace(t, cp.Client())
}

func (p pair) volume(t *testing.T) (*corev1.PersistentVolume, bool) {
	t.Helper()
	v, err := cp.Client().CoreV1().PersistentVolumes().Get(context.Background(), p.pv, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return v, true
}

func (p pair) awaitFinalizer(t *testing.T) {
	t.Helper()
	testenv.Eventually(t, wait, p.pv+" carries "+extFinalizer, func() (bool, error) {
		v, ok := p.volume(t)
		return ok && slices.Contains(v.Finalizers, extFinalizer), nil
	})
}

func (p pair) deleteVolumeObject(t *testing.T) {
	t.Helper()
	if err := cp.Client().CoreV1().PersistentVolumes().Delete(context.Background(), p.pv, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (p pair) deleteClaim(t *testing.T) {
	t.Helper()
	if err := cp.Client().CoreV1().PersistentVolumeClaims(p.ns).Delete(context.Background(), p.claim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (p pair) awaitGone(t *testing.T) {
	t.Helper()
	testenv.Eventually(t, wait, p.pv+" gone", func() (bool, error) {
		_, ok := p.volume(t)
		return !ok, nil
	})
}

func (p pair) backed() bool { return slices.Contains(driver.Volumes(), p.handle) }

// TestVolumeDeletedBeforeClaim is the proposal's test: a bound pair with
// reclaim policy Delete; the PersistentVolume is deleted first, then the
// claim. Upstream before KEP-2644 leaked the backing volume here. The host
// calls DeleteVolume once for the handle, and the volume object goes.
func TestVolumeDeletedBeforeClaim(t *testing.T) {
	startHost(t, "host")
	p := provision(t, driverName, corev1.PersistentVolumeReclaimDelete)
	p.awaitFinalizer(t)

	p.deleteVolumeObject(t)
	testenv.Eventually(t, wait, "volume object under deletion, held by finalizers", func() (bool, error) {
		v, ok := p.volume(t)
		return ok && v.DeletionTimestamp != nil, nil
	})
	if !p.backed() || driver.CallsFor("DeleteVolume", p.handle) != 0 {
		t.Fatalf("the backing volume was touched while its claim still exists")
	}
	p.deleteClaim(t)
	p.awaitGone(t)
	if p.backed() {
		t.Errorf("backing volume %s leaked", p.handle)
	}
	if n := driver.CallsFor("DeleteVolume", p.handle); n != 1 {
		t.Errorf("%d DeleteVolume calls for %s, want exactly 1", n, p.handle)
	}
}

// TestClaimDeletedFirst: the usual order. The volume is released, the host
// deletes the backing volume, then the volume object.
func TestClaimDeletedFirst(t *testing.T) {
	startHost(t, "host")
	p := provision(t, driverName, corev1.PersistentVolumeReclaimDelete)
	p.awaitFinalizer(t)
	p.deleteClaim(t)
	p.awaitGone(t)
	if p.backed() {
		t.Errorf("backing volume %s leaked", p.handle)
	}
	if n := driver.CallsFor("DeleteVolume", p.handle); n != 1 {
		t.Errorf("%d DeleteVolume calls for %s, want exactly 1", n, p.handle)
	}
}

// TestRetainKeepsVolume: with reclaim policy Retain nothing is deleted and
// the volume carries no deletion finalizer.
func TestRetainKeepsVolume(t *testing.T) {
	h := startHost(t, "host")
	p := provision(t, driverName, corev1.PersistentVolumeReclaimRetain)
	p.deleteClaim(t)
	testenv.Eventually(t, wait, "volume released", func() (bool, error) {
		v, ok := p.volume(t)
		return ok && v.Status.Phase == corev1.VolumeReleased, nil
	})
	// Wait for the host to have reconciled the released volume.
	reconciles := func() float64 {
		m, err := h.Scrape()
		if err != nil {
			t.Fatal(err)
		}
		return m.Sum("kubeplug_reconciles_total", "module", "reclaim")
	}
	base := reconciles()
	if err := touch(p.pv); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "a reconcile of the released volume", func() (bool, error) { return reconciles() > base, nil })
	v, ok := p.volume(t)
	if !ok || slices.Contains(v.Finalizers, extFinalizer) {
		t.Errorf("retained volume: present %t, finalizers %v; want present without %s", ok, v.Finalizers, extFinalizer)
	}
	if !p.backed() || driver.CallsFor("DeleteVolume", p.handle) != 0 {
		t.Errorf("retained backing volume was deleted")
	}
}

// touch changes a label on the volume so that the host reconciles it now.
func touch(pv string) error {
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{"e2e.kubeplug.dev/touched":"%d"}}}`, time.Now().UnixNano())
	_, err := cp.Client().CoreV1().PersistentVolumes().Patch(context.Background(), pv, "application/merge-patch+json", patch, metav1.PatchOptions{})
	return err
}

// TestFailingDeleteVolumeIsRetried: while the driver fails DeleteVolume,
// the volume object and its finalizer stay and a Warning event says why;
// once the driver recovers, the host finishes.
func TestFailingDeleteVolumeIsRetried(t *testing.T) {
	startHost(t, "host")
	p := provision(t, driverName, corev1.PersistentVolumeReclaimDelete)
	p.awaitFinalizer(t)
	driver.FailDeletes(codes.Unavailable, "backend storage is down")
	defer driver.HealDeletes()
	p.deleteClaim(t)

	testenv.Eventually(t, wait, "VolumeFailedDelete event on "+p.pv, func() (bool, error) {
		list, err := cp.Client().CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == p.pv && e.Reason == "VolumeFailedDelete" && e.Type == "Warning" &&
				strings.Contains(e.Message, "backend storage is down") {
				return true, nil
			}
		}
		return false, nil
	})
	v, ok := p.volume(t)
	if !ok || !slices.Contains(v.Finalizers, extFinalizer) {
		t.Fatalf("while DeleteVolume fails the volume object must stay with its finalizer; present %t", ok)
	}
	if !p.backed() {
		t.Fatalf("the backing volume went although DeleteVolume failed")
	}
	driver.HealDeletes()
	p.awaitGone(t)
	if p.backed() {
		t.Errorf("backing volume %s leaked after the driver recovered", p.handle)
	}
}

// TestRestartBetweenDeleteVolumeAndFinalizer: the host is killed after the
// driver deleted the backing volume and before it heard back, so before it
// removed the finalizer. The volume object is left, finalizer and all; a new
// host finishes the job, and DeleteVolume on a volume that is already gone
// succeeds, as the CSI specification requires.
func TestRestartBetweenDeleteVolumeAndFinalizer(t *testing.T) {
	first := startHost(t, "first")
	p := provision(t, driverName, corev1.PersistentVolumeReclaimDelete)
	p.awaitFinalizer(t)
	deleted, release := driver.HoldDeletes()
	defer release()
	p.deleteClaim(t)

	select {
	case h := <-deleted:
		if h != p.handle {
			t.Fatalf("DeleteVolume for %s, want %s", h, p.handle)
		}
	case <-time.After(wait):
		t.Fatal("no DeleteVolume call")
	}
	first.Kill()
	release()
	v, ok := p.volume(t)
	if !ok || !slices.Contains(v.Finalizers, extFinalizer) {
		t.Fatalf("after the kill the volume object must still be there with its finalizer; present %t", ok)
	}
	if p.backed() {
		t.Fatalf("the driver should have deleted the backing volume before the kill")
	}

	startHost(t, "second")
	p.awaitGone(t)
	if n := driver.CallsFor("DeleteVolume", p.handle); n != 2 {
		t.Errorf("%d DeleteVolume calls for %s, want 2: the one cut short and the one after the restart", n, p.handle)
	}
}

// TestOtherDriverUntouched: a volume of a CSI driver the host is not
// configured for is left to that driver's own provisioner: no finalizer, no
// deletion.
func TestOtherDriverUntouched(t *testing.T) {
	h := startHost(t, "host")
	p := provision(t, "other.csi.example.com", corev1.PersistentVolumeReclaimDelete)
	p.deleteClaim(t)
	testenv.Eventually(t, wait, "volume released", func() (bool, error) {
		v, ok := p.volume(t)
		return ok && v.Status.Phase == corev1.VolumeReleased, nil
	})
	m, err := h.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	base := m.Sum("kubeplug_reconciles_total", "module", "reclaim")
	if err := touch(p.pv); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "a reconcile of the released volume", func() (bool, error) {
		m, err := h.Scrape()
		return err == nil && m.Sum("kubeplug_reconciles_total", "module", "reclaim") > base, err
	})
	v, ok := p.volume(t)
	if !ok || slices.Contains(v.Finalizers, extFinalizer) {
		t.Errorf("volume of another driver: present %t; it must stay, without %s", ok, extFinalizer)
	}
	if driver.CallsFor("DeleteVolume", p.handle) != 0 {
		t.Errorf("DeleteVolume called for another driver's volume")
	}
}
