package casetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/internal/input"
	"github.com/kubeplug/kubeplug/host/memcluster"
)

var (
	caseFields   = []string{"name", "now", "config", "objects", "admit", "expect", "steps"}
	expectFields = []string{"present", "absent", "volumeDeletes", "events", "noActions", "allowed", "message", "warnings", "object"}
	admitFields  = []string{"operation", "object", "oldObject", "userInfo", "dryRun", "namespaceLabels"}
	userFields   = []string{"username", "groups"}
	absentFields = []string{"apiVersion", "kind", "namespace", "name"}
	deleteFields = []string{"driver", "volumeHandle"}
	eventFields  = []string{"type", "reason", "message", "involvedObject"}
	refFields    = []string{"kind", "namespace", "name"}
)

// Parse parses the case file data, read from path. Errors are *InputError.
func Parse(path string, data []byte) (File, error) {
	p := parser{file: path}
	f := File{Path: path}
	names := map[string]int{}
	dec := input.NewYAMLDecoder(data, budget)
	for {
		doc, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return File{}, p.decodeError(err)
		}
		root := input.YAMLRoot(doc)
		if root == nil || input.IsNull(root) {
			continue
		}
		c, err := p.parseCase(root)
		if err != nil {
			return File{}, err
		}
		if first, dup := names[c.Name]; dup {
			return File{}, inputErrorf(path, c.Line, "case name %s is used twice (first at line %d): give each case its own name", input.Quote(c.Name), first)
		}
		names[c.Name] = c.Line
		f.Cases = append(f.Cases, c)
	}
	if len(f.Cases) == 0 {
		return File{}, inputErrorf(path, 0, "no cases: the file has no YAML document")
	}
	return f, nil
}

// budget bounds a case file, and each case once its aliases and merge keys
// are expanded (see input.Budget): far above a recorded StatefulSet of a
// thousand pods, far below what would exhaust the machine.
var budget = input.Budget{Bytes: input.MaxCaseBytes, Nodes: 1_000_000, Depth: 128, ScalarBytes: 1 << 20, Entries: 100_000}

// decodeError is the error of a file the decoder refused: not YAML, or
// over budget, before any of it is read.
func (p *parser) decodeError(err error) error {
	var se *input.YAMLSyntaxError
	if errors.As(err, &se) {
		return inputErrorf(p.file, se.Line, "invalid YAML: %s", se.Msg)
	}
	var ex *input.Exceeded
	if !errors.As(err, &ex) {
		return inputErrorf(p.file, 0, "cannot be read: %v", err)
	}
	at := ex.Path
	if at == "" {
		at = "the case"
	}
	switch ex.Limit {
	case input.LimitBytes:
		return inputErrorf(p.file, 0, "has %s, more than the %s a case file may have; split its cases over several files",
			input.Bytes(int64(ex.Size)), input.Bytes(int64(ex.Max)))
	case input.LimitNodes:
		return p.errorf(ex.Node, "%s expands to more than %d values through aliases and merge keys: write the case out, or reuse less of it", at, ex.Max)
	case input.LimitDepth:
		return p.errorf(ex.Node, "%s is nested more than %d levels deep: does an alias refer to the node that contains it?", at, ex.Max)
	case input.LimitScalar:
		return p.errorf(ex.Node, "%s: a value of %s, more than the %s one may have: %s", at,
			input.Bytes(int64(len(ex.Node.Value))), input.Bytes(int64(ex.Max)), input.Quote(ex.Node.Value))
	}
	return p.errorf(ex.Node, "%s has more than %d entries", at, ex.Max)
}

type parser struct {
	file string
}

func (p *parser) errorf(n *yaml.Node, format string, args ...any) error {
	return inputErrorf(p.file, n.Line, format, args...)
}

