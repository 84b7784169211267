package abi_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
)

// jsonPaths lists the field paths of a wire type from its JSON tags: what
// abi's projection tables must say.
func jsonPaths(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var paths []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		paths = append(paths, prefix+name)
		paths = append(paths, jsonPaths(t.Field(i).Type, prefix+name+".")...)
	}
	return paths
}

// jsonTypes maps the field paths of a wire type to their Go types.
func jsonTypes(t reflect.Type, prefix string) map[string]reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	types := map[string]reflect.Type{}
	if t.Kind() != reflect.Struct {
		return types
	}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		types[prefix+name] = t.Field(i).Type
		for p, ft := range jsonTypes(t.Field(i).Type, prefix+name+".") {
			types[p] = ft
		}
	}
	return types
}

// shapeOf is the shape a field of Go type t must have in abi's tables:
// what brackets may select in it.
func shapeOf(t reflect.Type) string {
	switch {
	case t.Kind() == reflect.String:
		return "string"
	case t == reflect.TypeFor[map[string]string]():
		return "map"
	case t.Kind() == reflect.Struct || t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct:
		return "object"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		return "list of objects"
	}
	return "scalar"
}

func TestFieldPathsAreTheWireTypes(t *testing.T) {
	types := map[string]any{
		abi.KindStatefulSet: abi.StatefulSet{}, abi.KindPod: abi.Pod{}, abi.KindPersistentVolumeClaim: abi.PersistentVolumeClaim{},
		abi.KindPersistentVolume: abi.PersistentVolume{}, abi.KindStorageClass: abi.StorageClass{}, abi.KindVolumeClaimUpdate: abi.VolumeClaimUpdate{},
	}
	for kind := range abi.Kinds() {
		v, ok := types[kind]
		if !ok {
			t.Fatalf("kind %s has no wire type in this test", kind)
		}
		if got, want := abi.FieldPaths(kind), jsonPaths(reflect.TypeOf(v), ""); !slices.Equal(got, want) {
			t.Errorf("%s: FieldPaths\n%q\nwant\n%q", kind, got, want)
		}
		for path, typ := range jsonTypes(reflect.TypeOf(v), "") {
			if got, want := abi.FieldShape(kind, path), shapeOf(typ); got != want {
				t.Errorf("%s %s (%s): shape %q, want %q", kind, path, typ, got, want)
			}
		}
	}
	for _, p := range abi.IdentityFields() {
		for kind := range abi.Kinds() {
			if !slices.Contains(abi.FieldPaths(kind), p) {
				t.Errorf("identity field %s is not a field of %s", p, kind)
			}
		}
	}
}

func projected(p ...abi.ObjectFields) *abi.Manifest {
	return &abi.Manifest{Name: "m", Version: "1", ABIVersion: abi.Current.String(), Subject: abi.SubjectStatefulSet,
		Hooks: []string{abi.HookReconcile}, Projection: p}
}

