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
// the full one again, for each field path on its own and for the reference
// modules' kind of projection. The request given is never written.
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
		for _, path := range abi.FieldPaths(kind) {
			projections = append(projections, []abi.ObjectFields{{Kind: kind, Fields: []string{path}}})
		}
		projections = append(projections, []abi.ObjectFields{{Kind: kind}})
	}
	projections = append(projections, []abi.ObjectFields{
		{Kind: abi.KindPod, Fields: []string{"status.conditions.type", "metadata.deletionTimestamp"}},
		{Kind: abi.KindPersistentVolumeClaim, Fields: []string{"metadata.ownerReferences"}},
		{Kind: abi.KindStorageClass, Omit: true},
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
