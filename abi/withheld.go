package abi

import (
	"slices"
	"strings"
)

//msgp:ignore GroupResource

// CapabilityAdmit is what the operator grants an admit hook in allow: (not a
// manifest's capability: a manifest asks through Admission.Rules): the
// resources whose admission requests the module may be sent ("pods" also
// covers its subresources, "*" everything). A CapabilityMutate grant
// covers the same for its resources: a module sees what it may patch.
const CapabilityAdmit = "admit"

// GroupResource names a resource in an API group ("" for the core group).
type GroupResource struct {
	Group    string `json:"group"`
	Resource string `json:"resource"`
}

// Withheld lists the resources the host never sends to an admit hook,
// whatever a module's rules ask and its allow: grants: Secrets, whose data
// is no module's to see, and Leases, the host's own leader election and
// every node's heartbeat, which a module that failed or denied would stop.
func Withheld() []GroupResource {
	return []GroupResource{{Group: "", Resource: "secrets"}, {Group: "coordination.k8s.io", Resource: "leases"}}
}

// IsWithheld reports whether requests for resource (a subresource
// included) of group are withheld from admit hooks.
func IsWithheld(group, resource string) bool {
	for _, w := range Withheld() {
		if w.Group == group && w.Resource == resource {
			return true
		}
	}
	return false
}

// Withholds returns a withheld resource the rule would register, and
// whether there is one: a group of the rule's that is the resource's or
// "*", and a resource that is it, one of its subresources, or a wildcard.
func (r AdmissionRule) Withholds() (GroupResource, bool) {
	for _, w := range Withheld() {
		if !slices.Contains(r.APIGroups, w.Group) && !slices.Contains(r.APIGroups, "*") {
			continue
		}
		for _, res := range r.Resources {
			base, _, _ := strings.Cut(res, "/")
			if base == "*" || base == w.Resource {
				return w, true
			}
		}
	}
	return GroupResource{}, false
}
