package retention

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kubeplug/kubeplug/e2e/internal/setctl"
)

// result is what one scenario recorded, kept for the report.
type result struct {
	scenario string
	mode     mode
	policy   setctl.Policy
	ns       string
	claims   []*claimHistory
	// racy: the scenario let a race decide a claim's fate.
	racy bool
	// implied is the most owner-reference changes the scenario implies,
	// over all its claims.
	implied int
}

// check stops the recorder and checks every claim's history: it never
// returned to references it had left (nobody undid anybody's write), every
// value is one the policy gives in a phase the scenario goes through, and
// there were at most as many changes as the phases imply.
func (e *env) check(sc scenario) *result {
	e.t.Helper()
	e.rec.stop()
	hs, err := e.rec.histories()
	if err != nil {
		e.t.Fatal(err)
	}
	seen := map[string]bool{}
	implied := 0
	for _, h := range hs {
		var ord int32 = -1
		for o := range int32(2) {
			if h.name == claimName(o) {
				ord = o
			}
		}
		if ord < 0 {
			e.t.Errorf("claim %s/%s is not one of the set's", e.ns, h.name)
			continue
		}
		phases := sc.phases[ord]
		if seen[h.name] {
			if phases = sc.reborn[ord]; phases == nil {
				phases = []phase{inRange}
			}
		}
		seen[h.name] = true
		bound, probs := problems(h, e.policy, ord, phases)
		implied += bound
		for _, p := range probs {
			e.t.Errorf("claim %s/%s (uid %s): %s\n%s", e.ns, h.name, h.uid, p, describe(h))
		}
	}
	want := sc.want(e.policy)
	racy := slices.Contains(want[:], either)
	return &result{scenario: sc.name, mode: e.mode, policy: e.policy, ns: e.ns, claims: hs, racy: racy, implied: implied}
}

func claimName(ordinal int32) string { return setctl.ClaimName(template, setName, ordinal) }

// problems returns the most changes the phases imply for one claim and
// lists what is wrong with its history. The shapes the phases give, in
// order and starting from none, are the values it may take; it may take
// one again only as often as that sequence does (an orphaning deletion
// takes a claim back to none), else somebody undid somebody's write.
func problems(h *claimHistory, p setctl.Policy, ordinal int32, phases []phase) (bound int, out []string) {
	legal := map[string]int{"none": 1}
	shapes := []string{"none"}
	for _, ph := range phases {
		if s := target(p, ordinal, ph); s != shapes[len(shapes)-1] {
			shapes = append(shapes, s)
			legal[s]++
		}
	}
	bound = len(shapes) - 1

	taken := map[string]int{}
	for i, v := range h.values() {
		shape, key := refsShape(v), refsKey(v)
		taken[key]++
		switch {
		case legal[shape] == 0:
			out = append(out, fmt.Sprintf("references %s, which policy %s never gives it here (allowed: %s)",
				shape, p, strings.Join(shapes, ", ")))
		case taken[key] > legal[shape]:
			out = append(out, fmt.Sprintf("change %d took its references back to %s, which it had left: a write was undone (the scenario goes %s)",
				i, shape, strings.Join(shapes, " -> ")))
		}
	}
	if len(h.changes) > bound {
		out = append(out, fmt.Sprintf("%d owner-reference changes; the scenario implies at most %d (%s)",
			len(h.changes), bound, strings.Join(shapes, " -> ")))
	}
	return bound, out
}

// describe prints a claim's history, one line per change.
func describe(h *claimHistory) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  created with %s\n", refsShape(h.initial))
	for _, c := range h.changes {
		w := c.writer
		if w == "" {
			w = "?"
		}
		m := "none updated"
		if len(c.managers) > 0 {
			m = strings.Join(c.managers, ",")
		}
		fmt.Fprintf(&b, "  rv %s -> %s: %s -> %s (by %s; field managers: %s)\n", c.prevRV, c.rv, refsShape(c.from), refsShape(c.to), w, m)
	}
	if h.deleted {
		b.WriteString("  deleted\n")
	}
	return b.String()
}
