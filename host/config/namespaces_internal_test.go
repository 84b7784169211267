package config

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/kubeplug/kubeplug/host/internal/input/inputtest"
)

// TestNamespacesLinear: a million distinct namespaces, past every bound of
// the file, are checked for repeats in one pass (a pairwise check took
// hours).
func TestNamespacesLinear(t *testing.T) {
	const n = 1_000_000
	list := &yaml.Node{Kind: yaml.SequenceNode, Content: make([]*yaml.Node, n)}
	for i := range list.Content {
		list.Content[i] = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: fmt.Sprintf("n%x", i), Line: 1}
	}
	list.Content[n-1].Value = "n0"
	p := &parser{file: "host.yaml"}
	var got []string
	inputtest.Within(t, "checking a million namespaces", func() { got = p.namespaces(list, "namespaces") })
	require.Len(t, got, n-1)
	require.Len(t, p.problems, 1)
	require.EqualError(t, p.problems[0], `host.yaml:1: namespaces[999999]: "n0" is listed twice; keep one`)
}
