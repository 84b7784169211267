package hostile

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/host/csi/csitest"
)

// driverName is the CSI driver the host may delete volumes through.
const driverName = "csi.hostile.e2e.kubeplug.dev"

// Secret data: what the host must hand the driver (the StorageClass's
// provisioner secret), and what a module names instead.
var (
	hostSecret   = map[string]string{"token": "from-the-storageclass"}
	stolenSecret = map[string]string{"token": "chosen-by-the-module"}
)

// world is what a hostile module sees in its namespace, and must leave
// alone: StatefulSet web with two pods and two claims, StatefulSet other
// with one pod, a claim bound to a volume, StorageClasses, Secrets, and
// three CSI volumes: Bound, Released with Retain, and Released with Delete
// (the one a DeleteVolume may legitimately be for).
type world struct {
	ns                               string
	fast, keep                       string // StorageClasses: reclaim Delete, Retain
	web, other                       *appsv1.StatefulSet
	otherPod                         types.UID
	pvBound, pvRetain                string // labelled hostile=bound
	pvReleased                       string // labelled hostile=secret
	volBound, volRetain, volReleased string
}

func createWorld(t *testing.T, ns string) *world {
	t.Helper()
	ctx := context.Background()
	c := cp.Client()
	w := &world{
		ns: ns, fast: "fast-" + ns, keep: "keep-" + ns,
		pvBound: "pv-bound-" + ns, pvRetain: "pv-retain-" + ns, pvReleased: "pv-released-" + ns,
		volBound: "vol-bound-" + ns, volRetain: "vol-retain-" + ns, volReleased: "vol-released-" + ns,
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range map[string]map[string]string{"csi-provisioner": hostSecret, "hostile-chosen": stolenSecret} {
		_, err := c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}, metav1.CreateOptions{})
		must(err)
	}
	for name, policy := range map[string]corev1.PersistentVolumeReclaimPolicy{w.fast: corev1.PersistentVolumeReclaimDelete, w.keep: corev1.PersistentVolumeReclaimRetain} {
		_, err := c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
			ObjectMeta:    metav1.ObjectMeta{Name: name},
			Provisioner:   driverName,
			ReclaimPolicy: &policy,
			Parameters: map[string]string{
				"csi.storage.k8s.io/provisioner-secret-name":      "csi-provisioner",
				"csi.storage.k8s.io/provisioner-secret-namespace": ns,
			},
		}, metav1.CreateOptions{})
		must(err)
		t.Cleanup(func() { _ = c.StorageV1().StorageClasses().Delete(ctx, name, metav1.DeleteOptions{}) })
	}

	w.web = createSet(t, ns, "web", 2, w.fast)
	w.other = createSet(t, ns, "other", 1, "")
	for i := range 2 {
		createPod(t, w.web, i)
	}
	w.otherPod = createPod(t, w.other, 0).UID
	for _, name := range []string{"data-web-0", "data-web-1"} {
		createClaim(t, ns, name, w.fast, "")
	}
	db := createClaim(t, ns, "data-db-0", w.fast, w.pvBound)
	db.Status.Phase = corev1.ClaimBound
	_, err := c.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, db, metav1.UpdateOptions{})
	must(err)

	createVolume(t, w.pvBound, "bound", w.volBound, w.fast, corev1.PersistentVolumeReclaimDelete,
		&corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: db.Name, UID: db.UID}, corev1.VolumeBound)
	createVolume(t, w.pvRetain, "bound", w.volRetain, w.keep, corev1.PersistentVolumeReclaimRetain,
		&corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: "data-gone-0", UID: "3c1f0e55-0000-4000-8000-000000000001"}, corev1.VolumeReleased)
	createVolume(t, w.pvReleased, "secret", w.volReleased, w.fast, corev1.PersistentVolumeReclaimDelete,
		&corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: "data-gone-1", UID: "3c1f0e55-0000-4000-8000-000000000002"}, corev1.VolumeReleased)
	return w
}

func createSet(t *testing.T, ns, name string, replicas int32, class string) *appsv1.StatefulSet {
	t.Helper()
	labels := map[string]string{"app": name}
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec()},
		},
	}
	if class != "" {
		set.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claim("data", class, "")}
	}
	got, err := cp.Client().AppsV1().StatefulSets(ns).Create(context.Background(), set, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func createPod(t *testing.T, set *appsv1.StatefulSet, ordinal int) *corev1.Pod {
	t.Helper()
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: set.Namespace, Name: set.Name + "-" + string(rune('0'+ordinal)), Labels: set.Spec.Selector.MatchLabels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: set.Name, UID: set.UID, Controller: &yes}},
		},
		Spec: podSpec(),
	}
	got, err := cp.Client().CoreV1().Pods(set.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}
}

func claim(name, class, volume string) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class,
			VolumeName:       volume,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

func createClaim(t *testing.T, ns, name, class, volume string) *corev1.PersistentVolumeClaim {
	t.Helper()
	c := claim(name, class, volume)
	c.Namespace = ns
	got, err := cp.Client().CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), &c, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func createVolume(t *testing.T, name, label, handle, class string, policy corev1.PersistentVolumeReclaimPolicy,
	claimRef *corev1.ObjectReference, phase corev1.PersistentVolumePhase) {
	t.Helper()
	ctx := context.Background()
	pvs := cp.Client().CoreV1().PersistentVolumes()
	pv, err := pvs.Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"hostile": label}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: policy,
			StorageClassName:              class,
			ClaimRef:                      claimRef,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: driverName, VolumeHandle: handle},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pvs.Delete(ctx, name, metav1.DeleteOptions{}) })
	pv.Status.Phase = phase
	if _, err := pvs.UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// serveDriver serves a CSI driver named driverName, which records every call
// and accepts any secrets, until t ends; it returns the driver and its socket.
// Serve it before starting a host, so that the host stops first.
func serveDriver(t *testing.T) (*csitest.Driver, string) {
	t.Helper()
	// A short directory: unix socket paths are limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := csitest.New(driverName)
	sock := filepath.Join(dir, "csi.sock")
	stop, err := d.Serve(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return d, sock
}
