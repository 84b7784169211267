package check_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/casetest"
	"github.com/kubeplug/kubeplug/host/check"
	"github.com/kubeplug/kubeplug/host/controller"
)

// guest is a module whose decision is a Go function of its input and of a
// memory that lives as long as the guest.
type guest struct {
	caps   []abi.Capability
	memory map[string]bool
	// stateless makes crashforget decide on its input alone.
	stateless bool
	decide    func(g *guest, req *abi.ReconcileRequest) []abi.Action
}

func (g *guest) Manifest() abi.Manifest {
	return abi.Manifest{Name: "fake", Version: "0.0.1", ABIVersion: abi.Current.String(), Subject: abi.SubjectStatefulSet,
		Hooks: []string{abi.HookReconcile}, Capabilities: g.caps}
}

func (g *guest) Reconcile(_ context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
	if req.StatefulSet == nil || req.StatefulSet.Set == nil {
		return &abi.Result{}, nil
	}
	return &abi.Result{Actions: g.decide(g, req)}, nil
}

func (g *guest) Admit(context.Context, *abi.AdmitRequest) (*abi.AdmitResponse, error) {
	return nil, abi.ErrNoHook
}

func (g *guest) Close(context.Context) error { return nil }

func ref(kind string, m abi.ObjectMeta) abi.ObjectRef {
	return abi.ObjectRef{Kind: kind, Namespace: m.Namespace, Name: m.Name, UID: m.UID}
}

// ordinal returns the ordinal of claim name of set "web", template "data".
func ordinal(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "data-web-")
	if !ok || len(rest) != 1 {
		return 0, false
	}
	return int(rest[0] - '0'), true
}

// stalereap is testdata/guests/stalereap in Go: it deletes the claims at or
// above the set's replicas, on whatever set its input shows.
func stalereap() *guest {
	return &guest{
		caps: []abi.Capability{{Action: abi.ActionDeleteObject, Resources: []string{"persistentvolumeclaims"}}},
		decide: func(_ *guest, req *abi.ReconcileRequest) []abi.Action {
			var out []abi.Action
			for _, c := range req.StatefulSet.Claims {
				if o, ok := ordinal(c.Metadata.Name); ok && o >= int(req.StatefulSet.Set.Spec.Replicas) && c.Metadata.DeletionTimestamp == "" {
					out = append(out, abi.Action{Type: abi.ActionDeleteObject, Target: ref(abi.KindPersistentVolumeClaim, c.Metadata)})
				}
			}
			return out
		},
	}
}

// claimFinalizers are the capabilities to add and remove claims'
// finalizers.
func claimFinalizers() []abi.Capability {
	return []abi.Capability{
		{Action: abi.ActionAddFinalizer, Resources: []string{"persistentvolumeclaims"}},
		{Action: abi.ActionRemoveFinalizer, Resources: []string{"persistentvolumeclaims"}},
	}
}

// crashforget is testdata/guests/crashforget in Go: the finalizer of a
// claim it deleted is removed only if its memory says it deleted it.
func crashforget() *guest {
	const fin = "example.com/backup"
	return &guest{
		memory: map[string]bool{},
		caps:   append(claimFinalizers(), abi.Capability{Action: abi.ActionDeleteObject, Resources: []string{"persistentvolumeclaims"}}),
		decide: func(g *guest, req *abi.ReconcileRequest) []abi.Action {
			return eachClaim(req, func(o int, c abi.PersistentVolumeClaim, r abi.ObjectRef) []abi.Action {
				has := strings.Contains(strings.Join(c.Metadata.Finalizers, ","), fin)
				switch {
				case c.Metadata.DeletionTimestamp != "":
					if has && (g.stateless || g.memory[c.Metadata.UID]) {
						return []abi.Action{{Type: abi.ActionRemoveFinalizer, Target: r, Finalizer: fin}}
					}
				case o >= int(req.StatefulSet.Set.Spec.Replicas):
					g.memory[c.Metadata.UID] = true
					return []abi.Action{{Type: abi.ActionDeleteObject, Target: r}}
				case !has:
					return []abi.Action{{Type: abi.ActionAddFinalizer, Target: r, Finalizer: fin}}
				}
				return nil
			})
		},
	}
}

