package policy

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// These tests run natively, and against the compiled module when
// KUBEPLUG_TEST_WASM names it (see package sdktest).

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// Owner references as the tests build them.

// ctrl is the controller reference upstream writes (controller and
// blockOwnerDeletion set).
func ctrl[T abi.StatefulSet | abi.Pod](owner *T) abi.OwnerReference {
	return sdk.NewControllerRef(owner)
}

// plain is the reference releases before 1.31 wrote: neither controller nor
// blockOwnerDeletion.
func plain[T abi.StatefulSet | abi.Pod](owner *T) abi.OwnerReference {
	r := sdk.NewControllerRef(owner)
	r.Controller, r.BlockOwnerDeletion = false, false
	return r
}

// stale is ref pointing at an earlier object of the same name.
func stale(ref abi.OwnerReference) abi.OwnerReference {
	ref.UID = "earlier-" + ref.UID
	return ref
}

// foreign is a controller that is neither the set nor a pod.
var foreign = abi.OwnerReference{
	APIVersion: "example.com/v1", Kind: "DatabaseCluster", Name: "pg", UID: "pg-uid",
	Controller: true, BlockOwnerDeletion: true,
}

// unrelated is an owner reference someone else added, not a controller.
var unrelated = abi.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "web-config", UID: "cm-uid"}

func refs(r ...abi.OwnerReference) []abi.OwnerReference { return r }

// outcome is what one reconcile did, with its writes applied to the claims.
type outcome struct {
	// refs maps every claim of the request to its owner references after the
	// module's writes.
	refs map[string][]abi.OwnerReference
	// written lists the claims written, in action order.
	written []string
	// events are the events recorded, in action order.
	events []abi.Event
}

// run reconciles req, checks that every action is well-formed and aimed at
// an object of the request (claims for writes, the set for events), applies
// the writes as the host does, and requires the next reconcile of the
// resulting state to write nothing: the module converges in one round.
func run(t *testing.T, h *sdktest.Harness, req *abi.ReconcileRequest) outcome {
	t.Helper()
	res := h.MustReconcile(req)
	out := outcome{refs: map[string][]abi.OwnerReference{}}
	claims := req.StatefulSet.Claims
	for i := range claims {
		out.refs[claims[i].Metadata.Name] = claims[i].Metadata.OwnerReferences
	}
	next := cloneRequest(req)
	for _, a := range res.Actions {
		switch a.Type {
		case abi.ActionEvent:
			set := req.StatefulSet.Set
			if set == nil || a.Target != sdk.RefOf(set) {
				t.Fatalf("event %+v is not aimed at the StatefulSet", a)
			}
			out.events = append(out.events, *a.Event)
		case abi.ActionUpdateOwnerReferences:
			c := claimByRef(next, a.Target)
			if c == nil {
				t.Fatalf("write %+v is not aimed at a claim of the request", a.Target)
			}
			if a.OwnerReferences == nil || len(a.OwnerReferences.Remove)+len(a.OwnerReferences.Add) == 0 {
				t.Fatalf("write to %s changes nothing: %+v", c.Metadata.Name, a.OwnerReferences)
			}
			c.Metadata.OwnerReferences = applyChange(c.Metadata.OwnerReferences, a.OwnerReferences)
			if n := controllers(c.Metadata.OwnerReferences); n > 1 {
				t.Fatalf("write leaves %s with %d controllers: %+v", c.Metadata.Name, n, c.Metadata.OwnerReferences)
			}
			out.refs[c.Metadata.Name] = c.Metadata.OwnerReferences
			out.written = append(out.written, c.Metadata.Name)
		default:
			t.Fatalf("unexpected action type %q", a.Type)
		}
	}
	if len(out.written) > 0 {
		again := h.MustReconcile(next)
		for _, a := range again.Actions {
			if a.Type != abi.ActionEvent {
				t.Fatalf("second reconcile still writes: %s %s %+v", a.Type, a.Target.Name, a.OwnerReferences)
			}
		}
	}
	return out
}

