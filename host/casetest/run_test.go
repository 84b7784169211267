package casetest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/casetest"
	"github.com/kubeplug/kubeplug/host/controller"
)

// fakeModule is a Reconciler whose decision is a Go function.
type fakeModule struct {
	manifest abi.Manifest
	decide   func(req *abi.ReconcileRequest) (*abi.Result, error)
	requests []*abi.ReconcileRequest
}

func (f *fakeModule) Manifest() abi.Manifest { return f.manifest }

func (f *fakeModule) Admit(context.Context, *abi.AdmitRequest) (*abi.AdmitResponse, error) {
	return nil, abi.ErrNoHook
}

func (f *fakeModule) Close(context.Context) error { return nil }

func (f *fakeModule) Reconcile(_ context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
	f.requests = append(f.requests, req)
	return f.decide(req)
}

func manifest(subject string, caps ...abi.Capability) abi.Manifest {
	return abi.Manifest{Name: "fake", Version: "0.0.1", ABIVersion: abi.Current.String(), Subject: subject,
		Hooks: []string{abi.HookReconcile}, Capabilities: caps}
}

func ref(kind string, m abi.ObjectMeta) abi.ObjectRef {
	return abi.ObjectRef{Kind: kind, Namespace: m.Namespace, Name: m.Name, UID: m.UID}
}

// adopter gives every claim of a set an owner reference to the set, the
// shape of the retention policy.
func adopter() *fakeModule {
	return &fakeModule{
		manifest: manifest(abi.SubjectStatefulSet, abi.Capability{Action: abi.ActionUpdateOwnerReferences, Resources: []string{"persistentvolumeclaims"}}),
		decide: func(req *abi.ReconcileRequest) (*abi.Result, error) {
			set := req.StatefulSet.Set
			res := &abi.Result{}
			for _, c := range req.StatefulSet.Claims {
				owned := false
				for _, o := range c.Metadata.OwnerReferences {
					owned = owned || o.UID == set.Metadata.UID
				}
				if owned {
					continue
				}
				res.Actions = append(res.Actions, abi.Action{
					Type:   abi.ActionUpdateOwnerReferences,
					Target: ref(abi.KindPersistentVolumeClaim, c.Metadata),
					OwnerReferences: &abi.OwnerReferencesChange{Add: []abi.OwnerReference{{
						APIVersion: "apps/v1", Kind: "StatefulSet", Name: set.Metadata.Name, UID: set.Metadata.UID,
					}}},
				})
			}
			return res, nil
		},
	}
}

const setObjects = `
objects:
- apiVersion: apps/v1
  kind: StatefulSet
  metadata: {name: web, uid: set-uid}
  spec:
    replicas: 2
    volumeClaimTemplates:
    - metadata: {name: data}
- {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data-web-0}}
- {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data-web-1, ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: web, uid: set-uid}]}}
`

func parseCase(t *testing.T, text string) casetest.Case {
	t.Helper()
	f, err := casetest.Parse("case.yaml", []byte(text))
	require.NoError(t, err)
	require.Len(t, f.Cases, 1)
	return f.Cases[0]
}

func TestRunPasses(t *testing.T) {
	m := adopter()
	c := parseCase(t, `name: adopt
now: 2026-02-03T04:05:06Z
config: {whenScaled: Delete}
`+setObjects+`
expect:
  present:
  - apiVersion: v1
    kind: PersistentVolumeClaim
    metadata:
      name: data-web-0
      ownerReferences: [{kind: StatefulSet, name: web, uid: set-uid}]
  - {apiVersion: apps/v1, kind: StatefulSet, metadata: {name: web}, spec: {replicas: 2}}
  absent:
  - {kind: PersistentVolumeClaim, name: data-web-2}
  volumeDeletes: []
  events: []
`)
	o := casetest.Run(context.Background(), controller.Module{Runtime: m}, c, nil)
	require.True(t, o.Passed, o.Failure)
	require.Empty(t, o.Failure)
	require.Equal(t, "case.yaml", o.File)
	require.Equal(t, "adopt", o.Name)

	require.Len(t, o.Rounds, 2, "one round acts, the next changes nothing")
	require.True(t, o.Rounds[0].Changed)
	require.False(t, o.Rounds[1].Changed)
	first := o.Rounds[0].Reconciles
	require.Len(t, first, 1)
	require.Equal(t, "default/web", first[0].Key)
	require.Len(t, first[0].Actions, 1)
	require.Equal(t, "data-web-0", first[0].Actions[0].Target.Name)
	require.Len(t, first[0].Report.Actions, 1)
	require.EqualValues(t, "executed", first[0].Report.Actions[0].Outcome)
	require.Empty(t, o.Rounds[1].Reconciles[0].Actions)

	req := m.requests[0]
	require.Equal(t, "2026-02-03T04:05:06Z", req.Now)
	require.JSONEq(t, `{"whenScaled":"Delete"}`, string(req.Config))
	require.Len(t, req.StatefulSet.Claims, 2)
}

