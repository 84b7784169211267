package abi

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

//msgp:ignore FieldStep

// FieldStep is one step of a field path (ObjectFields.Fields): the JSON name
// of a field and, since ABI 1.5, in brackets right after it, the part of the
// field to keep: one key of a map (Key), or the elements of a list of
// objects whose string field Match equals Value. A step with neither keeps
// its field whole.
//
//	metadata.labels[controller-revision-hash]  {Name: metadata} {Name: labels, Key: controller-revision-hash}
//	status.conditions[type=Ready].status        {Name: status} {Name: conditions, Match: type, Value: Ready} {Name: status}
type FieldStep struct {
	Name string
	// Key is the map key the step keeps, "" for none.
	Key string
	// Match and Value filter a list: the elements whose field Match equals
	// Value are kept, "" for no filter.
	Match, Value string
}

// Selects reports whether the step keeps part of its field (a key or a
// filter in brackets) rather than all of it.
func (s FieldStep) Selects() bool { return s.Key != "" || s.Match != "" }

// String returns the step as a path spells it.
func (s FieldStep) String() string {
	switch {
	case s.Key != "":
		return s.Name + "[" + s.Key + "]"
	case s.Match != "":
		return s.Name + "[" + s.Match + "=" + s.Value + "]"
	}
	return s.Name
}

// SelectorMinMinor is the ABI minor version that introduced brackets in a
// field path (a map key, a list filter): a module built for an older minor
// cannot use them.
const SelectorMinMinor = 5

// ParseFieldPath splits a field path into its steps, checking its syntax
// only: whether each name is a field of a kind, and each bracket fits its
// field, is the projection's check (Manifest.Validate). The grammar:
//
//	path     = step { "." step }
//	step     = name [ "[" ( key | field "=" value ) "]" ]
//
// Inside brackets, dots are part of the key or value
// (metadata.annotations[kubeplug.dev/held-partition]); a key or value is
// not empty and has no brackets, quotes, backslashes, "=", white space or
// control characters: no label or annotation key, label value, resource
// name or condition type can hold one, and the quotes and the backslash
// are kept free for an escape a later version may add. A step has at most
// one pair of brackets, and "." or the path's end follows it.
func ParseFieldPath(path string) ([]FieldStep, error) {
	var steps []FieldStep
	for i := 0; ; {
		end := i + strings.IndexAny(path[i:], ".[]")
		if end < i {
			end = len(path)
		}
		step := FieldStep{Name: path[i:end]}
		i = end
		if i < len(path) && path[i] == ']' {
			return nil, fmt.Errorf(`"]" at byte %d closes no "["`, i)
		}
		if i < len(path) && path[i] == '[' {
			open := i
			close := strings.IndexByte(path[open+1:], ']')
			if close < 0 {
				return nil, fmt.Errorf(`"[" at byte %d is never closed: end the key or filter with "]"`, open)
			}
			close += open + 1
			if err := parseBracket(path[open+1:close], open+1, &step); err != nil {
				return nil, err
			}
			i = close + 1
			if i < len(path) && path[i] != '.' {
				return nil, fmt.Errorf(`%q at byte %d follows "]": a step has one pair of brackets, then "." or the end of the path`, path[i:i+1], i)
			}
		}
		steps = append(steps, step)
		if i >= len(path) {
			return steps, nil
		}
		i++ // the "."
	}
}

// parseBracket reads in, the text between a step's brackets that starts at
// byte at of the path, into s: a key, or field=value.
func parseBracket(in string, at int, s *FieldStep) error {
	if in == "" {
		return fmt.Errorf(`"[]" at byte %d is empty: name a key, [key], or filter the elements, [field=value]`, at-1)
	}
	eq := -1
	for i, r := range in {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(in[i:], string(utf8.RuneError)):
			return fmt.Errorf("byte %d is not valid UTF-8", at+i)
		case r == '=' && eq < 0:
			eq = i
		case r == '=':
			return fmt.Errorf(`a second "=" at byte %d: a filter is [field=value], and a value has no "="`, at+i)
		case r == '[':
			return fmt.Errorf(`"[" at byte %d is inside brackets: a step has one pair, and a key has no brackets`, at+i)
		case r == '\'' || r == '"':
			return fmt.Errorf(`quote at byte %d: brackets need no quotes, write %q`, at+i, "["+strings.Trim(in, `'"`)+"]")
		case r == '\\':
			return fmt.Errorf(`backslash at byte %d: a key or value has none (nothing needs escaping)`, at+i)
		case unicode.IsSpace(r) || unicode.IsControl(r):
			return fmt.Errorf("%q at byte %d: a key or value has no white space or control characters", r, at+i)
		}
	}
	if eq < 0 {
		s.Key = in
		return nil
	}
	s.Match, s.Value = in[:eq], in[eq+1:]
	switch {
	case s.Match == "":
		return fmt.Errorf(`filter [%s] at byte %d has no field before "=": write [field=value], e.g. [type=Ready]`, in, at-1)
	case s.Value == "":
		return fmt.Errorf(`filter [%s] at byte %d has no value after "=": write [field=value], e.g. [type=Ready]`, in, at-1)
	}
	return nil
}

// JoinFieldPath spells steps as a field path: ParseFieldPath's inverse.
func JoinFieldPath(steps []FieldStep) string {
	var b strings.Builder
	for i, s := range steps {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.String())
	}
	return b.String()
}
