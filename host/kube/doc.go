// Package kube connects the host to a real API server with client-go: the
// executor's Cluster over the dynamic client, a snapshot.Lister over
// informer caches (no API reads on the hot path; objects slimmed by a
// transform to what modules read, a set's pods and claims found through
// indexes rather than namespace scans, the namespaced kinds optionally
// restricted to one shard of the cluster), an event sink that records
// Kubernetes Events without repeating itself, and a transport that counts the
// requests the host makes.
//
// It must not import the runtime or the controllers: it is the host's view
// of Kubernetes and nothing more.
package kube
