package kube_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/kube"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

func claimNamed(ns, name string) *corev1.PersistentVolumeClaim {
	c := richClaim(name)
	c.Namespace = ns
	c.UID = types.UID("uid-" + ns + "-" + name)
	c.DeletionTimestamp = nil
	return c
}

// scanLister is the reference the cache's indexes must agree with: every
// object of the index's kind in the key's namespace, which the builder
// filters itself.
type scanLister struct {
	objs map[string][]runtime.Object // by kind
}

func (l *scanLister) add(kind string, o runtime.Object) {
	if l.objs == nil {
		l.objs = map[string][]runtime.Object{}
	}
	l.objs[kind] = append(l.objs[kind], o)
}

func (l *scanLister) GetObject(kind, ns, name string) (runtime.Object, error) {
	for _, o := range l.objs[kind] {
		if m, _ := apimeta.Accessor(o); m.GetNamespace() == ns && m.GetName() == name {
			return o, nil
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: abi.KindOf(kind).Resource}, name)
}

func (l *scanLister) ByIndex(idx snapshot.Index, key string) ([]runtime.Object, error) {
	ns, _, _ := strings.Cut(key, "/")
	var out []runtime.Object
	for _, o := range l.objs[idx.Kind] {
		if m, _ := apimeta.Accessor(o); m.GetNamespace() == ns {
			out = append(out, o)
		}
	}
	return out, nil
}

// TestCacheFindsWhatAScanFinds: a StatefulSet's input built from the
// cache's indexes (over slimmed objects) is the input built from a scan of
// its namespace (over whole objects), for sets whose names overlap, claims
// of removed replicas, claims owned by nobody, pods of other controllers,
// and the same names in another namespace.
func TestCacheFindsWhatAScanFinds(t *testing.T) {
	ref := &scanLister{}
	var sets []*appsv1.StatefulSet
	var objs []runtime.Object
	// add gives ref an object and the cache a copy of it.
	add := func(kind string, o runtime.Object) {
		ref.add(kind, o)
		objs = append(objs, o.DeepCopyObject())
	}
	add(abi.KindStorageClass, richClass())
	yes := true
	for _, ns := range []string{"a", "b"} {
		for _, name := range []string{"web", "a-web", "web-1"} {
			s := richSet()
			s.Namespace, s.Name, s.UID = ns, name, types.UID(ns+"-"+name)
			s.DeletionTimestamp = nil
			sets = append(sets, s)
			add(abi.KindStatefulSet, s)
			for o := range 3 {
				p := richPod()
				p.Namespace, p.Name, p.UID = ns, fmt.Sprintf("%s-%d", name, o), types.UID(fmt.Sprintf("%s-%s-%d", ns, name, o))
				p.DeletionTimestamp = nil
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name, UID: s.UID, Controller: &yes}}
				add(abi.KindPod, p)
			}
			for _, c := range []string{"data-" + name + "-0", "logs-" + name + "-0", "data-" + name + "-7", "data-" + name + "-x", "other-" + name + "-0"} {
				add(abi.KindPersistentVolumeClaim, claimNamed(ns, c))
			}
		}
		stray := richPod()
		stray.Namespace, stray.Name, stray.UID, stray.OwnerReferences, stray.DeletionTimestamp = ns, "stray", types.UID(ns+"-stray"), nil, nil
		add(abi.KindPod, stray)
	}
	client := fake.NewSimpleClientset(objs...)
	c, err := kube.NewCache(client, dynfake.NewSimpleDynamicClient(runtime.NewScheme()), kube.Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.Start(ctx)
	require.True(t, c.WaitForSync(ctx))

	now := func() time.Time { return time.Unix(1700000000, 0) }
	indexed := &snapshot.Builder{Lister: c, Now: now}
	scanned := &snapshot.Builder{Lister: ref, Now: now}
	for _, s := range sets {
		key := s.Namespace + "/" + s.Name
		t.Run(key, func(t *testing.T) {
			want, err := scanned.StatefulSet(key, nil)
			require.NoError(t, err)
			got, err := indexed.StatefulSet(key, nil)
			require.NoError(t, err)
			require.Equal(t, want, got)
			require.Len(t, got.StatefulSet.Pods, 3)
			require.NotEmpty(t, got.StatefulSet.Claims)
		})
	}
}

