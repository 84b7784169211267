package input

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Budget bounds a YAML document as its readers will see it: with every
// alias replaced by the node it names and every merge key (`<<: *a`) by
// the entries it brings in. yaml bounds none of this for a yaml.Node
// (its alias ratio applies only to decoding into Go values), and a few
// lines of anchors can name 2^40 nodes.
type Budget struct {
	// Bytes bounds the stream as written (checked by YAMLDecoder, before it
	// reads any of it); 0 is no bound.
	Bytes int
	// Nodes bounds the nodes of the document once expanded.
	Nodes int
	// Depth bounds how deep the expanded document nests; an alias inside
	// the node it names nests without end.
	Depth int
	// ScalarBytes bounds one scalar (a value or a key).
	ScalarBytes int
	// Entries bounds the elements of one list and the entries of one
	// mapping, as written.
	Entries int
}

// Limit says which bound of a Budget a document exceeds.
type Limit int

const (
	LimitNodes Limit = iota + 1
	LimitDepth
	LimitScalar
	LimitEntries
	LimitBytes
)

// Exceeded is a document over its Budget: where, and which bound.
type Exceeded struct {
	// Node is where: the first node whose expansion is over Nodes (each
	// node in it is within), the first node past Depth (or the alias that
	// closes a loop), the scalar, the list or mapping.
	Node *yaml.Node
	// Path names Node from the document's root, as config fields are
	// named: modules[0].config.l4 (at most about 100 bytes).
	Path  string
	Limit Limit
	// Max is the bound exceeded.
	Max int
	// Size is the stream's length in bytes, for LimitBytes (whose Node
	// is nil).
	Size int
}

func (e *Exceeded) Error() string {
	at := e.Path
	if at == "" {
		at = "the document"
	}
	switch e.Limit {
	case LimitNodes:
		return fmt.Sprintf("%s expands to more than %d values", at, e.Max)
	case LimitDepth:
		return fmt.Sprintf("%s is nested more than %d levels deep", at, e.Max)
	case LimitScalar:
		return fmt.Sprintf("%s: a value of more than %d bytes", at, e.Max)
	case LimitEntries:
		return fmt.Sprintf("%s has more than %d entries", at, e.Max)
	}
	return fmt.Sprintf("%d bytes, more than %d", e.Size, e.Max)
}

// CheckTree checks the document under root against b, in time linear in
// the document as written: the expansion of each node is counted once and
// remembered, so an alias costs one lookup however much it names. It
// returns nil when the document is within b.
func CheckTree(root *yaml.Node, b Budget) *Exceeded {
	w := &walker{b: b, memo: map[*yaml.Node]*extent{}}
	w.visit(root, 0, "")
	return w.err
}

// extent is what a node expands to.
type extent struct {
	nodes  int // at most Budget.Nodes: the walk stops past it
	height int
	done   bool // false while the node's children are visited: an alias to it then closes a loop
}

type walker struct {
	b    Budget
	memo map[*yaml.Node]*extent
	err  *Exceeded
}

func (w *walker) fail(n *yaml.Node, path string, l Limit, max int) {
	if w.err == nil {
		w.err = &Exceeded{Node: n, Path: clipPath(path), Limit: l, Max: max}
	}
}

// visit returns the extent of n, reached at depth; nil once the walk failed.
func (w *walker) visit(n *yaml.Node, depth int, path string) *extent {
	if w.err != nil {
		return nil
	}
	if depth >= w.b.Depth {
		w.fail(n, path, LimitDepth, w.b.Depth)
		return nil
	}
	target := n
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		target = n.Alias
	}
	if e, ok := w.memo[target]; ok {
		if !e.done || depth+e.height > w.b.Depth {
			w.fail(n, path, LimitDepth, w.b.Depth)
			return nil
		}
		return e
	}
	e := &extent{nodes: 1, height: 1}
	w.memo[target] = e
	n = target
	switch n.Kind {
	case yaml.ScalarNode:
		if len(n.Value) > w.b.ScalarBytes {
			w.fail(n, path, LimitScalar, w.b.ScalarBytes)
			return nil
		}
	case yaml.SequenceNode, yaml.MappingNode, yaml.DocumentNode:
		entries := len(n.Content)
		if n.Kind == yaml.MappingNode {
			entries /= 2
		}
		if entries > w.b.Entries {
			w.fail(n, path, LimitEntries, w.b.Entries)
			return nil
		}
		for i, c := range n.Content {
			cp := path
			switch n.Kind {
			case yaml.SequenceNode:
				cp = fmt.Sprintf("%s[%d]", path, i)
			case yaml.MappingNode:
				if i%2 == 1 && n.Content[i-1].Kind == yaml.ScalarNode && n.Content[i-1].Tag != "!!merge" {
					cp = joinPath(path, n.Content[i-1].Value)
				}
			}
			ce := w.visit(c, depth+1, cp)
			if ce == nil {
				return nil
			}
			e.nodes += ce.nodes
			e.height = max(e.height, ce.height+1)
			if e.nodes > w.b.Nodes {
				// The first node whose own expansion is over: the
				// nodes in it are each within.
				w.fail(n, path, LimitNodes, w.b.Nodes)
				return nil
			}
		}
	}
	e.done = true
	return e
}

// maxPath bounds the paths of Exceeded: a path 64 levels deep says nothing
// more than its start.
const maxPath = 100

func joinPath(path, key string) string {
	if len(path) > maxPath { // already clipped: do not grow it
		return path
	}
	key = Excerpt(key, 40)
	if path == "" {
		return key
	}
	return path + "." + key
}

func clipPath(p string) string {
	if len(p) > maxPath {
		return strings.ToValidUTF8(p[:maxPath], "") + "..."
	}
	return p
}
