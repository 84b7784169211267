// Package cluster is `make cluster` (e2e/cmd/cluster): a one-node cluster
// in this process on which kubeplug installs as on any other, from the
// kustomize base or the Helm chart. It starts the control plane
// (e2e/controlplane) with the kube-controller-manager controllers an
// install needs and those kubeplug's policies work beside, and one node:
// the kubelet stand-in (e2e/internal/kubelet), which posts the node's
// status and Lease, with e2e/internal/podrun as its container runtime for
// every namespace, each pod in a network namespace of its own. The node
// holds the images of an OCI layout (make image's build/image/oci) and
// pulls none: a pod of any other image is left Pending, its container
// waiting with ErrImageNeverPull, and a Warning event says why.
//
// The end-to-end test of the documented install starts the cluster
// through Start, as make cluster does.
//
// It must not import the host: it plays the cluster's part.
package cluster
