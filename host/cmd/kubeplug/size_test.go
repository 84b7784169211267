package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// kubeplug size adds up the bound of each hook the host calls, with the
// entry's limits: reconcile always, admit only for a module in enforce mode
// of a host that serves webhooks, and then the reviews in flight.
func TestSizeCommand(t *testing.T) {
	const limits = "  limits: {memory: 16Mi, instances: 2, maxTableElements: 65536, maxOutput: 1Mi}\n"
	cfg := filepath.Join(t.TempDir(), "host.yaml")
	hostYAML := "modules:\n- path: " + warnretain(t) + "\n  allow: [{action: event, resources: [statefulsets]}]\n" + limits +
		"- path: " + example(t, "storagepolicy") + "\n" + limits +
		"  allow: [{action: mutate, resources: [persistentvolumeclaims], paths: [/metadata/labels]}, {action: admit, resources: [statefulsets]}]\n"
	require.NoError(t, os.WriteFile(cfg, []byte(hostYAML), 0o644))
	const perInstance = 16<<20 + 65536*8 + 1<<20 + 100<<20
	const linear = 2 * 16 << 20
	size := func(args ...string) sizeReport {
		t.Helper()
		out, errOut, code := kubeplug(t, "", append([]string{"size", "--config", cfg, "-o", "json"}, args...)...)
		require.Equal(t, exitOK, code, errOut)
		var r sizeReport
		require.NoError(t, json.Unmarshal([]byte(out), &r), out)
		return r
	}

	r := size()
	require.Len(t, r.Modules, 2)
	require.Equal(t, []string{"reconcile"}, r.Modules[0].Hooks)
	require.Equal(t, uint64(2*perInstance), r.Modules[0].Bound)
	require.Equal(t, uint64(linear), r.Modules[0].LinearMemory)
	require.Empty(t, r.Modules[1].Hooks, "storagepolicy only admits, and the host serves no webhook")
	require.Zero(t, r.WebhookReviews)
	require.Equal(t, uint64(2*perInstance), r.Total)

	r = size("--webhook")
	require.Equal(t, []string{"admit"}, r.Modules[1].Hooks)
	require.Equal(t, uint64(64<<20), r.WebhookReviews)
	require.Equal(t, uint64(4*perInstance+64<<20), r.Total)
	require.Equal(t, uint64(2*linear), r.LinearMemory)

	require.NoError(t, os.WriteFile(cfg, []byte(hostYAML+"  mode: shadow\n"), 0o644))
	r = size("--webhook")
	require.Empty(t, r.Modules[1].Hooks, "no shadow module's admit hook is served")
	require.Zero(t, r.WebhookReviews)

	out, errOut, code := kubeplug(t, "", "size", "--config", cfg)
	require.Equal(t, exitOK, code, errOut)
	require.Regexp(t, `warnretain +enforce +reconcile +2 +16.0 MiB +235.0 MiB +32.0 MiB`, out)
	require.Contains(t, out, "The modules cannot make the host hold more than 235.0 MiB")

	_, errOut, code = kubeplug(t, "", "size")
	require.Equal(t, exitInput, code)
	require.Contains(t, errOut, "--config is required")
}
