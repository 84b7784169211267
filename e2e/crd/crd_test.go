package crd

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

var vcuResource = schema.GroupVersionResource{Group: "kubeplug.dev", Version: "v1alpha1", Resource: "volumeclaimupdates"}

// vcus returns the dynamic client for VolumeClaimUpdates in a fresh namespace.
func vcus(t *testing.T) (dynamic.ResourceInterface, string) {
	t.Helper()
	install(t)
	ns := testenv.Namespace(t, cp.Client())
	return dynamic.NewForConfigOrDie(cp.Config).Resource(vcuResource).Namespace(ns), ns
}

// object decodes a VolumeClaimUpdate written as JSON.
func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("test object: %v\n%s", err, doc)
	}
	return u
}

const valid = `{
  "apiVersion": "kubeplug.dev/v1alpha1", "kind": "VolumeClaimUpdate",
  "metadata": {"name": "data"},
  "spec": {
    "statefulSetName": "web",
    "volumeClaimTemplates": [
      {"metadata": {"name": "data", "labels": {"tier": "gold"}},
       "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                "volumeAttributesClassName": "gold",
                "resources": {"requests": {"storage": "2Gi"}, "limits": {"storage": 4294967296}}}},
      {"metadata": {"name": "logs"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}}
    ]
  }
}`

func TestValidObjectGetsDefaults(t *testing.T) {
	c, _ := vcus(t)
	got, err := c.Create(context.Background(), object(t, valid), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create a valid VolumeClaimUpdate: %v", err)
	}
	for field, want := range map[string]string{"volumeClaimUpdateStrategy": "OnDelete", "volumeClaimSyncStrategy": "Async"} {
		v, _, _ := unstructured.NestedString(got.Object, "spec", field)
		if v != want {
			t.Errorf("spec.%s = %q, want the default %q", field, v, want)
		}
	}
	// Explicit values are kept.
	explicit := object(t, valid)
	explicit.SetName("explicit")
	_ = unstructured.SetNestedField(explicit.Object, "InPlace", "spec", "volumeClaimUpdateStrategy")
	_ = unstructured.SetNestedField(explicit.Object, "LockStep", "spec", "volumeClaimSyncStrategy")
	got, err = c.Create(context.Background(), explicit, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create InPlace/LockStep: %v", err)
	}
	if v, _, _ := unstructured.NestedString(got.Object, "spec", "volumeClaimSyncStrategy"); v != "LockStep" {
		t.Errorf("spec.volumeClaimSyncStrategy = %q, want LockStep", v)
	}
}

func TestRefused(t *testing.T) {
	c, _ := vcus(t)
	for _, tc := range []struct {
		name   string
		edit   func(u *unstructured.Unstructured)
		detail []string // what the API server's message must say
	}{{
		name: "unknown update strategy",
		edit: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "Sometimes", "spec", "volumeClaimUpdateStrategy")
		},
		detail: []string{"spec.volumeClaimUpdateStrategy", `"Sometimes"`, `"OnDelete"`, `"InPlace"`},
	}, {
		name: "unknown sync strategy",
		edit: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "Eventually", "spec", "volumeClaimSyncStrategy")
		},
		detail: []string{"spec.volumeClaimSyncStrategy", `"Async"`, `"LockStep"`},
	}, {
		name:   "duplicate template names",
		edit:   templateField(1, "data", "metadata", "name"),
		detail: []string{"spec.volumeClaimTemplates", "template names must be unique"},
	}, {
		name:   "storage request not a quantity",
		edit:   templateField(0, "lots", "spec", "resources", "requests", "storage"),
		detail: []string{"spec.volumeClaimTemplates[0].spec.resources.requests[storage]", `"lots"`, "must be a quantity"},
	}, {
		name:   "storage limit not a quantity",
		edit:   templateField(1, "1 GiB", "spec", "resources", "limits", "storage"),
		detail: []string{"spec.volumeClaimTemplates[1].spec.resources.limits[storage]", "must be a quantity"},
	}, {
		name:   "negative storage request",
		edit:   templateField(0, "-1Gi", "spec", "resources", "requests", "storage"),
		detail: []string{"spec.volumeClaimTemplates[0].spec.resources.requests[storage]", "must not be negative"},
	}, {
		name: "missing statefulSetName",
		edit: func(u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "spec", "statefulSetName")
		},
		detail: []string{"spec.statefulSetName", "Required value"},
	}, {
		name: "empty statefulSetName",
		edit: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "", "spec", "statefulSetName")
		},
		detail: []string{"spec.statefulSetName"},
	}, {
		name: "no templates",
		edit: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(u.Object, []any{}, "spec", "volumeClaimTemplates")
		},
		detail: []string{"spec.volumeClaimTemplates"},
	}, {
		name:   "unknown access mode",
		edit:   templateField(0, []any{"ReadWriteSometimes"}, "spec", "accessModes"),
		detail: []string{"spec.volumeClaimTemplates[0].spec.accessModes[0]", "ReadWriteOnce"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			u := object(t, valid)
			tc.edit(u)
			_, err := c.Create(context.Background(), u, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create: got %v, want Invalid", err)
			}
			for _, d := range tc.detail {
				if !strings.Contains(err.Error(), d) {
					t.Errorf("message %q does not say %q", err, d)
				}
			}
		})
	}
}

