package policy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// TestSetUnderDeletion: while the set is being deleted, whatever the
// propagation (background, foreground, orphan), the module changes nothing:
// the garbage collector acts on the references as they are.
func TestSetUnderDeletion(t *testing.T) {
	h := sdktest.New(t)
	for _, p := range policies {
		for _, finalizers := range [][]string{nil, {"foregroundDeletion"}, {"orphan"}} {
			t.Run(p.name+"/"+strings.Join(finalizers, ","), func(t *testing.T) {
				set := sdktest.StatefulSet("web", 1, sdktest.Retention(p.whenDeleted, p.whenScaled),
					sdktest.Deleting(now), sdktest.Finalizers(finalizers...))
				// Every claim is out of line with every policy: no reference,
				// both references, an old-style one.
				req := sdktest.Request(now, set, sdktest.Pod(set, 0), sdktest.Pod(set, 1),
					sdktest.Claim("data", set, 0),
					sdktest.Claim("data", set, 1, sdktest.OwnedBy(plain(set), plain(sdktest.Pod(set, 1)))))
				if res := h.MustReconcile(req); len(res.Actions) != 0 {
					t.Errorf("actions = %+v, want none", res.Actions)
				}
			})
		}
	}
}

// TestNothingToDecide: no set (deleted since the event), no templates, no
// claims.
func TestNothingToDecide(t *testing.T) {
	h := sdktest.New(t)
	set := sdktest.StatefulSet("web", 1, sdktest.Retention("Delete", "Delete"))
	tests := []struct {
		name string
		req  *abi.ReconcileRequest
	}{
		{"set gone", sdktest.Request(now, sdktest.Key("default/web"), sdktest.Pod(set, 0), sdktest.Claim("data", set, 0))},
		{"no templates", sdktest.Request(now, sdktest.StatefulSet("web", 1, sdktest.Retention("Delete", "Delete"), sdktest.Templates()),
			sdktest.Pod(set, 0), sdktest.Claim("data", set, 0))},
		{"no claims", sdktest.Request(now, set, sdktest.Pod(set, 0))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if res := h.MustReconcile(tt.req); len(res.Actions) != 0 {
				t.Errorf("actions = %+v, want none", res.Actions)
			}
		})
	}
}

// TestConflictingController: under a deleting policy, a claim controlled by
// someone else loses our references, gains none, and the set gets a Warning
// naming the claim and the controller.
func TestConflictingController(t *testing.T) {
	h := sdktest.New(t)
	set := sdktest.StatefulSet("web", 2, sdktest.Retention("Delete", "Delete"))
	pod := sdktest.Pod(set, 0)
	claim := sdktest.Claim("data", set, 0, sdktest.OwnedBy(unrelated, foreign, plain(set)))
	res := h.MustReconcile(sdktest.Request(now, set, pod, sdktest.Pod(set, 1), claim))
	if len(res.Actions) != 2 {
		t.Fatalf("actions = %+v, want an event and a write", res.Actions)
	}
	ev, write := res.Actions[0], res.Actions[1]
	if ev.Type != abi.ActionEvent || ev.Target.Kind != abi.KindStatefulSet || ev.Event.Type != abi.EventWarning || ev.Event.Reason != "ConflictingController" {
		t.Errorf("first action = %+v, want a ConflictingController Warning on the set", ev)
	}
	for _, s := range []string{"data-web-0", "DatabaseCluster", "pg", "remove that controller reference"} {
		if !strings.Contains(ev.Event.Message, s) {
			t.Errorf("message %q does not mention %q", ev.Event.Message, s)
		}
	}
	c := write.OwnerReferences
	if write.Type != abi.ActionUpdateOwnerReferences || write.Target.Name != "data-web-0" || c == nil ||
		len(c.Add) != 0 || len(c.Remove) != 1 || c.Remove[0] != set.Metadata.UID {
		t.Errorf("second action = %+v %+v, want the set's reference removed and nothing added", write, c)
	}
}

