package snapshot_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeplug/kubeplug/host/snapshot"
)

func TestSetKeysForPod(t *testing.T) {
	owned := func(apiVersion, kind string, controller bool) *corev1.Pod {
		p := newPod("default", "web-0", "")
		p.OwnerReferences = []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm"},
			{APIVersion: apiVersion, Kind: kind, Name: "web", UID: "set", Controller: new(controller)},
		}
		return p
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{
		{"controlled by a StatefulSet", owned("apps/v1", "StatefulSet", true), []string{"default/web"}},
		{"owner but not controller", owned("apps/v1", "StatefulSet", false), nil},
		{"controlled by a ReplicaSet", owned("apps/v1", "ReplicaSet", true), nil},
		{"another group's StatefulSet", owned("example.com/v1", "StatefulSet", true), nil},
		{"no owner", newPod("default", "web-0", ""), nil},
		{"nil", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, snapshot.SetKeysForPod(tt.pod))
		})
	}
}

func TestSetKeysForClaim(t *testing.T) {
	l := newFakeLister(
		newSet("default", "web", nil, 0, template{"data", nil}),
		newSet("default", "b-c", nil, 0, template{"a", nil}),
		newSet("default", "c", nil, 0, template{"a-b", nil}),
		newSet("default", "x", nil, 0, template{"other", nil}),
		newSet("other", "web", nil, 0, template{"data", nil}),
	)
	tests := []struct {
		claim string
		want  []string
		gets  int
	}{
		{"data-web-7", []string{"default/web"}, 1},
		{"a-b-c-0", []string{"default/b-c", "default/c"}, 2},
		{"log-web-0", nil, 1},
		{"other-x-1", []string{"default/x"}, 1},
		{"data-web", nil, 0},
		{"data-0", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.claim, func(t *testing.T) {
			l.gets = 0
			keys, err := snapshot.SetKeysForClaim(newClaim("default", tt.claim, nil), l)
			require.NoError(t, err)
			require.Equal(t, tt.want, keys)
			require.Equal(t, tt.gets, l.gets, "one cache read per split of the name")
		})
	}

	boom := errors.New("boom")
	l.err = boom
	_, err := snapshot.SetKeysForClaim(newClaim("default", "data-web-0", nil), l)
	require.ErrorIs(t, err, boom)

	keys, err := snapshot.SetKeysForClaim(nil, l)
	require.NoError(t, err)
	require.Nil(t, keys)
}

func TestSetKeyForClaimUpdate(t *testing.T) {
	require.Equal(t, "default/web", snapshot.SetKeyForClaimUpdate(claimUpdateObject("default", "u", "web")))
	require.Equal(t, "", snapshot.SetKeyForClaimUpdate(claimUpdateObject("default", "u", "")))
	require.Equal(t, "", snapshot.SetKeyForClaimUpdate(nil))
}

func TestVolumeKeyForClaim(t *testing.T) {
	c := newClaim("default", "data-web-0", nil)
	require.Equal(t, "", snapshot.VolumeKeyForClaim(c))
	c.Spec.VolumeName = "pv-1"
	require.Equal(t, "pv-1", snapshot.VolumeKeyForClaim(c))
	require.Equal(t, "", snapshot.VolumeKeyForClaim(nil))
}
