package abi_test

import (
	"testing"

	"github.com/kubeplug/kubeplug/abi"
)

// Objects yields the subject first, then each related object in the
// request's order, and stops when told to.
func TestObjects(t *testing.T) {
	meta := func(name string) abi.ObjectMeta { return abi.ObjectMeta{Name: name} }
	req := &abi.ReconcileRequest{StatefulSet: &abi.StatefulSetSubject{
		Set:               &abi.StatefulSet{Metadata: meta("web")},
		Pods:              []abi.Pod{{Metadata: meta("web-0")}, {Metadata: meta("web-1")}},
		Claims:            []abi.PersistentVolumeClaim{{Metadata: meta("data-web-0")}},
		StorageClasses:    []abi.StorageClass{{Metadata: meta("fast")}},
		ClaimUpdate:       &abi.VolumeClaimUpdate{Metadata: meta("grow")},
		OtherClaimUpdates: []abi.VolumeClaimUpdate{{Metadata: meta("later")}},
	}}
	var got []string
	for o := range req.Objects() {
		got = append(got, o.Kind+"/"+o.Meta.Name)
		if o.Meta != &req.StatefulSet.Set.Metadata && o.Kind == abi.KindStatefulSet {
			t.Errorf("the set's metadata is a copy, not the request's")
		}
	}
	want := []string{"StatefulSet/web", "Pod/web-0", "Pod/web-1", "PersistentVolumeClaim/data-web-0", "StorageClass/fast",
		"VolumeClaimUpdate/grow", "VolumeClaimUpdate/later"}
	if len(got) != len(want) {
		t.Fatalf("Objects() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Objects() = %v, want %v", got, want)
		}
	}

	pv := &abi.ReconcileRequest{PersistentVolume: &abi.PersistentVolumeSubject{
		Volume: &abi.PersistentVolume{Metadata: meta("pv")}, Claim: &abi.PersistentVolumeClaim{Metadata: meta("c")},
	}}
	n := 0
	for o := range pv.Objects() {
		n++
		if o.Kind != abi.KindPersistentVolume {
			t.Fatalf("first object %s, want the volume", o.Kind)
		}
		break
	}
	if n != 1 {
		t.Fatalf("the walk went on after break")
	}
	for range (*abi.ReconcileRequest)(nil).Objects() {
		t.Fatal("a nil request has objects")
	}
}
