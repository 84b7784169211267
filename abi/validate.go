package abi

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

//msgp:ignore ManifestError ManifestRule

// ManifestRule names the rule a manifest breaks.
type ManifestRule string

// The rules of a manifest.
const (
	// RuleEmpty: a required field is empty.
	RuleEmpty ManifestRule = "empty"
	// RuleUnknown: a name this ABI version does not know.
	RuleUnknown ManifestRule = "unknown"
	// RuleMismatch: abiVersion differs from the version marker.
	RuleMismatch ManifestRule = "mismatch"
	// RuleTooNew: a hook, a projection or a field path's brackets newer
	// than the ABI version the module was built for.
	RuleTooNew ManifestRule = "too new"
	// RuleUnexpected: admission is set without the admit hook, or a
	// projection omits the subject's kind, lists fields of a kind it omits,
	// or filters one list on two fields.
	RuleUnexpected ManifestRule = "unexpected"
	// RuleTooMany: more elements than the API server accepts.
	RuleTooMany ManifestRule = "too many"
	// RuleIncomplete: an admission rule lacks a required list.
	RuleIncomplete ManifestRule = "incomplete"
	// RuleDuplicate: a projection names a kind twice, or a field path that
	// another of the kind's paths already keeps.
	RuleDuplicate ManifestRule = "duplicate"
	// RuleTooLong: a field path longer than MaxFieldPathLength.
	RuleTooLong ManifestRule = "too long"
	// RuleSyntax: a field path that does not parse (ParseFieldPath): a
	// bracket never closed, empty, or holding a character no key has.
	RuleSyntax ManifestRule = "syntax"
)

// ManifestError is one reason a manifest is invalid. Its text names the
// field as the manifest spells it ("capabilities[1].resources is empty:
// ..."); Field, Index, Rule and Value let a caller say the same in its own
// words (the SDK names its Go fields).
type ManifestError struct {
	// Field is the field at fault: "name", "hooks", "capabilities.action",
	// "admission.rules", ...; the element's index is in Index.
	Field string
	// Index is the index of the element of hooks, capabilities,
	// admission.rules or projection at fault, -1 for other fields.
	Index int
	Rule  ManifestRule
	// Value is the value at fault, or for a capability the action it names.
	Value string
	msg   string
}

func (e *ManifestError) Error() string { return e.msg }

