package controller

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/metrics"
)

// Comparison is what Compare found between two modules' results for one
// input.
type Comparison struct {
	// Agree is true when the results call for the same thing (see Compare).
	Agree bool
	// Diff says how they differ, one line per difference; empty when they
	// agree.
	Diff []string
}

// Compare compares want, the result of the module in charge, with got, the
// result of a module in shadow beside it, for the same input. They agree
// when they call for the same changes, which is what the host would do
// differently if got replaced want:
//   - the same actions, each compared whole (type, target with its UID,
//     payload), except that an event's message is left out: two versions of
//     a module may word a warning differently and still warn about the same
//     thing, on the same object, for the same reason;
//   - in any order across objects, since the executor's writes to different
//     objects are independent; actions on one object keep their order, as
//     the later may depend on the earlier (add a finalizer, then remove it);
//   - both asking for a requeue or neither; the delay is a timing hint, not
//     a decision, and is not compared.
func Compare(want, got *abi.Result) Comparison {
	if want == nil {
		want = &abi.Result{}
	}
	if got == nil {
		got = &abi.Result{}
	}
	w, g := normalise(want.Actions), normalise(got.Actions)
	var diff []string
	for _, a := range minus(w, g) {
		diff = append(diff, "only in the module compared with: "+a)
	}
	for _, a := range minus(g, w) {
		diff = append(diff, "only in the shadow: "+a)
	}
	if len(diff) == 0 && !slices.Equal(w, g) {
		diff = append(diff, "the same actions, in another order on one object")
	}
	if (want.RequeueAfterMillis > 0) != (got.RequeueAfterMillis > 0) {
		diff = append(diff, fmt.Sprintf("requeue: %s vs %s in the shadow", requeue(want), requeue(got)))
	}
	return Comparison{Agree: len(diff) == 0, Diff: bounded(diff)}
}

// Bounds of what a comparison puts in a log line: the actions are the
// modules' to choose, and a module in shadow is no more trusted than any.
const (
	maxDiffLines = 10
	maxLineBytes = 512
	maxListBytes = 4096
)

// bounded cuts diff to maxDiffLines lines of at most maxLineBytes.
func bounded(diff []string) []string {
	out := make([]string, 0, min(len(diff), maxDiffLines+1))
	for i, d := range diff {
		if i == maxDiffLines {
			out = append(out, fmt.Sprintf("and %d more", len(diff)-i))
			break
		}
		out = append(out, clip(d, maxLineBytes))
	}
	return out
}

// clip returns s, valid UTF-8, at most n bytes long, marked when cut.
func clip(s string, n int) string {
	if c := metrics.Clip(s, n); len(c) < len(s) {
		return c + "…"
	}
	return s
}

func requeue(r *abi.Result) string {
	if r.RequeueAfterMillis > 0 {
		return fmt.Sprintf("after %dms", r.RequeueAfterMillis)
	}
	return "none"
}

// normalise returns each action as a canonical string, sorted by target and
// stable within one target.
func normalise(actions []abi.Action) []string {
	type keyed struct{ target, text string }
	ks := make([]keyed, 0, len(actions))
	for _, a := range actions {
		if a.Event != nil {
			e := *a.Event
			e.Message = ""
			a.Event = &e
		}
		t := a.Target
		ks = append(ks, keyed{target: t.Kind + " " + t.Namespace + "/" + t.Name, text: describe(a)})
	}
	slices.SortStableFunc(ks, func(x, y keyed) int { return cmp.Compare(x.target, y.target) })
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.text
	}
	return out
}

// describe is an action in one line: its type, target and payload.
func describe(a abi.Action) string {
	t, typ := a.Target, a.Type
	a.Target = abi.ObjectRef{UID: t.UID}
	a.Type = ""
	payload, err := json.Marshal(a)
	if err != nil {
		payload = []byte(fmt.Sprintf("%+v", a))
	}
	name := t.Name
	if t.Namespace != "" {
		name = t.Namespace + "/" + name
	}
	return fmt.Sprintf("%s %s %s %s", typ, t.Kind, name, payload)
}

// minus returns the elements of a not matched one-to-one in b.
func minus(a, b []string) []string {
	left := map[string]int{}
	for _, s := range b {
		left[s]++
	}
	var out []string
	for _, s := range a {
		if left[s] > 0 {
			left[s]--
			continue
		}
		out = append(out, s)
	}
	return out
}

// actionList is actions as JSON for a log line.
func actionList(actions []abi.Action) string {
	if len(actions) == 0 {
		return "[]"
	}
	b, err := json.Marshal(actions)
	if err != nil {
		return fmt.Sprintf("%d actions", len(actions))
	}
	return clip(string(b), maxListBytes)
}