// markundo marks a condemned claim whose pod still runs
// (example.com/scaled-down), and removes the mark from a claim back in
// range whose pod runs: a scale-down undone. Its view of the set and the
// pods must agree with its view of the claims for that to be right.
//
// With ack, it marks only claims it has acknowledged: it acknowledges a
// marked claim by removing the finalizer example.com/new the claim was
// created with. The acknowledgement is one more write of its own after the
// controller's mark.
func markundo(ack bool) func() *guest {
	const mark, fresh = "example.com/scaled-down", "example.com/new"
	return func() *guest {
		return &guest{
			caps: claimFinalizers(),
			decide: func(_ *guest, req *abi.ReconcileRequest) []abi.Action {
				return eachClaim(req, func(o int, c abi.PersistentVolumeClaim, r abi.ObjectRef) []abi.Action {
					var out []abi.Action
					marked := slices.Contains(c.Metadata.Finalizers, mark)
					isNew := slices.Contains(c.Metadata.Finalizers, fresh)
					pod := "web-" + strconv.Itoa(o)
					running := slices.ContainsFunc(req.StatefulSet.Pods, func(p abi.Pod) bool { return p.Metadata.Name == pod })
					inRange := o < int(req.StatefulSet.Set.Spec.Replicas)
					switch {
					case running && inRange && marked:
						out = append(out, abi.Action{Type: abi.ActionRemoveFinalizer, Target: r, Finalizer: mark})
					case running && !inRange && !marked && (!ack || !isNew):
						out = append(out, abi.Action{Type: abi.ActionAddFinalizer, Target: r, Finalizer: mark})
					}
					if ack && marked && isNew {
						out = append(out, abi.Action{Type: abi.ActionRemoveFinalizer, Target: r, Finalizer: fresh})
					}
					return out
				})
			},
		}
	}
}

// eachClaim returns the actions decide returns for each claim of set
// "web", template "data", in the request's order.
func eachClaim(req *abi.ReconcileRequest, decide func(o int, c abi.PersistentVolumeClaim, r abi.ObjectRef) []abi.Action) []abi.Action {
	var out []abi.Action
	for _, c := range req.StatefulSet.Claims {
		if o, ok := ordinal(c.Metadata.Name); ok {
			out = append(out, decide(o, c, ref(abi.KindPersistentVolumeClaim, c.Metadata))...)
		}
	}
	return out
}

func loadCase(t *testing.T, path string) casetest.Case {
	t.Helper()
	files, err := casetest.LoadPaths([]string{path})
	require.NoError(t, err)
	return files[0].Cases[0]
}

func explore(t *testing.T, newGuest func() *guest, path string, only *check.Perturbation) check.Report {
	t.Helper()
	left := 10_000
	opts := check.Options{Deadline: time.Now().Add(time.Minute), Executions: &left, Only: only,
		NewGuest: func(context.Context) (controller.Guest, func(), error) { return newGuest(), func() {}, nil }}
	rep := check.Explore(context.Background(), controller.Module{Runtime: newGuest()}, loadCase(t, path), opts)
	require.Empty(t, rep.Failure)
	require.False(t, rep.Truncated)
	return rep
}

// A stale StatefulSet behind a scale-up makes stalereap delete the new
// replica's claim: found as a stale perturbation of the StatefulSet alone,
// the smallest lag that shows the old replicas, and replayed alone.
func TestStaleReadIsCaught(t *testing.T) {
	rep := explore(t, stalereap, "testdata/stalereap.yaml", nil)
	require.NotEmpty(t, rep.Violations)
	v := rep.Violations[0]
	require.Equal(t, check.OracleDeleted, v.Oracle)
	require.Equal(t, "PersistentVolumeClaim default/data-web-1", v.Object)
	require.Equal(t, "stale:phase=2,round=1,kind=StatefulSet,lag=3", v.Perturbation.String())
	require.Equal(t, "module: deleteObject PersistentVolumeClaim default/data-web-1", v.Action)
	for _, v := range rep.Violations {
		require.Equal(t, check.Stale, v.Perturbation.Class, "only a stale view shows the bug: %+v", v)
	}

	p, err := check.Parse(v.Perturbation.String())
	require.NoError(t, err)
	again := explore(t, stalereap, "testdata/stalereap.yaml", &p)
	require.Equal(t, 2, again.Executions, "the unperturbed run and the one perturbation")
	require.Equal(t, v.Detail, again.Violations[0].Detail)
}

