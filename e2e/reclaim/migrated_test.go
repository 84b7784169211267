package reclaim

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

const (
	// ebsDriver is the CSI driver kubernetes.io/aws-ebs migrates to.
	ebsDriver = "ebs.csi.aws.com"
	// inTreeFinalizer is the PV controller's finalizer, which it drops
	// from a volume whose plugin CSI migration covers.
	inTreeFinalizer = "kubernetes.io/pv-controller"
	annMigratedTo   = "pv.kubernetes.io/migrated-to"
)

// migratedClass is an in-tree aws-ebs class: kube-controller-manager 1.37
// migrates its volumes to ebs.csi.aws.com.
var migratedClass = class{name: "gp2-migrated", provisioner: "kubernetes.io/aws-ebs", policy: corev1.PersistentVolumeReclaimDelete}

// provisionMigrated makes a bound aws-ebs volume of migratedClass whose
// backing volume is in d, named by a URL-style volume ID, as the in-tree
// plugin made them before migration, with the in-tree finalizer the PV
// controller gave it then and no migrated-to annotation yet.
func provisionMigrated(t *testing.T, d *csiDriver) pair {
	t.Helper()
	return provisionAs(t, d, migratedClass, func(pv *corev1.PersistentVolume, handle string) {
		pv.Finalizers = []string{inTreeFinalizer}
		pv.Spec.AWSElasticBlockStore = &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://eu-west-1a/" + handle, FSType: "ext4"}
	})
}

// TestMigratedVolumeDeletedBeforeClaim is the proposal's test on an in-tree
// volume migrated to CSI: kube-controller-manager's PV controller annotates
// it migrated-to ebs.csi.aws.com and drops its own finalizer, as it does for
// every aws-ebs volume; the host, acting for ebs.csi.aws.com, puts
// external-provisioner's finalizer on instead, so that deleting the volume
// object before its claim holds it until the claim is gone; then the host
// deletes the backing volume through the driver, by the handle
// csi-translation-lib gives the in-tree volume ID, and the object goes.
// Before, the in-tree finalizer went and nothing came in its place: the
// object went at once and the disk leaked.
func TestMigratedVolumeDeletedBeforeClaim(t *testing.T) {
	d := serveDriverNamed(t, ebsDriver, nil)
	startHost(t, "host", d)
	p := provisionMigrated(t, d)

	testenv.Eventually(t, wait, p.pv+": migrated-to "+ebsDriver+", "+extFinalizer+" for "+inTreeFinalizer, func() (bool, error) {
		v, ok := p.volume(t)
		return ok && v.Annotations[annMigratedTo] == ebsDriver &&
			slices.Contains(v.Finalizers, extFinalizer) && !slices.Contains(v.Finalizers, inTreeFinalizer), nil
	})

	p.deleteBeforeClaim(t, d)
}