func (p *parser) parseCase(n *yaml.Node) (Case, error) {
	c := Case{File: p.file, Line: n.Line, Now: DefaultNow}
	fields, err := p.fields(n, "a case", caseFields)
	if err != nil {
		return Case{}, err
	}
	name, ok := fields["name"]
	if !ok {
		return Case{}, p.errorf(n, "case has no name: add `name: <what the case checks>`")
	}
	if c.Name, err = p.str(name, "name"); err != nil {
		return Case{}, err
	}
	if c.Name == "" {
		return Case{}, p.errorf(name, "name is empty")
	}
	if v, ok := fields["now"]; ok {
		s, err := p.str(v, "now")
		if err != nil {
			return Case{}, err
		}
		if c.Now, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return Case{}, p.errorf(v, "now: %s is not an RFC 3339 time like 2026-01-01T00:00:00Z", input.Quote(s))
		}
	}
	if v, ok := fields["config"]; ok {
		cfg, err := p.value(v)
		if err != nil {
			return Case{}, err
		}
		if cfg != nil { // `config:` with no value is no configuration
			if c.Config, err = json.Marshal(cfg); err != nil {
				return Case{}, p.errorf(v, "config: %v", err)
			}
		}
	}
	if v, ok := fields["objects"]; ok {
		if c.Objects, err = p.objects(v); err != nil {
			return Case{}, err
		}
	}
	if v, ok := fields["admit"]; ok {
		if c.Admit, err = p.admit(v); err != nil {
			return Case{}, err
		}
	}
	// steps: is parsed by steps.go (issue 24), and belongs to reconcile
	// cases only.
	if v, ok := fields["steps"]; ok {
		if c.Steps, err = p.steps(v); err != nil {
			return Case{}, err
		}
		if c.Admit != nil && len(c.Steps) > 0 {
			return Case{}, p.errorf(v, "an admission case (with admit:) has no steps: steps are applied between reconcile rounds")
		}
	}
	if v, ok := fields["expect"]; ok {
		if c.Expect, err = p.expect(v); err != nil {
			return Case{}, err
		}
	}
	if err := p.checkExpectKind(n, c); err != nil {
		return Case{}, err
	}
	return c, nil
}

// checkExpectKind refuses expectations of the other kind of case: cluster
// expectations in an admission case, answer expectations in a reconcile one.
func (p *parser) checkExpectKind(n *yaml.Node, c Case) error {
	e := c.Expect
	admission := e.Allowed != nil || e.Message != "" || e.Warnings != nil || e.Object != nil
	cluster := e.Present != nil || e.Absent != nil || e.VolumeDeletes != nil || e.Events != nil || e.NoActions
	switch {
	case c.Admit != nil && cluster:
		return p.errorf(n, "an admission case (with admit:) expects allowed, message, warnings and object, not present, absent, volumeDeletes, events or noActions")
	case c.Admit == nil && admission:
		return p.errorf(n, "allowed, message, warnings and object are expectations of an admission case: add admit: with the request")
	case c.Admit != nil && e.Allowed == nil:
		return p.errorf(n, "an admission case must expect allowed: true or false")
	}
	return nil
}

