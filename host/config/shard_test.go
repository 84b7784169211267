package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
)

func TestShard(t *testing.T) {
	const mods = "modules:\n- path: guests/retention.wasm\n"
	for _, tc := range []struct {
		name, yaml string
		selector   string // "" for none
		namespace  string
		err        string
	}{
		{name: "absent watches everything", yaml: mods},
		{name: "selector", yaml: mods + "shard:\n  labelSelector: \"kubeplug.dev/shard in (a)\"\n", selector: "kubeplug.dev/shard in (a)"},
		{name: "namespace", yaml: mods + "shard:\n  namespace: team-a\n", namespace: "team-a"},
		{name: "both", yaml: mods + "shard: {labelSelector: shard=b, namespace: team-b}\n", selector: "shard=b", namespace: "team-b"},
		{name: "bad selector", yaml: mods + "shard:\n  labelSelector: \"a in b\"\n", err: "host.yaml:4: shard.labelSelector: \"a in b\" is not a label selector"},
		{name: "bad namespace", yaml: mods + "shard:\n  namespace: Team_A\n", err: "host.yaml:4: shard.namespace: \"Team_A\" is not a namespace name"},
		{name: "unknown field", yaml: mods + "shard:\n  namespaces: [a]\n", err: "host.yaml:4: shard.namespaces: unknown field; did you mean namespace?"},
		{name: "not a mapping", yaml: mods + "shard: a\n", err: "host.yaml:3: shard: must be a mapping with labelSelector and/or namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _, err := load(t, tc.yaml)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.namespace, f.Shard.Namespace)
			if tc.selector == "" {
				require.Nil(t, f.Shard.LabelSelector)
				return
			}
			want, err := labels.Parse(tc.selector)
			require.NoError(t, err)
			require.Equal(t, want.String(), f.Shard.LabelSelector.String())
		})
	}
}

func TestAPIQPS(t *testing.T) {
	const mods = "modules:\n- path: guests/retention.wasm\n"
	f := mustLoad(t, mods+"apiQPS: 200\n")
	require.Equal(t, 200, f.APIQPS)
	_, _, err := load(t, mods+"apiQPS: 0\n")
	require.ErrorContains(t, err, "host.yaml:3: apiQPS: 0 is out of range; use a whole number from 1 to 10000")
}
