package input_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/kubeplug/kubeplug/host/internal/input"
	"github.com/kubeplug/kubeplug/host/internal/input/inputtest"
)

var budget = input.Budget{Nodes: 1000, Depth: 64, ScalarBytes: 64, Entries: 100}

// TestCheckTree: each bound is checked, on the document as its readers see
// it (aliases and merge keys expanded), and blamed on the node that
// exceeds it.
func TestCheckTree(t *testing.T) {
	bomb := "chain:\n"
	for _, n := range inputtest.MergeChain(60, "k: v") {
		bomb += "- " + n + "\n"
	}
	tests := []struct {
		name  string
		doc   string
		limit input.Limit
		path  string
		line  int
	}{
		{"within", "a: &x [1, 2, 3]\nb: *x\nc: {<<: {d: 1}}\n", 0, "", 0},
		{"merge keys 2^60", bomb, input.LimitNodes, "chain", 2},
		{"alias in itself", "a:\n  b: &l [*l]\n", input.LimitDepth, "a.b[0]", 2},
		{"deep", "a: " + strings.Repeat("[", 70) + strings.Repeat("]", 70) + "\n", input.LimitDepth, ("a" + strings.Repeat("[0]", 33))[:100] + "...", 1},
		{"deep through an alias", "a: &d " + strings.Repeat("[", 60) + strings.Repeat("]", 60) + "\nb: [[[[[[[*d]]]]]]]\n", input.LimitDepth, "b[0][0][0][0][0][0][0]", 2},
		{"long scalar", "a: [x, " + strings.Repeat("y", 65) + "]\n", input.LimitScalar, "a[1]", 1},
		{"long key", strings.Repeat("k", 65) + ": 1\n", input.LimitScalar, "", 1},
		{"long list", "a: [" + strings.Repeat("x, ", 100) + "x]\n", input.LimitEntries, "a", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var doc yaml.Node
			require.NoError(t, yaml.Unmarshal([]byte(tt.doc), &doc))
			ex := input.CheckTree(&doc, budget)
			if tt.limit == 0 {
				require.Nil(t, ex)
				return
			}
			require.NotNil(t, ex)
			require.Equal(t, tt.limit, ex.Limit)
			require.Equal(t, tt.path, ex.Path)
			require.Equal(t, tt.line, ex.Node.Line)
		})
	}
}
