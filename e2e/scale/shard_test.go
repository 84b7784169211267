package scale

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// shardModules are what each shard runs: the statefulset modules.
// PersistentVolumes are cluster-scoped and carry no shard's label, so
// reclaim belongs in one host only (see config.Shard).
var shardModules = []string{"guests/retention", "examples/warnretain"}

// TestShards runs two hosts on one control plane, each with its own label
// selector (shard: in host.yaml) and its own leader Lease: each caches and
// reconciles its own shard's sets only, and every write a scale-down calls
// for is made once, by the host of the set's shard.
func TestShards(t *testing.T) {
	ctx := context.Background()
	client := loader(t)
	const sets = 20
	shards := []string{"a", "b"}
	fleets := map[string]Fleet{}
	for _, s := range shards {
		f := Fleet{Run: "shard-" + s, Sets: sets, PerNamespace: 10, Driver: driver,
			Labels: map[string]string{"kubeplug.dev/shard": s}}
		if _, err := f.Load(ctx, client, 8); err != nil {
			t.Fatal(err)
		}
		fleets[s] = f
	}

	hosts := map[string]*testenv.Host{}
	for _, s := range shards {
		var cfg strings.Builder
		fmt.Fprintf(&cfg, "shard:\n  labelSelector: kubeplug.dev/shard=%s\nresync: 0s\nmodules:\n", s)
		for _, dir := range shardModules {
			wasm, err := testenv.Guest(dir)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&cfg, "- path: %s\n%s", wasm, testenv.Allow[dir])
		}
		h := testenv.StartHost(t, testenv.HostOptions{Name: "shard-" + s, Kubeconfig: cp.Kubeconfig, Config: cfg.String(),
			Args: []string{"--leader-elect", "--leader-elect-namespace", "default", "--leader-elect-name", "kubeplug-shard-" + s}})
		h.WaitReady(t)
		hosts[s] = h
	}

	// Both lead at once: each holds its own shard's Lease.
	for _, s := range shards {
		h := hosts[s]
		poll(t, 200*time.Millisecond, testenv.Timeout, h.Name+" leading and converged", func() (bool, error) {
			m, err := h.Scrape()
			if err != nil {
				return false, err
			}
			n := m.Sum("kubeplug_reconciles_total", "module", "retention")
			if n >= 2*sets {
				return false, fmt.Errorf("%s reconciled %v sets, more than its shard's %d: it sees the other shard", h.Name, n, sets)
			}
			return m.Sum("kubeplug_leader") == 1 && n >= sets && m.Sum("kubeplug_queue_depth") == 0, nil
		})
		lease, err := client.CoordinationV1().Leases("default").Get(ctx, "kubeplug-shard-"+s, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			t.Fatalf("lease of shard %s has no holder", s)
		}
	}

	// Scale every set of both shards down by one: each condemned claim is
	// handed to its pod by exactly one write, of its own shard's host.
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, Replicas-1))
	for _, s := range shards {
		f := fleets[s]
		for i := range f.Sets {
			ns, name := f.Set(i)
			if _, err := client.AppsV1().StatefulSets(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range shards {
		f := fleets[s]
		poll(t, 200*time.Millisecond, testenv.Timeout, "shard "+s+"'s condemned claims owned by their pods", func() (bool, error) {
			for _, ns := range f.Namespaces() {
				list, err := client.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					return false, err
				}
				for i := range list.Items {
					c := &list.Items[i]
					if strings.HasSuffix(c.Name, fmt.Sprintf("-%d", Replicas-1)) != ownedByPod(c) {
						return false, nil
					}
				}
			}
			return true, nil
		})
	}
	for _, s := range shards {
		m, err := hosts[s].Scrape()
		if err != nil {
			t.Fatal(err)
		}
		written := m.Sum("kubeplug_actions_total", "module", "retention", "type", "updateOwnerReferences", "result", "executed")
		if written != sets {
			t.Errorf("%s wrote %v owner references, want %d: one per condemned claim of its own shard", hosts[s].Name, written, sets)
		}
		if got := m.Sum("kubeplug_actions_total", "module", "retention", "result", "conflict"); got != 0 {
			t.Errorf("%s had %v conflicting writes: another host wrote its claims", hosts[s].Name, got)
		}
	}
}
