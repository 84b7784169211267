package actions

import (
	"context"

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
	// Delete deletes the named object with UID and resourceVersion
	// preconditions (either may be empty to skip it).
	Delete(ctx context.Context, kind, namespace, name, uid, resourceVersion string) error
	// Current reads the named object from the API server itself, not from a
	// cache. The executor calls it before a call that the API server cannot
	// precondition (a CSI DeleteVolume), to act only on the object version
	// the module saw; to finish a volume's deletion; and to check that an
	// owner it is about to reference is not being deleted (see Executor).
	Current(ctx context.Context, kind, namespace, name string) (Meta, error)
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
}

// VolumeDeleter deletes backing volumes through CSI. The live host calls a
// driver's controller service; memcluster records the calls.
type VolumeDeleter interface {
	// Configured reports whether the host may act for driver.
	Configured(driver string) bool
	// DeleteVolume calls the driver's DeleteVolume for handle, passing the
	// data of the named Secret (if any) as secrets. Deleting a volume that is
	// already gone succeeds.
	DeleteVolume(ctx context.Context, driver, handle string, secrets *abi.SecretReference) error
}
