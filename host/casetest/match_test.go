package casetest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/casetest"
)

type m = map[string]any
type l = []any

func TestDiff(t *testing.T) {
	tests := []struct {
		name      string
		want, got any
		diff      string
	}{
		{"map by subset", m{"a": int64(1)}, m{"a": int64(1), "b": int64(2)}, ""},
		{"missing scalar", m{"a": "x"}, m{}, `a: want "x", got nothing`},
		{"nested path", m{"metadata": m{"labels": m{"x": "y"}}}, m{"metadata": m{"labels": m{"x": "z"}}}, `metadata.labels.x: want "y", got "z"`},
		{"missing map descends", m{"metadata": m{"labels": m{"x": "y"}}}, m{"metadata": m{}}, `metadata.labels.x: want "y", got nothing`},
		{"quoted key", m{"metadata": m{"annotations": m{"kubeplug.dev/a": "1"}}}, m{}, `metadata.annotations["kubeplug.dev/a"]: want "1", got nothing`},
		{"missing list", m{"metadata": m{"ownerReferences": l{m{"uid": "u"}}}}, m{"metadata": m{}}, `metadata.ownerReferences: want 1 items, got 0`},
		{"list length", m{"x": l{"a"}}, m{"x": l{"a", "b"}}, `x: want 1 items, got 2`},
		{"list in any order", l{m{"uid": "b"}, m{"uid": "a"}}, l{m{"uid": "a", "x": int64(1)}, m{"uid": "b"}}, ""},
		{"one element differs", m{"refs": l{m{"uid": "a"}}}, m{"refs": l{m{"uid": "b"}}}, `refs[0].uid: want "a", got "b"`},
		{"no item matches", m{"refs": l{m{"uid": "a"}, m{"uid": "c"}}}, m{"refs": l{m{"uid": "a"}, m{"uid": "b"}}},
			`refs[1]: matches no item; the item at this position differs: uid: want "c", got "b"`},
		{"not one-to-one", l{m{"kind": "Pod"}, m{"kind": "Pod"}}, l{m{"kind": "Pod"}, m{"kind": "Node"}},
			`items cannot be matched one-to-one: some expected items match only the same actual item`},
		{"ambiguous but matchable", l{m{"kind": "Pod"}, m{"kind": "Pod", "name": "b"}}, l{m{"kind": "Pod", "name": "b"}, m{"kind": "Pod", "name": "a"}}, ""},
		{"empty list matches missing", m{"finalizers": l{}}, m{}, ""},
		{"empty list matches null", m{"finalizers": l{}}, m{"finalizers": nil}, ""},
		{"empty list is exact", m{"finalizers": l{}}, m{"finalizers": l{"x"}}, `finalizers: want 0 items, got 1`},
		{"empty map matches missing", m{"labels": m{}}, m{}, ""},
		{"null matches missing", m{"deletionTimestamp": nil}, m{}, ""},
		{"null refuses a value", m{"deletionTimestamp": nil}, m{"deletionTimestamp": "2026-01-01T00:00:00Z"}, `deletionTimestamp: want nothing, got "2026-01-01T00:00:00Z"`},
		{"int equals float", m{"n": int64(1)}, m{"n": 1.0}, ""},
		{"number is not a string", m{"n": int64(1)}, m{"n": "1"}, `n: want 1, got "1"`},
		{"string is not a number", m{"n": "1"}, m{"n": int64(1)}, `n: want "1", got 1`},
		{"bools", m{"b": true}, m{"b": false}, `b: want true, got false`},
		{"want a map", m{"spec": m{"a": "b"}}, m{"spec": "x"}, `spec: want a map, got "x"`},
		{"want a list", m{"spec": l{"a"}}, m{"spec": m{"a": "b"}}, `spec: want a list, got {"a":"b"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.diff, casetest.Diff(tt.want, tt.got))
		})
	}
}
