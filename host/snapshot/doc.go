// Package snapshot builds the input of one reconcile, an abi.ReconcileRequest,
// from cached cluster state: the subject object and the related objects a
// policy needs, projected field by field onto the abi wire types.
//
// Reading goes through the Lister interface only. In the live host it is
// backed by informer caches, in `kubeplug test` by an in-memory cluster; the
// builder never calls the API server, so a reconcile costs no API reads. The
// package also maps events on related objects (pods, claims,
// VolumeClaimUpdates) to the keys of the subjects they belong to, for the
// informer event handlers.
//
// snapshot may import the Kubernetes API types and apimachinery, and abi. It
// must not import client-go (clients, informers), wazero or the runtime,
// actions or controller packages: it reads, it never writes.
package snapshot
