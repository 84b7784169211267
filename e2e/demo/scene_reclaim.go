package demo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// csiDriverName is the CSI driver of the reclaim scene; examples/demo/reclaim-leak.yaml names it.
const csiDriverName = "csi.demo.kubeplug.dev"

const extFinalizer = "external-provisioner.volume.kubernetes.io/finalizer"

// reclaimLeak: KEP-2644's case. A volume deleted before its claim used to
// leak its backing storage; with the reclaim module the host deletes it
// through the CSI driver once the claim goes.
func reclaimLeak(ctx context.Context, d *demo) error {
	class, pv, claim, err := readReclaimObjects(d.Root)
	if err != nil {
		return err
	}
	c := d.client
	d.n.say("The CSI driver %s is a real CSI gRPC server on a unix socket in this process;", csiDriverName)
	d.n.say("the host is configured to act for it (host.yaml csiDrivers), as external-provisioner would.")
	pv.Spec.CSI.VolumeHandle = d.driver.AddVolume(pv.Name)
	d.n.step("backing volume %s created in the driver (it now holds: %s)", pv.Spec.CSI.VolumeHandle, strings.Join(d.driver.Volumes(), ", "))
	if err := ensureNamespace(ctx, c, claim.Namespace); err != nil {
		return err
	}
	if _, err := c.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if _, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := c.CoreV1().PersistentVolumeClaims(claim.Namespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		return err
	}
	d.n.step("applied examples/demo/reclaim-leak.yaml: StorageClass %s, PersistentVolume %s (reclaim policy Delete), claim %s/%s",
		class.Name, pv.Name, claim.Namespace, claim.Name)

	var got *corev1.PersistentVolume
	err = d.await(ctx, "the volume bound and protected", func(ctx context.Context) (bool, error) {
		got, err = c.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return got.Status.Phase == corev1.VolumeBound && slices.Contains(got.Finalizers, extFinalizer), nil
	})
	if err != nil {
		return err
	}
	d.n.step("reclaim decided: the bound volume of a driver this host serves gets %s", extFinalizer)
	d.n.say("finalizers now: %s", strings.Join(got.Finalizers, ", "))

	if err := c.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil {
		return err
	}
	d.n.step("kubectl delete pv %s, while its claim still exists", pv.Name)
	err = d.await(ctx, "the volume terminating", func(ctx context.Context) (bool, error) {
		got, err = c.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		return err == nil && got.DeletionTimestamp != nil, err
	})
	if err != nil {
		return err
	}
	d.n.say("The volume is Terminating but stays, held by its finalizers; the backing volume is untouched: the")
	d.n.say("claim still exists, and the module never deletes the volume of a claim that does.")

	if err := c.CoreV1().PersistentVolumeClaims(claim.Namespace).Delete(ctx, claim.Name, metav1.DeleteOptions{}); err != nil {
		return err
	}
	d.n.step("kubectl delete pvc %s/%s", claim.Namespace, claim.Name)
	err = d.await(ctx, "the volume gone", func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return err
	}
	left := d.driver.Volumes()
	if slices.Contains(left, pv.Spec.CSI.VolumeHandle) {
		return fmt.Errorf("backing volume %s leaked", pv.Spec.CSI.VolumeHandle)
	}
	d.n.step("reclaim decided: the volume is Released and its policy is Delete: DeleteVolume %s through %s, then remove the finalizer",
		pv.Spec.CSI.VolumeHandle, csiDriverName)
	d.n.say("The driver answered %d DeleteVolume call(s) for it; the PersistentVolume is gone and the driver holds %d volumes: no leak.",
		d.driver.CallsFor("DeleteVolume", pv.Spec.CSI.VolumeHandle), len(left))
	return nil
}

func readReclaimObjects(root string) (*storagev1.StorageClass, *corev1.PersistentVolume, *corev1.PersistentVolumeClaim, error) {
	b, err := os.ReadFile(filepath.Join(root, "examples", "demo", "reclaim-leak.yaml"))
	if err != nil {
		return nil, nil, nil, err
	}
	var (
		class storagev1.StorageClass
		pv    corev1.PersistentVolume
		claim corev1.PersistentVolumeClaim
	)
	docs := bytes.Split(b, []byte("\n---\n"))
	if len(docs) != 3 {
		return nil, nil, nil, fmt.Errorf("examples/demo/reclaim-leak.yaml: want 3 documents, got %d", len(docs))
	}
	for i, into := range []any{&class, &pv, &claim} {
		if err := yaml.UnmarshalStrict(docs[i], into); err != nil {
			return nil, nil, nil, fmt.Errorf("examples/demo/reclaim-leak.yaml document %d: %w", i+1, err)
		}
	}
	return &class, &pv, &claim, nil
}
