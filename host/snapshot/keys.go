package snapshot

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeplug/kubeplug/abi"
)

// The functions below map an event on a related object to the keys of the
// subjects whose input holds it. Reconciles are level-triggered: the key is
// all that is queued, and the builder reads the state afresh.

// SetKeysForPod returns the key of the StatefulSet that controls p, or nil.
func SetKeysForPod(p *corev1.Pod) []string {
	if p == nil {
		return nil
	}
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil || ref.Kind != "StatefulSet" {
		return nil
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != "apps" {
		return nil
	}
	return []string{p.Namespace + "/" + ref.Name}
}

// SetKeysForClaim returns the keys of the StatefulSets of c's namespace that
// c belongs to by name: those named <set> with a template <template> such
// that c is "<template>-<set>-<ordinal>". Owner references do not matter, as
// in the builder. Each split of the name at a dash is tried, so a name with
// many dashes costs as many cache reads.
func SetKeysForClaim(c *corev1.PersistentVolumeClaim, l Lister) ([]string, error) {
	if c == nil {
		return nil, nil
	}
	var keys []string
	for _, set := range SetNamesInClaimName(c.Name) {
		s, err := get[*appsv1.StatefulSet](l, abi.KindStatefulSet, c.Namespace, set)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("get statefulset %s/%s for claim %s: %w", c.Namespace, set, c.Name, err)
		}
		templates := make([]string, len(s.Spec.VolumeClaimTemplates))
		for j := range s.Spec.VolumeClaimTemplates {
			templates[j] = s.Spec.VolumeClaimTemplates[j].Name
		}
		if _, _, ok := ParseClaimName(c.Name, set, templates); ok {
			keys = append(keys, c.Namespace+"/"+set)
		}
	}
	return keys, nil
}

// SetKeyForClaimUpdate returns the key of the StatefulSet a
// VolumeClaimUpdate names in spec.statefulSetName, or "".
func SetKeyForClaimUpdate(u *unstructured.Unstructured) string {
	if u == nil {
		return ""
	}
	set, _, _ := unstructured.NestedString(u.Object, "spec", "statefulSetName")
	if set == "" {
		return ""
	}
	return u.GetNamespace() + "/" + set
}

// VolumeKeyForClaim returns the key of the PersistentVolume c is bound to
// (spec.volumeName), or "" while it is unbound. A volume that names the claim
// before the claim names it is reconciled by the volume's own events.
func VolumeKeyForClaim(c *corev1.PersistentVolumeClaim) string {
	if c == nil {
		return ""
	}
	return c.Spec.VolumeName
}
