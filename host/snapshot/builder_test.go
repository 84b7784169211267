package snapshot_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

var fixedNow = time.Date(2024, 6, 1, 14, 0, 0, 123456789, plus2)

func builder(l snapshot.Lister) *snapshot.Builder {
	return &snapshot.Builder{Lister: l, Now: func() time.Time { return fixedNow }}
}

func claimNames(cs []abi.PersistentVolumeClaim) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Metadata.Name)
	}
	return out
}

func TestBuildStatefulSet(t *testing.T) {
	set := newSet("default", "web", new(int32(2)), 3,
		template{"data", new("fast")}, template{"log-files", nil})
	other := newSet("default", "web-big", nil, 0, template{"data", nil})
	ownedByOther := newPod("default", "web-big-0", other.UID)
	notController := newPod("default", "web-9", "")
	notController.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: set.UID}}

	l := newFakeLister(set, other,
		// Pods, out of order, with strangers.
		newPod("default", "web-10", set.UID),
		newPod("default", "web-4", set.UID),
		newPod("default", "web-3", set.UID),
		newPod("default", "web-canary", set.UID),
		newPod("other", "web-3", set.UID),
		newPod("default", "web-5", "uid-of-a-deleted-web"),
		ownedByOther, notController,
		// Claims: in range, condemned (beyond replicas, before start),
		// and names that only look alike.
		newClaim("default", "data-web-10", nil),
		newClaim("default", "data-web-4", new("fast")),
		newClaim("default", "log-files-web-3", new("slow")),
		newClaim("default", "data-web-3", new("fast")),
		newClaim("default", "data-web-0", new("missing")),
		newClaim("default", "data-web-big-0", nil),
		newClaim("default", "cache-web-3", new("ignored")),
		newClaim("default", "data-web-01", nil),
		newClaim("default", "data-web-x", nil),
		newClaim("default", "data-web--1", nil),
		newClaim("default", "data-web-", nil),
		newClaim("default", "data-web", nil),
		newClaim("other", "data-web-3", nil),
		newClass("slow"), newClass("fast"), newClass("ignored"),
		claimUpdateObject("default", "z-update", "web"),
		claimUpdateObject("default", "a-update", "web"),
		claimUpdateObject("default", "0-update", "web-big"),
		claimUpdateObject("other", "0-update", "web"),
	)
	req, err := builder(l).StatefulSet("default/web", []byte(`{"x":1}`))
	require.NoError(t, err)

	require.Equal(t, abi.SubjectStatefulSet, req.Subject)
	require.Equal(t, "default/web", req.Key)
	require.Equal(t, "2024-06-01T12:00:00.123456789Z", req.Now)
	require.Equal(t, []byte(`{"x":1}`), req.Config)
	require.Nil(t, req.PersistentVolume)

	s := req.StatefulSet
	require.Equal(t, "uid-default-web", s.Set.Metadata.UID)
	var pods []string
	for _, p := range s.Pods {
		pods = append(pods, p.Metadata.Namespace+"/"+p.Metadata.Name)
	}
	require.Equal(t, []string{"default/web-3", "default/web-4", "default/web-10", "default/web-canary"}, pods)
	require.Equal(t, []string{"data-web-0", "data-web-3", "log-files-web-3", "data-web-4", "data-web-10"}, claimNames(s.Claims))
	for _, c := range s.Claims {
		require.Equal(t, "default", c.Metadata.Namespace)
	}
	var classes []string
	for _, c := range s.StorageClasses {
		classes = append(classes, c.Metadata.Name)
	}
	require.Equal(t, []string{"fast", "slow"}, classes)
	require.NotNil(t, s.ClaimUpdate)
	require.Equal(t, "a-update", s.ClaimUpdate.Metadata.Name)
	require.Equal(t, "web", s.ClaimUpdate.Spec.StatefulSetName)
}

