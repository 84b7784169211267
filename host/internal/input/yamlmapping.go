package input

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Pair is one key and its value in a mapping; the value's alias is not
// followed, the key's is.
type Pair struct{ Key, Value *yaml.Node }

// KeyProblemKind says what is wrong with a key.
type KeyProblemKind int

const (
	// KeyUnknown: the key is not one of the known ones.
	KeyUnknown KeyProblemKind = iota + 1
	// KeyRepeated: the key is written twice in one mapping, which YAML
	// forbids and yaml's Node does not check.
	KeyRepeated
	// KeyNotString: the key is a list or a mapping.
	KeyNotString
	// KeyBadMerge: a merge key (<<) names something other than a mapping or
	// a list of mappings.
	KeyBadMerge
	// KeyBadMergeItem: an item of a merge key's list is not a mapping.
	KeyBadMergeItem
	// KeyTooDeep: merge keys nest deeper than maxMerge; does an alias refer
	// to the mapping that contains it? (A document within a Budget cannot.)
	KeyTooDeep
)

// KeyProblem is one thing wrong with a mapping's keys. The caller words it:
// a host configuration and a case file say it each in their own style.
type KeyProblem struct {
	Kind KeyProblemKind
	// Node is where: the key, or a merge key's value.
	Node *yaml.Node
	// Key is the key as written (KeyUnknown, KeyRepeated).
	Key string
	// First is the line of the key's first occurrence (KeyRepeated).
	First int
	// Suggest is the known key Key is most likely a typo of, or ""
	// (KeyUnknown).
	Suggest string
}

// maxMerge bounds how deep merge keys nest in Pairs.
const maxMerge = 64

// Pairs returns the entries of mapping n with merge keys (`<<: *defaults`)
// expanded: keys written in n win over merged ones, and earlier merged
// mappings over later ones, as the YAML merge key specification says. Every
// key problem is returned, and the entries that have none.
func Pairs(n *yaml.Node) ([]Pair, []KeyProblem) {
	var problems []KeyProblem
	return pairs(Deref(n), 0, &problems), problems
}

func pairs(n *yaml.Node, depth int, problems *[]KeyProblem) []Pair {
	if depth > maxMerge {
		*problems = append(*problems, KeyProblem{Kind: KeyTooDeep, Node: n})
		return nil
	}
	var own, merged []Pair
	first := map[string]int{} // key -> line of its first occurrence
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := Deref(n.Content[i]), n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			merged = append(merged, merge(v, depth, problems)...)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			*problems = append(*problems, KeyProblem{Kind: KeyNotString, Node: k})
			continue
		}
		if line, ok := first[k.Value]; ok {
			*problems = append(*problems, KeyProblem{Kind: KeyRepeated, Node: k, Key: k.Value, First: line})
			continue
		}
		first[k.Value] = k.Line
		own = append(own, Pair{k, v})
	}
	for _, kv := range merged {
		if _, ok := first[kv.Key.Value]; !ok {
			first[kv.Key.Value] = kv.Key.Line
			own = append(own, kv)
		}
	}
	return own
}

// merge returns the entries a merge key's value brings in.
func merge(v *yaml.Node, depth int, problems *[]KeyProblem) []Pair {
	v = Deref(v)
	switch v.Kind {
	case yaml.MappingNode:
		return pairs(v, depth+1, problems)
	case yaml.SequenceNode:
		var out []Pair
		for _, m := range v.Content {
			if m = Deref(m); m.Kind != yaml.MappingNode {
				*problems = append(*problems, KeyProblem{Kind: KeyBadMergeItem, Node: m})
				continue
			}
			out = append(out, pairs(m, depth+1, problems)...)
		}
		return out
	}
	*problems = append(*problems, KeyProblem{Kind: KeyBadMerge, Node: v})
	return nil
}

// Fields reads mapping n strictly: its values by key (aliases followed,
// merge keys expanded), each key that is not in known a KeyUnknown problem
// with the known key it is most likely a typo of.
func Fields(n *yaml.Node, known []string) (map[string]*yaml.Node, []KeyProblem) {
	ps, problems := Pairs(n)
	out := make(map[string]*yaml.Node, len(ps))
	for _, kv := range ps {
		if !slices.Contains(known, kv.Key.Value) {
			problems = append(problems, KeyProblem{Kind: KeyUnknown, Node: kv.Key, Key: kv.Key.Value, Suggest: Suggest(kv.Key.Value, known)})
			continue
		}
		out[kv.Key.Value] = Deref(kv.Value)
	}
	return out, problems
}

// Deref follows an alias to the node it names.
func Deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// IsNull reports whether n is a null scalar (`~`, `null`, or nothing).
func IsNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// Suggest returns the known name that an unknown one is most likely a typo
// of, or "" when none is close.
func Suggest(name string, known []string) string {
	best, bestDist := "", 3 // more than two edits away is not a typo
	lower := strings.ToLower(name)
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return k
		}
		// Names that differ in length by bestDist are at least that many
		// edits apart: skipping them keeps a mapping of long unknown keys
		// from costing a distance table per key and known name.
		lk := strings.ToLower(k)
		if abs(len(lower)-len(lk)) >= bestDist {
			continue
		}
		if d := distance(lower, lk); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
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
