package config

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kubeplug/kubeplug/abi"

	"github.com/kubeplug/kubeplug/host/internal/input"
)

// Grant returns the capabilities the module whose manifest is man may use:
// the manifest's own, each one checked to lie within m.Allow, so that
// neither a greedy manifest nor a bug in one can widen what the operator
// allowed. The result is never nil.
//
// Without allow: the module may run only in shadow mode, where nothing is
// carried out and the manifest's capabilities only decide what is reported
// as refused. The error, wrapping ErrNotAllowed, names each capability the
// manifest asks for beyond m.Allow and prints the allow: block that would
// grant it.
//
// The admission rules of a module's admit hook are asked for too (Asked):
// the operator grants them with admit (or mutate) capabilities, since they
// decide which objects the API server sends the module. Rules that would
// send it a resource the host withholds from every module (abi.Withheld:
// Secrets, Leases) are refused whatever allow: says.
func (m *Module) Grant(man abi.Manifest) ([]abi.Capability, error) {
	if man.Admission != nil {
		for i, r := range man.Admission.Rules {
			if w, ok := r.Withholds(); ok {
				return nil, fmt.Errorf("module %q: %w: admission.rules[%d] of its manifest registers %s, which the host never sends to a module "+
					"(Secrets and Leases are withheld whatever allow: says); a module that needs its rules to name every resource (\"*\") of the group cannot be run: "+
					"ask its author to name the resources it admits", m.Name, ErrNotAllowed, i, groupResource(w))
			}
		}
	}
	granted := append([]abi.Capability{}, man.Capabilities...)
	asked := Asked(man)
	if m.Allow == nil {
		if m.Mode == ModeShadow {
			return granted, nil
		}
		return nil, fmt.Errorf("module %q: %w: %s has no allow: list, and a module runs in enforce mode only with one; "+
			"add to the entry the capabilities the module may use:\n%sor set mode: shadow to only record what it would do",
			m.Name, ErrNotAllowed, m.where(), AllowBlock(asked))
	}
	extra := Beyond(asked, m.Allow)
	if len(extra) == 0 {
		return granted, nil
	}
	names := make([]string, len(extra))
	for i, c := range extra {
		names[i] = capabilityYAML(c)
	}
	return nil, fmt.Errorf("module %q: %w: its manifest asks for %s, which the allow: list of %s does not grant; "+
		"if the module may do this, replace that list with:\n%sotherwise do not run this module",
		m.Name, ErrNotAllowed, strings.Join(names, ", "), m.where(), AllowBlock(asked))
}

func groupResource(g abi.GroupResource) string {
	if g.Group == "" {
		return g.Resource
	}
	return g.Resource + "." + g.Group
}

// Asked returns what a module with manifest man asks the operator for: its
// capabilities, and, for its admit hook, admit on every resource its
// admission rules register that a mutate capability it asks for does not
// already name (a module sees what it patches). The rules' groups are not
// part of it, as no capability's are.
func Asked(man abi.Manifest) []abi.Capability {
	asked := append([]abi.Capability{}, man.Capabilities...)
	if man.Admission == nil {
		return asked
	}
	var admit []string
	for _, r := range man.Admission.Rules {
		for _, res := range r.Resources {
			if !slices.Contains(admit, res) && !admitGranted(res, man.Capabilities) {
				admit = append(admit, res)
			}
		}
	}
	if len(admit) > 0 {
		asked = append(asked, abi.Capability{Action: abi.CapabilityAdmit, Resources: admit})
	}
	return asked
}

// admitGranted reports whether allow lets a module be sent requests for
// resource as a rule names it (resource, resource/subresource, or with "*"
// for either): an admit or mutate capability whose resources hold it, its
// resource (for a subresource), or "*". A rule's "*" is granted only by
// "*".
func admitGranted(resource string, allow []abi.Capability) bool {
	base, _, _ := strings.Cut(resource, "/")
	return slices.ContainsFunc(allow, func(c abi.Capability) bool {
		if c.Action != abi.CapabilityAdmit && c.Action != abi.CapabilityMutate {
			return false
		}
		return slices.Contains(c.Resources, "*") || slices.Contains(c.Resources, resource) || base != "*" && slices.Contains(c.Resources, base)
	})
}

// where says where the module's entry is, for messages.
func (m *Module) where() string {
	if m.definedAt != "" {
		return m.definedAt
	}
	return "its entry in the host configuration"
}

