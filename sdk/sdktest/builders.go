package sdktest

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// DefaultNamespace is where builders put namespaced objects.
const DefaultNamespace = "default"

// Builders make objects as the host would project them from a healthy
// cluster, with UIDs "<name>-uid" and resourceVersion "1": with the fields
// the API server defaults set as it sets them, and whatever options leave
// unset filled in with the defaults the host's snapshot applies (see
// defaults.go).

func meta(name, namespace string) abi.ObjectMeta {
	return abi.ObjectMeta{Name: name, Namespace: namespace, UID: name + "-uid", ResourceVersion: "1", Generation: 1}
}

func defaultTemplate() abi.PersistentVolumeClaim {
	return abi.PersistentVolumeClaim{
		Metadata: abi.ObjectMeta{Name: "data"},
		Spec: abi.PersistentVolumeClaimSpec{
			AccessModes: []string{"ReadWriteOnce"},
			Resources:   abi.ResourceRequirements{Requests: map[string]string{"storage": "1Gi"}},
			VolumeMode:  "Filesystem",
		},
	}
}

// StatefulSet returns a StatefulSet named name with replicas ready replicas,
// one claim template "data" (1Gi, ReadWriteOnce) and the default retention
// policy, Retain on both fields, as the host sends a set that has none.
//
//	set := sdktest.StatefulSet("web", 3, sdktest.Retention("Delete", "Delete"))
func StatefulSet(name string, replicas int32, opts ...Option) *abi.StatefulSet {
	set := &abi.StatefulSet{
		Metadata: meta(name, DefaultNamespace),
		Spec: abi.StatefulSetSpec{
			Replicas:             replicas,
			Selector:             map[string]string{"app": name},
			ServiceName:          name,
			PodManagementPolicy:  "OrderedReady",
			UpdateStrategy:       abi.StatefulSetUpdateStrategy{Type: "RollingUpdate"},
			VolumeClaimTemplates: []abi.PersistentVolumeClaim{defaultTemplate()},
			RevisionHistoryLimit: 10,
		},
		Status: abi.StatefulSetStatus{
			ObservedGeneration: 1, Replicas: replicas, ReadyReplicas: replicas,
			CurrentReplicas: replicas, UpdatedReplicas: replicas, AvailableReplicas: replicas,
			CurrentRevision: name + "-1", UpdateRevision: name + "-1",
		},
	}
	apply(&object{meta: &set.Metadata, set: set, kind: abi.KindStatefulSet}, opts)
	defaultStatefulSet(set)
	return set
}

// Pod returns set's running, ready pod with ordinal: controlled by set, with
// a volume for each of set's claim templates.
func Pod(set *abi.StatefulSet, ordinal int, opts ...Option) *abi.Pod {
	name := sdk.PodName(set.Metadata.Name, ordinal)
	pod := &abi.Pod{
		Metadata: meta(name, set.Metadata.Namespace),
		Spec:     abi.PodSpec{NodeName: "node-1"},
		Status: abi.PodStatus{
			Phase:      "Running",
			Conditions: []abi.Condition{{Type: "Ready", Status: "True"}},
		},
	}
	pod.Metadata.Labels = maps.Clone(set.Spec.Selector)
	if pod.Metadata.Labels == nil {
		pod.Metadata.Labels = map[string]string{}
	}
	pod.Metadata.Labels["statefulset.kubernetes.io/pod-name"] = name
	pod.Metadata.Labels["apps.kubernetes.io/pod-index"] = strconv.Itoa(ordinal)
	pod.Metadata.OwnerReferences = []abi.OwnerReference{sdk.NewControllerRef(set)}
	for _, t := range set.Spec.VolumeClaimTemplates {
		pod.Spec.Volumes = append(pod.Spec.Volumes, abi.PodVolume{
			Name: t.Metadata.Name, ClaimName: sdk.ClaimName(t.Metadata.Name, set.Metadata.Name, ordinal),
		})
	}
	apply(&object{meta: &pod.Metadata, pod: pod, kind: abi.KindPod}, opts)
	return pod
}

