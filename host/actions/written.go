package actions

import "github.com/kubeplug/kubeplug/abi"

// Stale returns an object of req that still has the resourceVersion written
// (a Report's Written) recorded for it: req was built from a cache that has not yet seen a write
// the host made. A module deciding on it would take the host's own earlier
// state for the cluster's (a partition it moved for one the user set, say).
func Stale(req *abi.ReconcileRequest, written map[abi.ObjectRef]string) (abi.ObjectRef, bool) {
	for o := range req.Objects() {
		ref := abi.ObjectRef{Kind: o.Kind, Namespace: o.Meta.Namespace, Name: o.Meta.Name, UID: o.Meta.UID}
		if rv, ok := written[ref]; ok && rv == o.Meta.ResourceVersion {
			return ref, true
		}
	}
	return abi.ObjectRef{}, false
}
