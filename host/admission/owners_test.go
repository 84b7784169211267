package admission_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/admission"
	"github.com/kubeplug/kubeplug/host/memcluster"
)

// ownersGrant is what retention's manifest asks for and its allow: grants.
var ownersGrant = []abi.Capability{{Action: abi.CapabilityMutate, Resources: []string{"persistentvolumeclaims"}, Paths: []string{"/metadata/ownerReferences"}}}

// ownersCluster is the host's caches: StatefulSet web (uid set-uid) with its
// pod web-0, and another set db with its pod db-0, in namespace default.
func ownersCluster(t *testing.T, setMeta map[string]any) *memcluster.Cluster {
	t.Helper()
	set := func(name, uid string) map[string]any {
		meta := map[string]any{"name": name, "namespace": "default", "uid": uid}
		if name == "web" {
			for k, v := range setMeta {
				meta[k] = v
			}
		}
		return map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta,
			"spec": map[string]any{"replicas": 2, "volumeClaimTemplates": []any{map[string]any{"metadata": map[string]any{"name": "data"}}}}}
	}
	pod := func(set, setUID, name, uid string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name, "namespace": "default", "uid": uid,
			"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": set, "uid": setUID, "controller": true}}}}
	}
	c := memcluster.New(memcluster.Config{})
	require.NoError(t, c.Load(set("web", "set-uid"), pod("web", "set-uid", "web-0", "pod-0"), set("db", "db-uid"), pod("db", "db-uid", "db-0", "db-pod-0")))
	return c
}

const (
	setRef     = `{"apiVersion":"apps/v1","kind":"StatefulSet","name":"web","uid":"set-uid","controller":true,"blockOwnerDeletion":true}`
	podRef     = `{"apiVersion":"v1","kind":"Pod","name":"web-0","uid":"pod-0","controller":true,"blockOwnerDeletion":true}`
	otherRef   = `{"apiVersion":"v1","kind":"ConfigMap","name":"web-config","uid":"cm-uid"}`
	foreignRef = `{"apiVersion":"example.com/v1","kind":"DatabaseCluster","name":"pg","uid":"pg-uid","controller":true}`
)

func claimOwnedBy(refs string) string {
	meta := `"name":"data-web-0","namespace":"default"`
	if refs != "" {
		meta += `,"ownerReferences":` + refs
	}
	return `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{` + meta + `},"spec":{"resources":{"requests":{"storage":"1Gi"}}}}`
}

