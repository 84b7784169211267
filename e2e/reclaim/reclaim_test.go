package reclaim

import (
	"context"
	"fmt"
	"maps"
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
	"github.com/kubeplug/kubeplug/host/csi/csitest"
)

const (
	wait = testenv.Timeout
	// extFinalizer is external-provisioner's finalizer, which the module
	// puts on the volumes of the drivers the host acts for.
	extFinalizer = "external-provisioner.volume.kubernetes.io/finalizer"
)

// startHost runs kubeplug run with the reclaim module, acting for the
// driver d.
func startHost(t *testing.T, name string, d *csiDriver) *testenv.Host {
	t.Helper()
	wasm, err := testenv.Guest("guests/reclaim")
	if err != nil {
		t.Fatal(err)
	}
	h := testenv.StartHost(t, testenv.HostOptions{
		Name:       name,
		Kubeconfig: cp.Kubeconfig,
		Config: fmt.Sprintf("modules:\n- path: %s\n  name: reclaim\n%scsiDrivers:\n- name: %s\n  endpoint: unix://%s\n  timeout: 10s\n",
			wasm, testenv.Allow["guests/reclaim"], d.Name, d.socket),
	})
	h.WaitReady(t)
	return h
}

// class is a StorageClass of the volumes provision makes.
type class struct {
	name        string
	provisioner string
	policy      corev1.PersistentVolumeReclaimPolicy
	params      map[string]string
}

var (
	deleteClass = class{name: "csi-delete", provisioner: driverName, policy: corev1.PersistentVolumeReclaimDelete}
	retainClass = class{name: "csi-retain", provisioner: driverName, policy: corev1.PersistentVolumeReclaimRetain}
	otherClass  = class{name: "other-delete", provisioner: "other.csi.example.com", policy: corev1.PersistentVolumeReclaimDelete}
	// secretClass names its provisioner secret with templates, as
	// external-provisioner accepts them: the Secret "<pv>-deleter" in the
	// claim's namespace.
	secretClass = class{name: "csi-delete-secret", provisioner: driverName, policy: corev1.PersistentVolumeReclaimDelete,
		params: map[string]string{
			"csi.storage.k8s.io/provisioner-secret-name":      "${pv.name}-deleter",
			"csi.storage.k8s.io/provisioner-secret-namespace": "${pvc.namespace}",
		}}
)

// pair is a PersistentVolume bound to a claim.
type pair struct {
	ns, claim, pv, handle string
}

// provision does what a CSI external provisioner does for a claim of class
// sc: creates the backing volume in d and a PersistentVolume of sc's
// provisioner pre-bound to the claim; the binder then binds them. It waits
// until both are Bound.
func provision(t *testing.T, d *csiDriver, sc class) pair {
	t.Helper()
	return provisionAs(t, d, sc, func(pv *corev1.PersistentVolume, handle string) {
		pv.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: sc.provisioner, VolumeHandle: handle}
	})
}

// provisionAs is provision with the PersistentVolume's source set by
// source, from the handle of the backing volume made in d.
func provisionAs(t *testing.T, d *csiDriver, sc class, source func(pv *corev1.PersistentVolume, handle string)) pair {
	t.Helper()
	ctx := context.Background()
	c := cp.Client()
	ns := namespace(t)
	p := pair{ns: ns, claim: "data", pv: "pv-" + ns}
	p.handle = d.AddVolume(p.pv)
	_, err := c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta:    metav1.ObjectMeta{Name: sc.name},
		Provisioner:   sc.provisioner,
		ReclaimPolicy: &sc.policy,
		Parameters:    sc.params,
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: p.pv, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": sc.provisioner}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: sc.policy,
			StorageClassName:              sc.name,
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: p.claim},
		},
	}
	source(pv, p.handle)
	if _, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.claim},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &sc.name,
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

