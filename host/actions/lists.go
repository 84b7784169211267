package actions

import (
	"slices"

	"github.com/kubeplug/kubeplug/abi"
)

// changeOwnerReferences returns refs without the references whose UID c
// removes, then with c's additions: a reference with the UID of one already
// there replaces it in place, others are appended in order. refs is not
// modified.
func changeOwnerReferences(refs []abi.OwnerReference, c *abi.OwnerReferencesChange) []abi.OwnerReference {
	out := make([]abi.OwnerReference, 0, len(refs)+len(c.Add))
	for _, r := range refs {
		if !slices.Contains(c.Remove, r.UID) {
			out = append(out, r)
		}
	}
	for _, a := range c.Add {
		i := slices.IndexFunc(out, func(r abi.OwnerReference) bool { return r.UID == a.UID })
		if i >= 0 {
			out[i] = a
		} else {
			out = append(out, a)
		}
	}
	return out
}

// sameOwnerReferences compares in order. Kubernetes keeps the order it is
// given and changeOwnerReferences preserves it, so a change that alters
// nothing yields an equal list; a reordered list is a different one, and
// writing it is harmless.
func sameOwnerReferences(a, b []abi.OwnerReference) bool {
	return slices.Equal(a, b)
}

// withFinalizer returns list with f appended, unless it is there already.
func withFinalizer(list []string, f string) ([]string, bool) {
	if slices.Contains(list, f) {
		return list, false
	}
	return append(slices.Clip(list), f), true
}

// withoutFinalizer returns list without any occurrence of f.
func withoutFinalizer(list []string, f string) ([]string, bool) {
	if !slices.Contains(list, f) {
		return list, false
	}
	out := make([]string, 0, len(list)-1)
	for _, x := range list {
		if x != f {
			out = append(out, x)
		}
	}
	return out, true
}
