package retention

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// Writers as the report names them.
const (
	byHost = "kubeplug"
	byKCM  = "kube-controller-manager"
)

// hostWrite is one owner-reference write the host made, as its Normal
// OwnerReferencesUpdated event on the claim tells: the event's message
// carries the merge patch, whose preconditions are the claim's UID and the
// resourceVersion the write was made on.
type hostWrite struct {
	ns, claim, uid, prevRV string
}

func (w hostWrite) key() string { return w.ns + "/" + w.uid + "@" + w.prevRV }

// hostWrites reads the host's OwnerReferencesUpdated events in the given
// namespaces; n counts them, repeats included.
func hostWrites(t testing.TB, namespaces map[string]bool) (writes []hostWrite, n int, err error) {
	t.Helper()
	list, err := client(t).CoreV1().Events("").List(context.Background(), metav1.ListOptions{FieldSelector: "reason=OwnerReferencesUpdated"})
	if err != nil {
		return nil, 0, err
	}
	for _, e := range list.Items {
		if !namespaces[e.Namespace] || e.Source.Component != "kubeplug.dev/retention" || e.InvolvedObject.Kind != "PersistentVolumeClaim" {
			continue
		}
		n += int(max(e.Count, 1))
		_, patch, ok := strings.Cut(e.Message, "merge patch ")
		if !ok {
			return nil, 0, fmt.Errorf("event %s/%s: no merge patch in %q", e.Namespace, e.Name, e.Message)
		}
		var body struct {
			Metadata struct {
				UID             string `json:"uid"`
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(patch), &body); err != nil {
			return nil, 0, fmt.Errorf("event %s/%s: %w in %q", e.Namespace, e.Name, err, patch)
		}
		writes = append(writes, hostWrite{ns: e.Namespace, claim: e.InvolvedObject.Name, uid: body.Metadata.UID, prevRV: body.Metadata.ResourceVersion})
	}
	return writes, n, nil
}

// report gathers the scenarios' results.
type report struct {
	mu      sync.Mutex
	results []*result
}

func (r *report) add(res *result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results = append(r.results, res)
}

// attribute says who made each recorded change, from the host's events,
// and checks it three ways: the field managers a change updated agree;
// the host's executed updateOwnerReferences actions, from its /metrics,
// are exactly the changes attributed to it (no write outside the recorded
// scenarios, none missed); and they are no more than the scenarios imply.
// It logs the numbers per scenario.
func (r *report) attribute(t *testing.T, h *testenv.Host) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	// The scenarios' namespaces: with -count above 1, earlier hosts'
	// events are in earlier namespaces.
	namespaces := map[string]bool{}
	for _, res := range r.results {
		namespaces[res.ns] = true
	}
	var executed, conflicts float64
	var writes []hostWrite
	testenv.Eventually(t, testenv.Timeout, "an OwnerReferencesUpdated event for every write the host executed", func() (bool, error) {
		m, err := h.Scrape()
		if err != nil {
			return false, err
		}
		executed = m.Sum("kubeplug_actions_total", "module", "retention", "type", "updateOwnerReferences", "result", "executed")
		conflicts = m.Sum("kubeplug_actions_total", "module", "retention", "type", "updateOwnerReferences", "result", "conflict")
		var n int
		writes, n, err = hostWrites(t, namespaces)
		if err != nil {
			return false, err
		}
		if float64(n) > executed {
			return false, fmt.Errorf("%d OwnerReferencesUpdated events, but /metrics counts %v executed updateOwnerReferences", n, executed)
		}
		return float64(n) == executed, nil
	})
	byKey := map[string]hostWrite{}
	for _, w := range writes {
		if _, dup := byKey[w.key()]; dup {
			t.Errorf("two host writes on claim %s/%s at resourceVersion %s", w.ns, w.claim, w.prevRV)
		}
		byKey[w.key()] = w
	}

	slices.SortFunc(r.results, func(a, b *result) int {
		return strings.Compare(a.mode.String()+a.scenario+a.policy.String(), b.mode.String()+b.scenario+b.policy.String())
	})
	var total, host, implied int
	var lines []string
	for _, res := range r.results {
		var n, hn int
		var notes []string
		for _, c := range res.claims {
			for i := range c.changes {
				ch := &c.changes[i]
				ch.writer = byKCM
				if _, ok := byKey[res.ns+"/"+string(c.uid)+"@"+ch.prevRV]; ok {
					ch.writer = byHost
					delete(byKey, res.ns+"/"+string(c.uid)+"@"+ch.prevRV)
					hn++
				}
				n++
				switch {
				case slices.Contains(ch.managers, byHost) && ch.writer != byHost:
					t.Errorf("%s %s %s: claim %s rv %s updated field manager kubeplug, but the host reports no write there", res.mode, res.scenario, res.policy, c.name, ch.rv)
				case slices.Contains(ch.managers, kcmManager) && ch.writer == byHost:
					t.Errorf("%s %s %s: claim %s rv %s updated field manager %s, but the host reports that write", res.mode, res.scenario, res.policy, c.name, ch.rv, kcmManager)
				}
			}
			if res.racy && c.name == claimName(1) {
				notes = append(notes, fmt.Sprintf("%s deleted: %v", c.name, c.deleted))
			}
		}
		total += n
		host += hn
		implied += res.implied
		lines = append(lines, fmt.Sprintf("%-8s %-28s %-14s %3d %5d %4d  %s", res.mode, res.scenario, res.policy, n, hn, n-hn, strings.Join(notes, "; ")))
	}
	t.Logf("owner-reference changes per scenario (whenDeleted/whenScaled), by writer:\n%-8s %-28s %-14s %3s %5s %4s\n%s\n%-52s %3d %5d %4d\nhost /metrics: %v updateOwnerReferences executed, %v conflicted (the claim had changed since the host's snapshot; requeued)",
		"mode", "scenario", "policy", "all", "host", "kcm", strings.Join(lines, "\n"), "total", total, host, total-host, executed, conflicts)
	t.Logf("the scenarios imply at most %d owner-reference changes in all", implied)
	for _, res := range r.results {
		for _, c := range res.claims {
			if len(c.changes) > 0 {
				t.Logf("%s %s %s %s:\n%s", res.mode, res.scenario, res.policy, c.name, describe(c))
			}
		}
	}

	for _, w := range byKey {
		t.Errorf("host write on claim %s/%s at resourceVersion %s is not among the recorded changes: made outside a scenario, or not seen", w.ns, w.claim, w.prevRV)
	}
	if float64(host) != executed {
		t.Errorf("/metrics counts %v executed updateOwnerReferences, the recorded changes attribute %d to the host", executed, host)
	}
	// Both implement KEP-1847 and race to make the same writes; the host,
	// which reacts to the claim's creation, usually wins. What matters is
	// that it never writes more than the scenarios need.
	if host > implied {
		t.Errorf("the host made %d owner-reference changes; the scenarios imply at most %d in all", host, implied)
	}
}
