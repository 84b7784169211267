package actions

import "github.com/kubeplug/kubeplug/abi"

// Written returns the objects the writes of rep changed, each with the
// resourceVersion req, the input the module decided on, gave it: the
// version a cache that has not yet seen the write still holds. Events and
// CSI calls change no object of the input and are left out.
func Written(req *abi.ReconcileRequest, rep Report) map[abi.ObjectRef]string {
	var out map[abi.ObjectRef]string
	for _, a := range rep.Actions {
		if a.Outcome != Executed || a.Type == abi.ActionEvent || a.Type == abi.ActionDeleteVolume {
			continue
		}
		t, ok := resolve(req, a.Target)
		if !ok || t.ResourceVersion == "" {
			continue
		}
		if out == nil {
			out = make(map[abi.ObjectRef]string)
		}
		if _, seen := out[t.Ref()]; !seen {
			out[t.Ref()] = t.ResourceVersion
		}
	}
	return out
}

// Stale returns an object of req that still has the resourceVersion written
// recorded for it: req was built from a cache that has not yet seen a write
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