// Validate checks m against what this ABI version knows, for a module whose
// version marker says marker. It returns nil or every *ManifestError found,
// joined (errors.Join), in the order of the manifest's fields: the first is
// what the host reports. The host refuses a module whose manifest fails it,
// and sdk.Register a module whose manifest would.
func (m *Manifest) Validate(marker Version) error {
	var errs []error
	bad := func(field string, index int, rule ManifestRule, value, format string, args ...any) {
		errs = append(errs, &ManifestError{Field: field, Index: index, Rule: rule, Value: value, msg: fmt.Sprintf(format, args...)})
	}
	if m.Name == "" {
		bad("name", -1, RuleEmpty, "", "name is empty")
	}
	if m.Version == "" {
		bad("version", -1, RuleEmpty, "", "version is empty")
	}
	if m.ABIVersion != marker.String() {
		bad("abiVersion", -1, RuleMismatch, m.ABIVersion, "abiVersion %q differs from the version marker export %s", m.ABIVersion, marker.ExportName())
	}
	if _, ok := Subject(m.Subject).Info(); !ok && m.Watches == nil {
		bad("subject", -1, RuleUnknown, m.Subject, "subject %q is not one of %s", m.Subject, strings.Join(Subjects(), ", "))
	}
	if len(m.Hooks) == 0 {
		bad("hooks", -1, RuleEmpty, "", "hooks is empty")
	}
	for i, h := range m.Hooks {
		info, ok := Hook(h).Info()
		switch {
		case !ok:
			bad("hooks", i, RuleUnknown, h, "hooks[%d] %q is not a known hook (%s)", i, h, strings.Join(HookNames(), ", "))
		case marker.Minor < info.MinMinor:
			bad("hooks", i, RuleTooNew, h, "hooks[%d] %q needs ABI %d.%d, but the module was built for %s", i, h, VersionMajor, info.MinMinor, marker)
		}
	}
	for i, c := range m.Capabilities {
		switch {
		case c.Action != CapabilityMutate && !ActionType(c.Action).Known():
			bad("capabilities.action", i, RuleUnknown, c.Action, "capabilities[%d].action %q is not a known action type (%s)", i, c.Action, strings.Join(CapabilityNames(), ", "))
		case c.Action != ActionDeleteVolume && len(c.Resources) == 0:
			bad("capabilities.resources", i, RuleEmpty, c.Action, "capabilities[%d].resources is empty: list the resources action %q may touch", i, c.Action)
		case c.Action == CapabilityMutate && len(c.Paths) == 0:
			bad("capabilities.paths", i, RuleEmpty, c.Action, "capabilities[%d].paths is empty: list the JSON Pointer prefixes a patch may touch, e.g. /metadata/labels", i)
		case c.Action == ActionApply && len(c.Paths) == 0:
			bad("capabilities.paths", i, RuleEmpty, c.Action, "capabilities[%d].paths is empty: list the JSON Pointer prefixes an applied object may set, e.g. /spec/minAvailable", i)
		case len(c.Paths) > 0 && c.Action != CapabilityMutate && c.Action != ActionApply:
			bad("capabilities.paths", i, RuleUnexpected, c.Action, "capabilities[%d].paths is set, but only %s and %s read paths: drop them", i, CapabilityMutate, ActionApply)
		case c.Force && c.Action != ActionApply:
			bad("capabilities.force", i, RuleUnexpected, c.Action, "capabilities[%d].force is set, but only %s forces: drop it", i, ActionApply)
		case m.Watches == nil && isGenericOnly(c.Action):
			bad("capabilities.action", i, RuleUnexpected, c.Action, "capabilities[%d] asks for %q, which only a module that declares watches may (ABI %d.%d)", i, c.Action, VersionMajor, WatchesMinMinor)
		case m.Watches != nil && c.Action != CapabilityMutate && !slices.Contains(GenericActions(), c.Action):
			bad("capabilities.action", i, RuleUnexpected, c.Action, "capabilities[%d] asks for %q, which acts on a built-in subject's objects: a declared module acts through %s", i, c.Action, strings.Join(GenericActions(), ", "))
		}
	}
	m.validateWatches(marker, bad)
	m.validateAdmission(bad)
	m.validateProjection(marker, bad)
	return errors.Join(errs...)
}

// admissionOperations are the operations an admission rule may name.
var admissionOperations = [...]string{OperationCreate, OperationUpdate, OperationDelete, OperationConnect, "*"}

// validateAdmission checks the admission section against the hooks:
// present, with rules, exactly when the module admits.
func (m *Manifest) validateAdmission(bad func(field string, index int, rule ManifestRule, value, format string, args ...any)) {
	admits := slices.Contains(m.Hooks, HookAdmit)
	switch {
	case !admits && m.Admission != nil:
		bad("admission", -1, RuleUnexpected, "", "admission is set but hooks does not list %q", HookAdmit)
		return
	case !admits:
		return
	case m.Admission == nil || len(m.Admission.Rules) == 0:
		bad("admission.rules", -1, RuleEmpty, "", "hook %q needs admission.rules: say which operations on which resources the module admits", HookAdmit)
		return
	case len(m.Admission.MatchConditions) > 64:
		bad("admission.matchConditions", -1, RuleTooMany, "", "admission.matchConditions holds %d conditions, more than the API server's 64", len(m.Admission.MatchConditions))
	}
	for i, r := range m.Admission.Rules {
		if len(r.Operations) == 0 || len(r.APIVersions) == 0 || len(r.Resources) == 0 || r.APIGroups == nil {
			bad("admission.rules", i, RuleIncomplete, "", "admission.rules[%d] needs operations, apiGroups, apiVersions and resources", i)
			continue
		}
		for j, op := range r.Operations {
			if !slices.Contains(admissionOperations[:], op) {
				bad("admission.rules.operations", i, RuleUnknown, op, "admission.rules[%d].operations[%d] %q is not CREATE, UPDATE, DELETE, CONNECT or *", i, j, op)
			}
		}
	}
}

