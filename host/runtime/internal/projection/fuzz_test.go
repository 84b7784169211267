package projection_test

import (
	"reflect"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime/internal/projection"
)

// FuzzProjection holds the host to abi's check of a projection: two field
// paths of a kind that Manifest.Validate accepts compile, and narrowing
// then leaves the request as it was and answers alike through Apply and
// through Narrow's reused memory, whatever the requests before held.
func FuzzProjection(f *testing.F) {
	for _, seed := range [][2]string{
		{"metadata.labels[controller-revision-hash]", "status.conditions[type=Ready].status"},
		{"status.conditions.type", "status.conditions[type=Ready]"},
		{"status.conditions[type=Ready].lastTransitionTime", "status.conditions[type=PodScheduled]"},
		{"spec.volumes[name=data].claimName", "metadata.ownerReferences[kind=StatefulSet].uid"},
		{"spec.resources.requests[storage]", "status.conditions[type=status.conditions.type]"},
		{"metadata.labels[k]", "metadata.annotations[k]"},
		{"status.conditions[type=Ready]", "status.conditions[status=True]"},
		{"metadata.labels[a", "status.conditions[=]"},
	} {
		f.Add(uint8(0), seed[0], seed[1])
		f.Add(uint8(1), seed[0], seed[1])
	}
	kinds := []string{abi.KindPod, abi.KindPersistentVolumeClaim, abi.KindStatefulSet, abi.KindVolumeClaimUpdate}
	shuffled := pod()
	shuffled.Metadata.Labels = map[string]string{"k": "v", "app": "db"}
	shuffled.Status.Conditions = []abi.Condition{pod().Status.Conditions[3], {Type: "status.conditions.type", Status: "x"}, pod().Status.Conditions[0]}
	f.Fuzz(func(t *testing.T, k uint8, a, b string) {
		kind := kinds[int(k)%len(kinds)]
		fields := []abi.ObjectFields{{Kind: kind, Fields: []string{a, b}}}
		m := abi.Manifest{Name: "m", Version: "1", ABIVersion: abi.Current.String(), Subject: abi.SubjectStatefulSet,
			Hooks: []string{abi.HookReconcile}, Projection: fields}
		if m.Validate(abi.Current) != nil {
			return
		}
		p, err := projection.Compile(fields)
		if err != nil {
			t.Fatalf("abi accepts %q and %q of %s, but Compile refuses them: %v", a, b, kind, err)
		}
		for _, make := range []func() *abi.ReconcileRequest{setRequest, func() *abi.ReconcileRequest { return podRequest(pod(), shuffled) },
			setRequest, func() *abi.ReconcileRequest { return podRequest(shuffled) }} {
			req := make()
			got, s := p.Narrow(req)
			if want := p.Apply(make()); !reflect.DeepEqual(want, got) {
				t.Fatalf("%q and %q of %s: Narrow answers\n%+v\nApply\n%+v", a, b, kind, got.StatefulSet, want.StatefulSet)
			}
			if !reflect.DeepEqual(make(), req) {
				t.Fatalf("%q and %q of %s: Narrow changed the request it was given", a, b, kind)
			}
			s.Done()
		}
	})
}
