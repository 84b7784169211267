package casetest_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/bench/workload"
	"github.com/kubeplug/kubeplug/host/casetest"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/runtime"
)

// runFiles runs every case of the case files at paths against m and
// returns the outcomes.
func runFiles(t *testing.T, m runtime.Loaded, paths ...string) []casetest.Outcome {
	t.Helper()
	files, err := casetest.LoadPaths(paths)
	require.NoError(t, err)
	var out []casetest.Outcome
	for _, f := range files {
		for _, c := range f.Cases {
			out = append(out, casetest.Run(context.Background(), controller.Module{Runtime: m.(controller.Guest)}, c, nil))
		}
	}
	return out
}

// Each reference module declares a projection, and every reconcile of
// every one of its cases answers the same narrowed as whole (Session
// compares the two answers of each reconcile and fails the case on a
// difference).
func TestReferenceModulesAnswerAlikeProjected(t *testing.T) {
	for _, g := range []string{"retention", "reclaim", "templateupdate"} {
		t.Run(g, func(t *testing.T) {
			dir := "guests/" + g
			m := workload.LoadAny(t, g+".wasm", workload.Guest(t, dir))
			require.True(t, m.(interface{ Projected() bool }).Projected(), "%s declares no projection", g)
			outcomes := runFiles(t, m, filepath.Join("..", "..", dir, "testdata"))
			require.NotEmpty(t, outcomes)
			for _, o := range outcomes {
				require.True(t, o.Passed, "%s: %s: %s", o.File, o.Name, o.Failure)
			}
		})
	}
}

// A module that reads a field its projection leaves out fails its case,
// with both answers, instead of passing on a wrong decision: a field, a
// map's key its path does not name, a list element its filter drops. What
// it reads and declares (a key, a filtered element's field) passes.
func TestUndeclaredReadFailsTheCase(t *testing.T) {
	out := filepath.Join(t.TempDir(), "underread.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, "./casetest/testdata/guests/underread")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	wasm, err := os.ReadFile(out)
	require.NoError(t, err)
	m := workload.LoadAny(t, "underread.wasm", wasm)
	outcomes := runFiles(t, m, filepath.Join("testdata", "underread.yaml"))
	require.Len(t, outcomes, 4)
	for i, reason := range []string{"PodPending", "DatabasePod", "PodUnscheduled"} {
		require.False(t, outcomes[i].Passed, outcomes[i].Name)
		require.Contains(t, outcomes[i].Failure, casetest.ErrProjection.Error())
		require.Contains(t, outcomes[i].Failure, `it answered {} with its projection, and {"actions":[{"type":"event"`)
		require.Contains(t, outcomes[i].Failure, `"reason":"`+reason+`"`)
	}
	require.True(t, outcomes[3].Passed, "%s: %s", outcomes[3].Name, outcomes[3].Failure)
}
