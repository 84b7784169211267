package policy

import (
	"slices"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// stampClaim gives a claim being created for one of a StatefulSet's
// replicas the set's controller reference, when the set's policy has
// whenDeleted Delete: the reference the reconcile path would add next, added
// before the claim exists, so that the set can no longer be deleted between
// the claim's creation and that write (upstream's window, closed inside
// kube-controller-manager by kubernetes/kubernetes#142130). Reconcile then
// finds the claim up to date and writes nothing.
//
// The answer is the reconcile path's own, through owners.go: the claim is
// judged as decide judges an in-range replica's claim, and stamped only when
// isClaimOwnerUpToDate says it is not up to date and
// updateClaimOwnerRefForSetAndPod asks for exactly the claim's references
// plus the set's. So a claim with a reference naming the set or the pod with
// another UID (stale), or with another controller, or with our reference
// written without controller, is admitted unchanged and left to reconcile,
// as are claims of condemned ordinals (kube-controller-manager creates
// claims only for the replicas it wants), claims of a set being deleted or
// that the host's caches do not have, and claims under any other policy.
// The hook only ever adds a reference: it never removes one.
func stampClaim(req *abi.AdmitRequest) (sdk.Admission, error) {
	if req.Operation != abi.OperationCreate || req.Object == nil || req.Object.PersistentVolumeClaim == nil ||
		req.StatefulSet == nil || req.StatefulSet.Set == nil {
		return sdk.Allow(), nil
	}
	set, claim := req.StatefulSet.Set, req.Object.PersistentVolumeClaim
	// As decide: nothing while the set is being deleted. A reference added
	// during an orphaning deletion would have the collector delete the
	// claim it was told to keep.
	if set.Metadata.DeletionTimestamp != "" || set.Metadata.UID == "" {
		return sdk.Allow(), nil
	}
	p := getPersistentVolumeClaimRetentionPolicy(set)
	if !p.known() || p.whenDeleted != del {
		return sdk.Allow(), nil
	}
	name := claim.Metadata.Name
	if name == "" {
		name = req.Name
	}
	_, ordinal, ok := sdk.MatchClaim(set, name)
	if start, end := sdk.OrdinalRange(set); !ok || !podInOrdinalRange(ordinal, start, end) {
		return sdk.Allow(), nil
	}
	in, err := sdk.NewRequest(&abi.ReconcileRequest{Subject: abi.SubjectStatefulSet, StatefulSet: req.StatefulSet})
	if err != nil {
		return sdk.Allow(), err
	}
	o := ownersOf(set, sdk.NewControllerRef(set), p, replica{ordinal: ordinal, pod: in.Pod(ordinal)}, true)
	if o.isClaimOwnerUpToDate(claim) {
		return sdk.Allow(), nil
	}
	have := claim.Metadata.OwnerReferences
	want := o.updateClaimOwnerRefForSetAndPod(claim, nil)
	if len(want) != len(have)+1 || !slices.Equal(want[:len(have)], have) || want[len(have)] != o.set {
		return sdk.Allow(), nil // a rewrite or a removal: the reconcile path's
	}
	a := sdk.Allow()
	if len(have) == 0 {
		err = a.Patch(abi.PatchAdd, sdk.Pointer("metadata", "ownerReferences"), []abi.OwnerReference{o.set})
	} else {
		err = a.Patch(abi.PatchAdd, sdk.Pointer("metadata", "ownerReferences", "-"), o.set)
	}
	return a, err
}