// TestClaimNames: only claims named <template>-<set>-<ordinal> for one of
// the set's templates are touched, even when the request carries others.
func TestClaimNames(t *testing.T) {
	h := sdktest.New(t)
	set := sdktest.StatefulSet("web", 2, sdktest.Retention("Delete", "Retain"))
	other := sdktest.StatefulSet("webapp", 2)
	renamed := sdktest.Claim("data", set, 1)
	renamed.Metadata.Name, renamed.Metadata.UID = "data-web-01", "data-web-01-uid"
	noOrdinal := sdktest.Claim("data", set, 1)
	noOrdinal.Metadata.Name, noOrdinal.Metadata.UID = "data-web", "data-web-uid"
	req := sdktest.Request(now, set, sdktest.Pod(set, 0), sdktest.Pod(set, 1),
		sdktest.Claim("data", set, 0),   // the set's: gets the set reference
		sdktest.Claim("logs", set, 0),   // no template "logs"
		sdktest.Claim("data", other, 0), // data-webapp-0: another set's
		renamed, noOrdinal)              // not upstream's names
	out := run(t, h, req)
	out.wantWritten(t, "data-web-0")
	out.wantRefs(t, "data-web-0", ctrl(set))
}

// TestClaimWithoutPod: an in-range claim whose pod is missing (deleted,
// evicted, not created yet) is judged as upstream judges it when it creates
// the pod: the set reference follows whenDeleted, a pod reference is never
// added, and a reference to the earlier pod marks the claim stale. A
// condemned claim whose pod is gone is never touched again, as upstream.
func TestClaimWithoutPod(t *testing.T) {
	h := sdktest.New(t)
	for _, p := range policies {
		t.Run(p.name, func(t *testing.T) {
			set := sdktest.StatefulSet("web", 3, sdktest.Retention(p.whenDeleted, p.whenScaled))
			web2 := sdktest.Pod(set, 2)
			condemnedGone := sdktest.Pod(set, 4) // only for its reference
			req := sdktest.Request(now, set, sdktest.Pod(set, 0), web2,
				sdktest.Claim("data", set, 1),                                       // in range, pod web-1 missing
				sdktest.Claim("data", set, 2, sdktest.OwnedBy(stale(ctrl(web2)))),   // refers to an earlier web-2
				sdktest.Claim("data", set, 3, sdktest.OwnedBy(plain(set))),          // condemned, no pod
				sdktest.Claim("data", set, 4, sdktest.OwnedBy(ctrl(condemnedGone)))) // condemned, no pod
			out := run(t, h, req)
			setOwns, _ := desired(p.whenDeleted, p.whenScaled, false)
			if setOwns {
				out.wantRefs(t, "data-web-1", ctrl(set))
				out.wantWritten(t, "data-web-1")
			} else {
				out.wantRefs(t, "data-web-1")
				out.wantWritten(t)
			}
			out.wantRefs(t, "data-web-2", stale(ctrl(web2)))
			out.wantRefs(t, "data-web-3", plain(set))
			out.wantRefs(t, "data-web-4", ctrl(condemnedGone))
		})
	}
}

// TestStaleAfterRecreation: a set deleted and created again under the same
// name, before the garbage collector has finished with the claims of the
// earlier one: claims still referring to the earlier set or to an earlier
// pod are left to the collector; the others follow the new set's policy.
func TestStaleAfterRecreation(t *testing.T) {
	h := sdktest.New(t)
	earlier := sdktest.StatefulSet("web", 3, sdktest.UID("web-uid-1"))
	set := sdktest.StatefulSet("web", 3, sdktest.Retention("Delete", "Delete"), sdktest.UID("web-uid-2"))
	earlierPod := sdktest.Pod(earlier, 1, sdktest.UID("web-1-uid-1"))
	req := sdktest.Request(now, set, sdktest.Pod(set, 0), sdktest.Pod(set, 1), sdktest.Pod(set, 2),
		sdktest.Claim("data", set, 0, sdktest.OwnedBy(ctrl(earlier))),
		sdktest.Claim("data", set, 1, sdktest.OwnedBy(ctrl(earlierPod))),
		sdktest.Claim("data", set, 2))
	out := run(t, h, req)
	out.wantWritten(t, "data-web-2")
	out.wantRefs(t, "data-web-0", ctrl(earlier))
	out.wantRefs(t, "data-web-1", ctrl(earlierPod))
	out.wantRefs(t, "data-web-2", ctrl(set))
	out.wantConflicts(t)
}

