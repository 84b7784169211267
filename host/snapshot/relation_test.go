package snapshot_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/memcluster"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// relationWorld holds two Deployments of namespace a that relate to other
// objects in each way a declaration can say, and decoys for each: another
// namespace, another owner, an owner that is not the controller, labels
// that do not match.
const relationWorld = `
- {apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: a, uid: web-uid},
   spec: {selector: {matchLabels: {app: web}}}}
- {apiVersion: apps/v1, kind: Deployment, metadata: {name: other, namespace: a, uid: other-uid},
   spec: {selector: {matchExpressions: [{key: app, operator: In, values: [other, web]}]}}}
- {apiVersion: apps/v1, kind: Deployment, metadata: {name: bare, namespace: a, uid: bare-uid}, spec: {}}
- {apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: web-1, namespace: a,
   ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: web-uid, controller: true}]}}
- {apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: web-2, namespace: b,
   ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: web-uid, controller: true}]}}
- {apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: web-3, namespace: a,
   ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: web-uid}]}}
- {apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: web-4, namespace: a,
   ownerReferences: [{apiVersion: example.com/v1, kind: Deployment, name: web, uid: web-uid, controller: true}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: web-a, namespace: a, labels: {app: web}}}
- {apiVersion: v1, kind: Pod, metadata: {name: web-b, namespace: b, labels: {app: web}}}
- {apiVersion: v1, kind: Pod, metadata: {name: other-a, namespace: a, labels: {app: other}}}
- {apiVersion: v1, kind: Pod, metadata: {name: none-a, namespace: a}}
- {apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: web, namespace: a}}
- {apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: web, namespace: b}}
- {apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: fast, labels: {tier: a}}, provisioner: x}
- {apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: slow, labels: {tier: c}}, provisioner: x}
`

func declaredResource(group, resource, kind string, namespaced bool) abi.Resource {
	return abi.Resource{Group: group, Version: "v1", Resource: resource, Kind: kind, Namespaced: &namespaced}
}

var (
	deployments  = declaredResource("apps", "deployments", "Deployment", true)
	replicaSets  = declaredResource("apps", "replicasets", "ReplicaSet", true)
	pods         = declaredResource("", "pods", "Pod", true)
	budgets      = declaredResource("policy", "poddisruptionbudgets", "PodDisruptionBudget", true)
	classes      = declaredResource("storage.k8s.io", "storageclasses", "StorageClass", false)
	volumes      = declaredResource("", "persistentvolumes", "PersistentVolume", false)
	claims       = declaredResource("", "persistentvolumeclaims", "PersistentVolumeClaim", true)
	deploymentRe = []abi.Relation{
		{Name: "replicaSets", Type: abi.RelationOwned, Resource: replicaSets},
		{Name: "pods", Type: abi.RelationSelected, Path: "spec.selector", Resource: pods},
		{Name: "budget", Type: abi.RelationNamed, Path: "metadata.name", Resource: budgets},
		{Name: "classes", Type: abi.RelationAll, LabelSelector: "tier in (a,b)", Resource: classes},
	}
)

func loadWorld(t *testing.T, docs ...string) *memcluster.Cluster {
	t.Helper()
	c := memcluster.New(memcluster.Config{})
	for _, d := range docs {
		var objs []map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(d), &objs))
		require.NoError(t, c.Load(objs...))
	}
	return c
}

func names(t *testing.T, objs []runtime.Object) []string {
	t.Helper()
	out := []string{}
	for _, o := range objs {
		m, err := meta.Accessor(o)
		require.NoError(t, err)
		out = append(out, strings.TrimPrefix(m.GetNamespace()+"/"+m.GetName(), "/"))
	}
	return out
}

