package abi

import (
	"fmt"
	"slices"
	"strings"
)

//msgp:tag json
//msgp:clearomitted

// Watches declares what a module reconciles and what it reads beside it
// (ABI 1.6): its subject, any resource the API server serves, and the
// objects related to each subject, each kind read-only and each change of one
// queuing the subjects it relates to. A module declares either Watches or
// one of the built-in subjects (Manifest.Subject), not both.
//
//	subject: {group: apps, version: v1, resource: deployments}
//	relations:
//	- {name: replicaSets, type: owned, resource: {group: apps, version: v1, resource: replicasets}}
//	- {name: pods, type: selected, path: spec.selector, resource: {version: v1, resource: pods}}
//	- {name: budget, type: named, path: metadata.name, resource: {group: policy, version: v1, resource: poddisruptionbudgets}}
//	- {name: classes, type: all, resource: {group: storage.k8s.io, version: v1, resource: storageclasses}}
type Watches struct {
	Subject   Resource   `json:"subject"`
	Relations []Relation `json:"relations,omitempty"`
}

// Resource names a resource as the API server serves it. Kind and
// Namespaced, when given, must agree with discovery; when not, the host
// takes them from it.
type Resource struct {
	// Group is the API group, "" for the core group.
	Group string `json:"group,omitempty"`
	// Version is the API version within the group ("v1").
	Version string `json:"version"`
	// Resource is the plural, lower-case resource name ("deployments").
	Resource string `json:"resource"`
	// Kind is the resource's kind ("Deployment").
	Kind string `json:"kind,omitempty"`
	// Namespaced is the resource's scope.
	Namespaced *bool `json:"namespaced,omitempty"`
}

// GroupResource returns r's group and resource.
func (r Resource) GroupResource() GroupResource {
	return GroupResource{Group: r.Group, Resource: r.Resource}
}

// String is "resource.group/version", "resource/version" in the core group.
func (r Resource) String() string {
	if r.Group == "" {
		return r.Resource + "/" + r.Version
	}
	return r.Resource + "." + r.Group + "/" + r.Version
}

// Relation types: how an object of a relation's resource relates to a
// subject.
const (
	// RelationOwned: objects whose controller owner reference is the
	// subject (a Deployment's ReplicaSets), in the subject's namespace, or
	// anywhere for a cluster-scoped subject.
	RelationOwned = "owned"
	// RelationSelected: objects in the subject's namespace that the label
	// selector at Path of the subject matches (a Deployment's
	// spec.selector; a Service's spec.selector, a map of labels). A
	// selector that is absent or empty selects nothing.
	RelationSelected = "selected"
	// RelationNamed: objects named at Path of the subject: a string is a
	// name (in the subject's namespace when the relation's resource is
	// namespaced), an object its "name" and "namespace" fields (an
	// ObjectReference: a PersistentVolume's spec.claimRef). A path through
	// a list names every element's (a pod's
	// spec.volumes.persistentVolumeClaim.claimName).
	RelationNamed = "named"
	// RelationAll: every object of the resource, in the subject's namespace
	// only with InNamespace, and only those LabelSelector matches when it
	// is set: small, shared kinds (StorageClasses, a configuration CRD).
	RelationAll = "all"
)

// RelationTypes returns every relation type, in the order above.
func RelationTypes() []string {
	return []string{RelationOwned, RelationSelected, RelationNamed, RelationAll}
}

// Relation is one kind of related object.
type Relation struct {
	// Name is the relation's name in a request (a lower camel case
	// identifier, unique among the module's relations).
	Name string `json:"name"`
	// Type is one of RelationTypes().
	Type string `json:"type"`
	// Resource is the related objects' resource.
	Resource Resource `json:"resource"`
	// Path is the subject's field the relation reads (a field path without
	// brackets, ParseFieldPath): a label selector for RelationSelected, the
	// names for RelationNamed; empty for the other types.
	Path string `json:"path,omitempty"`
	// InNamespace limits RelationAll to the subject's namespace.
	InNamespace bool `json:"inNamespace,omitempty"`
	// LabelSelector limits RelationAll to the objects it matches, in
	// kubectl's syntax ("app=db,tier in (a,b)").
	LabelSelector string `json:"labelSelector,omitempty"`
}