// A crash between crashforget's delete and its finalizer removal strands
// the claim: the fresh host's module has lost the memory the removal needs.
func TestCrashSafetyIsCaught(t *testing.T) {
	rep := explore(t, crashforget, "testdata/crashforget.yaml", nil)
	require.NotEmpty(t, rep.Violations)
	v := rep.Violations[0]
	require.Equal(t, check.OracleConvergence, v.Oracle)
	require.Equal(t, check.Crash, v.Perturbation.Class)
	require.Equal(t, "crash:phase=1,round=1,after=1", v.Perturbation.String())
	require.Contains(t, v.Detail, "held by finalizers [example.com/backup]")
	require.Contains(t, v.Step, "step 1 (line 32): scale StatefulSet default/web to 1")
}

// A crash after a round's last write is a restart between that round and
// the next: crashforget's two rounds after a scale-down, deleting then
// letting go, are split there. A crash is disarmed at the end of the round
// it was planned for: the one planned after the single write before the
// scale-down is harmless, and is not reported as the crash that happens
// after it.
func TestCrashBetweenRounds(t *testing.T) {
	const cases = "testdata/crashforget-boundary.yaml"
	rep := explore(t, crashforget, cases, nil)
	require.NotEmpty(t, rep.Violations)
	v := rep.Violations[0]
	require.Equal(t, "crash:phase=1,round=1,after=1", v.Perturbation.String())
	require.Contains(t, v.Detail, "held by finalizers [example.com/backup]")

	for p, violated := range map[string]bool{
		"crash:phase=1,round=1,after=2": true,  // between the delete and the letting go
		"crash:phase=0,round=1,after=1": false, // before the scale-down: nothing to forget
		"crash:phase=0,round=2,after=0": false, // the end of the phase, which wrote nothing
	} {
		only, err := check.Parse(p)
		require.NoError(t, err)
		again := explore(t, crashforget, cases, &only)
		require.Equal(t, violated, len(again.Violations) > 0, "%s: %+v", p, again.Violations)
		for _, v := range again.Violations {
			require.Equal(t, p, v.Perturbation.String(), "reported where it fired")
		}
	}
}

// Without the memory, the same module is crash-safe: a module whose
// decision is a function of its input passes every perturbation here.
func TestStatelessModulePasses(t *testing.T) {
	safe := func() *guest {
		g := crashforget()
		g.stateless = true
		return g
	}
	rep := explore(t, safe, "testdata/crashforget.yaml", nil)
	require.Empty(t, rep.Violations)
	require.Greater(t, rep.Executions, 10, "the exploration ran")
}

// A module that never stops writing fails unperturbed: there is no run to
// compare the perturbed ones with, and the report says why.
func TestEndlessWritesFailUnperturbed(t *testing.T) {
	flip := func() *guest {
		return &guest{
			memory: map[string]bool{},
			caps:   []abi.Capability{{Action: abi.ActionAddFinalizer, Resources: []string{"persistentvolumeclaims"}}, {Action: abi.ActionRemoveFinalizer, Resources: []string{"persistentvolumeclaims"}}},
			decide: func(g *guest, req *abi.ReconcileRequest) []abi.Action {
				c := req.StatefulSet.Claims[0]
				typ := abi.ActionAddFinalizer
				if len(c.Metadata.Finalizers) > 0 {
					typ = abi.ActionRemoveFinalizer
				}
				return []abi.Action{{Type: typ, Target: ref(abi.KindPersistentVolumeClaim, c.Metadata), Finalizer: "example.com/flip"}}
			},
		}
	}
	left := 100
	rep := check.Explore(context.Background(), controller.Module{Runtime: flip()}, loadCase(t, "testdata/stalereap.yaml"),
		check.Options{Deadline: time.Now().Add(time.Minute), Executions: &left})
	require.Contains(t, rep.Failure, "the unperturbed run: ")
	require.Contains(t, rep.Failure, "the rounds before the first step did not settle in 10 rounds")
	require.Equal(t, 1, rep.Executions)
}

