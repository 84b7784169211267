package snapshot

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/abi"
)

// Builder builds the reconcile input of one subject from a Lister, without
// API calls. It holds no state of its own and is safe for concurrent use when
// its Lister is.
//
// A Builder returns (nil, nil) when the subject object no longer exists:
// there is nothing to reconcile. Cleanup after a deletion is the business of
// finalizers and owner references, which keep the subject visible (with a
// deletionTimestamp) until the modules that need it have acted.
type Builder struct {
	// Lister reads the cached cluster state.
	Lister Lister
	// Drivers returns the CSI drivers the host may act for, in any order;
	// nil means none. It is called per persistentvolume reconcile, so a
	// reloaded host configuration takes effect on the next one.
	Drivers func() []string
	// Now is the host clock given to modules; nil means time.Now.
	Now func() time.Time
}

// Build builds the input of the reconcile of key for a module with the given
// subject kind (one of abi.Subjects()).
func (b *Builder) Build(subject, key string, config []byte) (*abi.ReconcileRequest, error) {
	s, ok := BuiltIn(subject)
	if !ok {
		return nil, fmt.Errorf("build reconcile input for %q: unknown subject %q, want one of %v", key, subject, abi.Subjects())
	}
	return s.Build(b, key, config)
}

// subjectPart is the snapshot's part of a subject kind of abi's table: how
// its input is built, and which subjects an event on each of its related
// kinds queues (the subject's own kind queues its own key).
type subjectPart struct {
	build   func(b *Builder, key string, config []byte) (*abi.ReconcileRequest, error)
	related map[string]KeysFunc
}

// KeysFunc maps an object of a related kind, as its informer holds it, to
// the keys of the subjects whose input holds it; l is read for what the
// mapping needs. An object of another type maps to none.
type KeysFunc func(obj any, l Lister) ([]string, error)

// subjects holds the snapshot's part of each subject kind, by name. A new
// subject kind is a row here and its build function.
var subjects = map[string]subjectPart{
	abi.SubjectStatefulSet: {
		build: (*Builder).StatefulSet,
		related: map[string]KeysFunc{
			abi.KindPod:                   keysOf(func(p *corev1.Pod, _ Lister) ([]string, error) { return SetKeysForPod(p), nil }),
			abi.KindPersistentVolumeClaim: keysOf(SetKeysForClaim),
			abi.KindVolumeClaimUpdate: keysOf(func(u *unstructured.Unstructured, _ Lister) ([]string, error) {
				return []string{SetKeyForClaimUpdate(u)}, nil
			}),
		},
	},
	abi.SubjectPersistentVolume: {
		build: (*Builder).PersistentVolume,
		related: map[string]KeysFunc{
			abi.KindPersistentVolumeClaim: keysOf(func(c *corev1.PersistentVolumeClaim, _ Lister) ([]string, error) {
				return []string{VolumeKeyForClaim(c)}, nil
			}),
		},
	},
}

// keysOf is f as a KeysFunc over objects of type T.
func keysOf[T any](f func(T, Lister) ([]string, error)) KeysFunc {
	return func(obj any, l Lister) ([]string, error) {
		t, ok := obj.(T)
		if !ok {
			return nil, nil
		}
		return f(t, l)
	}
}

// RelatedKeys returns the key functions of subject's related kinds, by
// kind: what an event on an object of each queues. A kind without one
// (StorageClass) queues nothing.
func RelatedKeys(subject string) map[string]KeysFunc { return maps.Clone(subjects[subject].related) }

// StatefulSet builds the input for the StatefulSet named by key
// ("namespace/name"): the set; its pods (controller reference to the set),
// sorted by ordinal; every claim named "<template>-<set>-<ordinal>" for one
// of its templates and any ordinal, so that claims of replicas removed by a
// scale-down are visible, sorted by ordinal then template; the
// StorageClasses the templates and claims name, sorted by name; and the
// VolumeClaimUpdates whose spec.statefulSetName is the set, the oldest in
// effect and at most MaxOtherClaimUpdates others after it (claimUpdates). It
// returns (nil, nil) when the set does not exist.
func (b *Builder) StatefulSet(key string, config []byte) (*abi.ReconcileRequest, error) {
	ns, name, ok := strings.Cut(key, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("%w %q: a statefulset key is \"namespace/name\"", ErrBadKey, key)
	}
	set, err := get[*appsv1.StatefulSet](b.Lister, abi.KindStatefulSet, ns, name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get statefulset %s: %w", key, err)
	}

	subject := &abi.StatefulSetSubject{Set: ProjectStatefulSet(set)}
	if subject.Pods, err = b.setPods(set.Namespace, set.Name, set.UID); err != nil {
		return nil, err
	}
	templates := make([]string, len(set.Spec.VolumeClaimTemplates))
	classes := make([]string, 0, len(templates))
	for i := range set.Spec.VolumeClaimTemplates {
		t := &set.Spec.VolumeClaimTemplates[i]
		templates[i] = t.Name
		classes = appendClass(classes, t.Spec.StorageClassName)
	}
	claims, err := b.setClaims(set.Namespace, set.Name, templates)
	if err != nil {
		return nil, err
	}
	if len(claims) > 0 {
		subject.Claims = make([]abi.PersistentVolumeClaim, len(claims))
		for i, c := range claims {
			projectClaim(&subject.Claims[i], c)
			classes = appendClass(classes, c.Spec.StorageClassName)
		}
	}
	if subject.StorageClasses, err = b.storageClasses(classes); err != nil {
		return nil, err
	}
	if subject.ClaimUpdate, subject.OtherClaimUpdates, err = b.claimUpdates(set.Namespace, set.Name); err != nil {
		return nil, err
	}
	return &abi.ReconcileRequest{
		Subject:     abi.SubjectStatefulSet,
		Key:         key,
		Now:         b.now(),
		Config:      config,
		StatefulSet: subject,
	}, nil
}