// Claim returns the bound claim of set's template for ordinal, with the
// template's spec (the default template's when set has no template of that
// name) and no owner references.
//
//	pvc := sdktest.Claim("data", set, 0, sdktest.OwnedBy(sdk.NewControllerRef(set)))
func Claim(template string, set *abi.StatefulSet, ordinal int, opts ...Option) *abi.PersistentVolumeClaim {
	t := defaultTemplate()
	for _, x := range set.Spec.VolumeClaimTemplates {
		if x.Metadata.Name == template {
			t = x
		}
	}
	name := sdk.ClaimName(template, set.Metadata.Name, ordinal)
	claim := cloneClaim(t)
	claim.Metadata = meta(name, set.Metadata.Namespace)
	claim.Metadata.Labels = maps.Clone(set.Spec.Selector)
	claim.Spec.VolumeName = "pv-" + name
	claim.Status = abi.PersistentVolumeClaimStatus{
		Phase:       "Bound",
		AccessModes: slices.Clone(claim.Spec.AccessModes),
		Capacity:    maps.Clone(claim.Spec.Resources.Requests),
	}
	apply(&object{meta: &claim.Metadata, claim: &claim, kind: abi.KindPersistentVolumeClaim}, opts)
	return &claim
}

// StorageClass returns a StorageClass named name of provisioner, with
// reclaim policy Delete.
func StorageClass(name, provisioner string, opts ...Option) *abi.StorageClass {
	sc := &abi.StorageClass{
		Metadata:          meta(name, ""),
		Provisioner:       provisioner,
		ReclaimPolicy:     "Delete",
		VolumeBindingMode: "Immediate",
	}
	apply(&object{meta: &sc.Metadata, kind: abi.KindStorageClass}, opts)
	defaultStorageClass(sc)
	return sc
}

// PersistentVolume returns an available 1Gi PersistentVolume named name with
// reclaim policy Delete; CSI, BoundTo and ReclaimPolicy change it.
//
//	pv := sdktest.PersistentVolume("pv-1", sdktest.CSI("hostpath.csi.k8s.io", "vol-1"), sdktest.BoundTo(pvc))
func PersistentVolume(name string, opts ...Option) *abi.PersistentVolume {
	pv := &abi.PersistentVolume{
		Metadata: meta(name, ""),
		Spec: abi.PersistentVolumeSpec{
			Capacity:                      map[string]string{"storage": "1Gi"},
			AccessModes:                   []string{"ReadWriteOnce"},
			PersistentVolumeReclaimPolicy: "Delete",
			VolumeMode:                    "Filesystem",
		},
		Status: abi.PersistentVolumeStatus{Phase: "Available"},
	}
	apply(&object{meta: &pv.Metadata, pv: pv, kind: abi.KindPersistentVolume}, opts)
	defaultVolume(pv)
	return pv
}

func apply(o *object, opts []Option) {
	for _, opt := range opts {
		opt(o)
	}
}

func cloneClaim(c abi.PersistentVolumeClaim) abi.PersistentVolumeClaim {
	c.Metadata.Labels = maps.Clone(c.Metadata.Labels)
	c.Metadata.Annotations = maps.Clone(c.Metadata.Annotations)
	c.Spec.AccessModes = slices.Clone(c.Spec.AccessModes)
	c.Spec.Resources.Requests = maps.Clone(c.Spec.Resources.Requests)
	c.Spec.Resources.Limits = maps.Clone(c.Spec.Resources.Limits)
	return c
}

// Config is the module's configuration as JSON, for Request.
type Config string

// Key sets a request's key, for a request whose subject object is gone.
type Key string

// Drivers are the CSI drivers of a PersistentVolume request.
type Drivers []string

