package actions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubeplug/kubeplug/abi"
)

// MaxActionObjectBytes is the largest object an apply, create or
// applyStatus may carry: the API server's own limit on a request body is 3
// MiB, and no object a policy writes comes near it.
const MaxActionObjectBytes = 1 << 20

// declared returns the resource of kind among m's declared resources (its
// Watches, resolved by the host when it loaded the module), and whether
// kind is the subject's.
func declared(m abi.Manifest, kind string) (r abi.Resource, subject, ok bool) {
	if m.Watches == nil {
		return abi.Resource{}, false, false
	}
	if m.Watches.Subject.Kind == kind {
		return m.Watches.Subject, true, true
	}
	for _, rel := range m.Watches.Relations {
		if rel.Resource.Kind == kind {
			return rel.Resource, false, true
		}
	}
	return abi.Resource{}, false, false
}

// allowsDeclared reports whether m's capabilities allow action on r's
// subresource sub (r itself for ""), by either of r's names.
func allowsDeclared(m abi.Manifest, action string, r abi.Resource, sub string) bool {
	return slices.ContainsFunc(m.Capabilities, func(c abi.Capability) bool { return c.AllowsResource(action, r, sub) })
}

// validateDeclared is Validate for a module that declares Watches: its
// actions are the generic ones, on its declared kinds only, and hold it to
// the host's rules for every kind: nothing deleted that the subject does
// not control, no owner reference the host did not write, no field beyond
// the granted paths, no write of the metadata the host keeps.
func validateDeclared(m abi.Manifest, req *abi.ReconcileRequest, a abi.Action, refuse func(string, ...any) (Target, error)) (Target, error) {
	if !slices.Contains(abi.GenericActions(), a.Type) {
		return refuse("a module that declares watches acts through %s, not %s", strings.Join(abi.GenericActions(), ", "), a.Type)
	}
	r, isSubject, ok := declared(m, a.Target.Kind)
	if !ok {
		return refuse("kind %q is not one module %q declares", a.Target.Kind, m.Name)
	}
	sub := ""
	if a.Type == abi.ActionApplyStatus {
		sub = "status"
	}
	if !allowsDeclared(m, a.Type, r, sub) {
		res := r.Resource
		if sub != "" {
			res += "/" + sub
		}
		return refuse("module %q lacks the capability {action: %s, resources: [%s]} in its manifest", m.Name, a.Type, res)
	}
	subjectKind, subject, ok := req.SubjectObject()
	if !ok {
		return refuse("the reconcile input has no subject")
	}
	if a.Type == abi.ActionCreate {
		return validateCreate(m, a, r, isSubject, subjectKind, subject, refuse)
	}
	t, ok := resolve(req, a.Target)
	if !ok {
		return refuse("not an object of the reconcile input (kind, namespace, name and uid %q must match one)", a.Target.UID)
	}
	switch a.Type {
	case abi.ActionApply:
		obj, why := decodeObject(a.Object, t.Object.(*abi.GenericObject).APIVersion, t.Kind, t.Namespace, t.Name)
		if why == "" {
			why = checkApplied(m, r, obj)
		}
		if why != "" {
			return refuse("%s", why)
		}
		t.Body = obj
	case abi.ActionApplyStatus:
		if !isSubject || t.UID != subject.UID {
			return refuse("applyStatus writes the subject's status only")
		}
		obj, why := decodeObject(a.Object, t.Object.(*abi.GenericObject).APIVersion, t.Kind, t.Namespace, t.Name)
		if why != "" {
			return refuse("%s", why)
		}
		for k := range obj {
			if k != "apiVersion" && k != "kind" && k != "metadata" && k != "status" {
				return refuse("object sets %s: applyStatus sets status only", k)
			}
		}
		if _, ok := obj["status"].(map[string]any); !ok {
			return refuse("object has no status object")
		}
		t.Body = obj
	case abi.ActionDeleteObject:
		if isSubject {
			return refuse("a module does not delete its subject")
		}
		if !controlledBy(t.OwnerReferences, subject.UID) {
			return refuse("the object's controller is not the subject %s %s: a module deletes only what its subject controls", subjectKind, subject.Name)
		}
	default:
		if why := checkPayload(req, a, t); why != "" {
			return refuse("%s", why)
		}
	}
	return t, nil
}

