package projection_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime/internal/projection"
)

// fill sets every field of v, a settable value, to something not zero: one
// element in each list and map, each string its field path.
func fill(v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), path)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), path)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		v.SetMapIndex(reflect.ValueOf("k"), reflect.ValueOf(path))
	case reflect.Struct:
		for i := range v.NumField() {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
			fill(v.Field(i), strings.TrimPrefix(path+"."+name, "."))
		}
	case reflect.String:
		v.SetString(path)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int32, reflect.Int64:
		v.SetInt(int64(len(path)))
	default:
		panic(fmt.Sprintf("fill: %s at %s", v.Kind(), path))
	}
}

func full[T any]() T {
	var v T
	fill(reflect.ValueOf(&v).Elem(), "")
	return v
}

func setRequest() *abi.ReconcileRequest {
	set, pod, claim, class, update := full[abi.StatefulSet](), full[abi.Pod](), full[abi.PersistentVolumeClaim](), full[abi.StorageClass](), full[abi.VolumeClaimUpdate]()
	return &abi.ReconcileRequest{Subject: abi.SubjectStatefulSet, Key: "ns/web", Now: "2026-01-01T00:00:00Z", Config: []byte(`{}`),
		StatefulSet: &abi.StatefulSetSubject{Set: &set, Pods: []abi.Pod{pod, pod}, Claims: []abi.PersistentVolumeClaim{claim},
			StorageClasses: []abi.StorageClass{class}, ClaimUpdate: &update, OtherClaimUpdates: []abi.VolumeClaimUpdate{update, update}}}
}

func volumeRequest() *abi.ReconcileRequest {
	pv, claim, class := full[abi.PersistentVolume](), full[abi.PersistentVolumeClaim](), full[abi.StorageClass]()
	return &abi.ReconcileRequest{Subject: abi.SubjectPersistentVolume, Key: "pv", Now: "2026-01-01T00:00:00Z",
		PersistentVolume: &abi.PersistentVolumeSubject{Volume: &pv, Claim: &claim, StorageClass: &class, Drivers: []string{"d"}}}
}

func compile(t *testing.T, p ...abi.ObjectFields) *projection.Projection {
	t.Helper()
	c, err := projection.Compile(p)
	require.NoError(t, err)
	return c
}

// identity is what every projected object keeps.
func identity() abi.ObjectMeta {
	return abi.ObjectMeta{Name: "metadata.name", Namespace: "metadata.namespace", UID: "metadata.uid", ResourceVersion: "metadata.resourceVersion"}
}

func TestApplyKeepsIdentityAndDeclaredFields(t *testing.T) {
	req := setRequest()
	before := setRequest()
	p := compile(t,
		abi.ObjectFields{Kind: abi.KindPod, Fields: []string{"status.conditions.type", "metadata.labels"}},
		abi.ObjectFields{Kind: abi.KindStatefulSet, Fields: []string{"spec.volumeClaimTemplates.metadata.name", "spec.updateStrategy.rollingUpdate.partition"}},
		abi.ObjectFields{Kind: abi.KindStorageClass},
	)
	got := p.Apply(req)
	require.Equal(t, before, req, "Apply changed the request it was given")

	meta := identity()
	meta.Labels = map[string]string{"k": "metadata.labels"}
	wantPod := abi.Pod{Metadata: meta, Status: abi.PodStatus{Conditions: []abi.Condition{{Type: "status.conditions.type"}}}}
	require.Equal(t, []abi.Pod{wantPod, wantPod}, got.StatefulSet.Pods)

	partition := int32(len("spec.updateStrategy.rollingUpdate.partition"))
	require.Equal(t, &abi.StatefulSet{Metadata: identity(), Spec: abi.StatefulSetSpec{
		UpdateStrategy:       abi.StatefulSetUpdateStrategy{RollingUpdate: &abi.RollingUpdateStatefulSetStrategy{Partition: &partition}},
		VolumeClaimTemplates: []abi.PersistentVolumeClaim{{Metadata: abi.ObjectMeta{Name: "spec.volumeClaimTemplates.metadata.name"}}},
	}}, got.StatefulSet.Set)
	require.Equal(t, []abi.StorageClass{{Metadata: identity()}}, got.StatefulSet.StorageClasses)

	// Kinds the projection does not list, and the request's own fields, are whole.
	require.Equal(t, req.StatefulSet.Claims, got.StatefulSet.Claims)
	require.Equal(t, req.StatefulSet.ClaimUpdate, got.StatefulSet.ClaimUpdate)
	got.StatefulSet = req.StatefulSet
	require.Equal(t, req, got)
}

