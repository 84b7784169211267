package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// request builds the module's input for req: the request's fields, its
// objects projected, the namespace's labels, and for a statefulset module
// the state of the StatefulSet the object belongs to.
func (r *Reviewer) request(ctx context.Context, m *Module, req *admissionv1.AdmissionRequest) (*abi.AdmitRequest, error) {
	in := &abi.AdmitRequest{
		UID:         string(req.UID),
		Operation:   string(req.Operation),
		Kind:        abi.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind},
		Resource:    abi.GroupVersionResource{Group: req.Resource.Group, Version: req.Resource.Version, Resource: req.Resource.Resource},
		SubResource: req.SubResource,
		Namespace:   req.Namespace,
		Name:        req.Name,
		UserInfo: abi.UserInfo{
			Username: req.UserInfo.Username, UID: req.UserInfo.UID, Groups: req.UserInfo.Groups,
		},
		DryRun: req.DryRun != nil && *req.DryRun,
		Now:    r.now(),
		Config: m.Config,
	}
	if len(req.UserInfo.Extra) > 0 {
		in.UserInfo.Extra = make(map[string][]string, len(req.UserInfo.Extra))
		for k, v := range req.UserInfo.Extra {
			in.UserInfo.Extra[k] = v
		}
	}
	var err error
	var obj, old any
	// Without their managedFields: see scan.go.
	if in.Object, obj, err = project(req.Kind.Kind, stripObject(req.Object.Raw)); err != nil {
		return nil, fmt.Errorf("object: %w", err)
	}
	if in.OldObject, old, err = project(req.Kind.Kind, stripObject(req.OldObject.Raw)); err != nil {
		return nil, fmt.Errorf("oldObject: %w", err)
	}
	if req.Namespace != "" && r.NamespaceLabels != nil {
		if in.NamespaceLabels, err = r.NamespaceLabels(req.Namespace); err != nil {
			return nil, fmt.Errorf("namespace %s: %w", req.Namespace, err)
		}
	}
	if m.Admitter.Manifest().Subject == abi.SubjectStatefulSet && r.Lister != nil {
		if obj == nil {
			obj = old // a DELETE carries the old object only
		}
		var l snapshot.Lister = r.Lister
		if r.LiveStatefulSet != nil {
			l = &liveSets{Lister: r.Lister, ctx: ctx, get: r.LiveStatefulSet, log: r.Logger, left: maxLiveReads}
		}
		if in.StatefulSet, err = statefulSet(l, req.Namespace, req.Name, obj, m.Config); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// statefulSet returns the state of the StatefulSet obj belongs to, as the
// snapshot builder makes it for a reconcile, or nil.
func statefulSet(l snapshot.Lister, ns, name string, obj any, config []byte) (*abi.StatefulSetSubject, error) {
	var keys []string
	var err error
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		keys = []string{ns + "/" + name}
	case *corev1.PersistentVolumeClaim:
		// A claim being created has no namespace in its body when the
		// request gives it in the URL.
		c := *o
		c.Namespace = ns
		if keys, err = snapshot.SetKeysForClaim(&c, l); err != nil {
			return nil, err
		}
	case *corev1.Pod:
		p := *o
		p.Namespace = ns
		keys = snapshot.SetKeysForPod(&p)
	case *unstructured.Unstructured:
		u := o.DeepCopy()
		u.SetNamespace(ns)
		if k := snapshot.SetKeyForClaimUpdate(u); k != "" {
			keys = []string{k}
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	b := snapshot.Builder{Lister: l}
	rr, err := b.StatefulSet(keys[0], config)
	if err != nil || rr == nil {
		return nil, err
	}
	return rr.StatefulSet, nil
}

// project decodes raw as kind and projects it into the wire type of its
// kind; for a kind the ABI does not project, only JSON is set. It also
// returns the decoded object, nil for an absent one.
func project(kind string, raw []byte) (*abi.AdmitObject, any, error) {
	if len(raw) == 0 {
		return nil, nil, nil
	}
	out := &abi.AdmitObject{Kind: kind, JSON: raw}
	var err error
	var obj any
	switch kind {
	case abi.KindPersistentVolumeClaim:
		var c corev1.PersistentVolumeClaim
		if err = json.Unmarshal(raw, &c); err == nil {
			out.PersistentVolumeClaim, obj = snapshot.ProjectClaim(&c), &c
		}
	case abi.KindStatefulSet:
		var s appsv1.StatefulSet
		if err = json.Unmarshal(raw, &s); err == nil {
			out.StatefulSet, obj = snapshot.ProjectStatefulSet(&s), &s
		}
	case abi.KindPod:
		var p corev1.Pod
		if err = json.Unmarshal(raw, &p); err == nil {
			out.Pod, obj = snapshot.ProjectPod(&p), &p
		}
	case abi.KindPersistentVolume:
		var v corev1.PersistentVolume
		if err = json.Unmarshal(raw, &v); err == nil {
			out.PersistentVolume, obj = snapshot.ProjectVolume(&v), &v
		}
	case abi.KindStorageClass:
		var c storagev1.StorageClass
		if err = json.Unmarshal(raw, &c); err == nil {
			out.StorageClass, obj = snapshot.ProjectStorageClass(&c), &c
		}
	case abi.KindVolumeClaimUpdate:
		u := &unstructured.Unstructured{}
		if err = u.UnmarshalJSON(raw); err == nil {
			out.VolumeClaimUpdate, err = snapshot.ProjectClaimUpdate(u)
			obj = u
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("decode %s: %w", kind, err)
	}
	return out, obj, nil
}

// maxLiveReads bounds the API reads one review may make for StatefulSets
// the cache has not got: a claim's name can name several candidate sets
// (snapshot.SetNamesInClaimName), each read once.
const maxLiveReads = 3

// liveSets is a Lister whose reads of a StatefulSet go to the API server
// when the cache answers NotFound, at most left times; every other read is
// the cache's. A live read that fails for any other reason than NotFound is
// logged and answered as the cache's miss: the review goes on as if the set
// were unknown, and reconcile stays the fallback, rather than every claim
// creation failing while the API server is slow. Each answer is kept for
// the rest of the review: the claim's candidates are looked up to find its
// set, and the snapshot builder then asks for the set found, which costs no
// second read and cannot see another version of it.
type liveSets struct {
	snapshot.Lister
	ctx  context.Context
	get  func(ctx context.Context, namespace, name string) (*appsv1.StatefulSet, error)
	log  *slog.Logger
	left int
	read map[string]*appsv1.StatefulSet // namespace/name -> the live answer, nil for none
}

func (l *liveSets) GetObject(kind, namespace, name string) (k8sruntime.Object, error) {
	obj, err := l.Lister.GetObject(kind, namespace, name)
	if kind != abi.KindStatefulSet || !apierrors.IsNotFound(err) {
		return obj, err
	}
	key := namespace + "/" + name
	if live, ok := l.read[key]; ok {
		if live == nil {
			return nil, err
		}
		return live, nil
	}
	if l.left <= 0 {
		return nil, err
	}
	l.left--
	live, lerr := l.get(l.ctx, namespace, name)
	if lerr != nil {
		live = nil
		if !apierrors.IsNotFound(lerr) && l.log != nil {
			l.log.Debug("admission: reading a StatefulSet the cache has not got", "namespace", namespace, "name", name, "err", lerr)
		}
	}
	if l.read == nil {
		l.read = map[string]*appsv1.StatefulSet{}
	}
	l.read[key] = live
	if live == nil {
		return nil, err
	}
	return live, nil
}
