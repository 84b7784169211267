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
		{"too long", []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{strings.Repeat("a.", 100)}}},
			`projection[0].fields[0] is 200 bytes long, more than 128`, abi.RuleTooLong},
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