// The VolumeClaimUpdates not in effect are narrowed as the one in effect is.
func TestApplyNarrowsEveryClaimUpdate(t *testing.T) {
	p := compile(t, abi.ObjectFields{Kind: abi.KindVolumeClaimUpdate, Fields: []string{"status.conditions"}})
	got := p.Apply(setRequest())
	want := abi.VolumeClaimUpdate{Metadata: identity(), Status: abi.VolumeClaimUpdateStatus{Conditions: setRequest().StatefulSet.ClaimUpdate.Status.Conditions}}
	require.Equal(t, &want, got.StatefulSet.ClaimUpdate)
	require.Equal(t, []abi.VolumeClaimUpdate{want, want}, got.StatefulSet.OtherClaimUpdates)
	omit := compile(t, abi.ObjectFields{Kind: abi.KindVolumeClaimUpdate, Omit: true})
	require.Nil(t, omit.Apply(setRequest()).StatefulSet.OtherClaimUpdates)
}

// A projection that lists none of a request's kinds sends it whole: no
// field of a subject is dropped by mistake.
func TestApplyWithoutTheRequestsKinds(t *testing.T) {
	p := compile(t, abi.ObjectFields{Kind: abi.KindPersistentVolume})
	require.Equal(t, setRequest(), p.Apply(setRequest()))
	p = compile(t, abi.ObjectFields{Kind: abi.KindPod})
	require.Equal(t, volumeRequest(), p.Apply(volumeRequest()))
	require.Nil(t, p.Apply(nil))

	var none *projection.Projection
	req := setRequest()
	require.Same(t, req, none.Apply(req))
	c, err := projection.Compile(nil)
	require.NoError(t, err)
	require.Nil(t, c)
}

// An omitted kind's objects are not sent at all.
func TestApplyOmitsKinds(t *testing.T) {
	p := compile(t, abi.ObjectFields{Kind: abi.KindPod, Omit: true}, abi.ObjectFields{Kind: abi.KindVolumeClaimUpdate, Omit: true},
		abi.ObjectFields{Kind: abi.KindStorageClass, Omit: true})
	req := setRequest()
	got := p.Apply(req).StatefulSet
	require.Nil(t, got.Pods)
	require.Nil(t, got.ClaimUpdate)
	require.Nil(t, got.StorageClasses)
	require.Equal(t, req.StatefulSet.Set, got.Set)
	require.Equal(t, req.StatefulSet.Claims, got.Claims)
	require.Equal(t, setRequest(), req, "Apply changed the request it was given")
	got2 := p.Apply(volumeRequest()).PersistentVolume
	require.Nil(t, got2.StorageClass)
	require.NotNil(t, got2.Claim)
}

func TestApplyVolumeSubject(t *testing.T) {
	p := compile(t,
		abi.ObjectFields{Kind: abi.KindPersistentVolume, Fields: []string{"spec.csi.driver", "status.phase"}},
		abi.ObjectFields{Kind: abi.KindPersistentVolumeClaim},
	)
	req := volumeRequest()
	got := p.Apply(req)
	require.Equal(t, &abi.PersistentVolume{Metadata: identity(),
		Spec: abi.PersistentVolumeSpec{CSI: &abi.CSIVolumeSource{Driver: "spec.csi.driver"}}, Status: abi.PersistentVolumeStatus{Phase: "status.phase"}},
		got.PersistentVolume.Volume)
	require.Equal(t, &abi.PersistentVolumeClaim{Metadata: identity()}, got.PersistentVolume.Claim)
	require.Equal(t, req.PersistentVolume.StorageClass, got.PersistentVolume.StorageClass)
	require.Equal(t, req.PersistentVolume.Drivers, got.PersistentVolume.Drivers)
}