// validateCreate checks a create: an object of a relation's kind, in the
// subject's namespace, named or with generateName, with none of the
// metadata the host keeps or writes itself (owner references: the host
// makes the subject the controller), and a subject that is not being
// deleted (the garbage collector would leave the new object behind or
// delete it at once).
func validateCreate(m abi.Manifest, a abi.Action, r abi.Resource, isSubject bool, subjectKind string, subject *abi.ObjectMeta, refuse func(string, ...any) (Target, error)) (Target, error) {
	switch {
	case isSubject:
		return refuse("a module creates objects of its relations, not subjects (%s)", subjectKind)
	case a.Target.UID != "":
		return refuse("a created object has no uid yet; leave target.uid empty")
	case subject.DeletionTimestamp != "":
		return refuse("the subject %s %s is being deleted", subjectKind, subject.Name)
	}
	namespace := ""
	if *r.Namespaced {
		namespace = subject.Namespace
		if namespace == "" {
			return refuse("a namespaced %s needs a namespace, and the subject %s %s is cluster-scoped", r.Kind, subjectKind, subject.Name)
		}
	}
	if a.Target.Namespace != namespace {
		return refuse("target.namespace %q is not the subject's namespace %q: a module creates objects beside its subject", a.Target.Namespace, namespace)
	}
	apiVersion := r.Version
	if r.Group != "" {
		apiVersion = r.Group + "/" + r.Version
	}
	obj, why := decodeObject(a.Object, apiVersion, r.Kind, namespace, a.Target.Name)
	if why != "" {
		return refuse("%s", why)
	}
	meta, _ := obj["metadata"].(map[string]any)
	generateName, _ := meta["generateName"].(string)
	switch {
	case a.Target.Name == "" && generateName == "":
		return refuse("the object has neither a name nor metadata.generateName")
	case a.Target.Name != "":
		if errs := validation.IsDNS1123Subdomain(a.Target.Name); len(errs) > 0 {
			return refuse("name %q: %s", a.Target.Name, strings.Join(errs, "; "))
		}
	default:
		if errs := validation.IsDNS1123Subdomain(generateName + "x"); len(errs) > 0 || len(generateName) > validation.DNS1123SubdomainMaxLength-5 {
			return refuse("metadata.generateName %q is not the start of a name", generateName)
		}
	}
	if _, ok := obj["status"]; ok {
		return refuse("the object sets status: create the object, then applyStatus if it is the subject's")
	}
	return Target{Kind: r.Kind, Namespace: namespace, Name: a.Target.Name, Body: obj}, nil
}

// hostMetadata are the metadata fields a module's object may not set: the
// API server's, and those the host writes through actions of their own
// (finalizers) or itself (owner references).
var hostMetadata = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
	"deletionGracePeriodSeconds", "managedFields", "ownerReferences", "finalizers", "selfLink"}

// decodeObject decodes an action's object and checks its identity: JSON
// of at most MaxActionObjectBytes, a single object of apiVersion and kind,
// whose metadata names (when it does) namespace and name, and sets none of
// hostMetadata. It returns why not, or "".
func decodeObject(raw abi.RawJSON, apiVersion, kind, namespace, name string) (map[string]any, string) {
	if len(raw) == 0 {
		return nil, "object is missing"
	}
	if len(raw) > MaxActionObjectBytes {
		return nil, fmt.Sprintf("object is %d bytes, more than %d", len(raw), MaxActionObjectBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Sprintf("object is not a JSON object: %v", err)
	}
	if dec.More() {
		return nil, "object holds more than one JSON value"
	}
	if obj["apiVersion"] != apiVersion || obj["kind"] != kind {
		return nil, fmt.Sprintf("object is a %v %v, want apiVersion %s and kind %s", obj["apiVersion"], obj["kind"], apiVersion, kind)
	}
	meta, ok := obj["metadata"].(map[string]any)
	if !ok && obj["metadata"] != nil {
		return nil, "object.metadata is not an object"
	}
	for _, f := range []struct{ field, want string }{{"name", name}, {"namespace", namespace}} {
		if v, ok := meta[f.field]; ok && v != f.want {
			return nil, fmt.Sprintf("object.metadata.%s is %v, the target's %q", f.field, v, f.want)
		}
	}
	for _, f := range hostMetadata {
		if _, ok := meta[f]; ok {
			return nil, fmt.Sprintf("object.metadata.%s is the host's or the API server's to write, not a module's: leave it out", f)
		}
	}
	return obj, ""
}

// checkApplied returns why an applied object sets a field no apply
// capability for r grants a path to, or "". The identity (apiVersion, kind,
// metadata.name, metadata.namespace) needs no grant; status is
// applyStatus's.
func checkApplied(m abi.Manifest, r abi.Resource, obj map[string]any) string {
	if _, ok := obj["status"]; ok {
		return "object sets status: apply sets what the module owns of the object, applyStatus its status"
	}
	var leaves []string
	leafPaths(obj, "", &leaves)
	slices.Sort(leaves)
	fields := 0
	for _, p := range leaves {
		switch p {
		case "/apiVersion", "/kind", "/metadata/name", "/metadata/namespace":
			continue
		}
		fields++
		if !slices.ContainsFunc(m.Capabilities, func(c abi.Capability) bool { return c.AllowsResourcePath(abi.ActionApply, r, p) }) {
			return fmt.Sprintf("object sets %s, which no apply capability for %s grants (paths)", p, r.Resource)
		}
	}
	if fields == 0 {
		return "object sets no field beyond its identity"
	}
	return ""
}

// leafPaths appends the JSON Pointer of every leaf of v under prefix: a
// scalar, a list (applied whole or by its keys, the API server decides)
// or an empty object.
func leafPaths(v any, prefix string, out *[]string) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 && prefix != "" {
		*out = append(*out, prefix)
		return
	}
	for k, e := range m {
		leafPaths(e, prefix+"/"+escapePointer(k), out)
	}
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// controlledBy reports whether refs name uid as the controller.
func controlledBy(refs []abi.OwnerReference, uid string) bool {
	return slices.ContainsFunc(refs, func(r abi.OwnerReference) bool { return r.Controller && r.UID == uid })
}
