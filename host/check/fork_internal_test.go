package check

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/casetest"
	"github.com/kubeplug/kubeplug/host/controller"
)

// remembers deletes the claims of condemned replicas and lets their
// finalizer go a reconcile later if its memory says it deleted them: a
// module whose instance matters, so that a run resumed where it was not
// fresh would differ from one replayed.
type remembers struct{ deleted map[string]bool }

func (g *remembers) Manifest() abi.Manifest {
	return abi.Manifest{Name: "remembers", Version: "0.0.1", ABIVersion: abi.Current.String(), Subject: abi.SubjectStatefulSet,
		Hooks: []string{abi.HookReconcile}, Capabilities: []abi.Capability{
			{Action: abi.ActionAddFinalizer, Resources: []string{"persistentvolumeclaims"}},
			{Action: abi.ActionRemoveFinalizer, Resources: []string{"persistentvolumeclaims"}},
			{Action: abi.ActionDeleteObject, Resources: []string{"persistentvolumeclaims"}},
		}}
}

func (g *remembers) Reconcile(_ context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
	set := req.StatefulSet.Set
	res := &abi.Result{}
	for _, c := range req.StatefulSet.Claims {
		ref := abi.ObjectRef{Kind: abi.KindPersistentVolumeClaim, Namespace: c.Metadata.Namespace, Name: c.Metadata.Name, UID: c.Metadata.UID}
		held := strings.Contains(strings.Join(c.Metadata.Finalizers, ","), "example.com/backup")
		condemned := c.Metadata.Name >= "data-web-"+string(rune('0'+set.Spec.Replicas))
		switch {
		case c.Metadata.DeletionTimestamp != "" && held && g.deleted[c.Metadata.UID]:
			res.Actions = append(res.Actions, abi.Action{Type: abi.ActionRemoveFinalizer, Target: ref, Finalizer: "example.com/backup"})
		case c.Metadata.DeletionTimestamp == "" && condemned:
			g.deleted[c.Metadata.UID] = true
			res.Actions = append(res.Actions, abi.Action{Type: abi.ActionDeleteObject, Target: ref})
		case c.Metadata.DeletionTimestamp == "" && !held:
			res.Actions = append(res.Actions, abi.Action{Type: abi.ActionAddFinalizer, Target: ref, Finalizer: "example.com/backup"})
		}
	}
	return res, nil
}

func (g *remembers) Close(context.Context) error { return nil }

// A crash or a stale round on a restarted host resumes from the state the
// unperturbed run reached there; every such run comes to what replaying
// it from the start comes to.
func TestResumedRunsAreReplayedRuns(t *testing.T) {
	files, err := casetest.LoadPaths([]string{"testdata/crashforget-boundary.yaml"})
	require.NoError(t, err)
	c := files[0].Cases[0]
	fresh := func(context.Context) (controller.Guest, func(), error) {
		return &remembers{deleted: map[string]bool{}}, func() {}, nil
	}
	newRunner := func(replayAll bool) *runner {
		r := &runner{mod: controller.Module{Runtime: &remembers{deleted: map[string]bool{}}}, c: c, opts: Options{NewGuest: fresh},
			seen: map[string]bool{}, found: map[string]bool{}, hashes: map[kindOf]string{}, unobserved: map[int]*result{}, replayAll: replayAll}
		base, err := r.run(context.Background(), Perturbation{Class: "none"})
		require.NoError(t, err)
		r.base = base
		return r
	}
	resumed, replayed := newRunner(false), newRunner(true)
	n := 0
	for _, p := range resumed.plan() {
		if _, ok := resumed.forkOf(p); !ok {
			continue
		}
		n++
		a, errA := resumed.run(context.Background(), p)
		b, errB := replayed.run(context.Background(), p)
		require.Equal(t, errB, errA, p.String())
		if errA != nil {
			continue
		}
		require.Equal(t, b.end, a.end, p.String())
		require.Equal(t, b.fired, a.fired, p.String())
		require.Equal(t, b.loop, a.loop, p.String())
		// What the prefix deleted is the unperturbed run's too: the
		// oracles hold both runs to the same.
		require.Equal(t, replayed.compare(b), resumed.compare(a), p.String())
	}
	require.Greater(t, n, 10, "crashes and restarted stale rounds were resumed")
}
