package config

import (
	"context"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Source is where a module entry's bytes come from: a file (FileSource) or
// an image in a registry (ImageSource). A new kind of source is one file:
// its type and the sourceKind that parses it, registered from init.
type Source interface {
	// String says where, for messages and logs: the file, or the image
	// reference as written.
	String() string
	// Read returns the module's bytes, unverified (Module.ReadContext
	// checks the pin), within input.MaxModuleBytes. An image has none to
	// read here: host/oci pulls it.
	Read(ctx context.Context) ([]byte, error)
	// Remote reports whether the module is fetched over the network: the
	// host then fetches it off its reload path, under its own deadline.
	Remote() bool
	// Files lists the local files whose changes reload the module.
	Files() []string
	// pinAdvice completes a digest mismatch: what has the digest, and
	// what to do when it is not the one to run.
	pinAdvice() (what, fix string)
}

// sourceKind is one kind of source a module entry may name.
type sourceKind struct {
	// rank orders the kinds in messages (the file first).
	rank int
	// field names the source (path:, image:); fields are the others that
	// only it takes.
	field  string
	fields []string
	// example completes "name the module's ...".
	example string
	// parse reads the source into m (the kind's own fields)
	// when the entry names it (named; alone when it names no other
	// source), and checks otherwise that the kind's fields are absent.
	// It returns what names the module by default, and its node.
	parse func(p *parser, vals map[string]*yaml.Node, field string, m *Module, named, alone bool) (given string, at *yaml.Node)
	// of returns the source of a Module built in Go rather than parsed,
	// when the kind's fields are set; else nil.
	of func(m *Module) Source
}

var sourceKinds []sourceKind

// registerSource adds a kind of source; each kind's file calls it from
// init.
func registerSource(k sourceKind) {
	sourceKinds = append(sourceKinds, k)
	slices.SortStableFunc(sourceKinds, func(a, b sourceKind) int { return a.rank - b.rank })
}

// moduleFields lists the fields of a module entry: the file's path first,
// then the entry's own, then the other sources', and compareWith. The order
// is the list's in messages, and settles ties between suggestions.
func moduleFields() []string {
	out := append([]string{sourceKinds[0].field}, sourceKinds[0].fields...)
	out = append(out, entryFields...)
	for _, k := range sourceKinds[1:] {
		out = append(out, k.field)
		out = append(out, k.fields...)
	}
	return append(out, "compareWith")
}

// From returns where the module comes from: the source its entry names.
func (m *Module) From() Source {
	for _, k := range sourceKinds {
		if s := k.of(m); s != nil {
			return s
		}
	}
	return FileSource{Path: m.Path}
}

// source parses the entry's source, which it must name once. It returns
// what names the module by default (the path as written, or the image's
// repository), and its node.
func (p *parser) source(n *yaml.Node, vals map[string]*yaml.Node, field string, m *Module) (given string, at *yaml.Node) {
	var named []string
	for _, k := range sourceKinds {
		if _, ok := vals[k.field]; ok {
			named = append(named, k.field)
		}
	}
	switch len(named) {
	case 0:
		examples := make([]string, len(sourceKinds))
		for i, k := range sourceKinds {
			examples[i] = k.example
		}
		p.addf(n, field, "%s is missing; name the module's %s", sourceKinds[0].field, strings.Join(examples, ", or "))
	case 1:
	default:
		p.addf(vals[named[0]], join(field, named[0]), "%s and %s are both set; keep the one the module comes from", named[0], named[1])
	}
	for _, k := range sourceKinds {
		_, ok := vals[k.field]
		if g, a := k.parse(p, vals, field, m, ok, len(named) == 1); g != "" {
			given, at = g, a
		}
	}
	return given, at
}