// TestOrdinalsStart: spec.ordinals.start moves the range; pods below it are
// condemned as well as those above.
func TestOrdinalsStart(t *testing.T) {
	h := sdktest.New(t)
	set := sdktest.StatefulSet("web", 2, sdktest.Retention("Retain", "Delete"), sdktest.OrdinalStart(5))
	args := []any{set}
	pods := map[int]*abi.Pod{}
	for _, ord := range []int{4, 5, 6, 7} {
		pods[ord] = sdktest.Pod(set, ord)
		args = append(args, pods[ord], sdktest.Claim("data", set, ord))
	}
	out := run(t, h, sdktest.Request(now, args...))
	out.wantRefs(t, "data-web-4", ctrl(pods[4]))
	out.wantRefs(t, "data-web-5")
	out.wantRefs(t, "data-web-6")
	out.wantRefs(t, "data-web-7", ctrl(pods[7]))
}

// TestScaleToZero: with no replica in range every pod is condemned, and
// nothing stands between them and the claim fix.
func TestScaleToZero(t *testing.T) {
	h := sdktest.New(t)
	set := sdktest.StatefulSet("web", 0, sdktest.Retention("Delete", "Delete"))
	p0, p1 := sdktest.Pod(set, 0), with(sdktest.Pod(set, 1), unready)
	out := run(t, h, sdktest.Request(now, set, p0, p1,
		sdktest.Claim("data", set, 0, sdktest.OwnedBy(ctrl(set))), sdktest.Claim("data", set, 1, sdktest.OwnedBy(ctrl(set)))))
	out.wantRefs(t, "data-web-0", ctrl(p0))
	out.wantRefs(t, "data-web-1", ctrl(p1))
}

// TestCondemnedWaitsLikeUpstream: upstream gives condemned claims to their
// pods only once its pass over the in-range replicas gets through, just
// before it deletes the pods. With OrderedReady that takes every in-range
// pod Running and Ready; with Parallel it takes no failed pod creation.
func TestCondemnedWaitsLikeUpstream(t *testing.T) {
	h := sdktest.New(t)
	tests := []struct {
		name     string
		parallel bool
		web1     podState // nil: web-1 missing
		deleting bool     // data-web-1 is being deleted
		staleRef bool     // data-web-1 refers to an earlier web-1
		reached  bool
	}{
		{"OrderedReady, replicas ready", false, ready, false, false, true},
		{"OrderedReady, replica not ready", false, unready, false, false, false},
		{"OrderedReady, replica pending", false, pending, false, false, false},
		{"OrderedReady, replica failed", false, failed, false, false, false},
		{"OrderedReady, replica terminating", false, terminating, false, false, false},
		{"OrderedReady, replica missing", false, nil, false, false, false},
		{"Parallel, replica not ready", true, unready, false, false, true},
		{"Parallel, replica missing", true, nil, false, false, true},
		{"Parallel, replica missing, its claim being deleted", true, nil, true, false, false},
		{"Parallel, replica missing, its claim stale and being deleted", true, nil, true, true, true},
		{"Parallel, replica present, its claim being deleted", true, unready, true, false, true},
		{"Parallel, replica pending, its claim being deleted", true, pending, true, false, false},
		{"Parallel, replica pending", true, pending, false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := sdktest.StatefulSet("web", 2, sdktest.Retention("Retain", "Delete"))
			if tt.parallel {
				set.Spec.PodManagementPolicy = "Parallel"
			}
			args := []any{set, sdktest.Pod(set, 0)}
			if tt.web1 != nil {
				args = append(args, with(sdktest.Pod(set, 1), tt.web1))
			}
			claim1 := sdktest.Claim("data", set, 1)
			if tt.deleting {
				claim1.Metadata.DeletionTimestamp = now.Format("2006-01-02T15:04:05Z")
				claim1.Metadata.Finalizers = []string{"kubernetes.io/pvc-protection"}
			}
			if tt.staleRef {
				claim1.Metadata.OwnerReferences = refs(stale(ctrl(sdktest.Pod(set, 1))))
			}
			web2 := sdktest.Pod(set, 2)
			args = append(args, web2, claim1, sdktest.Claim("data", set, 2))
			out := run(t, h, sdktest.Request(now, args...))
			if tt.reached {
				out.wantRefs(t, "data-web-2", ctrl(web2))
			} else {
				out.wantRefs(t, "data-web-2")
			}
		})
	}
}

