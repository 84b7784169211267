// Package resizer stands in, inside the test process, for a CSI driver's
// external-resizer sidecar and for the node expansion the kubelet finishes,
// so that end-to-end tests on a control plane with no storage see a claim's
// volume grow some time after its spec asks for it:
//
//   - Delay after a Bound claim's spec.resources.requests.storage exceeds its
//     status.capacity.storage, or its spec.volumeAttributesClassName differs
//     from status.currentVolumeAttributesClassName, it updates the bound
//     PersistentVolume's spec (capacity, volumeAttributesClassName) and then
//     the claim's status (capacity, allocatedResources,
//     currentVolumeAttributesClassName) through the status subresource,
//     each write with the object's resourceVersion as precondition;
//   - Fail makes a claim's pending or next expansion fail as
//     external-resizer reports an infeasible one: allocatedResourceStatuses
//     storage ControllerResizeInfeasible, condition ControllerResizeError
//     True, Warning event VolumeResizeFailed on the claim. It is not retried
//     until the claim's request changes, as external-resizer does not retry
//     an infeasible expansion;
//   - it never grows a claim whose StorageClass lacks allowVolumeExpansion
//     (the API server refuses such a request on a bound claim anyway);
//   - with Options.Provision it also plays external-provisioner and the
//     PersistentVolume binder: a Pending claim gets a CSI volume of the
//     size it requests, bound to it. With Options.CreateVolume the volume
//     is made in a driver first; if the claim goes before its
//     PersistentVolume is saved, Options.DeleteVolume deletes it, as
//     external-provisioner deletes a volume it cannot store.
//
// It never changes a claim's spec other than spec.volumeName when it binds
// one, never shrinks anything, and deletes nothing but a backing volume no
// PersistentVolume records.
//
// It must not import the host (github.com/kubeplug/kubeplug/host) or the
// guest modules: it plays the cluster's part, not kubeplug's.
package resizer
