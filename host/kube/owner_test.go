package kube_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeplug/kubeplug/host/kube"
)

func controlledBy(kind, name string, uid types.UID) []metav1.OwnerReference {
	yes := true
	return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: &yes}}
}

// TestInstallOwner finds the Deployment through the pod's ReplicaSet, and
// says why when the pod is not a Deployment's.
func TestInstallOwner(t *testing.T) {
	ctx := context.Background()
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kp", Name: "kubeplug-5d8f", UID: "rs-uid",
		OwnerReferences: controlledBy("Deployment", "kubeplug", "d-uid")}}
	orphanRS := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kp", Name: "bare", UID: "bare-uid"}}
	pod := func(name string, owners []metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kp", Name: name, OwnerReferences: owners}}
	}
	client := fake.NewClientset(rs, orphanRS,
		pod("host", controlledBy("ReplicaSet", "kubeplug-5d8f", "rs-uid")),
		pod("bare", nil),
		pod("set", controlledBy("StatefulSet", "kubeplug", "s-uid")),
		pod("orphan-rs", controlledBy("ReplicaSet", "bare", "bare-uid")),
		pod("old-rs", controlledBy("ReplicaSet", "kubeplug-5d8f", "another-uid")),
	)
	o, err := kube.InstallOwner(ctx, client, "kp", "host")
	require.NoError(t, err)
	require.Equal(t, &kube.Owner{Namespace: "kp", Ref: metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "kubeplug", UID: "d-uid"}}, o)
	require.Nil(t, o.Ref.Controller, "not the Lease's controller")
	require.Nil(t, o.Ref.BlockOwnerDeletion, "blocking would need deployments/finalizers update")

	for pod, msg := range map[string]string{
		"missing":   `read the host's Pod kp/missing`,
		"bare":      "is not a ReplicaSet's",
		"set":       "is not a ReplicaSet's",
		"orphan-rs": "ReplicaSet kp/bare is not a Deployment's",
		"old-rs":    "was replaced",
	} {
		_, err := kube.InstallOwner(ctx, client, "kp", pod)
		require.ErrorContains(t, err, msg, pod)
	}
}

// TestOwnedLeases: the Lease is created owned, an unowned one gets the
// reference on its next update, and an owned one is sent as it is.
func TestOwnedLeases(t *testing.T) {
	ctx := context.Background()
	owner := &kube.Owner{Namespace: "kp", Ref: metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "kubeplug", UID: "d-uid"}}
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "c", UID: "c-uid"}
	client := fake.NewClientset(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kp", Name: "old", OwnerReferences: []metav1.OwnerReference{other}}})
	leases := kube.OwnedLeases(client.CoordinationV1(), owner).Leases("kp")

	given := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kp", Name: "new"}}
	made, err := leases.Create(ctx, given, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Equal(t, []metav1.OwnerReference{owner.Ref}, made.OwnerReferences)
	require.Empty(t, given.OwnerReferences, "the caller's object is not changed")

	old, err := leases.Get(ctx, "old", metav1.GetOptions{})
	require.NoError(t, err)
	updated, err := leases.Update(ctx, old, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Equal(t, []metav1.OwnerReference{other, owner.Ref}, updated.OwnerReferences)
	again, err := leases.Update(ctx, updated, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Equal(t, []metav1.OwnerReference{other, owner.Ref}, again.OwnerReferences, "once")
}