// admit parses an admission case's request.
func (p *parser) admit(n *yaml.Node) (*AdmitRequest, error) {
	fields, err := p.fields(n, "admit", admitFields)
	if err != nil {
		return nil, err
	}
	a := &AdmitRequest{}
	v, ok := fields["operation"]
	if !ok {
		return nil, p.errorf(n, "admit has no operation: add operation: CREATE (or UPDATE, DELETE, CONNECT)")
	}
	if a.Operation, err = p.str(v, "operation"); err != nil {
		return nil, err
	}
	if !slices.Contains([]string{abi.OperationCreate, abi.OperationUpdate, abi.OperationDelete, abi.OperationConnect}, a.Operation) {
		return nil, p.errorf(v, "operation %s is not CREATE, UPDATE, DELETE or CONNECT", input.Quote(a.Operation))
	}
	for _, f := range []struct {
		name string
		into *map[string]any
	}{{"object", &a.Object}, {"oldObject", &a.OldObject}} {
		if v, ok := fields[f.name]; ok {
			if *f.into, _, err = p.object(v, "admit."+f.name); err != nil {
				return nil, err
			}
		}
	}
	if a.Object == nil && a.OldObject == nil {
		return nil, p.errorf(n, "admit has neither object nor oldObject: give the object the request is about")
	}
	if v, ok := fields["userInfo"]; ok {
		uf, err := p.fields(v, "userInfo", userFields)
		if err != nil {
			return nil, err
		}
		if u, ok := uf["username"]; ok {
			if a.Username, err = p.str(u, "userInfo.username"); err != nil {
				return nil, err
			}
		}
		if g, ok := uf["groups"]; ok {
			items, err := p.seq(g, "userInfo.groups")
			if err != nil {
				return nil, err
			}
			for _, item := range items {
				s, err := p.str(item, "userInfo.groups")
				if err != nil {
					return nil, err
				}
				a.Groups = append(a.Groups, s)
			}
		}
	}
	if v, ok := fields["dryRun"]; ok {
		if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
			return nil, p.errorf(v, "dryRun must be true or false")
		}
		a.DryRun = v.Value == "true"
	}
	if v, ok := fields["namespaceLabels"]; ok {
		val, err := p.value(v)
		if err != nil {
			return nil, err
		}
		m, ok := val.(map[string]any)
		if !ok {
			return nil, p.errorf(v, "namespaceLabels must be a mapping of label names to values")
		}
		a.NamespaceLabels = map[string]string{}
		for k, x := range m {
			s, ok := x.(string)
			if !ok {
				return nil, p.errorf(v, "namespaceLabels.%s must be a string", k)
			}
			a.NamespaceLabels[k] = s
		}
	}
	return a, nil
}

func (p *parser) objects(n *yaml.Node) ([]map[string]any, error) {
	items, err := p.seq(n, "objects")
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, len(items))
	seen := map[ObjectKey]int{}
	for _, item := range items {
		obj, key, err := p.object(item, "objects")
		if err != nil {
			return nil, err
		}
		if first, dup := seen[key]; dup {
			return nil, p.errorf(item, "%s is listed twice (first at line %d)", key, first)
		}
		seen[key] = item.Line
		if err := memcluster.Check(obj); err != nil {
			return nil, p.errorf(item, "%s", strings.TrimPrefix(err.Error(), memcluster.ErrInvalidObject.Error()+": "))
		}
		out = append(out, obj)
	}
	return out, nil
}

