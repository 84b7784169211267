// Package setctl stands in for kube-controller-manager's StatefulSet
// controller where it does not run: in the retentionalone tests and in the
// demo. It creates a StatefulSet's pods and claims the way upstream names and
// labels them, scales, deletes and recreates pods, and deletes the set, so
// that the owner references on the claims are the retention module's work
// and nobody else's. It also holds what both retention test packages build
// their StatefulSets from: the four policies (Policies) and the set itself
// (NewStatefulSet).
//
// It never writes an owner reference on a claim: claims are created without
// any, and a scale-down waits for the module to give the condemned claims
// the references their policy asks before it deletes the pods, as upstream
// fixes those claims itself just before it deletes the pods.
//
// It must not import the host (github.com/kubeplug/kubeplug/host) or the
// guest modules: it plays the cluster's part, not kubeplug's.
package setctl