// TestCondemnedWaitsForMinReadySeconds: with OrderedReady, upstream's pass
// over the in-range replicas also stops at a pod that is Ready but not yet
// available (isRunningAndAvailable: Ready for minReadySeconds, at or before
// now), before the claims of condemned pods are fixed. The module asks to be
// reconciled again when the pod becomes available.
func TestCondemnedWaitsForMinReadySeconds(t *testing.T) {
	h := sdktest.New(t)
	tests := []struct {
		name       string
		minReady   int32
		parallel   bool
		readySince string // web-0's Ready lastTransitionTime, "" for none
		reached    bool
		requeue    time.Duration
	}{
		{"no minReadySeconds: Ready is enough", 0, false, now.Add(-time.Second).Format(time.RFC3339), true, 0},
		{"no minReadySeconds, no transition time", 0, false, "", true, 0},
		{"Ready for less than minReadySeconds", 60, false, now.Add(-59 * time.Second).Format(time.RFC3339), false, time.Second},
		{"Ready for exactly minReadySeconds", 60, false, now.Add(-60 * time.Second).Format(time.RFC3339), true, 0},
		{"Ready for longer", 60, false, now.Add(-time.Hour).Format(time.RFC3339), true, 0},
		{"Ready since a fraction of a second", 60, false, now.Add(-1500 * time.Millisecond).Format(time.RFC3339Nano), false, 58500 * time.Millisecond},
		{"Ready in the future (a skewed clock)", 60, false, now.Add(time.Minute).Format(time.RFC3339), false, 2 * time.Minute},
		{"Ready without a transition time: never available", 60, false, "", false, time.Minute},
		{"Parallel does not wait", 60, true, now.Add(-time.Second).Format(time.RFC3339), true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := sdktest.StatefulSet("web", 1, sdktest.Retention("Retain", "Delete"))
			set.Spec.MinReadySeconds = tt.minReady
			if tt.parallel {
				set.Spec.PodManagementPolicy = "Parallel"
			}
			web0, web1 := sdktest.Pod(set, 0), sdktest.Pod(set, 1)
			web0.Status.Conditions[0].LastTransitionTime = tt.readySince
			req := sdktest.Request(now, set, web0, web1, sdktest.Claim("data", set, 0), sdktest.Claim("data", set, 1))
			if res := h.MustReconcile(req); res.RequeueAfterMillis != tt.requeue.Milliseconds() {
				t.Errorf("requeue after %d ms, want %v", res.RequeueAfterMillis, tt.requeue)
			}
			out := run(t, h, req)
			if tt.reached {
				out.wantRefs(t, "data-web-1", ctrl(web1))
			} else {
				out.wantRefs(t, "data-web-1")
			}
		})
	}
}