// PersistentVolume builds the input for the PersistentVolume named by key
// ("name"): the volume; the claim its claimRef names, only if that claim
// exists and has the UID claimRef gives (any claim of that name when
// claimRef has no UID); its StorageClass if it exists; and the configured
// CSI drivers, sorted. It returns (nil, nil) when the volume does not exist.
func (b *Builder) PersistentVolume(key string, config []byte) (*abi.ReconcileRequest, error) {
	if key == "" || strings.Contains(key, "/") {
		return nil, fmt.Errorf("%w %q: a persistentvolume key is its name", ErrBadKey, key)
	}
	pv, err := get[*corev1.PersistentVolume](b.Lister, abi.KindPersistentVolume, "", key)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get persistentvolume %s: %w", key, err)
	}

	subject := &abi.PersistentVolumeSubject{Volume: ProjectVolume(pv)}
	if ref := pv.Spec.ClaimRef; ref != nil && ref.Name != "" {
		c, err := get[*corev1.PersistentVolumeClaim](b.Lister, abi.KindPersistentVolumeClaim, ref.Namespace, ref.Name)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("get claim %s/%s of persistentvolume %s: %w", ref.Namespace, ref.Name, key, err)
		case ref.UID == "" || ref.UID == c.UID:
			// A claim of the same name but another UID is a new claim
			// that happens to reuse the name; the volume is not its.
			subject.Claim = ProjectClaim(c)
		}
	}
	if name := volumeClass(pv); name != "" {
		sc, err := get[*storagev1.StorageClass](b.Lister, abi.KindStorageClass, "", name)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("get storageclass %s of persistentvolume %s: %w", name, key, err)
		default:
			subject.StorageClass = ProjectStorageClass(sc)
		}
	}
	if b.Drivers != nil {
		if d := b.Drivers(); len(d) > 0 {
			subject.Drivers = slices.Sorted(slices.Values(d))
		}
	}
	return &abi.ReconcileRequest{
		Subject:          abi.SubjectPersistentVolume,
		Key:              key,
		Now:              b.now(),
		Config:           config,
		PersistentVolume: subject,
	}, nil
}

// betaClassAnnotation names a volume's class on volumes created before
// spec.storageClassName existed; like upstream's GetPersistentVolumeClass,
// it wins over the field.
const betaClassAnnotation = "volume.beta.kubernetes.io/storage-class"

// volumeClass is the name of pv's StorageClass, "" for none.
func volumeClass(pv *corev1.PersistentVolume) string {
	if name, ok := pv.Annotations[betaClassAnnotation]; ok {
		return name
	}
	return pv.Spec.StorageClassName
}

func (b *Builder) now() string {
	t := time.Now
	if b.Now != nil {
		t = b.Now
	}
	return t().UTC().Format(time.RFC3339Nano)
}

// setPods returns the projections of the pods whose controller is the set,
// sorted by ordinal; pods not named "<set>-<ordinal>" come last, by name.
func (b *Builder) setPods(ns, set string, uid types.UID) ([]abi.Pod, error) {
	pods, err := byIndex[*corev1.Pod](b.Lister, ControlledPods, Key(ns, string(uid)))
	if err != nil {
		return nil, fmt.Errorf("list pods of statefulset %s/%s: %w", ns, set, err)
	}
	type ordered struct {
		pod     *corev1.Pod
		ordinal int64 // -1 when the name has none
	}
	mine := make([]ordered, 0, len(pods))
	for _, p := range pods {
		ref := metav1.GetControllerOfNoCopy(p)
		if ref == nil || ref.UID != uid {
			continue
		}
		o := ordered{pod: p, ordinal: -1}
		if prefix, n, ok := parseOrdinal(p.Name); ok && prefix == set {
			o.ordinal = int64(n)
		}
		mine = append(mine, o)
	}
	if len(mine) == 0 {
		return nil, nil
	}
	slices.SortFunc(mine, func(a, b ordered) int {
		if (a.ordinal < 0) != (b.ordinal < 0) {
			return cmp.Compare(b.ordinal, a.ordinal) // named ones first
		}
		if c := cmp.Compare(a.ordinal, b.ordinal); c != 0 {
			return c
		}
		return strings.Compare(a.pod.Name, b.pod.Name)
	})
	out := make([]abi.Pod, len(mine))
	for i, o := range mine {
		projectPod(&out[i], o.pod)
	}
	return out, nil
}