// Request returns the reconcile request the host would send at now for the
// given objects and settings, in any order:
//
//   - *abi.StatefulSet, *abi.Pod, *abi.PersistentVolumeClaim,
//     *abi.StorageClass, *abi.VolumeClaimUpdate, *abi.PersistentVolume
//     (and slices of those pointers);
//   - Config, Key, Drivers.
//
// The subject is persistentvolume when a PersistentVolume is given
// (a claim is then its bound claim), statefulset otherwise; the key is the
// subject's "namespace/name" unless Key says otherwise. Claims are sorted by
// name, as the host sends them; of several VolumeClaimUpdates the oldest (by
// creationTimestamp, then name) is the one in effect and the others follow in
// OtherClaimUpdates, as the host orders them. Objects are copied, and their unset
// defaulted fields filled in as the host's snapshot fills them (a
// StatefulSet without a retention policy gets Retain/Retain).
//
//	req := sdktest.Request(now, set, sdktest.Pod(set, 0), sdktest.Claim("data", set, 0), sdktest.Config(`{"x":1}`))
func Request(now time.Time, args ...any) *abi.ReconcileRequest {
	req := &abi.ReconcileRequest{}
	if !now.IsZero() {
		req.Now = now.UTC().Format(time.RFC3339Nano)
	}
	var (
		key     *string
		sets    []*abi.StatefulSet
		pods    []*abi.Pod
		claims  []*abi.PersistentVolumeClaim
		classes []*abi.StorageClass
		updates []*abi.VolumeClaimUpdate
		pvs     []*abi.PersistentVolume
		drivers []string
	)
	for _, a := range args {
		switch v := a.(type) {
		case *abi.StatefulSet:
			sets = append(sets, v)
		case *abi.Pod:
			pods = append(pods, v)
		case []*abi.Pod:
			pods = append(pods, v...)
		case *abi.PersistentVolumeClaim:
			claims = append(claims, v)
		case []*abi.PersistentVolumeClaim:
			claims = append(claims, v...)
		case *abi.StorageClass:
			classes = append(classes, v)
		case []*abi.StorageClass:
			classes = append(classes, v...)
		case *abi.VolumeClaimUpdate:
			updates = append(updates, v)
		case *abi.PersistentVolume:
			pvs = append(pvs, v)
		case Config:
			req.Config = []byte(v)
		case Key:
			k := string(v)
			key = &k
		case Drivers:
			drivers = append(drivers, v...)
		default:
			panic(fmt.Sprintf("sdktest.Request: cannot use %T; pass pointers to abi objects, Config, Key or Drivers", a))
		}
	}
	if len(sets) > 1 || len(pvs) > 1 || (len(sets) > 0 && len(pvs) > 0) {
		panic("sdktest.Request: a request has one subject: at most one StatefulSet (with its VolumeClaimUpdates) or one PersistentVolume")
	}

	if len(pvs) > 0 {
		pv := *pvs[0]
		defaultVolume(&pv)
		req.Subject, req.Key = abi.SubjectPersistentVolume, pv.Metadata.Name
		s := &abi.PersistentVolumeSubject{Volume: &pv, Drivers: drivers}
		if len(claims) > 1 || len(classes) > 1 || len(pods) > 0 || len(updates) > 0 {
			panic("sdktest.Request: a PersistentVolume request holds at most one claim and one StorageClass")
		}
		if len(claims) == 1 {
			c := *claims[0]
			s.Claim = &c
		}
		if len(classes) == 1 {
			c := *classes[0]
			defaultStorageClass(&c)
			s.StorageClass = &c
		}
		req.PersistentVolume = s
	} else {
		req.Subject = abi.SubjectStatefulSet
		s := &abi.StatefulSetSubject{}
		if len(sets) == 1 {
			set := *sets[0]
			defaultStatefulSet(&set)
			s.Set = &set
			req.Key = set.Metadata.Namespace + "/" + set.Metadata.Name
		}
		for _, p := range pods {
			s.Pods = append(s.Pods, *p)
		}
		for _, c := range claims {
			s.Claims = append(s.Claims, *c)
		}
		slices.SortFunc(s.Claims, func(a, b abi.PersistentVolumeClaim) int {
			return strings.Compare(a.Metadata.Name, b.Metadata.Name)
		})
		for _, c := range classes {
			s.StorageClasses = append(s.StorageClasses, *c)
			defaultStorageClass(&s.StorageClasses[len(s.StorageClasses)-1])
		}
		// The host's order: the oldest is in effect, the others are not.
		slices.SortStableFunc(updates, func(a, b *abi.VolumeClaimUpdate) int {
			return cmp.Or(strings.Compare(a.Metadata.CreationTimestamp, b.Metadata.CreationTimestamp),
				strings.Compare(a.Metadata.Name, b.Metadata.Name))
		})
		for i, u := range updates {
			if i == 0 {
				first := *u
				s.ClaimUpdate = &first
				continue
			}
			s.OtherClaimUpdates = append(s.OtherClaimUpdates, *u)
		}
		req.StatefulSet = s
	}
	if key != nil {
		req.Key = *key
	}
	return req
}