// TestReplicaFailingUpstreamIsNotWritten: where upstream's processReplica
// stops at an in-range replica before writing its claims (a missing or
// Pending pod with a claim being deleted; a missing pod with a stale claim),
// none of that replica's claims is written, not even the ones that are out
// of line with the policy.
func TestReplicaFailingUpstreamIsNotWritten(t *testing.T) {
	h := sdktest.New(t)
	tests := []struct {
		name    string
		web1    podState // nil: web-1 missing
		delete  bool     // data-web-1 is being deleted
		stale   bool     // data-web-1 refers to an earlier web-1
		written bool     // logs-web-1 gets the set's reference
	}{
		{"missing pod, claim being deleted", nil, true, false, false},
		{"pending pod, claim being deleted", pending, true, false, false},
		{"missing pod, claim stale", nil, false, true, false},
		{"running pod, claim being deleted", ready, true, false, true},
		{"pending pod", pending, false, false, true},
		{"missing pod", nil, false, false, true},
	}
	for _, tt := range tests {
		for _, parallel := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/parallel=%v", tt.name, parallel), func(t *testing.T) {
				set := sdktest.StatefulSet("web", 2, sdktest.Retention("Delete", "Delete"), sdktest.Templates("data", "logs"))
				if parallel {
					set.Spec.PodManagementPolicy = "Parallel"
				}
				args := []any{set, sdktest.Pod(set, 0)}
				if tt.web1 != nil {
					args = append(args, with(sdktest.Pod(set, 1), tt.web1))
				}
				data := sdktest.Claim("data", set, 1, sdktest.OwnedBy(ctrl(set)))
				if tt.delete {
					data.Metadata.DeletionTimestamp = now.Format("2006-01-02T15:04:05Z")
					data.Metadata.Finalizers = []string{"kubernetes.io/pvc-protection"}
				}
				if tt.stale {
					data.Metadata.OwnerReferences = refs(stale(ctrl(sdktest.Pod(set, 1))))
				}
				args = append(args, data, sdktest.Claim("logs", set, 1))
				out := run(t, h, sdktest.Request(now, args...))
				if tt.written {
					out.wantRefs(t, "logs-web-1", ctrl(set))
				} else {
					out.wantRefs(t, "logs-web-1")
					out.wantWritten(t)
				}
			})
		}
	}
}

// TestReplicaDisruptionsKeepClaims: rolling updates, node drains, evictions
// and manual deletions of in-range pods never give a claim to its pod, so the
// garbage collector never deletes it with the pod. A claim that already had
// its pod as owner from a scale-down that was undone loses that reference.
func TestReplicaDisruptionsKeepClaims(t *testing.T) {
	h := sdktest.New(t)
	for _, p := range policies {
		for _, d := range []struct {
			name  string
			state podState // nil: pod deleted
		}{
			{"rolling update", terminating},
			{"node drain", func(p *abi.Pod) { terminating(p); unready(p) }},
			{"eviction", failed},
			{"manual deletion", nil},
			{"recreated, pending", pending},
		} {
			t.Run(p.name+"/"+d.name, func(t *testing.T) {
				set := sdktest.StatefulSet("web", 3, sdktest.Retention(p.whenDeleted, p.whenScaled))
				args := []any{set, sdktest.Pod(set, 0), sdktest.Pod(set, 2)}
				web1 := sdktest.Pod(set, 1)
				if d.state != nil {
					args = append(args, with(web1, d.state))
				}
				// data-web-2 still has its pod as owner from a scale-down to 2
				// that was undone before web-2 went away.
				web2 := sdktest.Pod(set, 2)
				args = append(args, sdktest.Claim("data", set, 1), sdktest.Claim("data", set, 2, sdktest.OwnedBy(ctrl(web2))))
				out := run(t, h, sdktest.Request(now, args...))
				setOwns, _ := desired(p.whenDeleted, p.whenScaled, false)
				if setOwns {
					out.wantRefs(t, "data-web-1", ctrl(set))
					out.wantRefs(t, "data-web-2", ctrl(set))
				} else {
					out.wantRefs(t, "data-web-1")
					out.wantRefs(t, "data-web-2")
				}
			})
		}
	}
}