// applyChange applies an updateOwnerReferences payload as the host does:
// drop the listed UIDs, then add, replacing a reference with the same UID in
// place.
func applyChange(have []abi.OwnerReference, c *abi.OwnerReferencesChange) []abi.OwnerReference {
	var out []abi.OwnerReference
	for _, r := range have {
		if !slices.Contains(c.Remove, r.UID) {
			out = append(out, r)
		}
	}
	for _, a := range c.Add {
		if i := slices.IndexFunc(out, func(r abi.OwnerReference) bool { return r.UID == a.UID }); i >= 0 {
			out[i] = a
		} else {
			out = append(out, a)
		}
	}
	return out
}

func controllers(refs []abi.OwnerReference) int {
	n := 0
	for _, r := range refs {
		if r.Controller {
			n++
		}
	}
	return n
}

func cloneRequest(req *abi.ReconcileRequest) *abi.ReconcileRequest {
	out := *req
	s := *req.StatefulSet
	s.Claims = slices.Clone(s.Claims)
	for i := range s.Claims {
		s.Claims[i].Metadata.OwnerReferences = slices.Clone(s.Claims[i].Metadata.OwnerReferences)
	}
	out.StatefulSet = &s
	return &out
}

func claimByRef(req *abi.ReconcileRequest, ref abi.ObjectRef) *abi.PersistentVolumeClaim {
	for i := range req.StatefulSet.Claims {
		c := &req.StatefulSet.Claims[i]
		if ref == sdk.RefOf(c) {
			return c
		}
	}
	return nil
}

// sameRefs compares owner reference lists as sets: the order of owner
// references means nothing to Kubernetes.
func sameRefs(a, b []abi.OwnerReference) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func showRefs(refs []abi.OwnerReference) string {
	if len(refs) == 0 {
		return "[]"
	}
	parts := make([]string, len(refs))
	for i, r := range refs {
		s := r.Kind + "/" + r.Name + "(" + r.UID
		if r.Controller {
			s += ",controller"
		}
		if r.BlockOwnerDeletion {
			s += ",block"
		}
		parts[i] = s + ")"
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// wantRefs fails the test unless claim ended with exactly want.
func (o outcome) wantRefs(t *testing.T, claim string, want ...abi.OwnerReference) {
	t.Helper()
	got, ok := o.refs[claim]
	if !ok {
		t.Fatalf("claim %s is not in the request", claim)
	}
	if !sameRefs(got, want) {
		t.Errorf("%s owner references = %s, want %s", claim, showRefs(got), showRefs(want))
	}
}

// wantWritten fails the test unless exactly the claims named were written.
func (o outcome) wantWritten(t *testing.T, claims ...string) {
	t.Helper()
	if !sameStrings(o.written, claims) {
		t.Errorf("claims written = %v, want %v", o.written, claims)
	}
}

// wantConflicts fails the test unless the module recorded exactly one
// ConflictingController Warning for each claim named, on the set.
func (o outcome) wantConflicts(t *testing.T, claims ...string) {
	t.Helper()
	var got []string
	for _, e := range o.events {
		if e.Type != abi.EventWarning || e.Reason != ReasonConflictingController {
			t.Errorf("unexpected event %+v", e)
			continue
		}
		name := strings.TrimPrefix(e.Message, "PersistentVolumeClaim ")
		name, _, _ = strings.Cut(name, " ")
		got = append(got, name)
	}
	if !sameStrings(got, claims) {
		t.Errorf("ConflictingController events for %v, want for %v", got, claims)
	}
}

func sameStrings(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// Pod states.

// podState changes a pod the way the cluster would.
type podState func(p *abi.Pod)

func ready(p *abi.Pod) {}

func unready(p *abi.Pod) { p.Status.Conditions = []abi.Condition{{Type: "Ready", Status: "False"}} }

func pending(p *abi.Pod) {
	p.Status.Phase = "Pending"
	p.Status.Conditions = nil
}

func failed(p *abi.Pod) {
	p.Status.Phase = "Failed"
	p.Status.Conditions = []abi.Condition{{Type: "Ready", Status: "False"}}
}

func terminating(p *abi.Pod) {
	p.Metadata.DeletionTimestamp = now.Add(-time.Minute).Format(time.RFC3339)
}

func with(p *abi.Pod, states ...podState) *abi.Pod {
	for _, s := range states {
		s(p)
	}
	return p
}
