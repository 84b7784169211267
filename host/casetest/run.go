package casetest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/memcluster"
)

// Outcome is the result of running one case.
type Outcome struct {
	File   string
	Name   string
	Passed bool
	// Failure is the first difference from the expectations, or the error
	// that stopped the run; empty when Passed.
	Failure string
	// Rounds are the reconcile rounds the run took, for verbose output.
	Rounds []Round
}

// Round is one pass over every subject object.
type Round struct {
	Number     int
	Reconciles []Reconcile
	// Changed says whether the round changed the cluster (or must be
	// retried after a conflict), so that another round followed.
	Changed bool
}

// Reconcile is one subject's reconcile within a round.
type Reconcile struct {
	// Key is the subject's key ("namespace/name" or "name").
	Key     string
	Actions []abi.Action
	Report  actions.Report
	// Err is the executor's error, if any; a conflict is retried in the
	// next round, any other error fails the case.
	Err error
}

// Run runs c against mod on a fresh in-memory cluster, as the package
// documentation describes, and checks its expectations. Each subject is
// reconciled by the controller the live host runs (controller.Reconcile):
// the module's namespaces, selector, mode, allowed capabilities and
// configuration apply as they would there. The case's config, when it has
// one, replaces mod.Config; mod.Name defaults to the manifest's name. log
// receives the host's records, as the live host logs them; nil discards them.
func Run(ctx context.Context, mod controller.Module, c Case, log *slog.Logger) Outcome {
	o := Outcome{File: c.File, Name: c.Name}
	if err := o.run(ctx, mod, c, log); err != nil {
		o.Failure = err.Error()
		return o
	}
	o.Passed = true
	return o
}

func (o *Outcome) run(ctx context.Context, mod controller.Module, c Case, log *slog.Logger) error {
	m := mod.Runtime.Manifest()
	if mod.Name == "" {
		mod.Name = m.Name
	}
	if c.Config != nil {
		mod.Config = c.Config
	}
	if c.Admit != nil {
		return o.runAdmission(ctx, mod, c, log)
	}
	// The rounds settle, then each step is applied and they settle again
	// (Session, steps.go): the one way through for `kubeplug check` too.
	sess, err := NewSession(mod, c, log)
	if err != nil {
		return err
	}
	if err := sess.Settle(ctx, 1, &o.Rounds); err != nil {
		return err
	}
	for i, st := range c.Steps {
		if err := ApplyStep(ctx, sess.Cluster, i, st); err != nil {
			return stepError(c, i, st, err)
		}
		if err := sess.Settle(ctx, len(o.Rounds)+1, &o.Rounds); err != nil {
			return fmt.Errorf("after step %d (line %d): %w", i+1, st.Line, err)
		}
	}
	acted := false
	for _, r := range o.Rounds {
		for _, rec := range r.Reconciles {
			acted = acted || len(rec.Actions) > 0
		}
	}
	return check(c.Expect, sess.Cluster, acted, o.Rounds)
}

// runRound reconciles every subject object once, in key order, and reports
// whether anything changed.
func runRound(ctx context.Context, n int, ctrl *controller.Controller, kind string, cluster *memcluster.Cluster) (Round, error) {
	round := Round{Number: n}
	writes, deletes, events := cluster.WriteCount(), len(cluster.VolumeDeletes()), len(cluster.Events())
	for _, k := range cluster.Keys(kind) {
		if err := ctx.Err(); err != nil {
			// SIGTERM, or kubeplug check's budget: a round of many
			// subjects stops between two of them, not after the last.
			return round, err
		}
		key := k.Name
		if k.Namespace != "" {
			key = k.Namespace + "/" + k.Name
		}
		out := ctrl.Reconcile(ctx, key)
		rec := Reconcile{Key: key, Actions: out.Actions, Report: out.Report, Err: out.Err}
		round.Reconciles = append(round.Reconciles, rec)
		switch {
		case out.Err == nil:
		case controller.IsTerminal(out.Err):
			// A refusal is recorded as a Warning event (ActionRefused)
			// that the case's expectations can check; the actions after it
			// were not run, as on a live cluster.
		case errors.Is(out.Err, actions.ErrConflict):
			// As on a live cluster: the subject is reconciled again,
			// on the state that caused the conflict.
			round.Changed = true
		default:
			// The live host would retry with backoff; a case is a fixed
			// state, so the retry would fail the same way. A failed call
			// already names the module and key.
			if out.Actions == nil {
				return round, out.Err
			}
			return round, fmt.Errorf("execute the actions for %s: %w", k, out.Err)
		}
	}
	round.Changed = round.Changed || cluster.WriteCount() != writes ||
		len(cluster.VolumeDeletes()) != deletes || len(cluster.Events()) != events
	return round, nil
}

// changes says what a round changed, for the convergence failure.
func changes(r Round) string {
	var parts []string
	for _, rec := range r.Reconciles {
		if len(rec.Actions) == 0 && rec.Err == nil {
			continue
		}
		types := make([]string, len(rec.Actions))
		for i, a := range rec.Actions {
			types[i] = a.Type + " " + actions.RefString(a.Target)
		}
		s := rec.Key + ": " + strings.Join(types, ", ")
		if rec.Err != nil {
			s += " (" + rec.Err.Error() + ")"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "changed the cluster"
	}
	return "acted: " + strings.Join(parts, "; ")
}

// csiDrivers returns the CSI drivers the case's PersistentVolumes name in
// spec.csi.driver or in the pv.kubernetes.io/migrated-to annotation, sorted:
// the cluster acts as the deleter for all of them.
func csiDrivers(objs []map[string]any) []string {
	var out []string
	for _, obj := range objs {
		if obj["kind"] != abi.KindPersistentVolume {
			continue
		}
		spec, _ := obj["spec"].(map[string]any)
		csi, _ := spec["csi"].(map[string]any)
		meta, _ := obj["metadata"].(map[string]any)
		annotations, _ := meta["annotations"].(map[string]any)
		for _, v := range []any{csi["driver"], annotations[actions.AnnMigratedTo]} {
			if d, _ := v.(string); d != "" && !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	slices.Sort(out)
	return out
}