// TestRelationObjects: each relation type reads what its declaration says
// and nothing of the decoys.
func TestRelationObjects(t *testing.T) {
	c := loadWorld(t, relationWorld)
	rels, err := snapshot.CompileRelations(deployments, deploymentRe)
	require.NoError(t, err)
	for _, tc := range []struct {
		subject string
		want    map[string][]string
	}{
		{"web", map[string][]string{
			"replicaSets": {"a/web-1"}, "pods": {"a/web-a"}, "budget": {"a/web"}, "classes": {"fast"},
		}},
		{"other", map[string][]string{
			"replicaSets": {}, "pods": {"a/other-a", "a/web-a"}, "budget": {}, "classes": {"fast"},
		}},
		// No selector selects nothing, not every pod of the namespace.
		{"bare", map[string][]string{
			"replicaSets": {}, "pods": {}, "budget": {}, "classes": {"fast"},
		}},
	} {
		subject, err := c.GetObject("Deployment", "a", tc.subject)
		require.NoError(t, err)
		for _, r := range rels {
			objs, err := r.Objects(c, subject)
			require.NoError(t, err)
			require.Equal(t, tc.want[r.Name()], names(t, objs), "%s of %s", r.Name(), tc.subject)
		}
	}
}

// TestRelationSubjectKeys: a change of a related object queues exactly the
// subjects whose relation holds it.
func TestRelationSubjectKeys(t *testing.T) {
	c := loadWorld(t, relationWorld)
	rels, err := snapshot.CompileRelations(deployments, deploymentRe)
	require.NoError(t, err)
	byName := map[string]*snapshot.Relation{}
	for _, r := range rels {
		byName[r.Name()] = r
	}
	for _, tc := range []struct {
		relation, kind, namespace, name string
		want                            []string
	}{
		{"replicaSets", "ReplicaSet", "a", "web-1", []string{"a/web"}},
		// The controller named in another namespace is that namespace's
		// Deployment, which the builder then does not find by uid.
		{"replicaSets", "ReplicaSet", "b", "web-2", []string{"b/web"}},
		{"replicaSets", "ReplicaSet", "a", "web-3", nil},
		{"replicaSets", "ReplicaSet", "a", "web-4", nil},
		{"pods", "Pod", "a", "web-a", []string{"a/other", "a/web"}},
		{"pods", "Pod", "a", "other-a", []string{"a/other"}},
		{"pods", "Pod", "b", "web-b", nil},
		{"pods", "Pod", "a", "none-a", nil},
		{"budget", "PodDisruptionBudget", "a", "web", []string{"a/web"}},
		{"budget", "PodDisruptionBudget", "b", "web", nil},
		{"classes", "StorageClass", "", "fast", []string{"a/bare", "a/other", "a/web"}},
		{"classes", "StorageClass", "", "slow", nil},
	} {
		obj, err := c.GetObject(tc.kind, tc.namespace, tc.name)
		require.NoError(t, err)
		got, err := byName[tc.relation].SubjectKeys(obj, c)
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "%s %s/%s", tc.relation, tc.namespace, tc.name)
	}
}

// TestRelationOfAClusterScopedSubject: a volume's claimRef names a claim
// in the namespace the reference gives; a plain name of a namespaced
// object names nothing, the subject having no namespace to put it in.
func TestRelationOfAClusterScopedSubject(t *testing.T) {
	c := loadWorld(t, `
- {apiVersion: v1, kind: PersistentVolume, metadata: {name: pv-1}, spec: {claimRef: {namespace: a, name: data}, storageClassName: data}}
- {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data, namespace: a}}
- {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data, namespace: b}}
`)
	rels, err := snapshot.CompileRelations(volumes, []abi.Relation{
		{Name: "claim", Type: abi.RelationNamed, Path: "spec.claimRef", Resource: claims},
		{Name: "byClass", Type: abi.RelationNamed, Path: "spec.storageClassName", Resource: claims},
	})
	require.NoError(t, err)
	pv, err := c.GetObject("PersistentVolume", "", "pv-1")
	require.NoError(t, err)
	objs, err := rels[0].Objects(c, pv)
	require.NoError(t, err)
	require.Equal(t, []string{"a/data"}, names(t, objs))
	objs, err = rels[1].Objects(c, pv)
	require.NoError(t, err)
	require.Empty(t, objs)
	claim, err := c.GetObject("PersistentVolumeClaim", "a", "data")
	require.NoError(t, err)
	keys, err := rels[0].SubjectKeys(claim, c)
	require.NoError(t, err)
	require.Equal(t, []string{"pv-1"}, keys)
}