// Beyond returns what asked asks for that allow does not grant: for each
// capability of asked, the resources no capability of allow covers (the
// whole capability for deleteVolume, which has no resources). A resource
// "*" is granted only by "*".
func Beyond(asked, allow []abi.Capability) []abi.Capability {
	granted := func(action, resource string) bool {
		return slices.ContainsFunc(allow, func(c abi.Capability) bool { return c.Allows(action, resource) })
	}
	var out []abi.Capability
	for _, c := range asked {
		if c.Action == abi.ActionDeleteVolume {
			if !granted(c.Action, "") {
				out = append(out, abi.Capability{Action: c.Action})
			}
			continue
		}
		if c.Action == abi.CapabilityMutate || c.Action == abi.ActionApply {
			if m := beyondPaths(c, allow); m != nil {
				out = append(out, *m)
			}
			continue
		}
		if c.Action == abi.CapabilityAdmit {
			var missing []string
			for _, r := range c.Resources {
				if !admitGranted(r, allow) {
					missing = append(missing, r)
				}
			}
			if len(missing) > 0 {
				out = append(out, abi.Capability{Action: c.Action, Resources: missing})
			}
			continue
		}
		var missing []string
		for _, r := range c.Resources {
			if !granted(c.Action, r) {
				missing = append(missing, r)
			}
		}
		if len(missing) > 0 {
			out = append(out, abi.Capability{Action: c.Action, Resources: missing})
		}
	}
	return out
}

// beyondPaths returns what of the mutate or apply capability c allow does
// not grant: each resource with the paths no granted capability of the
// same action covers (a path is covered by itself, a prefix of it, or
// "*"), and, for an apply that forces, the resources no grant lets force.
func beyondPaths(c abi.Capability, allow []abi.Capability) *abi.Capability {
	var res, paths []string
	for _, r := range c.Resources {
		if c.Force && !slices.ContainsFunc(allow, func(a abi.Capability) bool { return a.Force && a.Allows(c.Action, r) }) {
			res = append(res, r)
		}
		for _, path := range c.Paths {
			ok := slices.ContainsFunc(allow, func(a abi.Capability) bool {
				return a.AllowsPath(c.Action, r, path) && (r != "*" || slices.Contains(a.Resources, "*")) && (path != "*" || slices.Contains(a.Paths, "*"))
			})
			if !ok {
				if !slices.Contains(res, r) {
					res = append(res, r)
				}
				if !slices.Contains(paths, path) {
					paths = append(paths, path)
				}
			}
		}
	}
	if res == nil {
		return nil
	}
	return &abi.Capability{Action: c.Action, Resources: res, Paths: paths, Force: c.Force}
}

// AllowBlock returns caps as an allow: block to paste under a module's
// entry in host.yaml, one capability per line, ending in a newline.
func AllowBlock(caps []abi.Capability) string {
	if len(caps) == 0 {
		return "allow: []\n"
	}
	var b strings.Builder
	b.WriteString("allow:\n")
	for _, c := range caps {
		b.WriteString("- " + capabilityYAML(c) + "\n")
	}
	return b.String()
}