// TestConflictEventsWhereUpstreamRecordsThem: upstream records
// ConflictingController when it updates a replica's claims: when they need a
// write, when it creates the replica's pod, and on each sync of a Pending
// pod; never under Retain on both. The module records it in the same
// situations.
func TestConflictEventsWhereUpstreamRecordsThem(t *testing.T) {
	h := sdktest.New(t)
	tests := []struct {
		name       string
		retention  [2]string
		web0       podState // nil: missing
		dataOwners func(set *abi.StatefulSet, pod *abi.Pod) []abi.OwnerReference
		logsOwners func(set *abi.StatefulSet, pod *abi.Pod) []abi.OwnerReference
		want       []string
	}{
		{"running pod, claims in line", [2]string{"Delete", "Retain"}, ready, foreignOnly, setOnly, nil},
		{"running pod, sibling claim needs a write", [2]string{"Delete", "Retain"}, ready, foreignOnly, noOwners, []string{"data-web-0"}},
		{"pending pod", [2]string{"Delete", "Retain"}, pending, foreignOnly, setOnly, []string{"data-web-0"}},
		{"pod about to be created", [2]string{"Delete", "Retain"}, nil, foreignOnly, setOnly, []string{"data-web-0"}},
		{"pod creation held back by a stale claim", [2]string{"Retain", "Delete"}, nil, foreignOnly, earlierPod, nil},
		{"pod about to be created, stale claim kept under whenScaled Retain", [2]string{"Delete", "Retain"}, nil, foreignOnly, earlierPod, []string{"data-web-0", "logs-web-0"}},
		{"Retain on both", [2]string{"Retain", "Retain"}, pending, foreignOnly, noOwners, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := sdktest.StatefulSet("web", 1, sdktest.Retention(tt.retention[0], tt.retention[1]), sdktest.Templates("data", "logs"))
			pod := sdktest.Pod(set, 0)
			args := []any{set}
			if tt.web0 != nil {
				args = append(args, with(pod, tt.web0))
			}
			args = append(args,
				sdktest.Claim("data", set, 0, sdktest.OwnedBy(tt.dataOwners(set, pod)...)),
				sdktest.Claim("logs", set, 0, sdktest.OwnedBy(tt.logsOwners(set, pod)...)))
			out := run(t, h, sdktest.Request(now, args...))
			out.wantConflicts(t, tt.want...)
			out.wantRefs(t, "data-web-0", tt.dataOwners(set, pod)...)
		})
	}
}

func noOwners(*abi.StatefulSet, *abi.Pod) []abi.OwnerReference       { return nil }
func foreignOnly(*abi.StatefulSet, *abi.Pod) []abi.OwnerReference    { return refs(foreign) }
func setOnly(s *abi.StatefulSet, _ *abi.Pod) []abi.OwnerReference    { return refs(ctrl(s)) }
func earlierPod(_ *abi.StatefulSet, p *abi.Pod) []abi.OwnerReference { return refs(stale(ctrl(p))) }

// TestUnknownPolicy: a value other than Retain or Delete is treated as
// Retain, as upstream does, and logged.
func TestUnknownPolicy(t *testing.T) {
	h := sdktest.New(t)
	set := sdktest.StatefulSet("web", 1, sdktest.Retention("Sometimes", "Retain"))
	out := run(t, h, sdktest.Request(now, set, sdktest.Pod(set, 0), sdktest.Claim("data", set, 0, sdktest.OwnedBy(ctrl(set)))))
	out.wantRefs(t, "data-web-0")
	if h.WASM() != "" {
		return // the host logs what the module wrote
	}
	logged := false
	for _, l := range h.Logs() {
		logged = logged || strings.Contains(l.Message, "Sometimes")
	}
	if !logged {
		t.Errorf("logs = %+v, want the unknown policy named", h.Logs())
	}
}