// setClaims returns the claims named for one of templates of the set, with
// any ordinal, sorted by ordinal then template.
func (b *Builder) setClaims(ns, set string, templates []string) ([]*corev1.PersistentVolumeClaim, error) {
	if len(templates) == 0 {
		return nil, nil
	}
	claims, err := byIndex[*corev1.PersistentVolumeClaim](b.Lister, ClaimsBySetName, Key(ns, set))
	if err != nil {
		return nil, fmt.Errorf("list claims of statefulset %s/%s: %w", ns, set, err)
	}
	type named struct {
		claim    *corev1.PersistentVolumeClaim
		template string
		ordinal  int32
	}
	var mine []named
	for _, c := range claims {
		if t, n, ok := ParseClaimName(c.Name, set, templates); ok {
			mine = append(mine, named{c, t, n})
		}
	}
	slices.SortFunc(mine, func(a, b named) int {
		if c := cmp.Compare(a.ordinal, b.ordinal); c != 0 {
			return c
		}
		return strings.Compare(a.template, b.template)
	})
	out := make([]*corev1.PersistentVolumeClaim, len(mine))
	for i, m := range mine {
		out[i] = m.claim
	}
	return out, nil
}

// appendClass appends the class name p points at, if any.
func appendClass(names []string, p *string) []string {
	if p == nil || *p == "" {
		return names
	}
	return append(names, *p)
}

// storageClasses returns the projections of the named classes that exist,
// deduplicated and sorted by name.
func (b *Builder) storageClasses(names []string) ([]abi.StorageClass, error) {
	if len(names) == 0 {
		return nil, nil
	}
	slices.Sort(names)
	names = slices.Compact(names)
	out := make([]abi.StorageClass, 0, len(names))
	for _, name := range names {
		sc, err := get[*storagev1.StorageClass](b.Lister, abi.KindStorageClass, "", name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("get storageclass %s: %w", name, err)
		}
		out = append(out, abi.StorageClass{})
		projectStorageClass(&out[len(out)-1], sc)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// MaxOtherClaimUpdates bounds how many VolumeClaimUpdates naming a set,
// besides the one in effect, a reconcile input carries: a module needs them
// only to tell each that it is not in effect, and whoever may create them
// should not be able to grow every reconcile of the set without bound. Those
// past it are the newest; they are sent once older ones go.
const MaxOtherClaimUpdates = 15

// claimUpdates returns the projections of the VolumeClaimUpdates naming the
// set: the one in effect, the oldest by creationTimestamp and then by name
// (so one created later never takes over from one in effect, and a name
// decides only between two created in the same second), and the others in
// the same order, at most MaxOtherClaimUpdates of them.
func (b *Builder) claimUpdates(ns, set string) (*abi.VolumeClaimUpdate, []abi.VolumeClaimUpdate, error) {
	list, err := byIndex[*unstructured.Unstructured](b.Lister, ClaimUpdatesBySet, Key(ns, set))
	if err != nil {
		return nil, nil, fmt.Errorf("list volumeclaimupdates of statefulset %s/%s: %w", ns, set, err)
	}
	// The index files an update under the set its spec.statefulSetName
	// names, and byIndex's list is the caller's to sort.
	if len(list) == 0 {
		return nil, nil, nil
	}
	slices.SortFunc(list, func(a, b *unstructured.Unstructured) int {
		return cmp.Or(a.GetCreationTimestamp().Compare(b.GetCreationTimestamp().Time), strings.Compare(a.GetName(), b.GetName()))
	})
	first, err := ProjectClaimUpdate(list[0])
	if err != nil {
		return nil, nil, fmt.Errorf("volumeclaimupdate of statefulset %s/%s: %w", ns, set, err)
	}
	var others []abi.VolumeClaimUpdate
	for _, u := range list[1:] {
		if len(others) == MaxOtherClaimUpdates {
			break
		}
		// One the module could not be given is left out: it must not
		// stop the reconcile of the set that another is in effect for.
		if cu, err := ProjectClaimUpdate(u); err == nil {
			others = append(others, *cu)
		}
	}
	return first, others, nil
}