func (p pair) awaitClaimGone(t *testing.T) {
	t.Helper()
	testenv.Eventually(t, wait, "claim "+p.ns+"/"+p.claim+" gone", func() (bool, error) {
		_, err := cp.Client().CoreV1().PersistentVolumeClaims(p.ns).Get(context.Background(), p.claim, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// awaitNothingLeft waits until the claim and the volume object are gone,
// and then checks that nothing else of the pair is left: no backing volume
// in d, no PersistentVolume of the handle, no VolumeAttachment of the
// volume.
func (p pair) awaitNothingLeft(t *testing.T, d *csiDriver) {
	t.Helper()
	p.awaitClaimGone(t)
	p.awaitGone(t)
	if slices.Contains(d.Volumes(), p.handle) {
		t.Errorf("backing volume %s leaked", p.handle)
	}
	ctx := context.Background()
	pvs, err := cp.Client().CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range pvs.Items {
		if v.Spec.CSI != nil && v.Spec.CSI.VolumeHandle == p.handle {
			t.Errorf("PersistentVolume %s of volume handle %s left behind", v.Name, p.handle)
		}
	}
	vas, err := cp.Client().StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, va := range vas.Items {
		if pv := va.Spec.Source.PersistentVolumeName; pv != nil && *pv == p.pv {
			t.Errorf("VolumeAttachment %s of %s left behind", va.Name, p.pv)
		}
	}
}

func (p pair) backed(d *csiDriver) bool { return slices.Contains(d.Volumes(), p.handle) }

// TestVolumeDeletedBeforeClaim is the proposal's test: a bound pair with
// reclaim policy Delete; the PersistentVolume is deleted first, then the
// claim. Upstream before KEP-2644 leaked the backing volume here. The host
// calls DeleteVolume once for the handle, and the volume object goes.
func TestVolumeDeletedBeforeClaim(t *testing.T) {
	d := serveDriver(t, nil)
	startHost(t, "host", d)
	p := provision(t, d, deleteClass)
	p.awaitFinalizer(t)
	p.deleteBeforeClaim(t, d)
}

// deleteBeforeClaim deletes the volume object, checks that the finalizers
// hold it and that its backing volume is untouched while the claim exists,
// then deletes the claim and waits until nothing is left, the backing
// volume deleted by exactly one DeleteVolume.
func (p pair) deleteBeforeClaim(t *testing.T, d *csiDriver) {
	t.Helper()
	// No DeleteVolume is expected yet: one before the claim is deleted
	// fails the test.
	p.deleteVolumeObject(t)
	testenv.Eventually(t, wait, "volume object under deletion, held by finalizers", func() (bool, error) {
		v, ok := p.volume(t)
		return ok && v.DeletionTimestamp != nil, nil
	})
	if !p.backed(d) || d.CallsFor("DeleteVolume", p.handle) != 0 {
		t.Fatalf("the backing volume was touched while its claim still exists")
	}
	d.expectDeletes(p.handle, nil).Times(1)
	p.deleteClaim(t)
	p.awaitNothingLeft(t, d)
}

// TestClaimDeletedFirst: the usual order. The volume is released, the host
// deletes the backing volume, then the volume object.
func TestClaimDeletedFirst(t *testing.T) {
	d := serveDriver(t, nil)
	startHost(t, "host", d)
	p := provision(t, d, deleteClass)
	d.expectDeletes(p.handle, nil).Times(1)
	p.awaitFinalizer(t)
	p.deleteClaim(t)
	p.awaitNothingLeft(t, d)
}

// TestProvisionerSecretsOnDelete: the StorageClass names the provisioner
// secret with templates; the host resolves them for the volume, reads the
// Secret and passes its data to DeleteVolume, as external-provisioner does.
// The driver requires exactly that data: without it the volume would stay.
func TestProvisionerSecretsOnDelete(t *testing.T) {
	secrets := map[string]string{"user": "deleter", "password": "s3cret"}
	d := serveDriver(t, func(mem *csitest.Driver) { mem.Secrets = secrets })
	startHost(t, "host", d)
	p := provision(t, d, secretClass)
	d.expectDeletes(p.handle, secrets).Times(1)
	c := cp.Client()
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: p.pv + "-deleter"}, StringData: secrets},
		// Secrets the templates do not resolve to, which a host reading
		// them wrongly would pass.
		{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: p.claim + "-deleter"}, StringData: map[string]string{"user": "claim"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: p.pv + "-deleter"}, StringData: map[string]string{"user": "default"}},
	} {
		if _, err := c.CoreV1().Secrets(s.Namespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = c.CoreV1().Secrets("default").Delete(context.Background(), p.pv+"-deleter", metav1.DeleteOptions{})
	})
	p.awaitFinalizer(t)
	p.deleteClaim(t)
	p.awaitNothingLeft(t, d)
	if got := d.LastSecrets(); !maps.Equal(got, secrets) {
		t.Errorf("DeleteVolume got secrets %v, want %v", got, secrets)
	}
}