// object parses a Kubernetes object (of `objects` or `present`): it must
// have a known kind with its apiVersion and a metadata.name. The namespace of
// a namespaced object defaults to "default".
func (p *parser) object(n *yaml.Node, list string) (map[string]any, ObjectKey, error) {
	v, err := p.value(n)
	if err != nil {
		return nil, ObjectKey{}, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, ObjectKey{}, p.errorf(n, "%s: each item must be a Kubernetes object (a mapping with apiVersion, kind and metadata)", list)
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if kind == "" {
		return nil, ObjectKey{}, p.errorf(n, "%s: object has no kind", list)
	}
	key := ObjectKey{APIVersion: apiVersion, Kind: kind}
	if err := p.checkKind(p.valueNode(n, "kind"), key, apiVersion == ""); err != nil {
		return nil, ObjectKey{}, err
	}
	meta, _ := obj["metadata"].(map[string]any)
	key.Name, _ = meta["name"].(string)
	if key.Name == "" {
		return nil, ObjectKey{}, p.errorf(n, "%s: %s has no metadata.name", list, kind)
	}
	key.Namespace, _ = meta["namespace"].(string)
	if key.Namespace, err = p.namespace(n, key); err != nil {
		return nil, ObjectKey{}, err
	}
	if key.Namespace != "" {
		meta["namespace"] = key.Namespace
	}
	return obj, key, nil
}

// checkKind checks that k names a known kind with its API version; an empty
// API version passes when optional.
func (p *parser) checkKind(at *yaml.Node, k ObjectKey, optionalVersion bool) error {
	info, ok := abi.LookupKind(k.Kind)
	if !ok {
		return p.errorf(at, "unknown kind %s: known kinds are %s", input.Quote(k.Kind), knownKinds())
	}
	if k.APIVersion == "" && optionalVersion {
		return nil
	}
	if k.APIVersion != info.APIVersion {
		return p.errorf(at, "%s has apiVersion %s, not %s", k.Kind, info.APIVersion, input.Quote(k.APIVersion))
	}
	return nil
}

// namespace returns k's namespace, "default" when a namespaced kind has
// none, and fails for a namespace on a cluster-scoped kind.
func (p *parser) namespace(at *yaml.Node, k ObjectKey) (string, error) {
	if abi.KindOf(k.Kind).Namespaced {
		if k.Namespace == "" {
			return memcluster.DefaultNamespace, nil
		}
		return k.Namespace, nil
	}
	if k.Namespace != "" {
		return "", p.errorf(at, "%s %s is cluster-scoped: remove its namespace %s", k.Kind, input.Excerpt(k.Name, input.MaxExcerpt), input.Quote(k.Namespace))
	}
	return "", nil
}

func knownKinds() string {
	var out []string
	for k, info := range abi.Kinds() {
		out = append(out, k+" ("+info.APIVersion+")")
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

func (p *parser) expect(n *yaml.Node) (Expect, error) {
	var e Expect
	fields, err := p.fields(n, "expect", expectFields)
	if err != nil {
		return e, err
	}
	if v, ok := fields["present"]; ok {
		items, err := p.seq(v, "present")
		if err != nil {
			return e, err
		}
		for _, item := range items {
			obj, _, err := p.object(item, "present")
			if err != nil {
				return e, err
			}
			e.Present = append(e.Present, obj)
		}
	}
	if v, ok := fields["absent"]; ok {
		if e.Absent, err = p.absent(v); err != nil {
			return e, err
		}
	}
	if v, ok := fields["volumeDeletes"]; ok {
		if e.VolumeDeletes, err = p.records(v, "volumeDeletes", deleteFields, nil); err != nil {
			return e, err
		}
	}
	if v, ok := fields["events"]; ok {
		nested := map[string][]string{"involvedObject": refFields}
		if e.Events, err = p.records(v, "events", eventFields, nested); err != nil {
			return e, err
		}
	}
	if v, ok := fields["noActions"]; ok {
		if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
			return e, p.errorf(v, "noActions must be true or false")
		}
		e.NoActions = v.Value == "true"
	}
	if v, ok := fields["allowed"]; ok {
		if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
			return e, p.errorf(v, "allowed must be true or false")
		}
		allowed := v.Value == "true"
		e.Allowed = &allowed
	}
	if v, ok := fields["message"]; ok {
		if e.Message, err = p.str(v, "message"); err != nil {
			return e, err
		}
	}
	if v, ok := fields["warnings"]; ok {
		items, err := p.seq(v, "warnings")
		if err != nil {
			return e, err
		}
		e.Warnings = []string{}
		for _, item := range items {
			s, err := p.str(item, "warnings")
			if err != nil {
				return e, err
			}
			e.Warnings = append(e.Warnings, s)
		}
	}
	if v, ok := fields["object"]; ok {
		val, err := p.value(v)
		if err != nil {
			return e, err
		}
		obj, ok := val.(map[string]any)
		if !ok {
			return e, p.errorf(v, "object must be a mapping: the fields the object after the patch must have")
		}
		e.Object = obj
	}
	return e, nil
}

func (p *parser) absent(n *yaml.Node) ([]ObjectKey, error) {
	items, err := p.seq(n, "absent")
	if err != nil {
		return nil, err
	}
	out := make([]ObjectKey, 0, len(items))
	for _, item := range items {
		fields, err := p.fields(item, "an absent entry", absentFields)
		if err != nil {
			return nil, err
		}
		var k ObjectKey
		for name, dst := range map[string]*string{"apiVersion": &k.APIVersion, "kind": &k.Kind, "namespace": &k.Namespace, "name": &k.Name} {
			if v, ok := fields[name]; ok {
				if *dst, err = p.str(v, name); err != nil {
					return nil, err
				}
			}
		}
		if k.Kind == "" || k.Name == "" {
			return nil, p.errorf(item, "an absent entry needs kind and name")
		}
		if err := p.checkKind(fields["kind"], k, true); err != nil {
			return nil, err
		}
		if k.APIVersion == "" {
			k.APIVersion = abi.KindOf(k.Kind).APIVersion
		}
		if k.Namespace, err = p.namespace(item, k); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

// records parses a list of mappings whose keys must be among known (and,
// for the keys of nested, mappings whose keys are among nested[key]).
func (p *parser) records(n *yaml.Node, list string, known []string, nested map[string][]string) ([]map[string]any, error) {
	items, err := p.seq(n, list)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, len(items))
	for _, item := range items {
		fields, err := p.fields(item, "an item of "+list, known)
		if err != nil {
			return nil, err
		}
		for k, sub := range nested {
			if v, ok := fields[k]; ok {
				if _, err := p.fields(v, k, sub); err != nil {
					return nil, err
				}
			}
		}
		v, err := p.value(item)
		if err != nil {
			return nil, err
		}
		out = append(out, v.(map[string]any))
	}
	return out, nil
}

// fields returns the values of mapping n by key (merge keys expanded),
// refusing keys not in known and keys written twice.
func (p *parser) fields(n *yaml.Node, what string, known []string) (map[string]*yaml.Node, error) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil, p.errorf(n, "%s must be a mapping with fields %s", what, strings.Join(known, ", "))
	}
	out, problems := input.Fields(n, known)
	if len(problems) == 0 {
		return out, nil
	}
	pr := input.FirstProblem(problems)
	switch pr.Kind {
	case input.KeyUnknown:
		msg := fmt.Sprintf("unknown field %s in %s: known fields are %s", input.Quote(pr.Key), what, strings.Join(known, ", "))
		if pr.Suggest != "" {
			msg += "; did you mean " + pr.Suggest + "?"
		}
		return nil, p.errorf(pr.Node, "%s", msg)
	case input.KeyRepeated:
		return nil, p.errorf(pr.Node, "field %s appears twice in %s", input.Quote(pr.Key), what)
	case input.KeyNotString:
		return nil, p.errorf(pr.Node, "a key of %s is a list or a mapping: keys are field names, one of %s", what, strings.Join(known, ", "))
	case input.KeyBadMerge, input.KeyBadMergeItem:
		return nil, p.errorf(pr.Node, "<< in %s merges a mapping or a list of mappings", what)
	}
	return nil, p.errorf(pr.Node, "%s is nested too deep through merge keys", what)
}

