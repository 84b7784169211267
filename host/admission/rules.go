package admission

import (
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/kubeplug/kubeplug/abi"
)

// registered checks req against the rules the module's manifest registers
// (admission.rules, the rules of its webhook configuration): a request the
// API server would not have sent the module (another resource, operation,
// group, version or scope) is refused before the module sees it. Anyone
// who can reach the webhook port can post a review; only the API server,
// following the configuration, sends the ones that match.
//
// The matching is the API server's own for a rule (k8s.io/apiserver's
// webhook rules matcher): "*" in any list matches everything, a resource
// "*" matches every resource but no subresource, "*/*" every resource and
// subresource, "pods/*" every subresource of pods, "*/status" the status of
// every resource. The request's Resource is the one the configuration
// matched (the API server converts an equivalent request before sending
// it), so it is the one checked.
func (m *Module) registered(req *admissionv1.AdmissionRequest) error {
	man := m.Admitter.Manifest()
	if man.Admission == nil || len(man.Admission.Rules) == 0 {
		return fmt.Errorf("the module registers no admission rules (admission.rules in its manifest): it is sent no request")
	}
	if slices.ContainsFunc(man.Admission.Rules, func(r abi.AdmissionRule) bool { return ruleMatches(r, req) }) {
		return nil
	}
	resource := req.Resource.Resource
	if req.SubResource != "" {
		resource += "/" + req.SubResource
	}
	return fmt.Errorf("%s of %s (group %q, version %s) matches none of the module's admission rules: the API server would not have sent it; the request is refused before the module sees it",
		req.Operation, resource, req.Resource.Group, req.Resource.Version)
}

// withheld refuses a request for a resource the host never sends to a
// module (abi.Withheld: Secrets, Leases), whatever the module's rules and
// grants: by the resource the request names, the one it was made for, or
// its object's kind.
func withheld(req *admissionv1.AdmissionRequest) error {
	kinds := map[string]string{"Secret": "secrets", "Lease": "leases"}
	for _, gr := range []abi.GroupResource{
		{Group: req.Resource.Group, Resource: req.Resource.Resource},
		{Group: req.Kind.Group, Resource: kinds[req.Kind.Kind]},
		requestResource(req),
	} {
		if abi.IsWithheld(gr.Group, gr.Resource) {
			return fmt.Errorf("a request for %s, which the host never sends to a module (Secrets and Leases are withheld whatever its rules and allow: say); "+
				"the request is refused before the module sees it: remove the resource from the webhook's rules", gr.Resource)
		}
	}
	return nil
}

func requestResource(req *admissionv1.AdmissionRequest) abi.GroupResource {
	if req.RequestResource == nil {
		return abi.GroupResource{}
	}
	return abi.GroupResource{Group: req.RequestResource.Group, Resource: req.RequestResource.Resource}
}

func ruleMatches(r abi.AdmissionRule, req *admissionv1.AdmissionRequest) bool {
	return matchesAny(r.Operations, string(req.Operation)) &&
		matchesAny(r.APIGroups, req.Resource.Group) &&
		matchesAny(r.APIVersions, req.Resource.Version) &&
		resourceMatches(r.Resources, req.Resource.Resource, req.SubResource) &&
		scopeMatches(r.Scope, req)
}

func matchesAny(list []string, v string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, v)
}

func resourceMatches(list []string, resource, sub string) bool {
	for _, r := range list {
		res, rsub, hasSub := strings.Cut(r, "/")
		switch {
		case !hasSub && sub == "":
			if res == "*" || res == resource {
				return true
			}
		case hasSub && sub != "":
			if (res == "*" || res == resource) && (rsub == "*" || rsub == sub) {
				return true
			}
		}
	}
	return false
}

// scopeMatches: a namespaced request carries its namespace, a cluster-scoped
// one none; a Namespace is cluster-scoped though a request for one names it
// as its namespace.
func scopeMatches(scope string, req *admissionv1.AdmissionRequest) bool {
	isNamespace := req.Resource.Group == "" && req.Resource.Resource == "namespaces"
	switch scope {
	case "Cluster":
		return isNamespace || req.Namespace == ""
	case "Namespaced":
		return !isNamespace && req.Namespace != ""
	}
	return true
}
