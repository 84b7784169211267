// Package manifests renders what a user installs kubeplug with, through the
// libraries their tools are made of: the Helm chart charts/kubeplug with the
// Helm v3 SDK (as `helm install` renders it, CRDs included) and the
// kustomizations under deploy/ with the kustomize API (as `kubectl apply
// -k` builds them), into objects a test applies to the real API server.
//
// It must not import the host: it reads the repository's files only.
package manifests
