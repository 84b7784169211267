package faults

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// The hosts serve the modules' admit hooks to kube-apiserver as an
// operator installs them: each host slot has a webhook port of its own,
// fixed for the run so that the registration outlives the host's restarts,
// and a serving certificate signed by a CA the run makes; each slot is
// registered from `kubeplug webhook-config`'s output, under a name of its
// own (two hosts cannot share one address without a Service in front, which
// nothing here provides). Both hosts of a leader election serve: the
// webhook does not wait for the Lease, so kube-apiserver calls both, one
// configuration after the other, and the second finds the claim already
// rewritten. A host that is down costs a refused connection; one that does
// not answer, the webhook's timeout.

// admission is the admission: block of the entries with an admit hook:
// Ignore, as deploy/overlays/webhook ships templateupdate (a claim the hook
// did not rewrite is created from the set's template, and the module's
// reconcile brings it to the VolumeClaimUpdate's), and the shortest timeout
// that leaves the module its call (the host answers a margin before it).
const admission = "  admission: {failurePolicy: Ignore, timeout: 2s}\n"

// webhooks gives each host slot its address, makes the run's CA and serving
// certificate, and writes the hosts' configuration where webhook-config
// reads it. It registers nothing: see registerWebhooks.
func (r *run) webhooks(slots int) {
	r.certDir, r.caFile = testenv.ServingCert(r.t)
	for range slots {
		r.webhookAddrs = append(r.webhookAddrs, testenv.FreeAddr(r.t))
	}
	r.configPath = filepath.Join(r.t.TempDir(), "host.yaml")
	if err := os.WriteFile(r.configPath, []byte(r.config), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

// webhookArgs are the flags of kubeplug run that serve slot i's webhook.
func (r *run) webhookArgs(i int) []string {
	return []string{"--webhook-addr", r.webhookAddrs[i], "--webhook-cert-dir", r.certDir}
}

// registerWebhooks registers each slot's webhook configurations, removed
// when the run ends.
func (r *run) registerWebhooks() {
	start := time.Now()
	// The hosts' compiled modules: webhook-config loads every module as
	// kubeplug run does, which without them compiles each again.
	cache, err := testenv.ModuleCache()
	if err != nil {
		r.t.Fatal(err)
	}
	var names []string
	for i, addr := range r.webhookAddrs {
		name := fmt.Sprintf("kubeplug-%s-%c", r.ns, 'a'+i)
		hooks := testenv.RegisterWebhooks(r.t, r.w.c, r.configPath, addr, r.caFile, "--name", name, "--cache-dir", cache)
		if len(hooks.Mutating) != 1 {
			r.t.Fatalf("webhook-config printed %d mutating configurations, want one:\n%s", len(hooks.Mutating), hooks.Printed)
		}
		names = append(names, fmt.Sprintf("%s at %s", hooks.Mutating[0], addr))
	}
	r.logf("registered %s in %v", strings.Join(names, ", "), time.Since(start).Round(time.Millisecond))
}

// awaitWebhooks waits until kube-apiserver calls every host's webhook: a
// dry-run claim of the first set comes back with its VolumeClaimUpdate's
// label, and every host has answered an admission review.
func (r *run) awaitWebhooks() {
	start := time.Now()
	set := r.s.sets[0].name
	probe := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", template, set, 9), Labels: map[string]string{"app": set}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(class),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	testenv.Eventually(r.t, testenv.Timeout, "kube-apiserver to call every host's webhook", func() (bool, error) {
		got, err := r.w.c.CoreV1().PersistentVolumeClaims(r.ns).Create(r.ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil || got.Labels["tier"] != "gold" {
			return false, nil
		}
		for _, h := range r.hosts {
			m, err := h.Scrape()
			if err != nil || m.Sum("kubeplug_hook_calls_total", "hook", "admit") == 0 {
				return false, nil
			}
		}
		return true, nil
	})
	r.logf("webhooks of %d hosts registered and called in %v", len(r.hosts), time.Since(start).Round(time.Millisecond))
}

// admitCalls tallies the admission reviews the hosts answered, by result,
// from their metrics: a host's counters die with it, so each is read every
// second, right before the campaign kills the host, and at the end; what a
// host answered in its last second before it exited by itself (a lost
// Lease) is not counted.
type admitCalls struct {
	total map[string]float64   // results of the hosts that ended
	last  []map[string]float64 // the latest reading of each slot's host
	read  []time.Time
}

// tally reads slot i's host's admit calls if a second has passed since the
// last reading, or now when force.
func (r *run) tally(i int, force bool) {
	a := &r.admits
	if !force && time.Since(a.read[i]) < time.Second {
		return
	}
	a.read[i] = time.Now()
	m, err := r.hosts[i].Scrape()
	if err != nil {
		return // down or not yet up: the last reading stands
	}
	f, ok := m["kubeplug_hook_calls_total"]
	if !ok {
		return
	}
	now := map[string]float64{}
	for _, s := range f.Metric {
		var hook, result string
		for _, l := range s.Label {
			switch l.GetName() {
			case "hook":
				hook = l.GetValue()
			case "result":
				result = l.GetValue()
			}
		}
		if hook == "admit" {
			now[result] += s.GetCounter().GetValue()
		}
	}
	a.last[i] = now
}

// ended folds slot i's last reading into the totals: its host is gone.
func (r *run) ended(i int) {
	a := &r.admits
	for k, v := range a.last[i] {
		a.total[k] += v
	}
	a.last[i] = nil
	a.read[i] = time.Time{}
}

// admitResults are the admission reviews the run's hosts answered, by
// result, when the run ends.
func (r *run) admitResults() map[string]float64 {
	for i, h := range r.hosts {
		if !h.Exited() {
			r.tally(i, true)
		}
		r.ended(i)
	}
	return maps.Clone(r.admits.total)
}

// admitSummary is how the figures print admit results: total, then each
// result.
func admitSummary(m map[string]float64) string {
	var total float64
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		total += m[k]
		parts = append(parts, fmt.Sprintf("%s %.0f", k, m[k]))
	}
	if len(parts) == 0 {
		return "0"
	}
	return fmt.Sprintf("%.0f (%s)", total, strings.Join(parts, ", "))
}
