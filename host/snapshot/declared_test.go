package snapshot_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

func declaration(t *testing.T, subject abi.Resource, rels ...abi.Relation) *snapshot.Declaration {
	t.Helper()
	d, err := snapshot.CompileDeclaration(&abi.Watches{Subject: subject, Relations: rels})
	require.NoError(t, err)
	return d
}

// TestBuildDeclared: the input of a declared subject is the subject and
// every relation's objects, in the declaration's order, each whole with its
// apiVersion and kind (which a typed cache object lacks) and without
// managedFields.
func TestBuildDeclared(t *testing.T) {
	c := loadWorld(t, relationWorld, `
- {apiVersion: apps/v1, kind: Deployment, metadata: {name: managed, namespace: a, labels: {x: z},
   managedFields: [{manager: kubectl, operation: Apply}]}, spec: {replicas: 2}}
`)
	d := declaration(t, deployments, deploymentRe...)
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	b := &snapshot.Builder{Lister: c, Now: func() time.Time { return now }}
	req, err := b.Declared(d, "a/web", []byte(`{"k":1}`))
	require.NoError(t, err)
	require.Equal(t, "a/web", req.Key)
	require.Equal(t, `{"k":1}`, string(req.Config))
	require.Nil(t, req.StatefulSet)
	s := req.Declared.Object
	require.Equal(t, "apps/v1", s.APIVersion)
	require.Equal(t, "Deployment", s.Kind)
	require.Equal(t, "web-uid", s.Metadata.UID)
	var whole map[string]any
	require.NoError(t, json.Unmarshal(s.Object, &whole))
	require.Equal(t, map[string]any{"app": "web"}, whole["spec"].(map[string]any)["selector"].(map[string]any)["matchLabels"])

	var got []string
	for _, r := range req.Declared.Related {
		got = append(got, r.Relation)
		for _, o := range r.Objects {
			got = append(got, o.Kind+" "+o.Metadata.Namespace+"/"+o.Metadata.Name)
		}
	}
	require.Equal(t, []string{"replicaSets", "ReplicaSet a/web-1", "pods", "Pod a/web-a", "budget", "PodDisruptionBudget a/web",
		"classes", "StorageClass /fast"}, got)
	// A Pod is held in its Go type, which has no apiVersion and kind of
	// its own once cached: the request gives them.
	pod := req.Declared.Relation("pods")[0]
	var podJSON map[string]any
	require.NoError(t, json.Unmarshal(pod.Object, &podJSON))
	require.Equal(t, "v1", podJSON["apiVersion"])
	require.Equal(t, "Pod", podJSON["kind"])

	req, err = b.Declared(d, "a/managed", nil)
	require.NoError(t, err)
	require.NotContains(t, string(req.Declared.Object.Object), "managedFields")
	require.Equal(t, map[string]string{"x": "z"}, req.Declared.Object.Metadata.Labels)
	stored, err := c.GetObject("Deployment", "a", "managed")
	require.NoError(t, err)
	raw, err := json.Marshal(stored)
	require.NoError(t, err)
	require.Contains(t, string(raw), "managedFields", "the stored object was changed")

	req, err = b.Declared(d, "a/gone", nil)
	require.NoError(t, err)
	require.Nil(t, req)
	for _, key := range []string{"web", "a/", "/web", "a/b/c"} {
		_, err := b.Declared(d, key, nil)
		require.ErrorIs(t, err, snapshot.ErrBadKey, key)
	}
	pv := declaration(t, volumes)
	_, err = b.Declared(pv, "a/pv", nil)
	require.ErrorIs(t, err, snapshot.ErrBadKey)
}

// TestDeclarationKeysAndIndexes: two relations of one kind queue the
// subjects of both, each once; every index is listed once.
func TestDeclarationKeysAndIndexes(t *testing.T) {
	c := loadWorld(t, relationWorld)
	d := declaration(t, deployments, append(deploymentRe,
		abi.Relation{Name: "samePods", Type: abi.RelationSelected, Path: "spec.selector", Resource: pods},
		abi.Relation{Name: "namedPod", Type: abi.RelationNamed, Path: "spec.podName", Resource: pods})...)
	require.Len(t, d.Indexes(), 7) // controller-uid, 2 × namespace, 2 × named, 2 × all
	var kinds []string
	for _, r := range d.Kinds() {
		kinds = append(kinds, r.Kind)
	}
	require.Equal(t, []string{"Deployment", "ReplicaSet", "Pod", "PodDisruptionBudget", "StorageClass"}, kinds)
	keys := d.RelatedKeys()
	require.Len(t, keys, 4)
	pod, err := c.GetObject("Pod", "a", "web-a")
	require.NoError(t, err)
	got, err := keys["Pod"](pod, c)
	require.NoError(t, err)
	require.Equal(t, []string{"a/other", "a/web"}, got)
}

// TestBuildDeclaredIsBounded: a request whose objects together pass
// abi.MaxDeclaredRequestBytes is refused as it grows, naming the relation.
func TestBuildDeclaredIsBounded(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	var b strings.Builder
	b.WriteString("- {apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: a}, spec: {}}\n")
	for i := range abi.MaxDeclaredRequestBytes>>20 + 1 {
		fmt.Fprintf(&b, "- {apiVersion: example.com/v1, kind: Widget, metadata: {name: w%02d, namespace: a}, data: %s}\n", i, big)
	}
	c := loadWorld(t, b.String())
	yes := true
	widgets := abi.Resource{Group: "example.com", Version: "v1", Resource: "widgets", Kind: "Widget", Namespaced: &yes}
	d := declaration(t, deployments, abi.Relation{Name: "widgets", Type: abi.RelationAll, InNamespace: true, Resource: widgets})
	_, err := (&snapshot.Builder{Lister: c}).Declared(d, "a/web", nil)
	require.ErrorContains(t, err, "the input of deployments a/web is more than 16777216 bytes of objects by relation widgets (at a/w15)") // each object a little over 1 MiB
}