// valueNode returns the value of key in mapping n, or n itself.
func (p *parser) valueNode(n *yaml.Node, key string) *yaml.Node {
	n = resolve(n)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return n
}

func (p *parser) seq(n *yaml.Node, what string) ([]*yaml.Node, error) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.errorf(n, "%s must be a list", what)
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		out[i] = resolve(c)
	}
	return out, nil
}

func (p *parser) str(n *yaml.Node, what string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", p.errorf(n, "%s must be a string", what)
	}
	return n.Value, nil
}

// value decodes n into the value its JSON form decodes to, with integers as
// int64, so that YAML and the cluster's objects compare like JSON values.
func (p *parser) value(n *yaml.Node) (any, error) {
	v, err := input.Value(n)
	if err != nil {
		at := n
		if ve := (*input.ValueError)(nil); errors.As(err, &ve) {
			at = ve.Node
		}
		return nil, p.errorf(at, "%s", err)
	}
	out, err := memcluster.JSONValue(jsonable(v))
	if err != nil {
		return nil, p.errorf(n, "value cannot be represented in JSON: %v", err)
	}
	return out, nil
}

// jsonable makes what yaml.v3 decodes into interface values marshalable:
// maps with non-string keys get their keys printed, as kubectl would.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonable(e)
		}
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = jsonable(e)
		}
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	return v
}

// resolve follows an alias to the node it names.
var resolve = input.Deref
