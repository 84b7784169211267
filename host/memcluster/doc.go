// Package memcluster is an in-memory Kubernetes API server for `kubeplug
// test` and for unit tests of the host: it implements actions.Cluster,
// actions.VolumeDeleter and snapshot.Lister over objects kept as unstructured
// maps, and behaves like the real API server where a policy module or the
// executor could tell the difference.
//
// What it does like the API server:
//   - every object gets a uid (derived from kind, namespace and name when the
//     loaded object has none), a resourceVersion from one global counter
//     bumped on every write, a creationTimestamp and a generation;
//   - a patch or delete whose uid or resourceVersion precondition differs
//     from the stored object fails with a conflict (apierrors.IsConflict);
//   - a write that changes nothing is not a write: no new resourceVersion;
//   - an object with finalizers is not removed by a delete but gets a
//     deletionTimestamp, and goes away when the last finalizer is removed;
//     no new finalizer can be added to it meanwhile (apierrors.IsInvalid with
//     the API server's message);
//   - the "status" subresource changes only .status, and a patch of the main
//     resource leaves .status alone, for the kinds that have a status
//     subresource;
//   - uid, creationTimestamp, deletionTimestamp and generation cannot be
//     changed by a patch;
//   - a StatefulSet's rollingUpdate (setPartition) is refused under an
//     OnDelete strategy, and a negative partition, with the API server's
//     messages;
//   - a claim's spec is immutable but for volumeName (set once) and, on a
//     bound claim, the storage request and volumeAttributesClassName; the
//     request grows only when its StorageClass allows volume expansion,
//     goes down only while it stays above status.capacity, and a class in
//     status.currentVolumeAttributesClassName cannot be removed
//     (kube-apiserver's validation and PersistentVolumeClaimResize
//     admission, with their messages).
//
// What it simplifies, on purpose:
//   - a patch whose metadata.uid differs from the stored one is a conflict.
//     The real server rejects such a patch as an invalid change of an
//     immutable field (422); either way nothing is written, and the executor
//     treats both as "the object is not the one the module saw";
//   - server-side apply (types.ApplyPatchType) is a JSON merge patch of the
//     applied fields with the same preconditions, and a field an apply
//     manager set alone (it changed the value) goes away when that manager's
//     next apply omits it; one it applied unchanged (shared with the
//     object's writer) or that a later write changed stays. There are no
//     managedFields, and an apply that only changes ownership is not a
//     write. Patch's apply forces (applyClaim's); Apply (the generic
//     actions', ABI 1.6) may not, and then conflicts on a field whose value
//     it changes unless its manager's Apply entry owns it alone: a field
//     another apply manager owns, one a Create by any manager (its Update
//     entry, the same manager's included) wrote, one written before any
//     apply (a case file's) or shared, each cause naming the manager as the
//     API server does (e2e/crd's TestGenericWritesAsMemcluster holds the
//     two to the same outcomes). An apply of an absent object under a uid
//     is a conflict, as on the API server; without one the API server
//     would create the object, memcluster answers NotFound;
//   - no controller runs: no garbage collector (owner references are stored,
//     never followed), no kubelet (a pod without finalizers is removed at
//     once instead of terminating gracefully), no PV binder;
//   - Events are kept in a list of their own, deduplicated the way client-go's
//     recorder does, not as Event objects.
//
// memcluster must not import client-go's clients, informers or anything that
// talks to a real cluster; it is a fake of one.
package memcluster
