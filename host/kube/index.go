package kube

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/host/snapshot"
)

// The indexes the cache keeps beside the informers' stores, so that
// building a StatefulSet's input reads its own objects rather than scanning
// its namespace.
const (
	// ControllerIndex indexes Pods by "namespace/uid" of their controller
	// reference.
	ControllerIndex = "kubeplug.dev/controller"
	// ClaimSetIndex indexes PersistentVolumeClaims by "namespace/set" for
	// every set their name could be a claim of
	// (snapshot.SetNamesInClaimName): by name, whatever their owners.
	ClaimSetIndex = "kubeplug.dev/set-by-claim-name"
)

// PodControllerKeys is ControllerIndex's index function.
func PodControllerKeys(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("index %s: want a Pod, got %T", ControllerIndex, obj)
	}
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil {
		return nil, nil
	}
	return []string{controllerKey(p.Namespace, ref.UID)}, nil
}

func controllerKey(namespace string, uid types.UID) string { return namespace + "/" + string(uid) }

// ClaimSetKeys is ClaimSetIndex's index function.
func ClaimSetKeys(obj any) ([]string, error) {
	c, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil, fmt.Errorf("index %s: want a PersistentVolumeClaim, got %T", ClaimSetIndex, obj)
	}
	sets := snapshot.SetNamesInClaimName(c.Name)
	for i, s := range sets {
		sets[i] = c.Namespace + "/" + s
	}
	return sets, nil
}