// Budgets of a declaration, checked before it is read.
const (
	// WatchesMinMinor is the ABI minor version that introduced
	// Manifest.Watches.
	WatchesMinMinor = 6
	// MaxRelations is how many relations a module may declare.
	MaxRelations = 16
	// MaxRelatedObjects is how many objects one relation may bring to one
	// request: a reconcile whose relation holds more fails, saying which,
	// rather than sending the module an input without bound.
	MaxRelatedObjects = 1000
	// MaxLabelSelectorLength is the longest LabelSelector, in bytes.
	MaxLabelSelectorLength = 4096
	// MaxDeclaredRequestBytes is the most JSON a declared module's request
	// may carry, all its objects together: 1,000 objects of a relation
	// may each be as large as the API server stores (1.5 MiB), and the
	// host builds the request before the guest's memory limit could
	// refuse it.
	MaxDeclaredRequestBytes = 16 << 20
)

// validateWatches checks the declaration: its budgets first, then each
// resource's names, then each relation's type, path and scope. A declared
// module's capabilities may name only the resources it declares.
func (m *Manifest) validateWatches(marker Version, bad func(field string, index int, rule ManifestRule, value, format string, args ...any)) {
	w := m.Watches
	if w == nil {
		return
	}
	if marker.Minor < WatchesMinMinor {
		bad("watches", -1, RuleTooNew, "", "watches needs ABI %d.%d, but the module was built for %s", VersionMajor, WatchesMinMinor, marker)
		return
	}
	if m.Subject != "" {
		bad("subject", -1, RuleUnexpected, m.Subject, "subject %q is set beside watches: declare the subject in watches.subject, or use the built-in subject without watches", m.Subject)
	}
	if len(w.Relations) > MaxRelations {
		bad("watches.relations", -1, RuleTooMany, "", "watches.relations lists %d relations, more than %d", len(w.Relations), MaxRelations)
		return
	}
	if why := w.Subject.check(); why != "" {
		bad("watches.subject", -1, RuleSyntax, w.Subject.String(), "watches.subject: %s", why)
	}
	names := map[string]int{}
	for i, r := range w.Relations {
		field := fmt.Sprintf("watches.relations[%d]", i)
		if why := checkIdentifier(r.Name); why != "" {
			bad("watches.relations.name", i, RuleSyntax, r.Name, "%s.name %q %s", field, r.Name, why)
		} else if j, dup := names[r.Name]; dup {
			bad("watches.relations.name", i, RuleDuplicate, r.Name, "%s.name %q is the name of watches.relations[%d] too: name each relation once", field, r.Name, j)
		} else {
			names[r.Name] = i
		}
		if why := r.Resource.check(); why != "" {
			bad("watches.relations.resource", i, RuleSyntax, r.Resource.String(), "%s.resource: %s", field, why)
		}
		m.validateRelation(field, i, r, bad)
	}
	declared := append([]GroupResource{w.Subject.GroupResource()}, make([]GroupResource, 0, len(w.Relations))...)
	for _, r := range w.Relations {
		declared = append(declared, r.Resource.GroupResource())
	}
	for i, c := range m.Capabilities {
		if c.Action == ActionDeleteVolume {
			continue // refused with the other built-in actions
		}
		for _, res := range c.Resources {
			if !declaresResource(declared, res) {
				bad("capabilities.resources", i, RuleUnexpected, res, "capabilities[%d].resources names %q, which watches does not declare: a declared module may ask only for its subject's and its relations' resources (%s)", i, res, joinResources(declared))
				break
			}
		}
	}
}