// A case whose steps make thousands of writes on thousands of objects ends
// with an error that says to split it, before its run keeps a copy of the
// whole cluster after every write without bound.
func TestTooLargeCaseIsRefused(t *testing.T) {
	f, err := casetest.Parse("big.yaml", []byte(`name: big
objects:
- apiVersion: apps/v1
  kind: StatefulSet
  metadata: {name: web, uid: 11111111-0000-4000-8000-000000000000}
  spec:
    replicas: 1
    selector: {matchLabels: {app: web}}
    template: {metadata: {labels: {app: web}}, spec: {containers: [{name: c, image: i}]}}
    volumeClaimTemplates: [{metadata: {name: data}, spec: {resources: {requests: {storage: 1Gi}}}}]
steps:
- scale: {statefulSet: web, replicas: 1000}
- statefulSetController: {statefulSet: web}
`))
	require.NoError(t, err)
	g := stalereap()
	g.decide = func(*guest, *abi.ReconcileRequest) []abi.Action { return nil }
	rep := check.Explore(context.Background(), controller.Module{Runtime: g}, f.Cases[0], check.Options{})
	require.Contains(t, rep.Failure, "the case is too large to explore")
	require.Contains(t, rep.Failure, "split it into smaller cases")
}

// A case of few objects, but large ones, written by every step: its run
// ends with an error that says to split it once its versions would take
// more memory than a run may keep, where a count of objects never would.
func TestLargeObjectsEndTheRun(t *testing.T) {
	c := loadCase(t, "testdata/stalereap.yaml")
	finalizers := make([]any, 50_000)
	for i := range finalizers {
		finalizers[i] = fmt.Sprintf("example.com/f%05d", i)
	}
	for _, o := range c.Objects {
		if o["kind"] == abi.KindPersistentVolumeClaim {
			o["metadata"].(map[string]any)["finalizers"] = finalizers
		}
	}
	c.Steps = nil
	for i := range casetest.MaxSteps {
		c.Steps = append(c.Steps, casetest.Step{Action: casetest.StepPatch, Kind: abi.KindPersistentVolumeClaim, Namespace: "default",
			Name: "data-web-0", Patch: map[string]any{"metadata": map[string]any{"labels": map[string]any{"step": strconv.Itoa(i)}}}})
	}
	g := stalereap()
	g.decide = func(*guest, *abi.ReconcileRequest) []abi.Action { return nil }
	left := 1 // the unperturbed run is enough
	rep := check.Explore(context.Background(), controller.Module{Runtime: g}, c, check.Options{Executions: &left})
	require.Contains(t, rep.Failure, "the case is too large to explore: a run would keep more than 128MiB of the cluster's versions")
	require.Contains(t, rep.Failure, "split it into smaller cases")
}

// A slow module on a case of 100 steps that write nothing: the budget is
// checked at every round, so the run ends at the first round after the
// deadline, not once every step's rounds have called the module.
func TestBudgetEndsARunAtItsNextRound(t *testing.T) {
	c := loadCase(t, "testdata/stalereap.yaml")
	c.Steps = slices.Repeat([]casetest.Step{{Action: casetest.StepGarbageCollector}}, casetest.MaxSteps)
	deadline := time.Now().Add(50 * time.Millisecond)
	calls := 0
	g := stalereap()
	g.decide = func(*guest, *abi.ReconcileRequest) []abi.Action {
		calls++
		time.Sleep(time.Until(deadline)) // the call outlasts the budget
		return nil
	}
	left := 100
	rep := check.Explore(context.Background(), controller.Module{Runtime: g}, c, check.Options{Deadline: deadline, Executions: &left})
	require.True(t, rep.Truncated)
	require.Empty(t, rep.Failure, "the budget ended the run; the module did not fail it")
	require.Equal(t, 1, calls, "no round starts after the deadline")
}

// Prefetch hands out a distinct fresh instance each time, and stop
// releases the one it started and did not hand out.
func TestPrefetch(t *testing.T) {
	var mu sync.Mutex
	started, released := 0, 0
	take, stop := check.Prefetch(context.Background(), func(context.Context) (controller.Guest, func(), error) {
		mu.Lock()
		defer mu.Unlock()
		started++
		return stalereap(), func() { mu.Lock(); released++; mu.Unlock() }, nil
	})
	a, releaseA, err := take(context.Background())
	require.NoError(t, err)
	b, releaseB, err := take(context.Background())
	require.NoError(t, err)
	require.NotSame(t, a, b)
	releaseA()
	releaseB()
	stop()
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, started, released, "every instance started is released")
	require.LessOrEqual(t, started, 4, "at most one waits, and one more is being started")
}

