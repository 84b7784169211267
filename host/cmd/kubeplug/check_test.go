package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/casetest"
	"github.com/kubeplug/kubeplug/host/check"
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
		for _, g := range []string{"crashforget", "stalereap", "sawcondemned", "stalemark", "staleshrink"} {
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
		// A cache behind for two reconciles in a row: one stale round
		// shows nothing.
		{"stalemark", "object deleted: PersistentVolumeClaim default/data-web-1", "stale:phase=2,round=1,kind=StatefulSet,lag=3,rounds=2"},
		// A lowering above the capacity, which every run recovers from:
		// only the oracle of lowered requests shows it.
		{"staleshrink", "request lowered: PersistentVolumeClaim default/data-web-0: request lowered from 3Gi to 2Gi (capacity 1Gi: the expansion to 3Gi in flight is cancelled)",
			"stale:phase=2,round=2,kind=VolumeClaimUpdate,lag=2"},
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

// Perturbations each fixture's bug needs, replayed alone from the printed
// form (the fixture's case file, its first case).
func TestCheckReplaysFixtureBugs(t *testing.T) {
	for _, tc := range []struct {
		name, fixture, cases, perturbation, oracle string
	}{
		// The unobserved run starts on a fresh instance: one that had run
		// the unperturbed run would remember the state this one missed.
		{"fresh instance per run", "sawcondemned", "sawcondemned.yaml", "unobserved:phase=1",
			"did not converge: PersistentVolumeClaim default/data-web-1: exists; the unperturbed run ends without it"},
		// A crash after a round's last write: a restart between two rounds.
		{"crash between rounds", "crashforget", "crashforget-boundary.yaml", "crash:phase=1,round=1,after=2",
			"did not converge: PersistentVolumeClaim default/data-web-1: exists; the unperturbed run ends without it (this one is being deleted, held by finalizers [example.com/backup])"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wasm := checkFixture(t, tc.fixture)
			cases := filepath.Join("..", "..", "check", "testdata", tc.cases)
			files, err := casetest.LoadPaths([]string{cases})
			require.NoError(t, err)
			out, errOut, code := kubeplug(t, "", "check", "--module", wasm, "--replay", tc.perturbation+"@"+cases+"#"+files[0].Cases[0].Name)
			require.Equal(t, exitFailure, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			require.Contains(t, out, tc.oracle)
		})
	}
}

// A correct example module passes its own case files.
func TestCheckPassesExample(t *testing.T) {
	out, errOut, code := kubeplug(t, "", "check", "--module", warnretain(t), filepath.Join("..", "..", "..", "examples", "warnretain", "testdata"))
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Contains(t, out, "0 violations, 0 failed unperturbed")
}

// Admission cases are not explored, and the report says so, case by case
// and in its count: a file of them alone does not read as proved.
func TestCheckSaysAdmissionCasesAreNotChecked(t *testing.T) {
	cases := filepath.Join(t.TempDir(), "admit.yaml")
	require.NoError(t, os.WriteFile(cases, []byte(`name: a StatefulSet is reviewed
admit:
  operation: CREATE
  object: {apiVersion: apps/v1, kind: StatefulSet, metadata: {name: web, namespace: shop}}
expect:
  allowed: true
`), 0o644))
	out, errOut, code := kubeplug(t, "", "check", "--module", warnretain(t), cases)
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Contains(t, out, "SKIP "+cases+": a StatefulSet is reviewed: an admission case (admit:), not checked\n")
	require.Contains(t, out, "0 cases, 0 violations, 0 failed unperturbed, 1 admission cases not checked: kubeplug check perturbs the rounds of reconcile cases")
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

// --save replaces what is planted at the name it writes, a FIFO or a
// symlink, by a temporary file and a rename: it opens neither, so it
// neither waits for a FIFO's reader nor writes through a symlink to a file
// outside its directory.
func TestSaveReplacesWhatIsPlanted(t *testing.T) {
	c := casetest.Case{File: "cases.yaml", Name: "scale down"}
	v := check.Violation{File: c.File, Case: c.Name, Oracle: check.OracleConvergence, Detail: "d",
		Perturbation: check.Perturbation{Class: check.Crash, Phase: 1, Round: 1, After: 1}}
	first, err := saveRepro(t.TempDir(), c, v)
	require.NoError(t, err)
	want, err := os.ReadFile(first)
	require.NoError(t, err)
	name := filepath.Base(first)

	for _, plant := range []string{"fifo", "symlink"} {
		t.Run(plant, func(t *testing.T) {
			dir, outside := t.TempDir(), filepath.Join(t.TempDir(), "precious")
			require.NoError(t, os.WriteFile(outside, []byte("keep"), 0o644))
			path := filepath.Join(dir, name)
			var reader *os.File
			if plant == "fifo" {
				require.NoError(t, syscall.Mkfifo(path, 0o644))
				// A reader held open, so that a write into the FIFO
				// would not block the test but show as data here.
				reader, err = os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
				require.NoError(t, err)
				defer reader.Close()
			} else {
				require.NoError(t, os.Symlink(outside, path))
			}
			got, err := saveRepro(dir, c, v)
			require.NoError(t, err)
			require.Equal(t, path, got)
			st, err := os.Lstat(path)
			require.NoError(t, err)
			require.True(t, st.Mode().IsRegular(), "%s is %s", path, st.Mode())
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, want, b)
			kept, err := os.ReadFile(outside)
			require.NoError(t, err)
			require.Equal(t, "keep", string(kept), "nothing written through a symlink")
			if reader != nil {
				n, _ := reader.Read(make([]byte, 1))
				require.Zero(t, n, "nothing written into the FIFO")
			}
		})
	}
}
