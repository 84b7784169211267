package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	fixtureOnce sync.Once
	fixtureErr  error
)

// checkFixture builds the fixture modules of host/check/testdata/guests
// (stock Go guests with a bug each, never reference modules) once, and
// returns the path of name's.
func checkFixture(t *testing.T, name string) string {
	t.Helper()
	fixtureOnce.Do(func() {
		for _, g := range []string{"crashforget", "stalereap"} {
			cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", filepath.Join(testDir, "fixture-"+g+".wasm"), "./check/testdata/guests/"+g)
			cmd.Dir = filepath.Join("..", "..")
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
			if out, err := cmd.CombinedOutput(); err != nil {
				fixtureErr = err
				t.Logf("go build: %s", out)
				return
			}
		}
	})
	require.NoError(t, fixtureErr, "build the check fixtures")
	return filepath.Join(testDir, "fixture-"+name+".wasm")
}

var replayLine = regexp.MustCompile(`(?m)^    replay: kubeplug check --module \S+ --replay '([^']*)'$`)

// Each fixture's bug is caught, with a reproduction that --replay runs
// again from the printed argument and from the file --save wrote.
func TestCheckCatchesFixtureBugs(t *testing.T) {
	for _, tc := range []struct {
		name, oracle, perturbation string
	}{
		{"crashforget", "did not converge: PersistentVolumeClaim default/data-web-1: exists", "crash:phase=1,round=1,after=1"},
		{"stalereap", "object deleted: PersistentVolumeClaim default/data-web-1", "stale:phase=2,round=1,kind=StatefulSet,lag=3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wasm := checkFixture(t, tc.name)
			cases := filepath.Join("..", "..", "check", "testdata", tc.name+".yaml")
			save := t.TempDir()
			out, errOut, code := kubeplug(t, "", "check", "-v", "--module", wasm, "--save", save, cases)
			require.Equal(t, exitFailure, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			require.Contains(t, out, "VIOLATION "+cases+": ")
			require.Contains(t, out, tc.oracle)
			require.Regexp(t, `\d+ executions explored in `, out)
			m := replayLine.FindStringSubmatch(out)
			require.NotNil(t, m, out)
			require.True(t, strings.HasPrefix(m[1], tc.perturbation+"@"), m[1])

			again, _, code := kubeplug(t, "", "check", "--module", wasm, "--replay", m[1])
			require.Equal(t, exitFailure, code, again)
			require.Contains(t, again, tc.oracle)

			saved, err := filepath.Glob(filepath.Join(save, "*"+strings.NewReplacer(":", "-", ",", "-", "=", "-").Replace(tc.perturbation)+".yaml"))
			require.NoError(t, err)
			require.Len(t, saved, 1)
			fromFile, _, code := kubeplug(t, "", "check", "--module", wasm, "--replay", saved[0])
			require.Equal(t, exitFailure, code, fromFile)
			require.Contains(t, fromFile, tc.oracle)
			// The saved file is a plain case file: kubeplug test runs it.
			_, _, code = kubeplug(t, "", "test", "--module", wasm, saved[0])
			require.Equal(t, exitOK, code)
		})
	}
}

// A correct example module passes its own case files.
func TestCheckPassesExample(t *testing.T) {
	out, errOut, code := kubeplug(t, "", "check", "--module", warnretain(t), filepath.Join("..", "..", "..", "examples", "warnretain", "testdata"))
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Contains(t, out, "0 violations, 0 failed unperturbed")
}

// The budget is checked before each run: a run cut short says so, and is
// not a failure.
func TestCheckBudget(t *testing.T) {
	out, _, code := kubeplug(t, "", "check", "--executions", "3", "--module", warnretain(t), filepath.Join("..", "..", "..", "examples", "warnretain", "testdata"))
	require.Equal(t, exitOK, code, out)
	require.Contains(t, out, "3 executions explored in ")
	require.Contains(t, out, "the budget ended the exploration")
}

func TestCheckBadInput(t *testing.T) {
	wasm := warnretain(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("name: x\nobjects: []\nsteps:\n- scale: {statefulSet: web, replicas: -1}\n"), 0o644))
	for _, args := range [][]string{
		{"check", "--module", wasm},
		{"check", "--module", wasm, bad},
		{"check", "--module", wasm, "--replay", "nonsense"},
		{"check", "--module", wasm, "--replay", "crash:phase=0@" + bad + "#x"},
		{"check", "--module", wasm, "--budget", "0s", bad},
	} {
		_, errOut, code := kubeplug(t, "", args...)
		require.Equal(t, exitInput, code, "%v: %s", args, errOut)
	}
	_, errOut, _ := kubeplug(t, "", "check", "--module", wasm, bad)
	require.Contains(t, errOut, bad+":4: step scale.replicas must be a whole number")
}
