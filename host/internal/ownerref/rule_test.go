package ownerref_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/internal/ownerref"
)

// The rule both the executor and admission apply, on its own: what a
// module may make an owner of an object in namespace "default".
func TestCheck(t *testing.T) {
	state := func() *abi.StatefulSetSubject {
		return &abi.StatefulSetSubject{
			Set:  &abi.StatefulSet{Metadata: abi.ObjectMeta{Name: "web", Namespace: "default", UID: "set-uid"}},
			Pods: []abi.Pod{{Metadata: abi.ObjectMeta{Name: "web-0", Namespace: "default", UID: "pod-0"}}},
		}
	}
	set := abi.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "set-uid", Controller: true, BlockOwnerDeletion: true}
	pod := abi.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: "pod-0", Controller: true}
	with := func(r abi.OwnerReference, f func(*abi.OwnerReference)) abi.OwnerReference { f(&r); return r }
	tests := []struct {
		name  string
		state func() *abi.StatefulSetSubject
		ref   abi.OwnerReference
		ns    string
		want  string // "" allowed, else a part of the refusal
	}{
		{"the set", state, set, "default", ""},
		{"one of its pods", state, pod, "default", ""},
		{"the set, not a controller", state, with(set, func(r *abi.OwnerReference) { r.Controller = false }), "default", ""},
		{"the set being deleted in the background", func() *abi.StatefulSetSubject {
			s := state()
			s.Set.Metadata.DeletionTimestamp, s.Set.Metadata.Finalizers = "2026-01-01T00:00:00Z", []string{"foregroundDeletion"}
			return s
		}, set, "default", ""},
		{"the set being deleted with orphan propagation", func() *abi.StatefulSetSubject {
			s := state()
			s.Set.Metadata.DeletionTimestamp, s.Set.Metadata.Finalizers = "2026-01-01T00:00:00Z", []string{"orphan"}
			return s
		}, set, "default", "orphan propagation"},
		{"a pod being deleted with orphan propagation", func() *abi.StatefulSetSubject {
			s := state()
			s.Pods[0].Metadata.DeletionTimestamp, s.Pods[0].Metadata.Finalizers = "2026-01-01T00:00:00Z", []string{"orphan"}
			return s
		}, pod, "default", "orphan propagation"},
		{"the set from another namespace", state, set, "other", "neither the subject"},
		{"another uid", state, with(set, func(r *abi.OwnerReference) { r.UID = "earlier" }), "default", "neither the subject"},
		{"another apiVersion", state, with(set, func(r *abi.OwnerReference) { r.APIVersion = "apps/v1beta2" }), "default", "neither the subject"},
		{"another kind with the set's uid", state, with(set, func(r *abi.OwnerReference) { r.Kind = "Deployment" }), "default", "neither the subject"},
		{"no set in the input", func() *abi.StatefulSetSubject { return nil }, set, "default", "neither the subject"},
		{"no uid", state, with(set, func(r *abi.OwnerReference) { r.UID = "" }), "default", "needs apiVersion, kind, name and uid"},
		{"a bad apiVersion", state, with(set, func(r *abi.OwnerReference) { r.APIVersion = "a/b/c" }), "default", "is not group/version"},
		{"an Event", state, abi.OwnerReference{APIVersion: "v1", Kind: "Event", Name: "e", UID: "e"}, "default", "an Event cannot own objects"},
		{"a name that is no path segment", state, with(set, func(r *abi.OwnerReference) { r.Name = "web/0" }), "default", `name "web/0"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ownerref.Check(tt.state(), tt.ref, tt.ns)
			if tt.want == "" {
				require.Empty(t, got)
				return
			}
			require.Contains(t, got, tt.want)
		})
	}
}

func TestControllers(t *testing.T) {
	require.Zero(t, ownerref.Controllers(nil))
	require.Equal(t, 2, ownerref.Controllers([]abi.OwnerReference{{Controller: true}, {}, {Controller: true}}))
}
