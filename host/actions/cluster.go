package actions

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/abi"
)

// Cluster is the API server as the executor needs it. The live host
// implements it with client-go's dynamic client; memcluster implements it in
// memory for `kubeplug test`. Errors are Kubernetes API errors
// (k8s.io/apimachinery/pkg/api/errors), so a conflict is apierrors.IsConflict
// on both.
type Cluster interface {
	// Patch patches the named object (or its subresource, e.g. "status")
	// and returns the object's new resourceVersion. A JSON merge patch that
	// carries metadata.resourceVersion fails with a conflict when the object's
	// resourceVersion differs; one that carries metadata.uid fails when the
	// UID differs. pt is types.MergePatchType or types.ApplyPatchType (then
	// force is true). The executor passes its FieldManager with every patch,
	// so that managedFields name kubeplug as the writer of merge patches too.
	Patch(ctx context.Context, kind, namespace, name string, pt types.PatchType, data []byte, fieldManager string, subresource ...string) (resourceVersion string, err error)
	// Apply server-side applies data, an object as JSON that carries its
	// uid (and resourceVersion) as preconditions, to the named object or
	// its subresource with fieldManager, and returns the new
	// resourceVersion. Without force it fails with a conflict naming each
	// field another manager owns (apierrors.IsConflict, causes of type
	// FieldManagerConflict), the manager's own Update entry included: the
	// generic actions' write (ABI 1.6).
	Apply(ctx context.Context, kind, namespace, name string, data []byte, fieldManager string, force bool, subresource string) (resourceVersion string, err error)
	// Create creates data, an object as JSON, in namespace with
	// fieldManager, and returns its name (made from metadata.generateName
	// when it has none) and resourceVersion; an object of that name that
	// exists is AlreadyExists.
	Create(ctx context.Context, kind, namespace string, data []byte, fieldManager string) (name, resourceVersion string, err error)
	// Delete deletes the named object with UID and resourceVersion
	// preconditions (either may be empty to skip it).
	Delete(ctx context.Context, kind, namespace, name, uid, resourceVersion string) error
	// Current reads the named object from the API server itself, not from a
	// cache. The executor calls it to finish a volume's deletion, to check
	// that a volume's claim is gone before it deletes the volume, and to
	// check that an owner it is about to reference exists and is not being
	// deleted with orphan propagation (see Executor).
	Current(ctx context.Context, kind, namespace, name string) (Meta, error)
	// CurrentVolume reads the named PersistentVolume from the API server
	// itself. The executor calls it before a CSI DeleteVolume, which the API
	// server cannot precondition: the volume is deleted only if this read,
	// not the module's input, says it may be (see Executor).
	CurrentVolume(ctx context.Context, name string) (PersistentVolume, error)
	// CurrentClassParameters reads the parameters of the named StorageClass
	// from the API server itself, to resolve the secrets of a DeleteVolume.
	CurrentClassParameters(ctx context.Context, name string) (map[string]string, error)
	// RecordEvent records an Event on target on behalf of module.
	RecordEvent(ctx context.Context, target abi.ObjectRef, eventType, reason, message, module string) error
}

// Meta is what Current reads of an object.
type Meta struct {
	UID             string
	ResourceVersion string
	Finalizers      []string
	// Deleting is true when the object has a deletionTimestamp.
	Deleting bool
	// Generation is metadata.generation: it moves when the spec does.
	Generation int64
}

// PersistentVolume is what CurrentVolume reads of a PersistentVolume: the
// fields external-provisioner reads before it deletes a backing volume.
type PersistentVolume struct {
	Meta
	Annotations map[string]string
	// Phase is status.phase, e.g. "Released".
	Phase string
	// ReclaimPolicy is spec.persistentVolumeReclaimPolicy.
	ReclaimPolicy string
	// ClaimRef is spec.claimRef; nil when unset.
	ClaimRef *abi.ObjectReference
	// CSI is spec.csi's driver and handle; nil for a volume that is not CSI.
	// For a volume with an in-tree source that CSI migration covers, it is
	// the CSI volume csi-translation-lib translates the source to, as
	// external-provisioner deletes such a volume; the module's view of the
	// volume gives its driver only (see inputCSI).
	CSI *abi.CSIVolumeSource
	// InTreePlugin names the in-tree plugin of a volume whose source CSI
	// migration covers, "kubernetes.io/aws-ebs" say; "" for any other.
	InTreePlugin string
	// Untranslatable says why such a source did not translate; CSI is nil
	// then.
	Untranslatable string
	// StorageClassName is spec.storageClassName.
	StorageClassName string
}

// VolumeDeleter deletes backing volumes through CSI. The live host calls a
// driver's controller service; memcluster records the calls.
type VolumeDeleter interface {
	// Configured reports whether the host may act for driver.
	Configured(driver string) bool
	// DeleteVolume calls the driver's DeleteVolume for handle, passing the
	// data of the named Secret (if any) as secrets. The executor resolves
	// secrets itself from the volume and its StorageClass, never from the
	// module. Deleting a volume that is already gone succeeds.
	DeleteVolume(ctx context.Context, driver, handle string, secrets *abi.SecretReference) error
}

// VolumeFromObject reads a PersistentVolume's fields from obj, the object as
// the API server serves it in JSON (an unstructured object), for the
// implementations of CurrentVolume. An in-tree source that CSI migration
// covers is read as the CSI volume it translates to.
func VolumeFromObject(obj map[string]any) PersistentVolume {
	u := unstructured.Unstructured{Object: obj}
	v := PersistentVolume{
		Meta: Meta{
			UID:             string(u.GetUID()),
			ResourceVersion: u.GetResourceVersion(),
			Finalizers:      u.GetFinalizers(),
			Deleting:        u.GetDeletionTimestamp() != nil,
		},
		Annotations: u.GetAnnotations(),
	}
	v.Phase, _, _ = unstructured.NestedString(obj, "status", "phase")
	v.ReclaimPolicy, _, _ = unstructured.NestedString(obj, "spec", "persistentVolumeReclaimPolicy")
	v.StorageClassName, _, _ = unstructured.NestedString(obj, "spec", "storageClassName")
	if ref, ok, _ := unstructured.NestedMap(obj, "spec", "claimRef"); ok {
		v.ClaimRef = &abi.ObjectReference{}
		v.ClaimRef.APIVersion, _, _ = unstructured.NestedString(ref, "apiVersion")
		v.ClaimRef.Kind, _, _ = unstructured.NestedString(ref, "kind")
		v.ClaimRef.Namespace, _, _ = unstructured.NestedString(ref, "namespace")
		v.ClaimRef.Name, _, _ = unstructured.NestedString(ref, "name")
		v.ClaimRef.UID, _, _ = unstructured.NestedString(ref, "uid")
	}
	if csi, ok, _ := unstructured.NestedMap(obj, "spec", "csi"); ok {
		v.CSI = &abi.CSIVolumeSource{}
		v.CSI.Driver, _, _ = unstructured.NestedString(csi, "driver")
		v.CSI.VolumeHandle, _, _ = unstructured.NestedString(csi, "volumeHandle")
		return v
	}
	csi, plugin, err := translateInTree(obj)
	v.CSI, v.InTreePlugin = csi, plugin
	if err != nil {
		v.Untranslatable = err.Error()
	}
	return v
}

// ClassParametersFromObject reads a StorageClass's parameters from obj, the
// object as the API server serves it in JSON, for the implementations of
// CurrentClassParameters.
func ClassParametersFromObject(obj map[string]any) map[string]string {
	p, _, _ := unstructured.NestedStringMap(obj, "parameters")
	return p
}
