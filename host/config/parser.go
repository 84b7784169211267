package config

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/kubeplug/kubeplug/host/internal/input"
)

// maxNesting bounds how deep anchors, merges and the guest configuration may
// nest. It is far above any real file and stops an alias that refers to
// itself (`&a [*a]`) from recursing forever.
const maxNesting = 64

// maxField bounds the field paths messages quote.
const maxField = 200

// parser walks a configuration's YAML nodes into a File. It records every
// problem it meets and carries on, so that one run reports them all.
type parser struct {
	file     string // the file as named by the caller, for messages
	dir      string // absolute directory of the file, for relative module paths
	dirIs    string // what dir is, for messages
	problems []*problem
	nesting  int
	tooDeep  bool // the nesting problem is reported once, not per node
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

// enter counts one level of nesting, to be undone by leave, and reports
// false (with a problem, and nothing to undo) when there are too many.
func (p *parser) enter(n *yaml.Node, field string) bool {
	if p.nesting < maxNesting {
		p.nesting++
		return true
	}
	if !p.tooDeep {
		p.tooDeep = true
		if len(field) > 80 { // a path 64 levels deep says nothing more than its start
			field = field[:80] + "..."
		}
		p.addf(n, field, "nested more than %d levels deep; does an alias refer to the node that contains it?", maxNesting)
	}
	return false
}

func (p *parser) leave() { p.nesting-- }

// pair is one key and its value in a mapping.
type pair struct{ key, value *yaml.Node }

// pairs returns the entries of mapping n with merge keys (`<<: *defaults`)
// expanded: keys written in n win over merged ones, and earlier merged
// mappings over later ones, as the YAML merge key specification says. A
// repeated key is a problem: YAML forbids it and yaml.v3's Node does not
// check it.
func (p *parser) pairs(n *yaml.Node, field string) []pair {
	if !p.enter(n, field) {
		return nil
	}
	defer p.leave()
	var own, merged []pair
	first := map[string]int{} // key -> line of its first occurrence
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			merged = append(merged, p.merge(v, field)...)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			p.addf(k, field, "a key must be a plain string; got %s", describe(k))
			continue
		}
		if line, ok := first[k.Value]; ok {
			p.addf(k, join(field, k.Value), "repeated (first at line %d); keep one", line)
			continue
		}
		first[k.Value] = k.Line
		own = append(own, pair{k, v})
	}
	for _, kv := range merged {
		if _, ok := first[kv.key.Value]; !ok {
			first[kv.key.Value] = kv.key.Line
			own = append(own, kv)
		}
	}
	return own
}

// merge returns the entries a merge key's value brings in.
func (p *parser) merge(v *yaml.Node, field string) []pair {
	v = deref(v)
	switch v.Kind {
	case yaml.MappingNode:
		return p.pairs(v, field)
	case yaml.SequenceNode:
		var out []pair
		for _, m := range v.Content {
			if m = deref(m); m.Kind != yaml.MappingNode {
				p.addf(m, field, "<< merges mappings; got %s", describe(m))
				continue
			}
			out = append(out, p.pairs(m, field)...)
		}
		return out
	}
	p.addf(v, field, "<< merges a mapping or a list of mappings; got %s", describe(v))
	return nil
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
	out := map[string]*yaml.Node{}
	for _, kv := range p.pairs(n, field) {
		name := kv.key.Value
		if !slices.Contains(known, name) {
			msg := fmt.Sprintf("unknown field; the fields here are %s", strings.Join(known, ", "))
			if s := suggest(name, known); s != "" {
				msg = fmt.Sprintf("unknown field; did you mean %s? (the fields here are %s)", s, strings.Join(known, ", "))
			}
			p.addf(kv.key, join(field, name), "%s", msg)
			continue
		}
		if v := deref(kv.value); !isNull(v) {
			out[name] = v
		}
	}
	return out, true
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

// deref follows an alias to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

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
func suggest(name string, known []string) string {
	best, bestDist := "", 3 // more than two edits away is not a typo
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return k
		}
		if d := distance(strings.ToLower(name), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b, in bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
