package check

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The oracles a perturbed run is held to, against the unperturbed run.
const (
	// OracleDeleted: an object the unperturbed run keeps was deleted.
	OracleDeleted = "object deleted"
	// OracleVolumeDeleted: a backing volume the unperturbed run keeps was
	// deleted through CSI.
	OracleVolumeDeleted = "volume deleted"
	// OracleLeak: a PersistentVolume is gone and its volume is still in
	// the driver.
	OracleLeak = "volume leaked"
	// OracleShrink: a storage request was lowered where the unperturbed
	// run does not lower it (from and to the same values).
	OracleShrink = "request lowered"
	// OracleConvergence: the run ended in another state than the
	// unperturbed run.
	OracleConvergence = "did not converge"
	// OracleLoop: the host never stopped writing.
	OracleLoop = "write loop"
	// OracleError: the perturbed run could not be carried out.
	OracleError = "error"
)

// Violation is one oracle a perturbed run broke: a minimal reproduction.
type Violation struct {
	File, Case string
	Oracle     string
	// Object names what the oracle is about (the deleted object, the
	// leaked volume...); Detail says what happened.
	Object, Detail string
	Perturbation   Perturbation
	// Step is the step whose rounds the perturbation hit; Action the
	// write that broke the oracle, when one did.
	Step, Action string
}

// compare holds a perturbed run to the unperturbed one.
func (r *runner) compare(res *result) []Violation {
	b := r.base
	var out []Violation
	for _, uid := range sortedKeys(res.deleted) {
		if _, kept := b.deleted[uid]; kept {
			continue
		}
		if _, existed := b.alive[uid]; !existed {
			continue // created in this run only
		}
		out = append(out, Violation{Oracle: OracleDeleted, Object: res.alive[uid],
			Detail: fmt.Sprintf("%s (uid %s) was deleted; the unperturbed run keeps it", res.alive[uid], uid), Action: res.deleted[uid]})
	}
	for _, v := range sortedKeys(res.volumes) {
		if _, ok := b.volumes[v]; !ok {
			out = append(out, Violation{Oracle: OracleVolumeDeleted, Object: v,
				Detail: fmt.Sprintf("backing volume %s was deleted through CSI; the unperturbed run keeps it", v), Action: res.volumes[v]})
		}
	}
	for _, v := range sortedKeys(res.leaks) {
		if _, ok := b.leaks[v]; !ok {
			out = append(out, Violation{Oracle: OracleLeak, Object: v,
				Detail: fmt.Sprintf("%s is gone and its backing volume %s was never deleted", res.leaks[v], v)})
		}
	}
	for _, k := range sortedKeys(res.shrinks) {
		if _, same := b.shrinks[k]; same {
			continue
		}
		l := res.shrinks[k]
		what := "no capacity"
		if l.capacity != "" {
			what = "capacity " + l.capacity
			if c, f := resource.MustParse(l.capacity), resource.MustParse(l.from); c.Cmp(f) < 0 {
				what += ": the expansion to " + l.from + " in flight is cancelled"
			}
		}
		out = append(out, Violation{Oracle: OracleShrink, Object: l.claim, Action: l.by,
			Detail: fmt.Sprintf("%s: request lowered from %s to %s (%s); the unperturbed run never lowers it so", l.claim, l.from, l.to, what)})
	}
	if res.loop != "" {
		out = append(out, Violation{Oracle: OracleLoop, Object: "", Detail: res.loop})
		return out
	}
	if d := diffStates(b.end, res.end); d != "" {
		obj, _, _ := strings.Cut(d, ":")
		// An object deleted that should not have been is reported as
		// that, not again as a different end state.
		if !slices.ContainsFunc(out, func(v Violation) bool { return v.Object == obj }) {
			out = append(out, Violation{Oracle: OracleConvergence, Object: obj, Detail: d})
		}
	}
	return out
}

// diffStates returns the first difference between the unperturbed end
// state want and got, or "".
func diffStates(want, got map[string]map[string]any) string {
	keys := sortedKeys(want)
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		w, inWant := want[k]
		g, inGot := got[k]
		switch {
		case !inGot:
			return k + ": missing; the unperturbed run ends with it"
		case !inWant:
			msg := k + ": exists; the unperturbed run ends without it"
			if deleting(g) {
				msg += fmt.Sprintf(" (this one is being deleted, held by finalizers %v)", meta(g)["finalizers"])
			}
			return msg
		}
		if path, a, b := firstDiff("", w, g); path != "" {
			return fmt.Sprintf("%s: %s is %s; the unperturbed run ends with %s", k, path, render(b), render(a))
		}
	}
	return ""
}

// firstDiff returns the first path where a and b differ, with both values.
func firstDiff(path string, a, b any) (string, any, any) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := sortedKeys(am)
		for k := range bm {
			if _, ok := am[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			if p, x, y := firstDiff(path+"."+k, am[k], bm[k]); p != "" {
				return p, x, y
			}
		}
		return "", nil, nil
	}
	if path == ".metadata.finalizers" {
		// A set (listType=set): the order a run added them in is not
		// part of the state.
		a, b = sortedList(a), sortedList(b)
	}
	if !reflect.DeepEqual(a, b) {
		if path == "" {
			path = "."
		}
		return strings.TrimPrefix(path, "."), a, b
	}
	return "", nil, nil
}

// sortedList returns a copy of v sorted, when v is a list of strings, else
// v.
func sortedList(v any) any {
	l, ok := v.([]any)
	if !ok {
		return v
	}
	out := make([]string, 0, len(l))
	for _, e := range l {
		s, ok := e.(string)
		if !ok {
			return v
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func render(v any) string {
	if v == nil {
		return "absent"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