// An admit patch is held to the executor's owner-reference rule: whatever
// its mutate capability lets it touch, a module may give an object only
// references to the subject StatefulSet and its pods in the input, in the
// object's namespace, well formed, at most one controller, and none to an
// owner being deleted with orphan propagation. References the object had
// already, in the same form, are not held.
func TestPatchOwnerReferences(t *testing.T) {
	tests := []struct {
		name    string
		object  string // the claim's ownerReferences as created, JSON; "" for none
		grant   []string
		setMeta map[string]any
		patch   []abi.PatchOperation
		want    string // the refusal, "" when the patch is applied
		refs    string // the references after an applied patch
	}{{
		name:  "the set's controller reference, as retention stamps it",
		patch: []abi.PatchOperation{op("add", "/metadata/ownerReferences", "["+setRef+"]")},
		refs:  "[" + setRef + "]",
	}, {
		name:   "appended after another owner's reference, which is not held",
		object: "[" + otherRef + "]",
		patch:  []abi.PatchOperation{op("add", "/metadata/ownerReferences/-", setRef)},
		refs:   "[" + otherRef + "," + setRef + "]",
	}, {
		name:  "one of the set's pods",
		patch: []abi.PatchOperation{op("add", "/metadata/ownerReferences", "["+podRef+"]")},
		refs:  "[" + podRef + "]",
	}, {
		name:   "a reference removed is not held",
		object: "[" + foreignRef + "]",
		patch:  []abi.PatchOperation{op("remove", "/metadata/ownerReferences/0", "")},
		refs:   "[]",
	}, {
		name:  "another StatefulSet",
		patch: []abi.PatchOperation{op("add", "/metadata/ownerReferences", `[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"db","uid":"db-uid","controller":true}]`)},
		want:  "StatefulSet db (apps/v1, uid db-uid) is neither the subject StatefulSet nor one of its pods",
	}, {
		name:  "another set's pod",
		patch: []abi.PatchOperation{op("add", "/metadata/ownerReferences", `[{"apiVersion":"v1","kind":"Pod","name":"db-0","uid":"db-pod-0"}]`)},
		want:  "neither the subject StatefulSet nor one of its pods",
	}, {
		name:  "the set's name with a uid not in the input",
		patch: []abi.PatchOperation{op("add", "/metadata/ownerReferences", `[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"web","uid":"earlier-set-uid","controller":true}]`)},
		want:  "uid earlier-set-uid) is neither the subject",
	}, {
		name:  "a pod uid not in the input",
		patch: []abi.PatchOperation{op("add", "/metadata/ownerReferences", `[{"apiVersion":"v1","kind":"Pod","name":"web-1","uid":"pod-1"}]`)},
		want:  "neither the subject",
	}, {
		name:  "a cluster-scoped object",
		patch: []abi.PatchOperation{op("add", "/metadata/ownerReferences", `[{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","name":"fast","uid":"class-uid"}]`)},
		want:  "StorageClass fast (storage.k8s.io/v1, uid class-uid) is neither the subject",
	}, {
		name:   "the list replaced",
		object: "[" + otherRef + "]",
		patch:  []abi.PatchOperation{op("replace", "/metadata/ownerReferences", `[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"db","uid":"db-uid"}]`)},
		want:   "metadata.ownerReferences[0]: StatefulSet db",
	}, {
		name:   "an existing reference made a controller",
		object: "[" + otherRef + "]",
		patch:  []abi.PatchOperation{op("add", "/metadata/ownerReferences/0/controller", "true")},
		want:   "ConfigMap web-config (v1, uid cm-uid) is neither the subject",
	}, {
		name:  "metadata replaced whole by a module granted /metadata",
		grant: []string{"/metadata"},
		patch: []abi.PatchOperation{op("replace", "/metadata", `{"name":"data-web-0","namespace":"default","ownerReferences":[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"db","uid":"db-uid"}]}`)},
		want:  "StatefulSet db",
	}, {
		name:  "a reference moved in from another field",
		grant: []string{"/metadata"},
		patch: []abi.PatchOperation{
			op("add", "/metadata/labels", `{"x":"y"}`),
			op("add", "/metadata/annotations", `[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"db","uid":"db-uid"}]`),
			{Op: "move", From: "/metadata/annotations", Path: "/metadata/ownerReferences"},
		},
		want: "StatefulSet db",
	}, {
		name:   "a second controller",
		object: "[" + foreignRef + "]",
		patch:  []abi.PatchOperation{op("add", "/metadata/ownerReferences/-", setRef)},
		want:   "2 controller references; the API server accepts at most one",
	}, {
		name:    "the set being deleted with orphan propagation",
		setMeta: map[string]any{"deletionTimestamp": "2026-01-01T12:00:00Z", "finalizers": []any{"orphan"}},
		patch:   []abi.PatchOperation{op("add", "/metadata/ownerReferences", "["+setRef+"]")},
		want:    `is being deleted with orphan propagation (finalizer "orphan")`,
	}, {
		name:  "an Event",
		patch: []abi.PatchOperation{op("add", "/metadata/ownerReferences", `[{"apiVersion":"v1","kind":"Event","name":"e","uid":"e-uid"}]`)},
		want:  "an Event cannot own objects",
	}, {
		name:  "a reference without a uid",
		patch: []abi.PatchOperation{op("add", "/metadata/ownerReferences", `[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"web"}]`)},
		want:  "needs apiVersion, kind, name and uid",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &admission.Reviewer{Lister: ownersCluster(t, tt.setMeta)}
			grant := ownersGrant
			if tt.grant != nil {
				grant = []abi.Capability{{Action: abi.CapabilityMutate, Resources: []string{"persistentvolumeclaims"}, Paths: tt.grant}}
			}
			fake := &fakeAdmitter{mutates: true, rules: claimRules, answer: &abi.AdmitResponse{Allowed: true, Patch: tt.patch}}
			m := &admission.Module{Name: "retention", Admitter: fake, Granted: grant, FailurePolicy: admission.Ignore}
			req := claimCreate()
			req.Object = runtime.RawExtension{Raw: []byte(claimOwnedBy(tt.object))}
			o := r.Review(context.Background(), m, req, 0)
			require.True(t, o.Response.Allowed, "%v", o.Response.Result)
			if tt.want == "" {
				require.NoError(t, o.Failure)
				require.Equal(t, "mutated", o.Result())
				require.JSONEq(t, claimOwnedBy(tt.refs), string(o.Object))
				return
			}
			// Refused: the failure policy answers (Ignore: the claim is
			// created as it was sent, with no patch).
			require.ErrorIs(t, o.Failure, admission.ErrPatch)
			require.ErrorContains(t, o.Failure, tt.want)
			require.Equal(t, "failed-open", o.Result())
			require.Nil(t, o.Response.Patch)
			require.Equal(t, req.Object.Raw, o.Object)
		})
	}
}

// Under failurePolicy Fail a refused reference denies the request, saying
// why.
func TestPatchOwnerReferencesFailClosed(t *testing.T) {
	r := &admission.Reviewer{Lister: ownersCluster(t, nil)}
	fake := &fakeAdmitter{mutates: true, rules: claimRules, answer: &abi.AdmitResponse{Allowed: true, Patch: []abi.PatchOperation{
		op("add", "/metadata/ownerReferences", `[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"db","uid":"db-uid"}]`)}}}
	m := &admission.Module{Name: "retention", Admitter: fake, Granted: ownersGrant}
	req := claimCreate()
	req.Object = runtime.RawExtension{Raw: []byte(claimOwnedBy(""))}
	o := r.Review(context.Background(), m, req, 0)
	require.False(t, o.Response.Allowed)
	require.Equal(t, "failed-closed", o.Result())
	require.Contains(t, o.Response.Result.Message, "patch refused: the patch gives the PersistentVolumeClaim default/data-web-0 metadata.ownerReferences[0]: StatefulSet db")
}

// A module whose subject is not a StatefulSet has no set in its input: it
// may give no reference at all.
func TestPatchOwnerReferencesWithoutASet(t *testing.T) {
	fake := &fakeAdmitter{mutates: true, rules: claimRules, answer: &abi.AdmitResponse{Allowed: true, Patch: []abi.PatchOperation{
		op("add", "/metadata/ownerReferences", "["+setRef+"]")}}}
	m := &admission.Module{Name: "retention", Admitter: fake, Granted: ownersGrant}
	req := claimCreate()
	req.Object = runtime.RawExtension{Raw: []byte(claimOwnedBy(""))}
	o := (&admission.Reviewer{}).Review(context.Background(), m, req, 0)
	require.ErrorIs(t, o.Failure, admission.ErrPatch)
	require.ErrorContains(t, o.Failure, "neither the subject StatefulSet nor one of its pods")
}