// Every field path abi lets a manifest name compiles, and keeps its field.
func TestEveryFieldPathCompiles(t *testing.T) {
	for kind := range abi.Kinds() {
		for _, path := range abi.FieldPaths(kind) {
			_, err := projection.Compile([]abi.ObjectFields{{Kind: kind, Fields: []string{path}}})
			require.NoError(t, err, "%s %s", kind, path)
		}
	}
	// Kept: each field of the set and of a pod, on its own, adds to the
	// identity alone.
	bare := compile(t, abi.ObjectFields{Kind: abi.KindStatefulSet}, abi.ObjectFields{Kind: abi.KindPod}).Apply(setRequest()).StatefulSet
	for _, kind := range []string{abi.KindStatefulSet, abi.KindPod} {
		for _, path := range abi.FieldPaths(kind) {
			if slices.Contains(abi.IdentityFields(), path) || path == "metadata" {
				continue
			}
			other := abi.KindPod
			if kind == abi.KindPod {
				other = abi.KindStatefulSet
			}
			p := compile(t, abi.ObjectFields{Kind: kind, Fields: []string{path}}, abi.ObjectFields{Kind: other})
			got := p.Apply(setRequest()).StatefulSet
			if kind == abi.KindStatefulSet {
				require.NotEqual(t, bare.Set, got.Set, "projected on %s", path)
			} else {
				require.NotEqual(t, bare.Pods, got.Pods, "projected on %s", path)
			}
		}
	}
}

func TestCompileRefusesWhatIsNoField(t *testing.T) {
	_, err := projection.Compile([]abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"metadata.labels.app"}}})
	require.ErrorContains(t, err, `projection[0] (Pod): field "metadata.labels.app"`)
	_, err = projection.Compile([]abi.ObjectFields{{Kind: "Secret"}})
	require.ErrorContains(t, err, `kind "Secret" has no wire type`)
}

// Narrow reuses an earlier narrowing's memory, and still answers what
// Apply answers whatever that memory held: a request with every field set,
// then one with fewer objects and none of their lists or pointers set, then
// the full one again, for each field path on its own (bracketed ones
// included) and for the reference modules' kind of projection. The request given is never written.
func TestNarrowReusesAndAnswersAsApply(t *testing.T) {
	sparse := func(full *abi.ReconcileRequest) *abi.ReconcileRequest {
		if s := full.StatefulSet; s != nil {
			return &abi.ReconcileRequest{Subject: full.Subject, Key: "other", StatefulSet: &abi.StatefulSetSubject{
				Set: &abi.StatefulSet{Metadata: abi.ObjectMeta{Name: "web"}}, Pods: []abi.Pod{{Metadata: abi.ObjectMeta{Name: "web-0"}}}}}
		}
		return &abi.ReconcileRequest{Subject: full.Subject, Key: "other", PersistentVolume: &abi.PersistentVolumeSubject{
			Volume: &abi.PersistentVolume{Metadata: abi.ObjectMeta{Name: "pv"}}}}
	}
	var projections [][]abi.ObjectFields
	for kind := range abi.Kinds() {
		for _, path := range append(abi.FieldPaths(kind), bracketed(kind)...) {
			projections = append(projections, []abi.ObjectFields{{Kind: kind, Fields: []string{path}}})
		}
		projections = append(projections, []abi.ObjectFields{{Kind: kind}})
	}
	projections = append(projections, []abi.ObjectFields{
		{Kind: abi.KindPod, Fields: []string{"status.conditions.type", "metadata.deletionTimestamp"}},
		{Kind: abi.KindPersistentVolumeClaim, Fields: []string{"metadata.ownerReferences"}},
		{Kind: abi.KindStorageClass, Omit: true},
	}, []abi.ObjectFields{
		{Kind: abi.KindPod, Fields: []string{"metadata.labels[k]", "status.conditions[type=status.conditions.type].status", "status.conditions.reason"}},
		{Kind: abi.KindPersistentVolumeClaim, Fields: []string{"status.conditions[type=other]", "spec.resources.requests[k]"}},
		{Kind: abi.KindVolumeClaimUpdate, Fields: []string{"status.volumeClaimTemplates[templateName=status.volumeClaimTemplates.templateName].totalCapacity[k]"}},
	})
	for _, fields := range projections {
		p := compile(t, fields...)
		for _, full := range []func() *abi.ReconcileRequest{setRequest, volumeRequest} {
			few := func() *abi.ReconcileRequest { return sparse(full()) }
			for _, make := range []func() *abi.ReconcileRequest{full, few, full, few} {
				req := make()
				got, s := p.Narrow(req)
				require.Equal(t, p.Apply(make()), got, "%v", fields)
				require.Equal(t, make(), req, "Narrow changed the request it was given")
				s.Done()
			}
		}
	}
	var none *projection.Projection
	req := setRequest()
	got, s := none.Narrow(req)
	require.Same(t, req, got)
	s.Done()
}