func TestValidateProjection(t *testing.T) {
	many := make([]string, abi.MaxProjectionFields+1)
	for i := range many {
		many[i] = fmt.Sprintf("metadata.labels%d", i)
	}
	for _, tc := range []struct {
		name string
		p    []abi.ObjectFields
		// want is in the first error's text; empty for a valid manifest.
		want string
		rule abi.ManifestRule
	}{
		{"fields of each kind", []abi.ObjectFields{
			{Kind: abi.KindPod, Fields: []string{"metadata.labels", "status.conditions", "spec.volumes.claimName"}},
			{Kind: abi.KindStatefulSet, Fields: []string{"spec.volumeClaimTemplates.spec.resources", "spec.replicas"}},
			{Kind: abi.KindStorageClass},
		}, "", ""},
		{"omitted kinds", []abi.ObjectFields{{Kind: abi.KindPod, Omit: true}, {Kind: abi.KindVolumeClaimUpdate, Omit: true}}, "", ""},
		{"omitting the subject's kind", []abi.ObjectFields{{Kind: abi.KindStatefulSet, Omit: true}},
			`projection[0] omits StatefulSet, the subject's own kind: a statefulset request always carries it`, abi.RuleUnexpected},
		{"omitting a kind with fields", []abi.ObjectFields{{Kind: abi.KindPod, Omit: true, Fields: []string{"status.phase"}}},
			`projection[0] omits Pod and lists fields of it`, abi.RuleUnexpected},
		{"unknown kind", []abi.ObjectFields{{Kind: abi.KindPersistentVolume}},
			`projection[0].kind "PersistentVolume" is not a kind a statefulset request carries (StatefulSet, Pod,`, abi.RuleUnknown},
		{"kind twice", []abi.ObjectFields{{Kind: abi.KindPod}, {Kind: abi.KindPod}},
			`projection[1].kind "Pod" is listed already at projection[0]`, abi.RuleDuplicate},
		{"nonsense path", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"metadata.labels", "status.podIP"}}},
			`projection[0].fields[1] "status.podIP" is not a field path of Pod: status has no field "podIP" (it has phase, conditions)`, abi.RuleUnknown},
		{"Go names", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"Metadata.Labels"}}},
			`"Metadata.Labels" is not a field path of Pod: Pod has no field "Metadata" (it has metadata, spec, status)`, abi.RuleUnknown},
		{"under a leaf", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"metadata.labels.app"}}},
			`"metadata.labels.app" is not a field path of Pod: metadata.labels has no fields under it`, abi.RuleUnknown},
		{"empty path", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{""}}},
			`projection[0].fields[0] "" is not a field path of Pod`, abi.RuleUnknown},
		{"duplicate path", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"spec", "status.phase", "status.phase"}}},
			`projection[0].fields[2] "status.phase" overlaps fields[1] "status.phase"`, abi.RuleDuplicate},
		{"path under another", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"status.conditions.type", "status"}}},
			`projection[0].fields[1] "status" overlaps fields[0] "status.conditions.type"`, abi.RuleDuplicate},
		{"too long", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{strings.Repeat("a.", 300)}}},
			`projection[0].fields[0] is 600 bytes long, more than 512`, abi.RuleTooLong},
		{"too long in brackets", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"metadata.labels[" + strings.Repeat("k", 496) + "]"}}},
			`projection[0].fields[0] is 513 bytes long, more than 512`, abi.RuleTooLong},
		{"at the length bound", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"metadata.labels[" + strings.Repeat("k", 495) + "]"}}}, "", ""},

		// ABI 1.5: a map key, a list filter.
		{"keys and filters", []abi.ObjectFields{
			{Kind: abi.KindPod, Fields: []string{"metadata.labels[controller-revision-hash]", "metadata.labels[app.kubernetes.io/name]",
				"status.conditions[type=Ready].status", "status.conditions[type=Ready].lastTransitionTime", "status.conditions[type=PodScheduled]",
				"spec.volumes[name=data].claimName", "metadata.ownerReferences[kind=StatefulSet]"}},
			{Kind: abi.KindStatefulSet, Fields: []string{"metadata.annotations[kubeplug.dev/held-partition]", "spec.selector[app]",
				"spec.volumeClaimTemplates.metadata.name", "spec.volumeClaimTemplates.spec.resources.requests[storage]",
				"spec.volumeClaimTemplates.status.conditions[type=Resizing]"}},
			{Kind: abi.KindVolumeClaimUpdate, Fields: []string{"status.volumeClaimTemplates[templateName=data].totalCapacity[storage]"}},
		}, "", ""},
		{"a filter beside every element's field", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"status.conditions.type", "status.conditions[type=Ready].status"}}}, "", ""},
		{"key on a struct", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"metadata[name]"}}},
			`"metadata[name]" is not a field path of Pod: metadata is not a map: only a map's key can be named in brackets (metadata.labels[app])`, abi.RuleUnknown},
		{"key on a string", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"status.phase[Running]"}}},
			`status.phase is not a map`, abi.RuleUnknown},
		{"key on a list of strings", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"metadata.finalizers[x]"}}},
			`metadata.finalizers is not a map`, abi.RuleUnknown},
		{"key on a list", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"status.conditions[Ready]"}}},
			`status.conditions is a list of objects: filter its elements with [field=value], e.g. status.conditions[type=...]`, abi.RuleUnknown},
		{"filter on a map", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"metadata.labels[app=web]"}}},
			`metadata.labels is a map: name one of its keys, metadata.labels[key]`, abi.RuleUnknown},
		{"filter on a struct", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"status[phase=Running]"}}},
			`status is not a list of objects: only a list's elements can be filtered (status.conditions[type=Ready])`, abi.RuleUnknown},
		{"filter on a non-string field", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"status.conditions[observedGeneration=1]"}}},
			`the elements of status.conditions have no string field "observedGeneration" to filter on (they have type, status, reason, message, lastTransitionTime)`, abi.RuleUnknown},
		{"filter on a bool", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"metadata.ownerReferences[controller=true]"}}},
			`have no string field "controller"`, abi.RuleUnknown},
		{"filter on a nested field", []abi.ObjectFields{{Kind: abi.KindStatefulSet, Fields: []string{"spec.volumeClaimTemplates[metadata.name=data]"}}},
			`the elements of spec.volumeClaimTemplates have no string field of their own to filter on: keep the fields of every element`, abi.RuleUnknown},
		{"filter on an unknown field", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"status.conditions[kind=Ready]"}}},
			`have no string field "kind"`, abi.RuleUnknown},
		{"under a key", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"metadata.labels[app].x"}}},
			`metadata.labels[app] is a string: nothing is under it`, abi.RuleUnknown},
		{"no field under a filter", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"status.conditions[type=Ready].podIP"}}},
			`status.conditions[type=Ready] has no field "podIP" (it has type, status,`, abi.RuleUnknown},
		{"unknown field with a key", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"metadata.tags[app]"}}},
			`metadata has no field "tags"`, abi.RuleUnknown},
		{"unterminated", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"metadata.labels[app"}}},
			`projection[0].fields[0] "metadata.labels[app" is not a field path: "[" at byte 15 is never closed`, abi.RuleSyntax},
		{"nested brackets", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"metadata.labels[a[b]]"}}},
			`is inside brackets`, abi.RuleSyntax},
		{"empty key", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"metadata.labels[]"}}}, `is empty`, abi.RuleSyntax},
		{"empty filter", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"status.conditions[=]"}}}, `has no field before "="`, abi.RuleSyntax},
		{"filter without a value", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"status.conditions[type=]"}}}, `has no value after "="`, abi.RuleSyntax},
		{"same key twice", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"metadata.labels[app]", "metadata.labels[app]"}}},
			`projection[0].fields[1] "metadata.labels[app]" overlaps fields[0] "metadata.labels[app]"`, abi.RuleDuplicate},
		{"key of a map kept whole", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"metadata.labels[app]", "metadata.labels"}}},
			`projection[0].fields[1] "metadata.labels" overlaps fields[0] "metadata.labels[app]"`, abi.RuleDuplicate},
		{"filter under a whole list", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"status.conditions", "status.conditions[type=Ready].status"}}},
			`overlaps fields[0] "status.conditions"`, abi.RuleDuplicate},
		{"field under a whole filter", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"status.conditions[type=Ready]", "status.conditions[type=Ready].status"}}},
			`overlaps fields[0] "status.conditions[type=Ready]"`, abi.RuleDuplicate},
		{"filtered field of every element", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"status.conditions[type=Ready].status", "status.conditions.status"}}},
			`overlaps fields[0] "status.conditions[type=Ready].status"`, abi.RuleDuplicate},
		{"one list filtered on two fields", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"status.conditions[type=Ready].status", "status.conditions[status=True].type"}}},
			`projection[0].fields[1] "status.conditions[status=True].type" filters status.conditions on status, but fields[0] "status.conditions[type=Ready].status" filters it on type: filter a list on one field`, abi.RuleUnexpected},
		{"one nested list filtered on two fields", []abi.ObjectFields{{Kind: abi.KindStatefulSet, Fields: []string{
			"spec.volumeClaimTemplates.status.conditions[type=Resizing]", "spec.volumeClaimTemplates.status.conditions[reason=Foo].message"}}},
			`filters spec.volumeClaimTemplates.status.conditions on reason`, abi.RuleUnexpected},
		{"too many paths", []abi.ObjectFields{{Kind: abi.KindPod, Fields: many}},
			`projection lists 1 kinds and 257 field paths, more than the 6 kinds and 256 paths allowed`, abi.RuleTooMany},
		{"too many kinds", make([]abi.ObjectFields, 100000),
			`projection lists 100000 kinds and 0 field paths`, abi.RuleTooMany},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := projected(tc.p...).Validate(abi.Current)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var first *abi.ManifestError
			if !errors.As(err, &first) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
			if !strings.Contains(first.Error(), tc.want) || first.Rule != tc.rule || !strings.HasPrefix(first.Field, "projection") {
				t.Errorf("got %q (rule %q, field %q), want %q (rule %q)", first.Error(), first.Rule, first.Field, tc.want, tc.rule)
			}
		})
	}
}