// TestActionOrder: replicas in range first by ascending ordinal, then the
// condemned ones by descending ordinal, each claim in template order, as
// upstream walks them.
func TestActionOrder(t *testing.T) {
	h := sdktest.New(t)
	set := sdktest.StatefulSet("web", 2, sdktest.Retention("Delete", "Delete"), sdktest.Templates("data", "logs"))
	args := []any{set}
	for ord := 3; ord >= 0; ord-- {
		args = append(args, sdktest.Pod(set, ord), sdktest.Claim("logs", set, ord), sdktest.Claim("data", set, ord))
	}
	out := run(t, h, sdktest.Request(now, args...))
	want := []string{"data-web-0", "logs-web-0", "data-web-1", "logs-web-1", "data-web-3", "logs-web-3", "data-web-2", "logs-web-2"}
	if strings.Join(out.written, " ") != strings.Join(want, " ") {
		t.Errorf("claims written in order %v, want %v", out.written, want)
	}
}

func TestConfig(t *testing.T) {
	h := sdktest.New(t)
	set := sdktest.StatefulSet("web", 1)
	for _, cfg := range []string{"", "{}", " {} "} {
		if _, err := h.Reconcile(sdktest.Request(now, set, sdktest.Config(cfg))); err != nil {
			t.Errorf("config %q: %v", cfg, err)
		}
	}
	_, err := h.Reconcile(sdktest.Request(now, set, sdktest.Config(`{"whenDeleted": "Delete"}`)))
	if err == nil || !strings.Contains(err.Error(), `unknown field "whenDeleted"`) {
		t.Errorf("err = %v, want the unexpected field named", err)
	}
}

func TestManifest(t *testing.T) {
	m := sdktest.New(t).Manifest()
	if m.Name != "retention" || m.Version != "0.1.0" || m.Subject != abi.SubjectStatefulSet || m.ABIVersion != abi.Current.String() {
		t.Errorf("manifest = %+v", m)
	}
	allowed := func(action, resource string) bool {
		for _, c := range m.Capabilities {
			if c.Allows(action, resource) {
				return true
			}
		}
		return false
	}
	mutates := func(path string) bool {
		for _, c := range m.Capabilities {
			if c.AllowsPatch("persistentvolumeclaims", path) {
				return true
			}
		}
		return false
	}
	if len(m.Capabilities) != 3 ||
		!allowed(abi.ActionUpdateOwnerReferences, "persistentvolumeclaims") || !allowed(abi.ActionEvent, "statefulsets") ||
		allowed(abi.ActionUpdateOwnerReferences, "pods") || allowed(abi.ActionEvent, "persistentvolumeclaims") ||
		allowed(abi.ActionDeleteObject, "persistentvolumeclaims") ||
		!mutates("/metadata/ownerReferences/-") || mutates("/metadata/labels") || mutates("/spec/resources") {
		t.Errorf("capabilities = %+v, want owner references on claims (actions and admit patches) and events on statefulsets, nothing else", m.Capabilities)
	}
	a := m.Admission
	if a == nil || !a.Mutates || len(a.Rules) != 1 || !slices.Equal(a.Rules[0].Operations, []string{abi.OperationCreate}) ||
		!slices.Equal(a.Rules[0].Resources, []string{"persistentvolumeclaims"}) || !slices.Equal(a.Rules[0].APIGroups, []string{""}) {
		t.Errorf("admission = %+v, want a mutating hook on claim CREATE only", a)
	}
	if !strings.Contains(m.ConfigSchema, `"additionalProperties": false`) {
		t.Errorf("config schema = %s, want one that takes no field", m.ConfigSchema)
	}
}