// templateField sets the field at path of template i.
func templateField(i int, value any, path ...string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		ts, _, _ := unstructured.NestedSlice(u.Object, "spec", "volumeClaimTemplates")
		_ = unstructured.SetNestedField(ts[i].(map[string]any), value, path...)
		_ = unstructured.SetNestedSlice(u.Object, ts, "spec", "volumeClaimTemplates")
	}
}

func TestStatefulSetNameImmutable(t *testing.T) {
	c, _ := vcus(t)
	if _, err := c.Create(context.Background(), object(t, valid), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Patch(context.Background(), "data", types.MergePatchType, []byte(`{"spec":{"statefulSetName":"other"}}`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "statefulSetName is immutable") || !strings.Contains(err.Error(), "create another VolumeClaimUpdate") {
		t.Fatalf("change statefulSetName: got %v, want Invalid saying statefulSetName is immutable", err)
	}
	// Other spec fields may change.
	if _, err := c.Patch(context.Background(), "data", types.MergePatchType, []byte(`{"spec":{"volumeClaimUpdateStrategy":"InPlace"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("change volumeClaimUpdateStrategy: %v", err)
	}
}

const status = `{"status": {
  "observedGeneration": 1, "heldPartition": 3, "userPartition": 1,
  "volumeClaimTemplates": [
    {"templateName": "data", "compatibleReplicas": 2, "updatingReplicas": 1, "overSizedReplicas": 0, "totalCapacity": {"storage": "6Gi"}},
    {"templateName": "logs", "compatibleReplicas": 3, "updatingReplicas": 0}
  ],
  "conditions": [
    {"type": "Progressing", "status": "True", "reason": "ClaimsUpdating", "message": "data-web-2 grows to 2Gi", "lastTransitionTime": "2026-01-02T03:04:05Z", "observedGeneration": 1},
    {"type": "Blocked", "status": "True", "reason": "StorageClassDoesNotAllowExpansion", "message": "class fast", "lastTransitionTime": "2026-01-02T03:04:05Z", "observedGeneration": 1}
  ]
}}`

func TestStatusSubresource(t *testing.T) {
	c, _ := vcus(t)
	created, err := c.Create(context.Background(), object(t, valid), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Status on the main resource is ignored.
	withStatus := object(t, status)
	created.Object["status"] = withStatus.Object["status"]
	updated, err := c.Update(context.Background(), created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := updated.Object["status"]; ok {
		t.Errorf("an update of the main resource set status: %v", updated.Object["status"])
	}
	// A status patch sets status and leaves spec alone, even when it carries spec.
	patch := object(t, status)
	patch.Object["spec"] = map[string]any{"statefulSetName": "other", "volumeClaimUpdateStrategy": "InPlace"}
	body, _ := json.Marshal(patch.Object)
	got, err := c.Patch(context.Background(), "data", types.MergePatchType, body, metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatalf("status patch: %v", err)
	}
	if v, _, _ := unstructured.NestedString(got.Object, "spec", "statefulSetName"); v != "web" {
		t.Errorf("a status patch changed spec.statefulSetName to %q", v)
	}
	if v, _, _ := unstructured.NestedString(got.Object, "spec", "volumeClaimUpdateStrategy"); v != "OnDelete" {
		t.Errorf("a status patch changed spec.volumeClaimUpdateStrategy to %q", v)
	}
	if v, _, _ := unstructured.NestedInt64(got.Object, "status", "heldPartition"); v != 3 {
		t.Errorf("status.heldPartition = %d, want 3", v)
	}
	// A spec change keeps status.
	got, err = c.Patch(context.Background(), "data", types.MergePatchType, []byte(`{"spec":{"volumeClaimSyncStrategy":"LockStep"}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedInt64(got.Object, "status", "userPartition"); v != 1 {
		t.Errorf("after a spec patch status.userPartition = %d, want 1 kept", v)
	}
	if got.GetGeneration() != 2 {
		t.Errorf("generation %d after one spec change, want 2", got.GetGeneration())
	}
	// A negative partition is refused.
	if _, err := c.Patch(context.Background(), "data", types.MergePatchType, []byte(`{"status":{"heldPartition":-1}}`), metav1.PatchOptions{}, "status"); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.heldPartition") {
		t.Errorf("negative heldPartition: got %v", err)
	}
	// So is one beyond int32: the API server does not hold integers to
	// their format, only to minimum and maximum.
	if _, err := c.Patch(context.Background(), "data", types.MergePatchType, []byte(`{"status":{"userPartition":4294967299}}`), metav1.PatchOptions{}, "status"); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.userPartition") {
		t.Errorf("userPartition beyond int32: got %v", err)
	}
	// null removes the partition record, as the module's status writes do.
	got, err = c.Patch(context.Background(), "data", types.MergePatchType, []byte(`{"status":{"heldPartition":null,"userPartition":null}}`), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"heldPartition", "userPartition"} {
		if _, ok, _ := unstructured.NestedFieldNoCopy(got.Object, "status", f); ok {
			t.Errorf("status.%s still set after a null patch", f)
		}
	}
	if got.GetGeneration() != 2 {
		t.Errorf("generation %d after status writes, want 2", got.GetGeneration())
	}
}

func TestTableColumns(t *testing.T) {
	c, ns := vcus(t)
	if _, err := c.Create(context.Background(), object(t, valid), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Patch(context.Background(), "data", types.MergePatchType, []byte(status), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	rc := cp.Client().CoreV1().RESTClient() // any REST client of cp.Config reaches the path
	raw, err := rc.Get().AbsPath("/apis/kubeplug.dev/v1alpha1/namespaces", ns, "volumeclaimupdates").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("get the Table form: %v", err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatalf("decode Table: %v\n%s", err, raw)
	}
	var names []string
	for _, col := range table.ColumnDefinitions {
		names = append(names, col.Name)
	}
	want := []string{"Name", "StatefulSet", "Update", "Sync", "Compatible", "Updating", "Progressing", "Blocked", "Age"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("columns %v, want %v", names, want)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("%d rows, want 1", len(table.Rows))
	}
	cells := table.Rows[0].Cells
	wantCells := map[string]any{
		"Name": "data", "StatefulSet": "web", "Update": "OnDelete", "Sync": "Async",
		"Compatible": float64(2), "Updating": float64(1), // the first template's, decoded from JSON
		"Progressing": "True", "Blocked": "StorageClassDoesNotAllowExpansion",
	}
	for i, name := range names {
		w, ok := wantCells[name]
		if !ok {
			continue
		}
		if cells[i] != w {
			t.Errorf("column %s = %#v, want %#v", name, cells[i], w)
		}
	}
}

// InstallCRDs updates a CRD that is already there, and says which file and
// document is not a CRD.
func TestInstallCRDs(t *testing.T) {
	install(t)
	if err := testenv.InstallCRDs(context.Background(), cp.Config, testenv.ClaimUpdateCRD()); err != nil {
		t.Errorf("install again (update): %v", err)
	}
	ns := filepath.Join(testenv.Root(), "deploy", "base", "namespace.yaml")
	err := testenv.InstallCRDs(context.Background(), cp.Config, ns)
	if err == nil || !strings.Contains(err.Error(), ns+": document 1 is v1 Namespace, not an apiextensions.k8s.io/v1 CustomResourceDefinition") {
		t.Errorf("install namespace.yaml: got %v", err)
	}
}