// pod is a pod whose labels and conditions the bracketed paths below pick
// from: two Ready conditions, to show that a filter keeps every match in
// order.
func pod() abi.Pod {
	return abi.Pod{
		Metadata: abi.ObjectMeta{Name: "web-0", Namespace: "default", UID: "u0", ResourceVersion: "7",
			Labels:      map[string]string{"app": "web", "controller-revision-hash": "web-6d4b8c", "statefulset.kubernetes.io/pod-name": "web-0"},
			Annotations: map[string]string{"a": "1"}},
		Spec: abi.PodSpec{NodeName: "n", Volumes: []abi.PodVolume{{Name: "data", ClaimName: "data-web-0"}, {Name: "tmp"}}},
		Status: abi.PodStatus{Phase: "Running", Conditions: []abi.Condition{
			{Type: "PodScheduled", Status: "True", Reason: "r0", LastTransitionTime: "t0"},
			{Type: "Ready", Status: "True", Reason: "r1", Message: "m1", LastTransitionTime: "t1", ObservedGeneration: 3},
			{Type: "ContainersReady", Status: "True", LastTransitionTime: "t2"},
			{Type: "Ready", Status: "False", Reason: "r3", LastTransitionTime: "t3"},
		}},
	}
}

func podRequest(pods ...abi.Pod) *abi.ReconcileRequest {
	return &abi.ReconcileRequest{Subject: abi.SubjectStatefulSet, Key: "default/web",
		StatefulSet: &abi.StatefulSetSubject{Set: &abi.StatefulSet{Metadata: abi.ObjectMeta{Name: "web"}}, Pods: pods}}
}

func podIdentity() abi.ObjectMeta {
	return abi.ObjectMeta{Name: "web-0", Namespace: "default", UID: "u0", ResourceVersion: "7"}
}

