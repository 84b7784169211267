package input_test

import (
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/internal/input"
)

// TestYAMLDecoderErrors: the line of a syntax error counts from 1 whether
// yaml's parser or its scanner found it; an unknown anchor is reported at
// its first use; a stream over its bytes is refused before it is read.
func TestYAMLDecoderErrors(t *testing.T) {
	b := input.Budget{Bytes: 64, Nodes: 100, Depth: 10, ScalarBytes: 64, Entries: 10}
	for _, tt := range []struct {
		name, doc string
		line      int
		msg       string
	}{
		{"parser", "a:\n- [x\n", 2, "did not find expected ',' or ']'"},
		{"scanner", "a: 1\nb: 'x\n", 2, "found unexpected end of stream"},
		{"unknown anchor", "a: 1\nb: *x\n", 2, "alias *x names no anchor; define &x before using it"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := input.NewYAMLDecoder([]byte(tt.doc), b).Next()
			var se *input.YAMLSyntaxError
			require.True(t, errors.As(err, &se), "%v", err)
			require.Equal(t, tt.line, se.Line)
			require.Contains(t, se.Msg, tt.msg)
		})
	}

	dec := input.NewYAMLDecoder(make([]byte, 65), b)
	_, err := dec.Next()
	var ex *input.Exceeded
	require.True(t, errors.As(err, &ex), "%v", err)
	require.Equal(t, input.LimitBytes, ex.Limit)
	require.Equal(t, 65, ex.Size)

	dec = input.NewYAMLDecoder([]byte("a: [1, 2]\n---\nb: &l [*l]\n"), b)
	doc, err := dec.Next()
	require.NoError(t, err)
	require.Equal(t, "a", input.YAMLRoot(doc).Content[0].Value)
	doc, err = dec.Next()
	require.True(t, errors.As(err, &ex), "%v", err)
	require.Equal(t, input.LimitDepth, ex.Limit)
	require.Equal(t, 2, doc.Line, "the document over budget is returned, for its line")
	_, err = dec.Next()
	require.ErrorIs(t, err, io.EOF)
}

// TestFields: every key problem is returned at its node, an unknown key
// with the known key it is most likely a typo of; merge keys bring in
// entries the mapping does not write.
func TestFields(t *testing.T) {
	dec := input.NewYAMLDecoder([]byte("base: &b {name: x, mode: m}\nm:\n  <<: *b\n  mode: enforce\n  nmae: y\n  mode: shadow\n  Path: p\n  [a]: 1\n"), input.Budget{Nodes: 100, Depth: 10, ScalarBytes: 64, Entries: 10})
	doc, err := dec.Next()
	require.NoError(t, err)
	m := input.YAMLRoot(doc).Content[3]
	vals, problems := input.Fields(m, []string{"name", "mode", "path"})
	require.Equal(t, "x", vals["name"].Value, "merged")
	require.Equal(t, "enforce", vals["mode"].Value, "written wins over merged")
	type got struct {
		kind    input.KeyProblemKind
		key     string
		line    int
		first   int
		suggest string
	}
	var gots []got
	for _, p := range problems {
		gots = append(gots, got{p.Kind, p.Key, p.Node.Line, p.First, p.Suggest})
	}
	require.ElementsMatch(t, []got{
		{input.KeyRepeated, "mode", 6, 4, ""},
		{input.KeyNotString, "", 8, 0, ""},
		{input.KeyUnknown, "nmae", 5, 0, "name"},
		{input.KeyUnknown, "Path", 7, 0, "path"},
	}, gots)
}
