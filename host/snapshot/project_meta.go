package snapshot

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeplug/kubeplug/abi"
)

// The projections below copy field by field instead of going through a
// generic converter: they run for every object of every reconcile (one set
// with a hundred pods and claims is ordinary), and reflection-based
// conversion costs an order of magnitude more.
//
// Projections share maps of strings and slices of strings (labels,
// annotations, finalizers, parameters) with their input instead of copying
// them. The input is a cache object nobody may modify, and the projection is
// read-only as well: it is encoded for the guest and read by the action
// validator. Everything else (pointers, typed slices) is copied.

// projectMeta fills dst from m.
func projectMeta(dst *abi.ObjectMeta, m *metav1.ObjectMeta) {
	dst.Name = m.Name
	dst.Namespace = m.Namespace
	dst.UID = string(m.UID)
	dst.ResourceVersion = m.ResourceVersion
	dst.Generation = m.Generation
	dst.Labels = m.Labels
	dst.Annotations = m.Annotations
	dst.Finalizers = m.Finalizers
	dst.CreationTimestamp = formatTime(m.CreationTimestamp)
	if m.DeletionTimestamp != nil {
		dst.DeletionTimestamp = formatTime(*m.DeletionTimestamp)
	}
	dst.OwnerReferences = projectEach(m.OwnerReferences, func(d *abi.OwnerReference, r *metav1.OwnerReference) {
		*d = abi.OwnerReference{
			APIVersion:         r.APIVersion,
			Kind:               r.Kind,
			Name:               r.Name,
			UID:                string(r.UID),
			Controller:         r.Controller != nil && *r.Controller,
			BlockOwnerDeletion: r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion,
		}
	})
}

// formatTime renders t as RFC 3339 in UTC with second precision, the form
// the API server serializes metav1.Time in, and "" for the zero time.
func formatTime(t metav1.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// projectResources renders a resource list as quantity strings.
func projectResources(l corev1.ResourceList) map[string]string {
	if len(l) == 0 {
		return nil
	}
	out := make(map[string]string, len(l))
	for name, q := range l {
		// String has a pointer receiver that caches its result in the
		// quantity; q is a copy, so the shared cache object is not written.
		out[string(name)] = q.String()
	}
	return out
}

// projectAccessModes converts access modes to strings.
func projectAccessModes(modes []corev1.PersistentVolumeAccessMode) []string {
	if len(modes) == 0 {
		return nil
	}
	out := make([]string, len(modes))
	for i, m := range modes {
		out[i] = string(m)
	}
	return out
}

// copyString returns a copy of *p, or nil.
func copyString(p *string) *string {
	if p == nil {
		return nil
	}
	s := *p
	return &s
}

// projectEach projects every element of src into a new slice with project,
// nil when src is empty (as the wire types omit empty lists).
func projectEach[S, D any](src []S, project func(dst *D, src *S)) []D {
	if len(src) == 0 {
		return nil
	}
	out := make([]D, len(src))
	for i := range src {
		project(&out[i], &src[i])
	}
	return out
}
