package casetest

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kubeplug/kubeplug/host/actions"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/memcluster"
)

// check compares the cluster after the run with the expectations and returns
// the first difference.
func check(e Expect, c *memcluster.Cluster, acted bool, rounds []Round) error {
	for i, want := range e.Present {
		kind, _ := want["kind"].(string)
		meta, _ := want["metadata"].(map[string]any)
		ns, _ := meta["namespace"].(string)
		name, _ := meta["name"].(string)
		what := fmt.Sprintf("present[%d] %s", i, ObjectKey{Kind: kind, Namespace: ns, Name: name})
		got, ok := c.Get(kind, ns, name)
		if !ok {
			return fmt.Errorf("%s: not found", what)
		}
		if d := diff("", want, got, true); d != "" {
			return errors.New(what + ": " + d)
		}
	}
	for i, k := range e.Absent {
		if got, ok := c.Get(k.Kind, k.Namespace, k.Name); ok {
			msg := fmt.Sprintf("absent[%d] %s: still exists", i, k)
			if meta, _ := got["metadata"].(map[string]any); meta["deletionTimestamp"] != nil {
				msg += fmt.Sprintf(" (being deleted, held by finalizers %s)", render(meta["finalizers"]))
			}
			return errors.New(msg)
		}
	}
	if e.VolumeDeletes != nil {
		var got []any
		for _, d := range c.VolumeDeletes() {
			got = append(got, map[string]any{"driver": d.Driver, "volumeHandle": d.VolumeHandle})
		}
		if d := diffList("volumeDeletes", toAny(e.VolumeDeletes), got); d != "" {
			return fmt.Errorf("%s; deleted: %s", d, render(orEmpty(got)))
		}
	}
	if e.Events != nil {
		var got []any
		for _, ev := range c.Events() {
			if controller.IsWriteRecord(ev.Type, ev.Message) {
				continue
			}
			got = append(got, map[string]any{
				"type":    ev.Type,
				"reason":  ev.Reason,
				"message": ev.Message,
				"involvedObject": map[string]any{
					"kind":      ev.InvolvedObject.Kind,
					"namespace": ev.InvolvedObject.Namespace,
					"name":      ev.InvolvedObject.Name,
				},
			})
		}
		if d := diffList("events", toAny(e.Events), got); d != "" {
			return fmt.Errorf("%s; recorded: %s", d, render(orEmpty(got)))
		}
	}
	if e.NoActions && acted {
		return fmt.Errorf("noActions: the module returned actions: %s", actionsTaken(rounds))
	}
	return nil
}

func toAny(ms []map[string]any) []any {
	out := make([]any, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

func orEmpty(l []any) []any {
	if l == nil {
		return []any{}
	}
	return l
}

// actionsTaken lists the actions of every round, for the noActions failure.
func actionsTaken(rounds []Round) string {
	var parts []string
	for _, r := range rounds {
		for _, rec := range r.Reconciles {
			for _, a := range rec.Actions {
				parts = append(parts, fmt.Sprintf("round %d %s: %s %s", r.Number, rec.Key, a.Type, actions.RefString(a.Target)))
			}
		}
	}
	return strings.Join(parts, "; ")
}