// validateRelation checks one relation's type, path, selector and scope
// against the subject's, where both scopes are given (the host checks them
// again once discovery has told it the rest).
func (m *Manifest) validateRelation(field string, i int, r Relation, bad func(field string, index int, rule ManifestRule, value, format string, args ...any)) {
	subjectScoped := m.Watches.Subject.Namespaced
	clusterSubject := subjectScoped != nil && !*subjectScoped
	namespacedRelated := r.Resource.Namespaced != nil && *r.Resource.Namespaced
	switch r.Type {
	case RelationOwned:
	case RelationSelected:
		if clusterSubject && namespacedRelated {
			bad("watches.relations.type", i, RuleUnexpected, r.Type, "%s selects %s in the subject's namespace, but the subject %s is cluster-scoped and has none: use a relation of type all, named or owned", field, r.Resource.Resource, m.Watches.Subject.Resource)
		}
	case RelationNamed:
	case RelationAll:
		if r.InNamespace && clusterSubject {
			bad("watches.relations.inNamespace", i, RuleUnexpected, r.Type, "%s asks for the subject's namespace, but the subject %s is cluster-scoped: drop inNamespace", field, m.Watches.Subject.Resource)
		}
	default:
		bad("watches.relations.type", i, RuleUnknown, r.Type, "%s.type %q is not one of %s", field, r.Type, strings.Join(RelationTypes(), ", "))
		return
	}
	needsPath := r.Type == RelationSelected || r.Type == RelationNamed
	switch {
	case needsPath && r.Path == "":
		bad("watches.relations.path", i, RuleEmpty, "", "%s.path is empty: a relation of type %s reads the subject's field at path (e.g. %s)", field, r.Type, map[string]string{RelationSelected: "spec.selector", RelationNamed: "spec.claimRef"}[r.Type])
	case !needsPath && r.Path != "":
		bad("watches.relations.path", i, RuleUnexpected, r.Path, "%s.path is set, but a relation of type %s reads no field of the subject: drop it", field, r.Type)
	case len(r.Path) > MaxFieldPathLength:
		bad("watches.relations.path", i, RuleTooLong, r.Path[:MaxFieldPathLength], "%s.path is %d bytes long, more than %d", field, len(r.Path), MaxFieldPathLength)
	case r.Path != "":
		steps, err := ParseFieldPath(r.Path)
		if err != nil {
			bad("watches.relations.path", i, RuleSyntax, r.Path, "%s.path %q is not a field path: %v", field, r.Path, err)
			break
		}
		for _, s := range steps {
			if s.Name == "" {
				bad("watches.relations.path", i, RuleSyntax, r.Path, "%s.path %q is not a field path: it has an empty field name", field, r.Path)
				break
			}
			if s.Selects() {
				bad("watches.relations.path", i, RuleSyntax, r.Path, "%s.path %q has brackets: a relation's path names whole fields (through a list, every element's)", field, r.Path)
				break
			}
		}
	}
	switch {
	case r.Type != RelationAll && (r.InNamespace || r.LabelSelector != ""):
		bad("watches.relations.labelSelector", i, RuleUnexpected, r.Type, "%s sets inNamespace or labelSelector, which only a relation of type all reads", field)
	case len(r.LabelSelector) > MaxLabelSelectorLength:
		bad("watches.relations.labelSelector", i, RuleTooLong, r.LabelSelector[:MaxLabelSelectorLength], "%s.labelSelector is %d bytes long, more than %d", field, len(r.LabelSelector), MaxLabelSelectorLength)
	}
}

