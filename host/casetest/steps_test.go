package casetest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/casetest"
	"github.com/kubeplug/kubeplug/host/controller"
)

const stepObjects = `objects:
- apiVersion: apps/v1
  kind: StatefulSet
  metadata: {name: web, uid: 11111111-0000-4000-8000-000000000000}
  spec:
    replicas: 1
    selector: {matchLabels: {app: web}}
    template: {metadata: {labels: {app: web}}, spec: {containers: [{name: c, image: i}]}}
    volumeClaimTemplates: [{metadata: {name: data}, spec: {resources: {requests: {storage: 1Gi}}}}]
- {apiVersion: v1, kind: Pod, metadata: {name: web-0, uid: 22222222-0000-4000-8000-000000000000, ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: web, uid: 11111111-0000-4000-8000-000000000000, controller: true}]}, spec: {containers: [{name: c, image: i}]}}
- {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data-web-0, uid: 33333333-0000-4000-8000-000000000000, ownerReferences: [{apiVersion: v1, kind: Pod, name: web-0, uid: 22222222-0000-4000-8000-000000000000}]}, spec: {volumeName: pv-0, resources: {requests: {storage: 1Gi}}}}
- {apiVersion: v1, kind: PersistentVolume, metadata: {name: pv-0}, spec: {persistentVolumeReclaimPolicy: Delete, claimRef: {namespace: default, name: data-web-0, uid: 33333333-0000-4000-8000-000000000000}, csi: {driver: csi.example.com, volumeHandle: h0}}, status: {phase: Bound}}
`

// The steps of a case run between settled rounds, each as the user or
// controller it stands for would act.
func TestStepsRun(t *testing.T) {
	f, err := casetest.Parse("steps.yaml", []byte(`name: steps
`+stepObjects+`steps:
- scale: {statefulSet: web, replicas: 2}
- statefulSetController: {statefulSet: web}
- delete: {kind: Pod, name: web-0}
- garbageCollector: {}
- releaseVolumes: {}
- patch: {kind: StatefulSet, name: web, patch: {spec: {template: {metadata: {labels: {app: web, v: "2"}}}}}}
expect:
  present:
  - {apiVersion: apps/v1, kind: StatefulSet, metadata: {name: web}, spec: {replicas: 2, template: {metadata: {labels: {v: "2"}}}}}
  - {apiVersion: v1, kind: Pod, metadata: {name: web-1, labels: {app: web, statefulset.kubernetes.io/pod-name: web-1}}, spec: {volumes: [{name: data, persistentVolumeClaim: {claimName: data-web-1}}]}}
  - {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data-web-1, labels: {app: web}}, spec: {resources: {requests: {storage: 1Gi}}}}
  - {apiVersion: v1, kind: PersistentVolume, metadata: {name: pv-0}, status: {phase: Released}}
  absent:
  - {kind: Pod, name: web-0}
  - {kind: PersistentVolumeClaim, name: data-web-0}
`))
	require.NoError(t, err)
	require.Len(t, f.Cases[0].Steps, 6)
	require.Equal(t, 15, f.Cases[0].Steps[0].Line)
	o := casetest.Run(context.Background(), controller.Module{Runtime: noop()}, f.Cases[0], nil)
	require.True(t, o.Passed, o.Failure)
}

// A step that cannot be carried out names its line.
func TestStepFailureNamesLine(t *testing.T) {
	f, err := casetest.Parse("steps.yaml", []byte("name: steps\n"+stepObjects+"steps:\n- scale: {statefulSet: db, replicas: 2}\n"))
	require.NoError(t, err)
	o := casetest.Run(context.Background(), controller.Module{Runtime: noop()}, f.Cases[0], nil)
	require.False(t, o.Passed)
	require.Contains(t, o.Failure, "steps.yaml:15: step 1 (scale StatefulSet default/db to 2): StatefulSet default/db: no such object")
}

func TestStepParseErrors(t *testing.T) {
	for _, tc := range []struct{ steps, want string }{
		{"- scale: {statefulSet: web}", "steps.yaml:3: step scale has no replicas"},
		{"- scale: {statefulSet: web, replicas: x}", "steps.yaml:3: step scale.replicas must be a whole number"},
		{"- {scale: {statefulSet: web, replicas: 1}, delete: {kind: Pod, name: p}}", "steps.yaml:3: a step has exactly one action"},
		{"- explode: {}", `steps.yaml:3: unknown field "explode" in a step: known fields are scale, delete, create, patch`},
		{"- delete: {kind: Secret, name: s}", `steps.yaml:3: unknown kind "Secret"`},
		{"- delete: {kind: PersistentVolume, name: pv, namespace: x}", "steps.yaml:3: PersistentVolume pv is cluster-scoped"},
		{"- patch: {kind: Pod, name: p}", "steps.yaml:3: step patch has no patch"},
		{"- create: {apiVersion: v1, kind: Pod}", "steps.yaml:3: step create: Pod has no metadata.name"},
		{"- garbageCollector: {x: 1}", "steps.yaml:3: step garbageCollector takes no fields"},
		{"steps: 3", "steps.yaml:1: steps must be a list"},
	} {
		doc := "name: x\nsteps:\n" + tc.steps + "\n"
		if tc.steps == "steps: 3" {
			doc = "steps: 3\nname: x\n"
		}
		_, err := casetest.Parse("steps.yaml", []byte(doc))
		require.ErrorContains(t, err, tc.want, tc.steps)
	}
}

// noop is a statefulset module that never acts.
func noop() *fakeModule {
	return &fakeModule{
		manifest: manifest(abi.SubjectStatefulSet),
		decide:   func(*abi.ReconcileRequest) (*abi.Result, error) { return &abi.Result{}, nil },
	}
}

// A set's replicas are the case's to choose: the StatefulSet controller's
// step refuses a set beyond its bound before it makes a single write,
// rather than creating two billion pods in memory.
func TestStatefulSetControllerStepIsBounded(t *testing.T) {
	f, err := casetest.Parse("steps.yaml", []byte("name: steps\n"+stepObjects+"steps:\n- scale: {statefulSet: web, replicas: 2147483647}\n- statefulSetController: {statefulSet: web}\n"))
	require.NoError(t, err)
	o := casetest.Run(context.Background(), controller.Module{Runtime: noop()}, f.Cases[0], nil)
	require.False(t, o.Passed)
	require.Contains(t, o.Failure, "steps.yaml:16: step 2 (statefulSetController StatefulSet default/web): StatefulSet default/web has 2147483647 replicas, more than the 1000")
}