// validateProjection checks the projection's budgets first, then that each
// entry names a kind of the subject's requests once, and field paths of it,
// each once.
func (m *Manifest) validateProjection(marker Version, bad func(field string, index int, rule ManifestRule, value, format string, args ...any)) {
	p := m.Projection
	if len(p) == 0 {
		return
	}
	if marker.Minor < ProjectionMinMinor {
		bad("projection", -1, RuleTooNew, "", "projection needs ABI %d.%d, but the module was built for %s", VersionMajor, ProjectionMinMinor, marker)
		return
	}
	total := 0
	for _, o := range p {
		total += len(o.Fields)
	}
	if len(p) > len(projectionKinds) || total > MaxProjectionFields {
		bad("projection", -1, RuleTooMany, "", "projection lists %d kinds and %d field paths, more than the %d kinds and %d paths allowed: list only the fields the module reads", len(p), total, len(projectionKinds), MaxProjectionFields)
		return
	}
	if m.Watches != nil {
		bad("projection", -1, RuleUnexpected, "", "projection is set beside watches: a declared module's request is not projected yet (this host sends its objects whole); drop projection")
		return
	}
	info, ok := Subject(m.Subject).Info()
	if !ok {
		return // the subject's own error says it
	}
	carried := append([]string{info.Kind}, info.Related...)
	first := map[string]int{}
	for i, o := range p {
		if !slices.Contains(carried, o.Kind) {
			bad("projection.kind", i, RuleUnknown, o.Kind, "projection[%d].kind %q is not a kind a %s request carries (%s)", i, o.Kind, m.Subject, strings.Join(carried, ", "))
			continue
		}
		if j, dup := first[o.Kind]; dup {
			bad("projection.kind", i, RuleDuplicate, o.Kind, "projection[%d].kind %q is listed already at projection[%d]: merge their fields", i, o.Kind, j)
			continue
		}
		first[o.Kind] = i
		switch {
		case o.Omit && o.Kind == info.Kind:
			bad("projection.omit", i, RuleUnexpected, o.Kind, "projection[%d] omits %s, the subject's own kind: a %s request always carries it", i, o.Kind, m.Subject)
			continue
		case o.Omit && len(o.Fields) > 0:
			bad("projection.omit", i, RuleUnexpected, o.Kind, "projection[%d] omits %s and lists fields of it: drop omit, or the fields", i, o.Kind)
			continue
		}
		steps := make([][]FieldStep, len(o.Fields))
		for j, path := range o.Fields {
			if len(path) > MaxFieldPathLength {
				bad("projection.fields", i, RuleTooLong, path[:MaxFieldPathLength], "projection[%d].fields[%d] is %d bytes long, more than %d: no field path of %s is", i, j, len(path), MaxFieldPathLength, o.Kind)
				continue
			}
			if marker.Minor < SelectorMinMinor && strings.ContainsAny(path, "[]") {
				bad("projection.fields", i, RuleTooNew, path, "projection[%d].fields[%d] %q has brackets (a map key or a list filter), which need ABI %d.%d, but the module was built for %s: rebuild it against abi v%d.%d, or keep the whole field", i, j, path, VersionMajor, SelectorMinMinor, marker, VersionMajor, SelectorMinMinor)
				continue
			}
			parsed, err := ParseFieldPath(path)
			if err != nil {
				bad("projection.fields", i, RuleSyntax, path, "projection[%d].fields[%d] %q is not a field path: %v", i, j, path, err)
				continue
			}
			if why := checkFieldPath(o.Kind, parsed); why != "" {
				bad("projection.fields", i, RuleUnknown, path, "projection[%d].fields[%d] %q is not a field path of %s: %s", i, j, path, o.Kind, why)
				continue
			}
			steps[j] = parsed
			for k, other := range steps[:j] {
				if other == nil {
					continue
				}
				if covers(other, parsed) || covers(parsed, other) {
					bad("projection.fields", i, RuleDuplicate, path, "projection[%d].fields[%d] %q overlaps fields[%d] %q: list each field once, the outer one if the module reads all of it", i, j, path, k, o.Fields[k])
					break
				}
				if at, differ := filtersDiffer(other, parsed); differ {
					bad("projection.fields", i, RuleUnexpected, path, "projection[%d].fields[%d] %q filters %s on %s, but fields[%d] %q filters it on %s: filter a list on one field", i, j, path, JoinFieldPath(append(parsed[:at:at], FieldStep{Name: parsed[at].Name})), parsed[at].Match, k, o.Fields[k], other[at].Match)
					break
				}
			}
		}
	}
}

// isGenericOnly reports whether action is one only a declared module may
// ask for.
func isGenericOnly(action string) bool {
	return action == ActionApply || action == ActionCreate || action == ActionApplyStatus
}