// TestRelationFanOutIsBounded: a relation holding more than
// abi.MaxRelatedObjects fails the build of that subject's input, saying
// which relation and what to do, rather than sending it all.
func TestRelationFanOutIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("- {apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: a}, spec: {selector: {matchLabels: {app: web}}}}\n")
	for i := range abi.MaxRelatedObjects + 1 {
		fmt.Fprintf(&b, "- {apiVersion: v1, kind: Pod, metadata: {name: p%d, namespace: a, labels: {app: web}}}\n", i)
	}
	c := loadWorld(t, b.String())
	rels, err := snapshot.CompileRelations(deployments, deploymentRe[1:2])
	require.NoError(t, err)
	subject, err := c.GetObject("Deployment", "a", "web")
	require.NoError(t, err)
	_, err = rels[0].Objects(c, subject)
	require.ErrorContains(t, err, "relation pods of Deployment a/web holds 1001 pods, more than 1000: narrow it")
}

// TestCompileRelationsRefuses what abi could not check before discovery
// gave the scopes, and what only the host parses.
func TestCompileRelationsRefuses(t *testing.T) {
	unresolved := deployments
	unresolved.Kind = ""
	for _, tc := range []struct {
		name    string
		subject abi.Resource
		rel     abi.Relation
		want    string
	}{
		{"an unresolved subject", unresolved, deploymentRe[0], "subject deployments.apps/v1 is not resolved"},
		{"selected under a cluster-scoped subject", volumes, abi.Relation{Name: "pods", Type: abi.RelationSelected, Path: "spec.selector", Resource: pods},
			"relation 0 (pods) selects pods in the subject's namespace, but persistentvolumes are cluster-scoped"},
		{"selected cluster-scoped objects", deployments, abi.Relation{Name: "classes", Type: abi.RelationSelected, Path: "spec.selector", Resource: classes},
			"selects storageclasses in the subject's namespace, but they are cluster-scoped: use a relation of type all"},
		{"inNamespace of cluster-scoped objects", deployments, abi.Relation{Name: "classes", Type: abi.RelationAll, InNamespace: true, Resource: classes},
			"inNamespace needs a namespaced subject and namespaced storageclasses"},
		{"a selector that does not parse", deployments, abi.Relation{Name: "classes", Type: abi.RelationAll, LabelSelector: "tier in (", Resource: classes},
			`labelSelector "tier in ("`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := snapshot.CompileRelations(tc.subject, []abi.Relation{tc.rel})
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestNamedFanOutIsBounded: a subject whose path names more objects than a
// relation may bring fails its build before it reads them, and the index
// keeps no more of its names than that proves.
func TestNamedFanOutIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("- {apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: a}, spec: {budgets: [")
	for i := range 3 * abi.MaxRelatedObjects {
		fmt.Fprintf(&b, "{name: b%d}, ", i%(abi.MaxRelatedObjects+5))
	}
	b.WriteString("]}}\n")
	c := loadWorld(t, b.String())
	rels, err := snapshot.CompileRelations(deployments, []abi.Relation{{Name: "budgets", Type: abi.RelationNamed, Path: "spec.budgets", Resource: budgets}})
	require.NoError(t, err)
	subject, err := c.GetObject("Deployment", "a", "web")
	require.NoError(t, err)
	_, err = rels[0].Objects(c, subject)
	require.ErrorContains(t, err, "relation budgets of a/web: its path spec.budgets names more than 1000 poddisruptionbudgets: narrow it")
	keys, err := rels[0].Indexes()[0].Keys(subject)
	require.NoError(t, err)
	require.Len(t, keys, abi.MaxRelatedObjects+1, "repeated names count once, and the index stops past the bound")
}