// check returns why r does not name a resource, "" when it may: a
// version and a resource name (RFC 1035 labels), a group (an RFC 1123
// subdomain, or empty), a kind (an upper camel case identifier, or empty),
// and not a resource withheld from every module.
func (r Resource) check() string {
	switch {
	case r.Version == "":
		return "version is empty (e.g. v1)"
	case !isLabel(r.Version):
		return fmt.Sprintf("version %q is not a lower-case API version (e.g. v1, v1beta1)", r.Version)
	case r.Resource == "":
		return "resource is empty: give the plural, lower-case resource name (e.g. deployments)"
	case !isLabel(r.Resource):
		return fmt.Sprintf("resource %q is not a plural, lower-case resource name (e.g. deployments; no subresources)", r.Resource)
	case r.Group != "" && !isSubdomain(r.Group):
		return fmt.Sprintf("group %q is not an API group (a DNS subdomain, e.g. apps, storage.k8s.io; the core group is empty)", r.Group)
	case r.Kind != "" && !isKind(r.Kind):
		return fmt.Sprintf("kind %q is not a kind (upper camel case, e.g. Deployment)", r.Kind)
	case IsWithheld(r.Group, r.Resource):
		return fmt.Sprintf("%s are withheld from every module", r.Resource)
	}
	return ""
}

// declaresResource reports whether a capability's resource res (a plural
// resource name, "resource.group" or a subresource of one) is one of
// declared.
func declaresResource(declared []GroupResource, res string) bool {
	base, _, _ := strings.Cut(res, "/")
	return slices.ContainsFunc(declared, func(d GroupResource) bool { return d.Named(base, "") })
}

// Named reports whether name, as a capability or a grant names a resource
// of a declared module ("poddisruptionbudgets" or
// "poddisruptionbudgets.policy", then "/sub" when sub is set), names g's
// subresource sub (g itself for "").
func (g GroupResource) Named(name, sub string) bool {
	if sub != "" {
		var ok bool
		if name, ok = strings.CutSuffix(name, "/"+sub); !ok {
			return false
		}
	}
	return name == g.Resource || g.Group != "" && name == g.Resource+"."+g.Group
}

// AllowsResource reports whether c allows action on r's subresource sub
// (r itself for ""), by either of r's names (GroupResource.Named) or "*".
func (c Capability) AllowsResource(action string, r Resource, sub string) bool {
	return c.Action == action && slices.ContainsFunc(c.Resources, func(x string) bool {
		return x == "*" || r.GroupResource().Named(x, sub)
	})
}

// AllowsResourcePath is AllowsPath for a declared resource: c allows action
// on r and one of its Paths covers path.
func (c Capability) AllowsResourcePath(action string, r Resource, path string) bool {
	return c.AllowsResource(action, r, "") && pathCovered(c.Paths, path)
}

func joinResources(rs []GroupResource) string {
	var b strings.Builder
	seen := map[GroupResource]bool{}
	for _, r := range rs {
		if seen[r] {
			continue
		}
		seen[r] = true
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(r.Resource)
	}
	return b.String()
}

// checkIdentifier returns why s is not a relation name, "" when it is: a
// lower-case letter, then letters and digits, at most 63 bytes.
func checkIdentifier(s string) string {
	switch {
	case s == "":
		return "is empty: name the relation (e.g. pods)"
	case len(s) > 63:
		return "is longer than 63 bytes"
	case s[0] < 'a' || s[0] > 'z':
		return "does not start with a lower-case letter"
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) {
			return fmt.Sprintf("has %q, which is not a letter or digit", s[i])
		}
	}
	return ""
}

func isKind(s string) bool {
	if s == "" || len(s) > 63 || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) {
			return false
		}
	}
	return true
}

// isLabel reports whether s is an RFC 1035 label: lower-case letters,
// digits and '-', starting with a letter, ending with a letter or digit, at
// most 63 bytes.
func isLabel(s string) bool {
	return s != "" && len(s) <= 63 && s[0] >= 'a' && s[0] <= 'z' && s[len(s)-1] != '-' && lowerDigitsDashes(s)
}

// isSubdomain reports whether s is an RFC 1123 subdomain: dot-separated
// labels of lower-case letters, digits and '-' (each starting and ending
// with a letter or digit), at most 253 bytes.
func isSubdomain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' || !lowerDigitsDashes(l) {
			return false
		}
	}
	return true
}

// lowerDigitsDashes reports whether s holds only lower-case letters,
// digits and '-'.
func lowerDigitsDashes(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