// A key keeps that key of the map and nothing else; a filter the elements
// that match, in their order, with the field filtered on and what is
// below it. Keys and values a request lacks are simply not there.
func TestApplyKeepsKeysAndFilteredElements(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fields []string
		want   abi.Pod
	}{
		{"one label", []string{"metadata.labels[controller-revision-hash]"},
			abi.Pod{Metadata: withLabels(podIdentity(), map[string]string{"controller-revision-hash": "web-6d4b8c"})}},
		{"labels, one missing", []string{"metadata.labels[app]", "metadata.labels[tier]", "metadata.labels[statefulset.kubernetes.io/pod-name]"},
			abi.Pod{Metadata: withLabels(podIdentity(), map[string]string{"app": "web", "statefulset.kubernetes.io/pod-name": "web-0"})}},
		{"more keys than labels", []string{"metadata.labels[tier]", "metadata.labels[app]", "metadata.labels[zone]", "metadata.labels[rack]"},
			abi.Pod{Metadata: withLabels(podIdentity(), map[string]string{"app": "web"})}},
		{"no such label", []string{"metadata.labels[tier]"}, abi.Pod{Metadata: podIdentity()}},
		{"Ready whole", []string{"status.conditions[type=Ready]"}, abi.Pod{Metadata: podIdentity(), Status: abi.PodStatus{Conditions: []abi.Condition{
			pod().Status.Conditions[1], pod().Status.Conditions[3]}}}},
		{"fields of Ready", []string{"status.conditions[type=Ready].status", "status.conditions[type=Ready].lastTransitionTime"},
			abi.Pod{Metadata: podIdentity(), Status: abi.PodStatus{Conditions: []abi.Condition{
				{Type: "Ready", Status: "True", LastTransitionTime: "t1"}, {Type: "Ready", Status: "False", LastTransitionTime: "t3"}}}}},
		{"two values", []string{"status.conditions[type=ContainersReady]", "status.conditions[type=Ready].reason"},
			abi.Pod{Metadata: podIdentity(), Status: abi.PodStatus{Conditions: []abi.Condition{
				{Type: "Ready", Reason: "r1"}, pod().Status.Conditions[2], {Type: "Ready", Reason: "r3"}}}}},
		{"no such condition", []string{"status.conditions[type=Initialized]"}, abi.Pod{Metadata: podIdentity()}},
		{"a filter beside every element's field", []string{"status.conditions.type", "status.conditions[type=Ready].status"},
			abi.Pod{Metadata: podIdentity(), Status: abi.PodStatus{Conditions: []abi.Condition{
				{Type: "PodScheduled"}, {Type: "Ready", Status: "True"}, {Type: "ContainersReady"}, {Type: "Ready", Status: "False"}}}}},
		{"every element's field, then a filter", []string{"status.conditions[type=Ready].status", "status.conditions.lastTransitionTime"},
			abi.Pod{Metadata: podIdentity(), Status: abi.PodStatus{Conditions: []abi.Condition{
				{LastTransitionTime: "t0"}, {Type: "Ready", Status: "True", LastTransitionTime: "t1"}, {LastTransitionTime: "t2"},
				{Type: "Ready", Status: "False", LastTransitionTime: "t3"}}}}},
		{"a volume by name", []string{"spec.volumes[name=data].claimName"},
			abi.Pod{Metadata: podIdentity(), Spec: abi.PodSpec{Volumes: []abi.PodVolume{{Name: "data", ClaimName: "data-web-0"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := compile(t, abi.ObjectFields{Kind: abi.KindPod, Fields: tc.fields})
			req := podRequest(pod(), pod())
			got := p.Apply(req)
			require.Equal(t, podRequest(pod(), pod()), req, "Apply changed the request it was given")
			require.Equal(t, []abi.Pod{tc.want, tc.want}, got.StatefulSet.Pods)

			// What Apply made is the projection's own: writing it leaves
			// the request as it was.
			for i := range got.StatefulSet.Pods {
				clear(got.StatefulSet.Pods[i].Metadata.Labels)
				for j := range got.StatefulSet.Pods[i].Status.Conditions {
					got.StatefulSet.Pods[i].Status.Conditions[j] = abi.Condition{}
				}
			}
			require.Equal(t, podRequest(pod(), pod()), req, "the narrowed request shares memory with the request")
		})
	}
}

func withLabels(m abi.ObjectMeta, labels map[string]string) abi.ObjectMeta {
	m.Labels = labels
	return m
}

// Narrow reuses the lists and maps of the last narrowing; an element may
// then land where another value's element was, and must not keep the
// fields that one kept.
func TestNarrowFilteredListsKeepNothingStale(t *testing.T) {
	p := compile(t, abi.ObjectFields{Kind: abi.KindPod, Fields: []string{"metadata.labels[app]", "metadata.labels[tier]",
		"status.conditions.type", "status.conditions[type=Ready]", "status.conditions[type=PodScheduled].reason"}})
	shuffled := pod()
	shuffled.Metadata.Labels = map[string]string{"tier": "db"}
	slices.Reverse(shuffled.Status.Conditions)
	fewer := pod()
	fewer.Metadata.Labels = nil
	fewer.Status.Conditions = fewer.Status.Conditions[2:3]
	none := pod()
	none.Status.Conditions = nil
	for i, pods := range [][]abi.Pod{{pod()}, {shuffled}, {fewer, pod()}, {none}, {pod(), shuffled}, {shuffled, fewer}, {pod()}} {
		req := podRequest(pods...)
		got, s := p.Narrow(req)
		require.Equal(t, p.Apply(podRequest(pods...)), got, "narrowing %d", i)
		require.Equal(t, podRequest(pods...), req, "Narrow changed the request it was given")
		s.Done()
	}
}

// bracketed lists, for every map and every list of objects of kind's wire
// type, a path naming a key fill gives it and one it does not, and a filter
// on each string field of the list's elements with the value fill gives
// it and with another.
func bracketed(kind string) []string {
	var paths []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			path, ft := prefix+name, t.Field(i).Type
			switch {
			case ft == reflect.TypeFor[map[string]string]():
				paths = append(paths, path+"[k]", path+"[other]")
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				for j := range ft.Elem().NumField() {
					if ft.Elem().Field(j).Type.Kind() == reflect.String {
						leaf, _, _ := strings.Cut(ft.Elem().Field(j).Tag.Get("json"), ",")
						paths = append(paths, path+"["+leaf+"="+path+"."+leaf+"]", path+"["+leaf+"=other]")
					}
				}
				walk(ft.Elem(), path+".")
			default:
				walk(ft, path+".")
			}
		}
	}
	walk(reflect.TypeOf(map[string]any{
		abi.KindStatefulSet: abi.StatefulSet{}, abi.KindPod: abi.Pod{}, abi.KindPersistentVolumeClaim: abi.PersistentVolumeClaim{},
		abi.KindPersistentVolume: abi.PersistentVolume{}, abi.KindStorageClass: abi.StorageClass{}, abi.KindVolumeClaimUpdate: abi.VolumeClaimUpdate{},
	}[kind]), "")
	return paths
}