// plainWord matches what YAML reads back unquoted as the same string.
var plainWord = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9.-]*$`)

// capabilityYAML writes c in flow style: {action: A, resources: [R, ...]}.
func capabilityYAML(c abi.Capability) string {
	s := "{action: " + yamlString(c.Action)
	if len(c.Resources) > 0 && c.Action != abi.ActionDeleteVolume {
		rs := make([]string, len(c.Resources))
		for i, r := range c.Resources {
			rs[i] = yamlString(r)
		}
		s += ", resources: [" + strings.Join(rs, ", ") + "]"
	}
	if len(c.Paths) > 0 {
		ps := make([]string, len(c.Paths))
		for i, p := range c.Paths {
			ps[i] = yamlString(p)
		}
		s += ", paths: [" + strings.Join(ps, ", ") + "]"
	}
	if c.Force {
		s += ", force: true"
	}
	return s + "}"
}

// yamlString quotes s unless it reads back as itself ("*" would be an alias,
// "null" or "true" another type).
func yamlString(s string) string {
	switch strings.ToLower(s) {
	case "null", "true", "false", "yes", "no", "on", "off", "y", "n":
		return strconv.Quote(s)
	}
	if plainWord.MatchString(s) {
		return s
	}
	return strconv.Quote(strings.ToValidUTF8(s, "\uFFFD"))
}

// allow converts a module's allow: list. An empty list is kept as an empty,
// non-nil slice: it grants nothing, which differs from no list at all.
func (p *parser) allow(n *yaml.Node, field string) []abi.Capability {
	ns, ok := p.list(n, field, "a list of capabilities, e.g. [{action: addFinalizer, resources: [persistentvolumeclaims]}]")
	if !ok {
		return []abi.Capability{}
	}
	out := make([]abi.Capability, 0, len(ns))
	for i, e := range ns {
		if c, ok := p.capability(e, index(field, i)); ok {
			out = append(out, c)
		}
	}
	return out
}

var capabilityFields = []string{"action", "resources", "paths", "force"}

// capability converts one entry of an allow: list.
func (p *parser) capability(n *yaml.Node, field string) (abi.Capability, bool) {
	var c abi.Capability
	vals, ok := p.fields(n, field, "a capability: {action: ACTION, resources: [RESOURCE, ...]}", capabilityFields...)
	if !ok {
		return c, false
	}
	names := allowNames()
	v, ok := vals["action"]
	if !ok {
		p.addf(n, field, "action is missing; use one of %s", strings.Join(names, ", "))
		return c, false
	}
	s, ok := p.scalar(v, join(field, "action"), abi.ActionAddFinalizer)
	if !ok {
		return c, false
	}
	if !slices.Contains(names, s) {
		p.addf(v, join(field, "action"), "%s is not an action%s; use one of %s", input.Quote(s), didYouMean(s, names), strings.Join(names, ", "))
		return c, false
	}
	c.Action = s
	if pv, ok := vals["paths"]; ok {
		c.Paths = p.patchPaths(pv, join(field, "paths"), c.Action)
	} else if c.Action == abi.CapabilityMutate || c.Action == abi.ActionApply {
		p.addf(n, field, "paths is missing; name the JSON Pointers %s may touch, e.g. paths: [/metadata/labels], or [\"*\"] for any", c.Action)
		return c, false
	}
	if fv, ok := vals["force"]; ok {
		if c.Action != abi.ActionApply {
			p.addf(fv, join(field, "force"), "force applies to the apply capability only; remove it from %s", c.Action)
			return c, false
		}
		var force bool
		if err := fv.Decode(&force); err != nil {
			p.addf(fv, join(field, "force"), "force is true or false")
			return c, false
		}
		c.Force = force
	}
	rv, ok := vals["resources"]
	if !ok {
		if c.Action != abi.ActionDeleteVolume {
			p.addf(n, field, "resources is missing; name the resources %s applies to, e.g. resources: [persistentvolumeclaims], or [\"*\"] for all", c.Action)
			return c, false
		}
		return c, true
	}
	rs, ok := p.list(rv, join(field, "resources"), "a list of resources, e.g. [persistentvolumeclaims]")
	if !ok {
		return c, false
	}
	known := resourceNames()
	for i, e := range rs {
		f := index(join(field, "resources"), i)
		r, ok := p.scalar(e, f, "persistentvolumeclaims")
		if !ok {
			continue
		}
		if c.Action == abi.CapabilityAdmit {
			// Any resource a rule may name, built-in or not.
			if !admitResource.MatchString(r) {
				p.addf(e, f, "%s is not a resource as an admission rule names it; use e.g. persistentvolumeclaims, pods/status, or \"*\" for all", input.Quote(r))
				continue
			}
		} else if declaredOnly(c.Action) || strings.Contains(r, ".") {
			// A resource of a module that declares watches: any the API
			// server may serve (qualified by its group for the actions the
			// built-in subjects share); the module's load checks it
			// against the declaration.
			if !admitResource.MatchString(r) || r == "*" {
				p.addf(e, f, "%s is not a resource; name one as the API server does, e.g. poddisruptionbudgets or poddisruptionbudgets.policy", input.Quote(r))
				continue
			}
		} else if r != "*" && !slices.Contains(known, r) {
			p.addf(e, f, "%s is not a resource%s; use one of %s, or \"*\" for all", input.Quote(r), didYouMean(r, known), strings.Join(known, ", "))
			continue
		}
		if !slices.Contains(c.Resources, r) {
			c.Resources = append(c.Resources, r)
		}
	}
	return c, true
}

// declaredOnly reports whether action is one only a module that declares
// watches may ask for.
func declaredOnly(action string) bool {
	return action == abi.ActionApply || action == abi.ActionCreate || action == abi.ActionApplyStatus
}

// patchPaths converts the paths of a mutate or apply capability: JSON
// Pointers, or "*".
func (p *parser) patchPaths(n *yaml.Node, field, action string) []string {
	if action != abi.CapabilityMutate && action != abi.ActionApply {
		p.addf(n, field, "paths apply to the mutate and apply capabilities only; remove them from %s", action)
		return nil
	}
	ns, ok := p.list(n, field, "a list of JSON Pointers, e.g. [/metadata/labels]")
	if !ok {
		return nil
	}
	var out []string
	for i, e := range ns {
		f := index(field, i)
		s, ok := p.scalar(e, f, "/metadata/labels")
		if !ok {
			continue
		}
		if s != "*" && (!strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/")) {
			p.addf(e, f, "%s is not a JSON Pointer; use e.g. /metadata/labels (starting with /, not ending with one), or \"*\" for any", input.Quote(s))
			continue
		}
		out = append(out, s)
	}
	return out
}

// didYouMean returns " (did you mean K?)" for the known name K that s is
// likely a typo of, or "".
func didYouMean(s string, known []string) string {
	if k := suggest(s, known); k != "" {
		return " (did you mean " + k + "?)"
	}
	return ""
}

// allowNames are the actions an allow: entry may name: the manifest's
// capabilities and admit.
func allowNames() []string { return append(abi.CapabilityNames(), abi.CapabilityAdmit) }

// admitResource matches a resource as an admission rule names it: a
// resource or "*", optionally with a subresource or "*".
var admitResource = regexp.MustCompile(`^(\*|[a-z0-9]([a-z0-9.-]*[a-z0-9])?)(/(\*|[a-z0-9]([a-z0-9.-]*[a-z0-9])?))?$`)

// resourceNames lists the resources actions can target, sorted.
func resourceNames() []string {
	var out []string
	for _, k := range abi.Kinds() {
		out = append(out, k.Resource)
	}
	slices.Sort(out)
	return out
}
