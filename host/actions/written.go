package actions

import "github.com/kubeplug/kubeplug/abi"

// Stale returns an object of req that still has the resourceVersion written
// (a Report's Written) recorded for it: req was built from a cache that has not yet seen a write
// the host made. A module deciding on it would take the host's own earlier
// state for the cluster's (a partition it moved for one the user set, say).
func Stale(req *abi.ReconcileRequest, written map[abi.ObjectRef]string) (abi.ObjectRef, bool) {
	var stale abi.ObjectRef
	found := false
	eachObject(req, func(kind string, m *abi.ObjectMeta, _ any) bool {
		ref := abi.ObjectRef{Kind: kind, Namespace: m.Namespace, Name: m.Name, UID: m.UID}
		if rv, ok := written[ref]; ok && rv == m.ResourceVersion {
			stale, found = ref, true
			return false
		}
		return true
	})
	return stale, found
}
