package kube_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

func TestIndexKeys(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name string
		obj  any
		fn   func(any) ([]string, error)
		want []string
	}{
		{"controlled pod", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0",
			OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "web", UID: "u1", Controller: &yes}}}},
			kube.PodControllerKeys, []string{"ns/u1"}},
		{"owned, not controlled", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0",
			OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "web", UID: "u1"}}}},
			kube.PodControllerKeys, nil},
		{"claim of one set", claimNamed("ns", "data-web-0"), kube.ClaimSetKeys, []string{"ns/web"}},
		{"claim of either of two sets", claimNamed("ns", "data-a-web-12"), kube.ClaimSetKeys, []string{"ns/a-web", "ns/web"}},
		{"no ordinal", claimNamed("ns", "data-web"), kube.ClaimSetKeys, nil},
		{"non-canonical ordinal", claimNamed("ns", "data-web-01"), kube.ClaimSetKeys, nil},
		{"no template", claimNamed("ns", "web-0"), kube.ClaimSetKeys, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.fn(tc.obj)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	_, err := kube.PodControllerKeys(claimNamed("ns", "x"))
	require.ErrorContains(t, err, "want a Pod")
}

func claimNamed(ns, name string) *corev1.PersistentVolumeClaim {
	c := richClaim(name)
	c.Namespace = ns
	c.UID = types.UID("uid-" + ns + "-" + name)
	c.DeletionTimestamp = nil
	return c
}

// scanLister is the reference the cache's indexes must agree with: every
// pod and every claim of the namespace, which the builder filters itself.
type scanLister struct {
	sets    []*appsv1.StatefulSet
	pods    []*corev1.Pod
	claims  []*corev1.PersistentVolumeClaim
	classes []*storagev1.StorageClass
}

func (l *scanLister) GetObject(kind, _, name string) (runtime.Object, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: abi.KindOf(kind).Resource}, name)
}

func (l *scanLister) GetStatefulSet(ns, name string) (*appsv1.StatefulSet, error) {
	for _, s := range l.sets {
		if s.Namespace == ns && s.Name == name {
			return s, nil
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "statefulsets"}, name)
}

func (l *scanLister) ListControlledPods(ns string, _ types.UID) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	for _, p := range l.pods {
		if p.Namespace == ns {
			out = append(out, p)
		}
	}
	return out, nil
}

func (l *scanLister) GetClaim(ns, name string) (*corev1.PersistentVolumeClaim, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumeclaims"}, name)
}

func (l *scanLister) ListClaimsNamedFor(ns, _ string) ([]*corev1.PersistentVolumeClaim, error) {
	var out []*corev1.PersistentVolumeClaim
	for _, c := range l.claims {
		if c.Namespace == ns {
			out = append(out, c)
		}
	}
	return out, nil
}

func (l *scanLister) GetVolume(name string) (*corev1.PersistentVolume, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumes"}, name)
}

func (l *scanLister) GetStorageClass(name string) (*storagev1.StorageClass, error) {
	for _, c := range l.classes {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "storageclasses"}, name)
}

func (l *scanLister) ListVolumeClaimUpdates(string) ([]*unstructured.Unstructured, error) {
	return nil, nil
}

// TestCacheFindsWhatAScanFinds: a StatefulSet's input built from the
// cache's indexes (over slimmed objects) is the input built from a scan of
// its namespace (over whole objects), for sets whose names overlap, claims
// of removed replicas, claims owned by nobody, pods of other controllers,
// and the same names in another namespace.
func TestCacheFindsWhatAScanFinds(t *testing.T) {
	ref := &scanLister{classes: []*storagev1.StorageClass{richClass()}}
	yes := true
	for _, ns := range []string{"a", "b"} {
		for _, name := range []string{"web", "a-web", "web-1"} {
			s := richSet()
			s.Namespace, s.Name, s.UID = ns, name, types.UID(ns+"-"+name)
			s.DeletionTimestamp = nil
			ref.sets = append(ref.sets, s)
			for o := range 3 {
				p := richPod()
				p.Namespace, p.Name, p.UID = ns, fmt.Sprintf("%s-%d", name, o), types.UID(fmt.Sprintf("%s-%s-%d", ns, name, o))
				p.DeletionTimestamp = nil
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name, UID: s.UID, Controller: &yes}}
				ref.pods = append(ref.pods, p)
			}
			for _, c := range []string{"data-" + name + "-0", "logs-" + name + "-0", "data-" + name + "-7", "data-" + name + "-x", "other-" + name + "-0"} {
				ref.claims = append(ref.claims, claimNamed(ns, c))
			}
		}
		stray := richPod()
		stray.Namespace, stray.Name, stray.UID, stray.OwnerReferences, stray.DeletionTimestamp = ns, "stray", types.UID(ns+"-stray"), nil, nil
		ref.pods = append(ref.pods, stray)
	}
	var objs []runtime.Object
	for _, s := range ref.sets {
		objs = append(objs, s.DeepCopy())
	}
	for _, p := range ref.pods {
		objs = append(objs, p.DeepCopy())
	}
	for _, c := range ref.claims {
		objs = append(objs, c.DeepCopy())
	}
	objs = append(objs, richClass())
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
	for _, s := range ref.sets {
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
