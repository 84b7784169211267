package abi_test

import (
	"encoding/json"
	"fmt"
	"strings"
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

// A declared module's request yields its subject, then each relation's
// objects in order, and says what its subject is.
func TestObjectsOfADeclaredSubject(t *testing.T) {
	obj := func(kind, name string) abi.GenericObject {
		return abi.GenericObject{APIVersion: "v1", Kind: kind, Metadata: abi.ObjectMeta{Name: name}, Object: abi.RawJSON(`{"kind":"` + kind + `"}`)}
	}
	subject := obj("Deployment", "web")
	req := &abi.ReconcileRequest{Declared: &abi.DeclaredSubject{
		Object: &subject,
		Related: []abi.RelatedObjects{
			{Relation: "pods", Objects: []abi.GenericObject{obj("Pod", "web-a"), obj("Pod", "web-b")}},
			{Relation: "budget"},
			{Relation: "classes", Objects: []abi.GenericObject{obj("StorageClass", "fast")}},
		},
	}}
	var got []string
	for o := range req.Objects() {
		got = append(got, o.Kind+"/"+o.Meta.Name)
	}
	if want := "[Deployment/web Pod/web-a Pod/web-b StorageClass/fast]"; fmt.Sprint(got) != want {
		t.Errorf("Objects() = %v, want %s", got, want)
	}
	if kind, m, ok := req.SubjectObject(); !ok || kind != "Deployment" || m != &subject.Metadata {
		t.Errorf("SubjectObject() = %s, %p, %t, want the Deployment's own metadata", kind, m, ok)
	}
	if n := len(req.Declared.Relation("pods")); n != 2 || req.Declared.Relation("none") != nil {
		t.Errorf("Relation(pods) has %d objects, want 2; Relation(none) %v", n, req.Declared.Relation("none"))
	}
}

// The objects travel whole: as bytes in MessagePack, as themselves in
// JSON (an Extism plugin's request).
func TestDeclaredRoundTrip(t *testing.T) {
	raw := `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":3}}`
	req := &abi.ReconcileRequest{Subject: "", Key: "a/web", Declared: &abi.DeclaredSubject{
		Object: &abi.GenericObject{APIVersion: "apps/v1", Kind: "Deployment", Metadata: abi.ObjectMeta{Name: "web", Namespace: "a"}, Object: abi.RawJSON(raw)},
	}}
	b, err := req.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	back, err := abi.DecodeReconcileRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(back.Declared.Object.Object); got != raw {
		t.Errorf("msgp round trip: %s", got)
	}
	js, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"object":`+raw) {
		t.Errorf("JSON carries the object as %s", js)
	}
	var fromJSON abi.ReconcileRequest
	if err := json.Unmarshal(js, &fromJSON); err != nil {
		t.Fatal(err)
	}
	if got := string(fromJSON.Declared.Object.Object); got != raw {
		t.Errorf("JSON round trip: %s", got)
	}
}
