package kube

import (
	"context"
	"fmt"
	"slices"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// Owner is the object the host's own objects belong to: the Deployment that
// runs it, in its namespace.
type Owner struct {
	Namespace string
	Ref       metav1.OwnerReference
}

// InstallOwner returns the Deployment whose pod namespace/pod is: the pod's
// controller, a ReplicaSet, and that ReplicaSet's controller. The objects
// the host creates for itself (its leader Lease, its webhook certificate's
// Secret) get an owner reference to it, so that what removes the install
// (kubectl delete -k, helm uninstall) removes them too: the garbage
// collector deletes them once the Deployment is gone. A ReplicaSet would
// not do: a rollout replaces it, and the old one's deletion would take the
// Lease and the CA with it.
//
// The reference is not a controller's and does not block the owner's
// deletion (which would need the update of deployments/finalizers). nil,
// with the reason, when the pod is not a Deployment's.
func InstallOwner(ctx context.Context, client kubernetes.Interface, namespace, pod string) (*Owner, error) {
	p, err := client.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read the host's Pod %s/%s: %w", namespace, pod, err)
	}
	rs := metav1.GetControllerOf(p)
	if rs == nil || rs.APIVersion != "apps/v1" || rs.Kind != "ReplicaSet" {
		return nil, fmt.Errorf("the host's Pod %s/%s is not a ReplicaSet's", namespace, pod)
	}
	r, err := client.AppsV1().ReplicaSets(namespace).Get(ctx, rs.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read the host's ReplicaSet %s/%s: %w", namespace, rs.Name, err)
	}
	if r.UID != rs.UID {
		return nil, fmt.Errorf("the host's ReplicaSet %s/%s was replaced", namespace, rs.Name)
	}
	d := metav1.GetControllerOf(r)
	if d == nil || d.APIVersion != "apps/v1" || d.Kind != "Deployment" {
		return nil, fmt.Errorf("the host's ReplicaSet %s/%s is not a Deployment's", namespace, rs.Name)
	}
	return &Owner{Namespace: namespace, Ref: metav1.OwnerReference{APIVersion: d.APIVersion, Kind: d.Kind, Name: d.Name, UID: d.UID}}, nil
}

// Owns returns refs with owner's reference added, and whether it was
// missing.
func (o *Owner) Owns(refs []metav1.OwnerReference) ([]metav1.OwnerReference, bool) {
	if slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == o.Ref.UID }) {
		return refs, false
	}
	return append(slices.Clone(refs), o.Ref), true
}

// OwnedLeases returns leases whose Lease writes give each Lease owner's
// reference, on its creation and on any update of one created without it
// (by an earlier version of the host): client-go's LeaseLock creates and
// updates the leader Lease through it.
func OwnedLeases(leases coordinationv1client.LeasesGetter, owner *Owner) coordinationv1client.LeasesGetter {
	return ownedLeases{LeasesGetter: leases, owner: owner}
}

type ownedLeases struct {
	coordinationv1client.LeasesGetter
	owner *Owner
}

func (o ownedLeases) Leases(namespace string) coordinationv1client.LeaseInterface {
	return ownedLeaseInterface{LeaseInterface: o.LeasesGetter.Leases(namespace), owner: o.owner}
}

type ownedLeaseInterface struct {
	coordinationv1client.LeaseInterface
	owner *Owner
}

func (o ownedLeaseInterface) Create(ctx context.Context, l *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	l = l.DeepCopy()
	l.OwnerReferences, _ = o.owner.Owns(l.OwnerReferences)
	return o.LeaseInterface.Create(ctx, l, opts)
}

func (o ownedLeaseInterface) Update(ctx context.Context, l *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if refs, missing := o.owner.Owns(l.OwnerReferences); missing {
		l = l.DeepCopy()
		l.OwnerReferences = refs
	}
	return o.LeaseInterface.Update(ctx, l, opts)
}