func TestBuildStatefulSetMinimal(t *testing.T) {
	l := newFakeLister(newSet("default", "web", nil, 0), newPod("default", "web-0", "uid-default-web"),
		newClaim("default", "data-web-0", nil), claimUpdateObject("default", "u", "db"))
	req, err := builder(l).StatefulSet("default/web", nil)
	require.NoError(t, err)
	s := req.StatefulSet
	require.Len(t, s.Pods, 1)
	require.Nil(t, s.Claims, "a set without templates has no claims")
	require.Nil(t, s.StorageClasses)
	require.Nil(t, s.ClaimUpdate)
	require.Nil(t, req.Config)
}

func TestBuildStatefulSetGone(t *testing.T) {
	l := newFakeLister(newPod("default", "web-0", "uid-default-web"), newClaim("default", "data-web-0", nil))
	req, err := builder(l).StatefulSet("default/web", nil)
	require.NoError(t, err)
	require.Nil(t, req)
}

func TestBuildBadKeys(t *testing.T) {
	b := builder(newFakeLister())
	for _, key := range []string{"", "web", "/web", "default/", "a/b/c"} {
		t.Run("statefulset "+key, func(t *testing.T) {
			_, err := b.StatefulSet(key, nil)
			require.ErrorIs(t, err, snapshot.ErrBadKey)
		})
	}
	for _, key := range []string{"", "default/pv-1"} {
		t.Run("persistentvolume "+key, func(t *testing.T) {
			_, err := b.PersistentVolume(key, nil)
			require.ErrorIs(t, err, snapshot.ErrBadKey)
		})
	}
	_, err := b.Build("deployment", "default/web", nil)
	require.ErrorContains(t, err, `unknown subject "deployment"`)
}

func TestBuildListerErrors(t *testing.T) {
	boom := errors.New("cache not synced")
	l := newFakeLister()
	l.err = boom
	b := builder(l)
	_, err := b.StatefulSet("default/web", nil)
	require.ErrorIs(t, err, boom)
	_, err = b.PersistentVolume("pv-1", nil)
	require.ErrorIs(t, err, boom)
}

// TestBuildStatefulSetClaimUpdatesInEffect: of several VolumeClaimUpdates
// naming a set the oldest is in effect, whatever the names say (one created
// later never takes over), the others follow in age, at most
// MaxOtherClaimUpdates of them, and one that cannot be projected is left out
// of the others rather than failing the set's reconcile.
func TestBuildStatefulSetClaimUpdatesInEffect(t *testing.T) {
	created := func(u *unstructured.Unstructured, minute int) *unstructured.Unstructured {
		u.SetCreationTimestamp(metav1.NewTime(time.Date(2024, 6, 1, 12, minute, 0, 0, time.UTC)))
		return u
	}
	bad := created(claimUpdateObject("default", "b-bad", "web"), 3)
	require.NoError(t, unstructured.SetNestedField(bad.Object, "many", "status", "observedGeneration"))
	objs := []runtime.Object{newSet("default", "web", nil, 0),
		created(claimUpdateObject("default", "a-newest", "web"), 9),
		created(claimUpdateObject("default", "z-oldest", "web"), 1),
		created(claimUpdateObject("default", "m-middle", "web"), 5),
		bad,
		created(claimUpdateObject("default", "0-other-set", "db"), 0),
	}
	req, err := builder(newFakeLister(objs...)).StatefulSet("default/web", nil)
	require.NoError(t, err)
	s := req.StatefulSet
	require.Equal(t, "z-oldest", s.ClaimUpdate.Metadata.Name)
	var others []string
	for _, u := range s.OtherClaimUpdates {
		others = append(others, u.Metadata.Name)
	}
	require.Equal(t, []string{"m-middle", "a-newest"}, others)

	objs = []runtime.Object{newSet("default", "web", nil, 0)}
	for i := range 2 + snapshot.MaxOtherClaimUpdates {
		objs = append(objs, created(claimUpdateObject("default", fmt.Sprintf("u-%02d", i), "web"), i))
	}
	req, err = builder(newFakeLister(objs...)).StatefulSet("default/web", nil)
	require.NoError(t, err)
	require.Equal(t, "u-00", req.StatefulSet.ClaimUpdate.Metadata.Name)
	require.Len(t, req.StatefulSet.OtherClaimUpdates, snapshot.MaxOtherClaimUpdates)
	require.Equal(t, "u-01", req.StatefulSet.OtherClaimUpdates[0].Metadata.Name)
}