// markundo's bug needs the view seed 2435's leader had: its claims
// current, its set and pods from before the scale-down. One stale round
// with every kind but the claims behind shows it.
func TestStaleButClaimsIsCaught(t *testing.T) {
	rep := explore(t, markundo(false), "testdata/markundo.yaml", nil)
	require.NotEmpty(t, rep.Violations)
	v := rep.Violations[0]
	require.Equal(t, check.OracleConvergence, v.Oracle)
	require.Equal(t, "PersistentVolumeClaim default/data-web-0", v.Object)
	require.Equal(t, "stale:phase=3,round=1,kind=*,lag=3,except=PersistentVolumeClaim", v.Perturbation.String())
	require.Equal(t, "round 1 of the rounds after step 3 runs on the live host with every object but its PersistentVolumeClaim objects as they were 3 write(s) ago",
		v.Perturbation.Describe())
}

// With markundo's acknowledgement, the host's own write after the mark
// puts the set from before the scale-down out of a stale round's reach
// (MaxLag writes): only a host that missed the state after the mark, and
// so never wrote, reads that far back. The unobserved-stale class shows
// it, and the reproduction replays alone.
func TestMissedStateThenStaleIsCaught(t *testing.T) {
	rep := explore(t, markundo(true), "testdata/markundo.yaml", nil)
	require.NotEmpty(t, rep.Violations)
	for _, v := range rep.Violations {
		require.Equal(t, check.UnobservedStale, v.Perturbation.Class, "only the compound class shows the bug: %+v", v)
	}
	v := rep.Violations[0]
	require.Equal(t, check.OracleConvergence, v.Oracle)
	require.Equal(t, "PersistentVolumeClaim default/data-web-0", v.Object)
	require.Equal(t, "unobserved-stale:phase=2,round=1,kind=*,lag=3,except=PersistentVolumeClaim", v.Perturbation.String())
	require.Equal(t, "the host does not run the rounds after step 2, so it never sees that state; then round 1 of the rounds "+
		"after step 3 runs on the live host with every object but its PersistentVolumeClaim objects as they were 3 write(s) ago",
		v.Perturbation.Describe())
	require.Contains(t, v.Step, "step 3 (line 37): delete Pod default/web-0")
	require.False(t, rep.Capped)

	p, err := check.Parse(v.Perturbation.String())
	require.NoError(t, err)
	require.Equal(t, v.Perturbation, p)
	again := explore(t, markundo(true), "testdata/markundo.yaml", &p)
	require.Equal(t, 2, again.Executions, "the unperturbed run and the one perturbation")
	require.Equal(t, v.Detail, again.Violations[0].Detail)
}

// The compound class's form is read back as written, and a malformed one
// says what it needs.
func TestParseUnobservedStale(t *testing.T) {
	for _, s := range []string{
		"unobserved-stale:phase=0,round=2,kind=Pod,lag=1",
		"unobserved-stale:phase=1,round=1,kind=*,lag=2,restart=true",
		"unobserved-stale:phase=1,round=1,kind=*,lag=3,except=StatefulSet",
		"stale:phase=2,round=1,kind=StatefulSet,lag=3,rounds=2",
		"unobserved-stale:phase=0,round=2,kind=Pod,lag=1,restart=true,rounds=3",
		"crash:phase=1,round=2,after=0",
	} {
		p, err := check.Parse(s)
		require.NoError(t, err)
		require.Equal(t, s, p.String())
	}
	for s, msg := range map[string]string{
		"unobserved-stale:phase=1,kind=Pod,lag=1":                     "needs round=N",
		"unobserved-stale:phase=1,round=1,lag=1":                      "needs kind=KIND",
		"unobserved-stale:phase=1,round=1,kind=Pod,lag=1,except=Pod":  "except=KIND goes with kind=*",
		"unobserved-stale:phase=1,round=1,kind=*,lag=1,except=Widget": `unknown kind "Widget"`,
		"stale:phase=1,round=1,kind=StatefulSet,lag=1,except=Pod":     "except=KIND goes with kind=*",
		"stale:phase=1,round=1,kind=Pod,lag=1,rounds=4":               "rounds=4: from 1 to 3",
		"crash:phase=1,round=1,after=1,rounds=2":                      "rounds=N goes with a stale view",
	} {
		_, err := check.Parse(s)
		require.ErrorContains(t, err, msg, s)
	}
}