func TestRunReportsTheFirstDifference(t *testing.T) {
	tests := []struct {
		name   string
		expect string
		want   string
	}{
		{"owner reference", `
  present:
  - {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data-web-0, ownerReferences: [{name: db}]}}`,
			`present[0] PersistentVolumeClaim default/data-web-0: metadata.ownerReferences[0].name: want "db", got "web"`},
		{"missing object", `
  present:
  - {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data-web-0}}
  - {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data-web-2}}`,
			`present[1] PersistentVolumeClaim default/data-web-2: not found`},
		{"no owner references", `
  present:
  - {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data-web-0, ownerReferences: []}}`,
			`present[0] PersistentVolumeClaim default/data-web-0: metadata.ownerReferences: want 0 items, got 1`},
		{"still there", `
  absent:
  - {apiVersion: v1, kind: PersistentVolumeClaim, namespace: default, name: data-web-1}`,
			`absent[0] PersistentVolumeClaim default/data-web-1: still exists`},
		{"volume deletes", `
  volumeDeletes:
  - {driver: csi.example.com, volumeHandle: vol-1}`,
			`volumeDeletes: want 1 items, got 0; deleted: []`},
		{"events", `
  events:
  - {type: Warning}`,
			`events: want 1 items, got 0; recorded: []`},
		{"no actions", `
  noActions: true`,
			`noActions: the module returned actions: round 1 default/web: updateOwnerReferences PersistentVolumeClaim default/data-web-0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := parseCase(t, "name: x\n"+setObjects+"expect:"+tt.expect+"\n")
			o := casetest.Run(context.Background(), controller.Module{Runtime: adopter()}, c, nil)
			require.False(t, o.Passed)
			require.Equal(t, tt.want, o.Failure)
		})
	}
}

func TestRunNoActions(t *testing.T) {
	idle := &fakeModule{
		manifest: manifest(abi.SubjectStatefulSet),
		decide:   func(*abi.ReconcileRequest) (*abi.Result, error) { return &abi.Result{}, nil },
	}
	o := casetest.Run(context.Background(), controller.Module{Runtime: idle}, parseCase(t, "name: x\n"+setObjects+"expect: {noActions: true}\n"), nil)
	require.True(t, o.Passed, o.Failure)
	require.Len(t, o.Rounds, 1)
}

func TestRunPersistentVolume(t *testing.T) {
	m := &fakeModule{
		manifest: manifest(abi.SubjectPersistentVolume,
			abi.Capability{Action: abi.ActionDeleteVolume},
			abi.Capability{Action: abi.ActionRemoveFinalizer, Resources: []string{"persistentvolumes"}},
			abi.Capability{Action: abi.ActionEvent, Resources: []string{"persistentvolumes"}},
		),
		decide: func(req *abi.ReconcileRequest) (*abi.Result, error) {
			pv := req.PersistentVolume.Volume
			if pv.Metadata.DeletionTimestamp == "" || pv.Spec.CSI == nil {
				return &abi.Result{}, nil
			}
			target := ref(abi.KindPersistentVolume, pv.Metadata)
			return &abi.Result{Actions: []abi.Action{
				{Type: abi.ActionEvent, Target: target, Event: &abi.Event{Type: abi.EventNormal, Reason: "VolumeDeleted", Message: "deleted " + pv.Spec.CSI.VolumeHandle}},
				{Type: abi.ActionDeleteVolume, Target: target, Volume: &abi.VolumeDelete{Driver: pv.Spec.CSI.Driver, VolumeHandle: pv.Spec.CSI.VolumeHandle}},
				{Type: abi.ActionRemoveFinalizer, Target: target, Finalizer: "external-provisioner.volume.kubernetes.io/finalizer"},
			}}, nil
		},
	}
	c := parseCase(t, `name: reclaim
objects:
- apiVersion: v1
  kind: PersistentVolume
  metadata: {name: pv-1, finalizers: [external-provisioner.volume.kubernetes.io/finalizer], deletionTimestamp: "2025-12-31T00:00:00Z"}
  spec:
    csi: {driver: csi.example.com, volumeHandle: vol-1}
    persistentVolumeReclaimPolicy: Delete
    claimRef: {namespace: default, name: data-0, uid: claim-0}
  status: {phase: Released}
- apiVersion: v1
  kind: PersistentVolume
  metadata: {name: pv-2}
  spec: {csi: {driver: other.example.com, volumeHandle: vol-2}}
- apiVersion: v1
  kind: PersistentVolume
  metadata: {name: pv-3, annotations: {pv.kubernetes.io/migrated-to: ebs.csi.aws.com}}
  spec: {awsElasticBlockStore: {volumeID: vol-3}}
expect:
  absent:
  - {kind: PersistentVolume, name: pv-1}
  present:
  - {apiVersion: v1, kind: PersistentVolume, metadata: {name: pv-2}}
  volumeDeletes:
  - {volumeHandle: vol-1, driver: csi.example.com}
  events:
  - {type: Normal, reason: VolumeDeleted, message: deleted vol-1, involvedObject: {kind: PersistentVolume, name: pv-1}}
`)
	o := casetest.Run(context.Background(), controller.Module{Runtime: m}, c, nil)
	require.True(t, o.Passed, o.Failure)
	require.Equal(t, []string{"csi.example.com", "ebs.csi.aws.com", "other.example.com"}, m.requests[0].PersistentVolume.Drivers,
		"the cluster acts for every driver the case's volumes name, in spec.csi or as the driver they migrated to")
}

func TestRunRefusedActionLeavesAnEvent(t *testing.T) {
	m := adopter()
	m.manifest.Capabilities = nil
	c := parseCase(t, "name: x\n"+setObjects+`expect:
  events:
  - {type: Warning, reason: ActionRefused, involvedObject: {kind: StatefulSet, namespace: default, name: web}}
`)
	o := casetest.Run(context.Background(), controller.Module{Runtime: m}, c, nil)
	require.True(t, o.Passed, o.Failure)
	require.Len(t, o.Rounds, 2, "the repeated refusal is the same event: the second round changes nothing")
}

func TestRunModuleError(t *testing.T) {
	m := &fakeModule{
		manifest: manifest(abi.SubjectStatefulSet),
		decide: func(*abi.ReconcileRequest) (*abi.Result, error) {
			return nil, errors.New(`module "fake" reconcile "default/web": deadline exceeded after 1s: guest interrupted`)
		},
	}
	o := casetest.Run(context.Background(), controller.Module{Runtime: m}, parseCase(t, "name: x\n"+setObjects), nil)
	require.False(t, o.Passed)
	require.Equal(t, `round 1: module "fake" reconcile "default/web": deadline exceeded after 1s: guest interrupted`, o.Failure)
}

func TestRunDoesNotConverge(t *testing.T) {
	calls := 0
	m := &fakeModule{
		manifest: manifest(abi.SubjectStatefulSet, abi.Capability{Action: abi.ActionEvent, Resources: []string{"statefulsets"}}),
		decide: func(req *abi.ReconcileRequest) (*abi.Result, error) {
			calls++
			return &abi.Result{Actions: []abi.Action{{
				Type:   abi.ActionEvent,
				Target: ref(abi.KindStatefulSet, req.StatefulSet.Set.Metadata),
				Event:  &abi.Event{Type: abi.EventNormal, Reason: "Tick", Message: fmt.Sprintf("tick %d", calls)},
			}}}, nil
		},
	}
	o := casetest.Run(context.Background(), controller.Module{Runtime: m}, parseCase(t, "name: x\n"+setObjects), nil)
	require.False(t, o.Passed)
	require.True(t, strings.HasPrefix(o.Failure, "did not converge after 10 rounds: round 10 still acted: default/web: event StatefulSet default/web"), o.Failure)
	require.Len(t, o.Rounds, casetest.MaxRounds)
	require.Equal(t, casetest.MaxRounds, calls)
}

func TestRunUnknownSubject(t *testing.T) {
	m := &fakeModule{manifest: manifest("deployment")}
	o := casetest.Run(context.Background(), controller.Module{Runtime: m}, parseCase(t, "name: x\n"), nil)
	require.False(t, o.Passed)
	require.Contains(t, o.Failure, `module "fake" has subject "deployment"`)
}

func TestRunAbsentButHeldByFinalizers(t *testing.T) {
	idle := &fakeModule{
		manifest: manifest(abi.SubjectPersistentVolume),
		decide:   func(*abi.ReconcileRequest) (*abi.Result, error) { return &abi.Result{}, nil },
	}
	c := parseCase(t, `name: x
objects:
- apiVersion: v1
  kind: PersistentVolume
  metadata: {name: pv-1, finalizers: [kubernetes.io/pv-protection], deletionTimestamp: "2025-12-31T00:00:00Z"}
expect:
  absent:
  - {kind: PersistentVolume, name: pv-1}
`)
	o := casetest.Run(context.Background(), controller.Module{Runtime: idle}, c, nil)
	require.False(t, o.Passed)
	require.Equal(t, `absent[0] PersistentVolume pv-1: still exists (being deleted, held by finalizers ["kubernetes.io/pv-protection"])`, o.Failure)
}

// A round stops between two subjects once its context ends (SIGTERM, or
// kubeplug check's budget): the module is called for none of the rest.
func TestRoundStopsWhenItsContextEnds(t *testing.T) {
	m := adopter()
	c := parseCase(t, "name: three sets\nobjects:\n"+
		"- {apiVersion: apps/v1, kind: StatefulSet, metadata: {name: a}}\n"+
		"- {apiVersion: apps/v1, kind: StatefulSet, metadata: {name: b}}\n"+
		"- {apiVersion: apps/v1, kind: StatefulSet, metadata: {name: c}}\n")
	s, err := casetest.NewSession(controller.Module{Runtime: m}, c, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = s.Round(ctx, 1)
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, m.requests)
}