// Every bracketed path abi accepts compiles, and keeps more when what it
// names is in the request (a key fill sets, a filter on the value fill
// sets) than when it is not.
func TestEveryBracketedPathCompiles(t *testing.T) {
	bare := compile(t, abi.ObjectFields{Kind: abi.KindStatefulSet}, abi.ObjectFields{Kind: abi.KindPod}).Apply(setRequest()).StatefulSet
	kept := func(kind, path string) any {
		m := abi.Manifest{Name: "m", Version: "1", ABIVersion: abi.Current.String(), Subject: abi.SubjectStatefulSet,
			Hooks: []string{abi.HookReconcile}, Projection: []abi.ObjectFields{{Kind: kind, Fields: []string{path}}}}
		require.NoError(t, m.Validate(abi.Current), path)
		other := abi.KindPod
		if kind == abi.KindPod {
			other = abi.KindStatefulSet
		}
		got := compile(t, abi.ObjectFields{Kind: kind, Fields: []string{path}}, abi.ObjectFields{Kind: other}).Apply(setRequest()).StatefulSet
		if kind == abi.KindPod {
			return got.Pods
		}
		return got.Set
	}
	n := 0
	for _, kind := range []string{abi.KindStatefulSet, abi.KindPod} {
		paths := bracketed(kind)
		for i := 0; i < len(paths); i += 2 {
			n++
			match, miss := kept(kind, paths[i]), kept(kind, paths[i+1])
			require.NotEqual(t, match, miss, "%s against %s", paths[i], paths[i+1])
			if kind == abi.KindPod {
				require.NotEqual(t, bare.Pods, match, paths[i])
			} else {
				require.NotEqual(t, bare.Set, match, paths[i])
			}
		}
	}
	require.Greater(t, n, 20)
}

func TestCompileRefusesBracketsThatFitNoField(t *testing.T) {
	for _, tc := range []struct{ path, err string }{
		{"metadata[name]", "abi.ObjectMeta is not a map of strings"},
		{"metadata.finalizers[x]", "[]string is not a map of strings"},
		{"metadata.labels[app].x", `key "app" holds a string`},
		{"status.phase[type=Ready]", "string is not a list of objects"},
		{"metadata.finalizers[type=Ready]", "[]string is not a list of objects"},
		{"status.conditions[observedGeneration=1]", `abi.Condition has no string field "observedGeneration"`},
		{"status.conditions[type=Ready].podIP", `abi.Condition has no field "podIP"`},
		{"metadata.labels[a", `"[" at byte 15 is never closed`},
	} {
		_, err := projection.Compile([]abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{tc.path}}})
		require.ErrorContains(t, err, tc.err, tc.path)
	}
	_, err := projection.Compile([]abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"status.conditions[type=Ready]", "status.conditions[status=True]"}}})
	require.ErrorContains(t, err, `the list is filtered on "type" already, not on "status"`)
}
