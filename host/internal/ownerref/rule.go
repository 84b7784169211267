package ownerref

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeplug/kubeplug/abi"
)

// Check returns why the host refuses to give a dependent in namespace the
// owner reference r, which a module adds (or rewrites) while answering for
// the StatefulSet state s; "" when it may. r must be well formed (the
// fields the API server's ValidateOwnerReferences checks, and a name that
// can be a path segment) and name, by apiVersion, kind, name and UID, the
// StatefulSet of s or one of its pods in s, in namespace: owner references
// are namespace-local, and one the collector cannot resolve counts as a
// missing owner, so a reference to another set's pod, a StorageClass or a
// volume would have the dependent deleted by events the set's policy never
// decided. Nor may the owner be, as s shows it, under deletion with orphan
// propagation: the collector would delete a dependent that gains a
// reference after it has orphaned the others. A nil s (no StatefulSet in
// the input) allows nothing.
func Check(s *abi.StatefulSetSubject, r abi.OwnerReference, namespace string) string {
	if r.APIVersion == "" || r.Kind == "" || r.Name == "" || r.UID == "" {
		return "needs apiVersion, kind, name and uid"
	}
	if why := fields(r); why != "" {
		return why
	}
	owner := subjectOrOwnPod(s, r, namespace)
	if owner == nil {
		return fmt.Sprintf("%s %s (%s, uid %s) is neither the subject StatefulSet nor one of its pods in the input, in the object's namespace; the host adds references to those only",
			r.Kind, r.Name, r.APIVersion, r.UID)
	}
	if owner.DeletionTimestamp != "" && slices.Contains(owner.Finalizers, metav1.FinalizerOrphanDependents) {
		return fmt.Sprintf("%s %s (uid %s) is being deleted with orphan propagation (finalizer %q): its dependents are to be kept, so no reference to it is added",
			r.Kind, r.Name, r.UID, metav1.FinalizerOrphanDependents)
	}
	return ""
}

// Controllers counts the references marked controller: the API server
// accepts at most one.
func Controllers(refs []abi.OwnerReference) int {
	n := 0
	for _, r := range refs {
		if r.Controller {
			n++
		}
	}
	return n
}

// eventKind is the one kind the API server bans as an owner.
var eventKind = schema.GroupVersionKind{Version: "v1", Kind: "Event"}

// fields checks r's fields as the API server's ValidateOwnerReferences does
// (plus a name that can be a path segment, as every object's name is), so
// that a malformed reference is refused with its reason rather than failing
// the write.
func fields(r abi.OwnerReference) string {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	switch {
	case err != nil || gv.Version == "":
		return fmt.Sprintf("apiVersion %q is not group/version", r.APIVersion)
	case gv.WithKind(r.Kind) == eventKind:
		return "an Event cannot own objects"
	}
	if errs := path.IsValidPathSegmentName(r.Name); len(errs) > 0 {
		return fmt.Sprintf("name %q: %s", r.Name, strings.Join(errs, "; "))
	}
	return ""
}

// subjectOrOwnPod returns the metadata of the object r names, the
// StatefulSet of s or one of its pods, in namespace; nil when r names
// neither.
func subjectOrOwnPod(s *abi.StatefulSetSubject, r abi.OwnerReference, namespace string) *abi.ObjectMeta {
	if s == nil || s.Set == nil {
		return nil
	}
	is := func(kind string, m *abi.ObjectMeta) bool {
		return r.Kind == kind && r.APIVersion == abi.KindOf(kind).APIVersion && r.Name == m.Name && r.UID == m.UID && m.Namespace == namespace
	}
	if is(abi.KindStatefulSet, &s.Set.Metadata) {
		return &s.Set.Metadata
	}
	for i := range s.Pods {
		if is(abi.KindPod, &s.Pods[i].Metadata) {
			return &s.Pods[i].Metadata
		}
	}
	return nil
}
