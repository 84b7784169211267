package input

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Value returns the Go value n decodes to: what yaml's Node.Decode gives
// into an `any` (map[string]any, or map[any]any where a key is not a
// string; []any; scalars as yaml resolves them), with aliases followed and
// merge keys expanded as Pairs expands them.
//
// It does the work in time linear in the document once expanded, which
// yaml's Decode does not: it compares every pair of a mapping's keys to
// find one written twice, so a case file's mapping of 100,000 entries took
// minutes. Here each mapping is read through Pairs, whose keys go through a
// map, and only scalars are handed to yaml. The document must be within a
// Budget (CheckTree), which bounds how much its aliases expand to.
//
// The error is a *ValueError.
func Value(n *yaml.Node) (any, error) {
	n = Deref(n)
	switch n.Kind {
	case yaml.MappingNode:
		return mappingValue(n)
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := Value(c)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case yaml.ScalarNode:
		return scalarValue(n)
	}
	return nil, &ValueError{Node: n, Err: fmt.Errorf("a YAML node of kind %d has no value", n.Kind)}
}

func mappingValue(n *yaml.Node) (any, error) {
	ps, problems := Pairs(n)
	if len(problems) > 0 {
		p := FirstProblem(problems)
		return nil, &ValueError{Node: p.Node, Key: &p}
	}
	strs := make(map[string]any, len(ps))
	var anys map[any]any // once a key is not a string, as yaml decodes it
	for _, kv := range ps {
		v, err := Value(kv.Value)
		if err != nil {
			return nil, err
		}
		if anys == nil && kv.Key.ShortTag() == "!!str" {
			strs[kv.Key.Value] = v
			continue
		}
		if anys == nil {
			anys = make(map[any]any, len(ps))
			for k, e := range strs {
				anys[k] = e
			}
		}
		k, err := scalarValue(kv.Key)
		if err != nil {
			return nil, err
		}
		anys[k] = v
	}
	if anys != nil {
		return anys, nil
	}
	return strs, nil
}

// scalarValue decodes one scalar. A string or a null, most of a document,
// is taken as it is; the rest is yaml's to resolve (numbers, booleans,
// timestamps, binary), so that Value agrees with yaml's Decode.
func scalarValue(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!str":
		return n.Value, nil
	case "!!null":
		return nil, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, &ValueError{Node: n, Err: err}
	}
	return v, nil
}

// ValueError is a node Value cannot decode: a mapping's key problem (Key),
// or a scalar yaml cannot decode as its tag says (Err), e.g. `!!int x`.
type ValueError struct {
	// Node is where: the key, or the scalar.
	Node *yaml.Node
	Key  *KeyProblem
	Err  error
}

// Error says what, without where: the caller names the file and e.Node's
// line as it names them elsewhere.
func (e *ValueError) Error() string {
	if e.Key == nil {
		// yaml's own message repeats the line and quotes the whole value.
		return fmt.Sprintf("%s is not a %s as its tag says; drop the tag, or quote the value for a string", Quote(e.Node.Value), e.Node.ShortTag())
	}
	switch e.Key.Kind {
	case KeyRepeated:
		return fmt.Sprintf("key %s is written twice in one mapping (first at line %d); keep one", Quote(e.Key.Key), e.Key.First)
	case KeyNotString:
		return "a key is a list or a mapping; write a string, a number or a boolean"
	case KeyBadMerge, KeyBadMergeItem:
		return "<< merges a mapping or a list of mappings"
	}
	return "merge keys nest too deep: does an alias refer to the mapping that contains it?"
}

func (e *ValueError) Unwrap() error { return e.Err }

// FirstProblem returns the problem that comes first in the file, which is
// the one to report when a reader stops at one.
func FirstProblem(problems []KeyProblem) KeyProblem {
	first := problems[0]
	for _, q := range problems[1:] {
		if q.Node.Line < first.Node.Line || q.Node.Line == first.Node.Line && q.Node.Column < first.Node.Column {
			first = q
		}
	}
	return first
}