// TestCacheIndexesFileAndMove: every index of snapshot.Indexes is an
// indexer of its kind's informer, which files an object under the keys its
// Keys gives and, as the object changes, moves it: a pod adopted by another
// controller, a VolumeClaimUpdate that names another set, a claim deleted.
func TestCacheIndexesFileAndMove(t *testing.T) {
	yes := true
	controlled := func(uid types.UID) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: uid, Controller: &yes}}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web-0", OwnerReferences: controlled("u1")}}
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "stray"}}
	update := richUpdate()
	update.SetNamespace("a")
	update.SetManagedFields(nil)

	client := fake.NewClientset(pod, orphan, claimNamed("a", "data-web-0"), claimNamed("b", "data-web-0"))
	client.Resources = []*metav1.APIResourceList{{
		GroupVersion: kube.ClaimUpdateGVR.GroupVersion().String(),
		APIResources: []metav1.APIResource{{Name: kube.ClaimUpdateGVR.Resource, Namespaced: true, Kind: abi.KindVolumeClaimUpdate}},
	}}
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{kube.ClaimUpdateGVR: abi.KindVolumeClaimUpdate + "List"}, update)
	c, err := kube.NewCache(client, dyn, kube.Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.Start(ctx)
	require.True(t, c.WaitForSync(ctx))

	for _, idx := range snapshot.Indexes() {
		inf := c.Informer(idx.Kind)
		require.NotNil(t, inf, "no informer of %s", idx.Kind)
		require.Contains(t, inf.GetIndexer().GetIndexers(), idx.Name, "%s is not an indexer of the %s informer", idx.Name, idx.Kind)
	}

	filed := func(idx snapshot.Index, key string) []string {
		objs, err := c.ByIndex(idx, key)
		require.NoError(t, err)
		var names []string
		for _, o := range objs {
			m, err := apimeta.Accessor(o)
			require.NoError(t, err)
			names = append(names, m.GetName())
		}
		return names
	}
	// moves waits until the informer has seen a write: the object is then
	// filed under key.
	moves := func(what string, idx snapshot.Index, key string, want []string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for got := filed(idx, key); !slices.Equal(got, want); got = filed(idx, key) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s under %q holds %v, want %v", what, idx.Name, key, got, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	require.Equal(t, []string{"web-0"}, filed(snapshot.ControlledPods, snapshot.Key("a", "u1")))
	require.Empty(t, filed(snapshot.ControlledPods, snapshot.Key("b", "u1")), "a key is of one namespace")
	require.Equal(t, []string{"data-web-0"}, filed(snapshot.ClaimsBySetName, snapshot.Key("a", "web")))
	require.Equal(t, []string{"grow"}, filed(snapshot.ClaimUpdatesBySet, snapshot.Key("a", "web")))

	adopted := pod.DeepCopy()
	adopted.OwnerReferences = controlled("u2")
	_, err = client.CoreV1().Pods("a").Update(ctx, adopted, metav1.UpdateOptions{})
	require.NoError(t, err)
	moves("adopted pod", snapshot.ControlledPods, snapshot.Key("a", "u2"), []string{"web-0"})
	require.Empty(t, filed(snapshot.ControlledPods, snapshot.Key("a", "u1")))

	retargeted := update.DeepCopy()
	require.NoError(t, unstructured.SetNestedField(retargeted.Object, "db", "spec", "statefulSetName"))
	_, err = dyn.Resource(kube.ClaimUpdateGVR).Namespace("a").Update(ctx, retargeted, metav1.UpdateOptions{})
	require.NoError(t, err)
	moves("retargeted update", snapshot.ClaimUpdatesBySet, snapshot.Key("a", "db"), []string{"grow"})
	require.Empty(t, filed(snapshot.ClaimUpdatesBySet, snapshot.Key("a", "web")))

	require.NoError(t, client.CoreV1().PersistentVolumeClaims("a").Delete(ctx, "data-web-0", metav1.DeleteOptions{}))
	moves("deleted claim", snapshot.ClaimsBySetName, snapshot.Key("a", "web"), nil)
	require.Equal(t, []string{"data-web-0"}, filed(snapshot.ClaimsBySetName, snapshot.Key("b", "web")))
}
