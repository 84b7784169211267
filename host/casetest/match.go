package casetest

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
)

// Diff compares got against want by the matching rules of the package
// documentation and returns the first difference, as "path: what differs"
// (e.g. `metadata.ownerReferences: want 1 items, got 0`), or "" when got
// matches. Values are JSON-shaped, as in Case and memcluster objects.
func Diff(want, got any) string { return diff("", want, got, true) }

// diff is Diff at path; present says whether got exists at all (a missing
// field).
func diff(path string, want, got any, present bool) string {
	if !present {
		got = nil
	}
	switch w := want.(type) {
	case nil:
		if got != nil {
			return at(path, "want nothing, got "+render(got))
		}
		return ""
	case map[string]any:
		if got == nil {
			got = map[string]any{}
		}
		g, ok := got.(map[string]any)
		if !ok {
			return at(path, "want a map, got "+render(got))
		}
		for _, k := range slices.Sorted(maps.Keys(w)) {
			v, ok := g[k]
			if d := diff(join(path, k), w[k], v, ok); d != "" {
				return d
			}
		}
		return ""
	case []any:
		if got == nil {
			got = []any{}
		}
		g, ok := got.([]any)
		if !ok {
			return at(path, "want a list, got "+render(got))
		}
		return diffList(path, w, g)
	}
	if got == nil {
		return at(path, fmt.Sprintf("want %s, got nothing", render(want)))
	}
	if !scalarEqual(want, got) {
		return at(path, fmt.Sprintf("want %s, got %s", render(want), render(got)))
	}
	return ""
}

// diffList matches want's elements one-to-one with got's, in any order.
func diffList(path string, want, got []any) string {
	if len(want) != len(got) {
		return at(path, fmt.Sprintf("want %d items, got %d", len(want), len(got)))
	}
	matches := make([][]bool, len(want))
	for i := range want {
		matches[i] = make([]bool, len(got))
		found := false
		for j := range got {
			matches[i][j] = diff("", want[i], got[j], true) == ""
			found = found || matches[i][j]
		}
		if !found {
			item := index(path, i)
			if len(got) == 1 {
				return diff(item, want[i], got[0], true)
			}
			// Show how the item at the same position differs: lists
			// usually come in the same order, so it is the likeliest
			// intended partner.
			return at(item, "matches no item; the item at this position differs: "+
				diff("", want[i], got[i], true))
		}
	}
	if !perfectMatching(matches) {
		return at(path, "items cannot be matched one-to-one: some expected items match only the same actual item")
	}
	return ""
}

// perfectMatching reports whether every row can be paired with its own
// column among those it matches (Kuhn's augmenting paths; lists are short).
func perfectMatching(m [][]bool) bool {
	owner := make([]int, len(m))
	for j := range owner {
		owner[j] = -1
	}
	var try func(i int, seen []bool) bool
	try = func(i int, seen []bool) bool {
		for j, ok := range m[i] {
			if !ok || seen[j] {
				continue
			}
			seen[j] = true
			if owner[j] < 0 || try(owner[j], seen) {
				owner[j] = i
				return true
			}
		}
		return false
	}
	for i := range m {
		if !try(i, make([]bool, len(m))) {
			return false
		}
	}
	return true
}

// scalarEqual compares JSON scalars; numbers compare by value, so 1 (int64)
// equals 1.0 (float64).
func scalarEqual(a, b any) bool {
	fa, aNum := number(a)
	fb, bNum := number(b)
	if aNum || bNum {
		return aNum && bNum && fa == fb
	}
	return a == b
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case int:
		return float64(x), true
	}
	return 0, false
}

func render(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// join appends a map key to a path, quoting keys that are not plain
// (annotations like "kubeplug.dev/owner").
func join(path, key string) string {
	if !plainKey.MatchString(key) {
		return fmt.Sprintf("%s[%q]", path, key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// at prefixes a difference with its path; at the root there is none.
func at(path, msg string) string {
	if path == "" {
		return msg
	}
	return path + ": " + msg
}
