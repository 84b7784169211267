package config

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kubeplug/kubeplug/host/internal/input"
)

// maxNesting bounds how deep anchors, merges and the guest configuration may
// nest (see budget). It is far above any real file and stops an alias that
// refers to itself (`&a [*a]`) from recursing forever.
const maxNesting = 64

// maxField bounds the field paths messages quote.
const maxField = 200

// parser walks a configuration's YAML nodes into a File. It records every
// problem it meets and carries on, so that one run reports them all.
type parser struct {
	file  string // the file as named by the caller, for messages
	dir   string // absolute directory of the file, for relative module paths
	dirIs string // what dir is, for messages
	// modulesDir stands for ImageModulesDir in module paths (Options).
	modulesDir string
	problems   []*problem
	// requireKey is requireSignature's public key file, which every
	// module entry must be signed with unless it names its own;
	// requireLine is where it was set.
	requireKey  string
	requireLine int
}

// addf records a problem at n's line (the line of the whole file when n is
// nil).
func (p *parser) addf(n *yaml.Node, field, format string, args ...any) {
	line := 1
	if n != nil && n.Line > 0 {
		line = n.Line
	}
	if len(field) > maxField { // a key of 64 KiB says nothing more than its start
		field = input.Excerpt(field, maxField)
	}
	p.problems = append(p.problems, &problem{file: p.file, line: line, field: field, msg: fmt.Sprintf(format, args...)})
}

// err joins the problems in line order, or returns nil when there are none.
func (p *parser) err() error {
	if len(p.problems) == 0 {
		return nil
	}
	slices.SortStableFunc(p.problems, func(a, b *problem) int { return cmp.Compare(a.line, b.line) })
	errs := make([]error, len(p.problems))
	for i, pr := range p.problems {
		errs[i] = pr
	}
	return errors.Join(errs...)
}

// pairs returns the entries of mapping n, merge keys expanded (see
// input.Pairs), and records the problems of its keys.
func (p *parser) pairs(n *yaml.Node, field string) []input.Pair {
	ps, problems := input.Pairs(n)
	p.keyProblems(problems, field, nil)
	return ps
}

// keyProblems records the problems of a mapping's keys; known lists the
// fields of the mapping, for an unknown key.
func (p *parser) keyProblems(problems []input.KeyProblem, field string, known []string) {
	for _, pr := range problems {
		switch pr.Kind {
		case input.KeyUnknown:
			msg := fmt.Sprintf("unknown field; the fields here are %s", strings.Join(known, ", "))
			if pr.Suggest != "" {
				msg = fmt.Sprintf("unknown field; did you mean %s? (the fields here are %s)", pr.Suggest, strings.Join(known, ", "))
			}
			p.addf(pr.Node, join(field, pr.Key), "%s", msg)
		case input.KeyRepeated:
			p.addf(pr.Node, join(field, pr.Key), "repeated (first at line %d); keep one", pr.First)
		case input.KeyNotString:
			p.addf(pr.Node, field, "a key must be a plain string; got %s", describe(pr.Node))
		case input.KeyBadMergeItem:
			p.addf(pr.Node, field, "<< merges mappings; got %s", describe(pr.Node))
		case input.KeyBadMerge:
			p.addf(pr.Node, field, "<< merges a mapping or a list of mappings; got %s", describe(pr.Node))
		case input.KeyTooDeep:
			p.addf(pr.Node, clip(field), "nested more than %d levels deep; does an alias refer to the node that contains it?", maxNesting)
		}
	}
}

// clip shortens a field path 64 levels deep, which says nothing more than
// its start.
func clip(field string) string {
	if len(field) > 80 {
		return field[:80] + "..."
	}
	return field
}

// fields checks that n is a mapping (what says of what, for the message)
// whose keys are all in known, and returns its values by key. A key whose
// value is null is left out, so `name:` reads as unset.
func (p *parser) fields(n *yaml.Node, field, what string, known ...string) (map[string]*yaml.Node, bool) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		p.addf(n, field, "must be %s; got %s", what, describe(n))
		return nil, false
	}
	vals, problems := input.Fields(n, known)
	p.keyProblems(problems, field, known)
	for name, v := range vals {
		if isNull(v) {
			delete(vals, name)
		}
	}
	return vals, true
}

// list checks that n is a sequence and returns its elements, aliases
// resolved.
func (p *parser) list(n *yaml.Node, field, what string) ([]*yaml.Node, bool) {
	if n.Kind != yaml.SequenceNode {
		p.addf(n, field, "must be %s; got %s", what, describe(n))
		return nil, false
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, e := range n.Content {
		out[i] = deref(e)
	}
	return out, true
}

// scalar returns a scalar's text. example completes "use e.g. ..." in the
// message when n is a mapping or a list.
func (p *parser) scalar(n *yaml.Node, field, example string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		p.addf(n, field, "must be a single value, e.g. %s; got %s", example, describe(n))
		return "", false
	}
	return n.Value, true
}

// integer returns a whole number in [lo, hi].
func (p *parser) integer(n *yaml.Node, field string, lo, hi int) (int, bool) {
	var v int
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil {
		p.addf(n, field, "must be a whole number from %d to %d; got %s", lo, hi, describe(n))
		return 0, false
	}
	if v < lo || v > hi {
		p.addf(n, field, "%d is out of range; use a whole number from %d to %d", v, lo, hi)
		return 0, false
	}
	return v, true
}

var (
	deref  = input.Deref
	isNull = input.IsNull
)

// describe names what a node is, for "got ..." in messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "nothing"
		case "!!str":
			return "the string " + input.Quote(n.Value)
		case "!!bool":
			return "the boolean " + n.Value
		case "!!int", "!!float":
			return "the number " + input.Excerpt(n.Value, input.MaxExcerpt)
		}
		return input.Quote(n.Value)
	}
	return "an empty document"
}

// join appends a field name to a path: join("modules[0]", "name").
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// index appends an index to a path: index("modules", 1) is modules[1].
func index(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}

// suggest returns the known name that an unknown one is most likely a typo
// of, or "" when none is close.
var suggest = input.Suggest
