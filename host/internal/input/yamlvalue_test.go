package input_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/kubeplug/kubeplug/host/internal/input"
)

// TestValueIsDecode: Value gives what yaml's own Decode gives, for every
// kind of scalar, key and merge.
func TestValueIsDecode(t *testing.T) {
	for _, doc := range []string{
		"a: 1\nb: [x, 2.5, true, null, ~, '3']\nc: {d: {e: f}}\n",
		"1: one\ntrue: t\nx: 0x1f\n",
		"t: 2026-01-01T00:00:00Z\nd: 2026-01-01\nbin: !!binary aGk=\nbig: 18446744073709551615\nhuge: 1e400\n",
		"base: &b {x: 1, y: 2}\nm: {<<: *b, y: 3}\nn: {<<: [{x: 1}, {x: 2, z: 3}]}\n",
		"a: &a [1, {b: 2}]\nc: *a\n",
		"- 1\n- [a, {b: c}]\n",
		"plain\n",
		"k: \n",
	} {
		t.Run(doc, func(t *testing.T) {
			var want any
			require.NoError(t, yaml.Unmarshal([]byte(doc), &want))
			got, err := input.Value(root(t, doc))
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}

// TestValueErrors: a key written twice is reported at the second key with
// the line of the first, as any other key problem at its node; a scalar
// whose tag does not fit its text is yaml's error.
func TestValueErrors(t *testing.T) {
	for _, tt := range []struct {
		name, doc string
		line      int
		msg       string
	}{
		{"repeated", "a: 1\nb:\n  c: 1\n  d: 2\n  c: 3\n", 5, `key "c" is written twice in one mapping (first at line 3); keep one`},
		{"repeated in a list", "- {a: 1}\n- {a: 1, a: 2}\n", 2, `key "a" is written twice`},
		{"list as key", "a:\n  [x]: 1\n", 2, "a key is a list or a mapping"},
		{"bad merge", "a: {<<: 1}\n", 1, "<< merges a mapping or a list of mappings"},
		{"bad scalar", "a: [!!int x]\n", 1, `"x" is not a !!int as its tag says`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := input.Value(root(t, tt.doc))
			var ve *input.ValueError
			require.True(t, errors.As(err, &ve), "%v", err)
			require.Equal(t, tt.line, ve.Node.Line)
			require.ErrorContains(t, err, tt.msg)
		})
	}
}

func root(t *testing.T, doc string) *yaml.Node {
	t.Helper()
	d, err := input.NewYAMLDecoder([]byte(doc), input.Budget{Nodes: 100, Depth: 10, ScalarBytes: 64, Entries: 10}).Next()
	require.NoError(t, err)
	return input.YAMLRoot(d)
}
