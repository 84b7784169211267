// Package kube connects the host to a real API server with client-go: the
// executor's Cluster over the dynamic client, a snapshot.Lister over
// informer caches (no API reads on the hot path), an event sink that records
// Kubernetes Events without repeating itself, and a transport that counts the
// requests the host makes.
//
// It must not import the runtime or the controllers: it is the host's view
// of Kubernetes and nothing more.
package kube