// TestRetainKeepsVolume: with reclaim policy Retain nothing is deleted and
// the volume carries no deletion finalizer.
func TestRetainKeepsVolume(t *testing.T) {
	d := serveDriver(t, nil)
	h := startHost(t, "host", d)
	p := provision(t, d, retainClass)
	d.expectDeletes(p.handle, nil).Times(0)
	p.deleteClaim(t)
	p.awaitClaimGone(t)
	testenv.Eventually(t, wait, "volume released", func() (bool, error) {
		v, ok := p.volume(t)
		return ok && v.Status.Phase == corev1.VolumeReleased, nil
	})
	awaitReconcile(t, h, p.pv)
	v, ok := p.volume(t)
	if !ok || slices.Contains(v.Finalizers, extFinalizer) {
		t.Errorf("retained volume: present %t, finalizers %v; want present without %s", ok, v.Finalizers, extFinalizer)
	}
	if !p.backed(d) {
		t.Errorf("retained backing volume was deleted")
	}
}

// awaitReconcile changes a label on the volume pv and waits until h has
// reconciled anything since, which is that volume at the latest.
func awaitReconcile(t *testing.T, h *testenv.Host, pv string) {
	t.Helper()
	reconciles := func() float64 {
		m, err := h.Scrape()
		if err != nil {
			t.Fatal(err)
		}
		return m.Sum("kubeplug_reconciles_total", "module", "reclaim")
	}
	base := reconciles()
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{"e2e.kubeplug.dev/touched":"%d"}}}`, time.Now().UnixNano())
	_, err := cp.Client().CoreV1().PersistentVolumes().Patch(context.Background(), pv, "application/merge-patch+json", patch, metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "a reconcile of "+pv, func() (bool, error) { return reconciles() > base, nil })
}

// TestFailingDeleteVolumeIsRetried: while the driver fails DeleteVolume,
// the volume object and its finalizer stay and a Warning event says why;
// once the driver recovers, the host finishes.
func TestFailingDeleteVolumeIsRetried(t *testing.T) {
	d := serveDriver(t, nil)
	startHost(t, "host", d)
	p := provision(t, d, deleteClass)
	// At least one failed call and the one that succeeds.
	d.expectDeletes(p.handle, nil).MinTimes(2)
	p.awaitFinalizer(t)
	d.FailDeletes(codes.Unavailable, "backend storage is down")
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
	if !p.backed(d) {
		t.Fatalf("the backing volume went although DeleteVolume failed")
	}
	d.HealDeletes()
	p.awaitNothingLeft(t, d)
}

// TestRestartBetweenDeleteVolumeAndFinalizer: the host is killed after the
// driver deleted the backing volume and before it heard back, so before it
// removed the finalizer. The volume object is left, finalizer and all; a new
// host finishes the job, and DeleteVolume on a volume that is already gone
// succeeds, as the CSI specification requires.
func TestRestartBetweenDeleteVolumeAndFinalizer(t *testing.T) {
	d := serveDriver(t, nil)
	first := startHost(t, "first", d)
	p := provision(t, d, deleteClass)
	// The one cut short and the one after the restart.
	d.expectDeletes(p.handle, nil).Times(2)
	p.awaitFinalizer(t)
	deleted, release := d.HoldDeletes()
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
	if p.backed(d) {
		t.Fatalf("the driver should have deleted the backing volume before the kill")
	}

	startHost(t, "second", d)
	p.awaitNothingLeft(t, d)
}

// TestOtherDriverUntouched: a volume of a CSI driver the host is not
// configured for is left to that driver's own provisioner: no finalizer, no
// deletion.
func TestOtherDriverUntouched(t *testing.T) {
	d := serveDriver(t, nil)
	h := startHost(t, "host", d)
	p := provision(t, d, otherClass)
	d.expectDeletes(p.handle, nil).Times(0)
	p.deleteClaim(t)
	p.awaitClaimGone(t)
	testenv.Eventually(t, wait, "volume released", func() (bool, error) {
		v, ok := p.volume(t)
		return ok && v.Status.Phase == corev1.VolumeReleased, nil
	})
	awaitReconcile(t, h, p.pv)
	v, ok := p.volume(t)
	if !ok || slices.Contains(v.Finalizers, extFinalizer) {
		t.Errorf("volume of another driver: present %t; it must stay, without %s", ok, extFinalizer)
	}
}