func TestBuildStatefulSetBadClaimUpdate(t *testing.T) {
	u := claimUpdateObject("default", "u", "web")
	require.NoError(t, unstructured.SetNestedField(u.Object, "many", "status", "observedGeneration"))
	l := newFakeLister(newSet("default", "web", nil, 0), u)
	_, err := builder(l).StatefulSet("default/web", nil)
	require.ErrorIs(t, err, snapshot.ErrBadClaimUpdate)
}

func TestBuildPersistentVolume(t *testing.T) {
	claim := newClaim("default", "data-web-0", nil)
	ref := func(uid string) *corev1.ObjectReference {
		return &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: "data-web-0", UID: types.UID(uid)}
	}
	tests := []struct {
		name      string
		volume    *corev1.PersistentVolume
		wantClaim bool
		wantClass bool
	}{
		{"bound claim and class", newVolume("pv-1", ref(string(claim.UID)), "fast"), true, true},
		{"claim with another uid", newVolume("pv-1", ref("uid-of-an-older-claim"), "fast"), false, true},
		{"claimRef without uid", newVolume("pv-1", ref(""), ""), true, false},
		{"claim missing", newVolume("pv-1", &corev1.ObjectReference{Namespace: "default", Name: "gone", UID: "x"}, ""), false, false},
		{"class missing", newVolume("pv-1", nil, "missing"), false, false},
		{"unbound", newVolume("pv-1", nil, ""), false, false},
		{"class by beta annotation", withAnnotation(newVolume("pv-1", nil, "missing"), "volume.beta.kubernetes.io/storage-class", "fast"), false, true},
		{"beta annotation wins over the field", withAnnotation(newVolume("pv-1", nil, "fast"), "volume.beta.kubernetes.io/storage-class", "missing"), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newFakeLister(tt.volume, claim, newClass("fast"))
			drivers := []string{"z.csi", "a.csi"}
			b := builder(l)
			b.Drivers = func() []string { return drivers }
			req, err := b.PersistentVolume("pv-1", []byte("{}"))
			require.NoError(t, err)
			require.Equal(t, abi.SubjectPersistentVolume, req.Subject)
			require.Equal(t, "pv-1", req.Key)
			require.Equal(t, "2024-06-01T12:00:00.123456789Z", req.Now)
			require.Equal(t, []byte("{}"), req.Config)
			require.Nil(t, req.StatefulSet)
			s := req.PersistentVolume
			require.Equal(t, "uid-pv-1", s.Volume.Metadata.UID)
			if tt.wantClaim {
				require.Equal(t, string(claim.UID), s.Claim.Metadata.UID)
			} else {
				require.Nil(t, s.Claim)
			}
			if tt.wantClass {
				require.Equal(t, "fast", s.StorageClass.Metadata.Name)
			} else {
				require.Nil(t, s.StorageClass)
			}
			require.Equal(t, []string{"a.csi", "z.csi"}, s.Drivers)
			require.Equal(t, []string{"z.csi", "a.csi"}, drivers, "the host's list is not sorted in place")
		})
	}
}

func TestBuildPersistentVolumeGone(t *testing.T) {
	req, err := builder(newFakeLister()).Build(abi.SubjectPersistentVolume, "pv-1", nil)
	require.NoError(t, err)
	require.Nil(t, req)
}

func TestBuildDefaultsClockAndDrivers(t *testing.T) {
	b := &snapshot.Builder{Lister: newFakeLister(newVolume("pv-1", nil, ""))}
	req, err := b.PersistentVolume("pv-1", nil)
	require.NoError(t, err)
	now, err := time.Parse(time.RFC3339Nano, req.Now)
	require.NoError(t, err)
	require.Equal(t, time.UTC, now.Location())
	require.Nil(t, req.PersistentVolume.Drivers)
}

func withAnnotation(v *corev1.PersistentVolume, k, val string) *corev1.PersistentVolume {
	if v.Annotations == nil {
		v.Annotations = map[string]string{}
	}
	v.Annotations[k] = val
	return v
}