// A module built for 1.2 cannot declare a projection: a 1.2 host would
// send it whole while it expects less, and a 1.3 host must not guess.
func TestProjectionNeedsMinor3(t *testing.T) {
	m := projected(abi.ObjectFields{Kind: abi.KindPod})
	m.ABIVersion = "1.2.0"
	var first *abi.ManifestError
	if err := m.Validate(abi.Version{Major: 1, Minor: 2}); !errors.As(err, &first) || first.Rule != abi.RuleTooNew {
		t.Fatalf("got %v, want projection refused as too new", err)
	}
	if !strings.Contains(first.Error(), "projection needs ABI 1.3, but the module was built for 1.2.0") {
		t.Errorf("got %q", first)
	}
	m.Projection = nil
	if err := m.Validate(abi.Version{Major: 1, Minor: 2}); err != nil {
		t.Errorf("a 1.2 manifest without projection: %v", err)
	}
}

// A module built for 1.4 cannot use brackets: a 1.4 host would refuse the
// path, and a 1.5 host must not read a 1.4 module's path differently from
// the host it was built for.
func TestBracketsNeedMinor5(t *testing.T) {
	for _, path := range []string{"metadata.labels[app]", "status.conditions[type=Ready]", "metadata.labels]"} {
		m := projected(abi.ObjectFields{Kind: abi.KindPod, Fields: []string{"status.phase", path}})
		m.ABIVersion = "1.4.0"
		var first *abi.ManifestError
		if err := m.Validate(abi.Version{Major: 1, Minor: 4}); !errors.As(err, &first) || first.Rule != abi.RuleTooNew || first.Field != "projection.fields" {
			t.Fatalf("%s: got %v, want the brackets refused as too new", path, err)
		}
		want := fmt.Sprintf(`projection[0].fields[1] %q has brackets (a map key or a list filter), which need ABI 1.5, but the module was built for 1.4.0: rebuild it against abi v1.5, or keep the whole field`, path)
		if first.Error() != want {
			t.Errorf("got %q\nwant %q", first, want)
		}
	}
	m := projected(abi.ObjectFields{Kind: abi.KindPod, Fields: []string{"metadata.labels", "status.conditions.type"}})
	m.ABIVersion = "1.4.0"
	if err := m.Validate(abi.Version{Major: 1, Minor: 4}); err != nil {
		t.Errorf("a 1.4 manifest without brackets: %v", err)
	}
}

// The projection survives the wire.
func TestProjectionRoundTrip(t *testing.T) {
	m := projected(abi.ObjectFields{Kind: abi.KindPod, Fields: []string{"metadata.labels"}}, abi.ObjectFields{Kind: abi.KindStorageClass})
	b, err := m.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := abi.DecodeManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Projection, m.Projection) {
		t.Errorf("decoded %+v, want %+v", got.Projection, m.Projection)
	}
}
