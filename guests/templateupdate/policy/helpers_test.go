package policy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// These tests run natively, and against the compiled module when
// KUBEPLUG_TEST_WASM names it (see package sdktest).

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

const (
	oldRev = "web-1"
	newRev = "web-2"
)

func ptr[T any](v T) *T { return &v }

// cluster is the state of one set, its VolumeClaimUpdate and what they
// point at: tests change it and reconcile it.
type cluster struct {
	set     *abi.StatefulSet
	pods    []*abi.Pod
	claims  []*abi.PersistentVolumeClaim
	classes []*abi.StorageClass
	vcu     *abi.VolumeClaimUpdate
}

// newCluster is a 3-replica set "web" whose template "data" asks for 1Gi of
// class "fast" (which allows expansion), every claim bound at 1Gi, every pod
// ready at the old revision, and a VolumeClaimUpdate asking for size with
// the strategies given.
func newCluster(replicas int, update, sync, size string) *cluster {
	set := sdktest.StatefulSet("web", int32(replicas), sdktest.StorageClassName("fast"))
	set.Status.CurrentRevision, set.Status.UpdateRevision = oldRev, oldRev
	fast := sdktest.StorageClass("fast", "hostpath.csi.k8s.io")
	fast.AllowVolumeExpansion = true
	c := &cluster{set: set, classes: []*abi.StorageClass{fast}}
	for i := 0; i < replicas; i++ {
		c.pods = append(c.pods, sdktest.Pod(set, i, sdktest.Labels("controller-revision-hash", oldRev)))
		c.claims = append(c.claims, sdktest.Claim("data", set, i))
	}
	t := set.Spec.VolumeClaimTemplates[0]
	t.Spec.Resources = abi.ResourceRequirements{Requests: map[string]string{"storage": size}}
	c.vcu = &abi.VolumeClaimUpdate{
		Metadata: abi.ObjectMeta{Name: "web-data", Namespace: "default", UID: "vcu-uid", ResourceVersion: "1", Generation: 1},
		Spec: abi.VolumeClaimUpdateSpec{
			StatefulSetName: "web", VolumeClaimTemplates: []abi.PersistentVolumeClaim{t},
			VolumeClaimUpdateStrategy: update, VolumeClaimSyncStrategy: sync,
		},
	}
	return c
}

func (c *cluster) template() *abi.PersistentVolumeClaim { return &c.vcu.Spec.VolumeClaimTemplates[0] }

func (c *cluster) claim(name string) *abi.PersistentVolumeClaim {
	for _, x := range c.claims {
		if x.Metadata.Name == name {
			return x
		}
	}
	return nil
}

func (c *cluster) pod(i int) *abi.Pod {
	for _, p := range c.pods {
		if p.Metadata.Name == sdk.PodName("web", i) {
			return p
		}
	}
	return nil
}

func (c *cluster) partition() *int32 {
	if ru := c.set.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		return ru.Partition
	}
	return nil
}

func (c *cluster) setPartition(p int32) {
	c.set.Spec.UpdateStrategy.RollingUpdate = &abi.RollingUpdateStatefulSetStrategy{Partition: ptr(p)}
}

// recordHold keeps setPartition's record on the set as the host does, in
// the same write as the partition.
func (c *cluster) recordHold(p int32, h *abi.PartitionHold) {
	a := c.set.Metadata.Annotations
	delete(a, abi.AnnotationHeldPartition)
	delete(a, abi.AnnotationUserPartition)
	if h == nil {
		return
	}
	if a == nil {
		a = map[string]string{}
		c.set.Metadata.Annotations = a
	}
	a[abi.AnnotationHeldPartition] = itoa(p)
	if h.UserPartition != nil {
		a[abi.AnnotationUserPartition] = itoa(*h.UserPartition)
	}
}

// request is the reconcile input for the cluster, a deep copy.
func (c *cluster) request() *abi.ReconcileRequest {
	args := []any{c.set, c.pods, c.claims, c.classes}
	if c.vcu != nil {
		args = append(args, c.vcu)
	}
	return deepCopy(sdktest.Request(now, args...))
}

func deepCopy(req *abi.ReconcileRequest) *abi.ReconcileRequest {
	b, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	out := new(abi.ReconcileRequest)
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
	return out
}

// outcome is one reconcile's actions, sorted by kind.
type outcome struct {
	actions []abi.Action
	applies []abi.Action
	events  []abi.Event
	// status is the status written, nil if none.
	status     *abi.VolumeClaimUpdateStatus
	partitions []int32
}

func (o outcome) reasons() []string {
	var out []string
	for _, e := range o.events {
		out = append(out, e.Reason)
	}
	return out
}

func (o outcome) applied() []string {
	var out []string
	for _, a := range o.applies {
		out = append(out, a.Target.Name)
	}
	return out
}

// reconcile runs the module once and applies its actions to the cluster as
// the host would.
func (c *cluster) reconcile(t *testing.T, h *sdktest.Harness) outcome {
	t.Helper()
	res := h.MustReconcile(c.request())
	o := outcome{actions: res.Actions}
	for _, a := range res.Actions {
		switch a.Type {
		case abi.ActionApplyClaim:
			x := c.claim(a.Target.Name)
			if x == nil {
				t.Fatalf("apply to unknown claim %s", a.Target.Name)
			}
			applyTo(x, a.Claim)
			o.applies = append(o.applies, a)
		case abi.ActionSetPartition:
			c.setPartition(*a.Partition)
			c.recordHold(*a.Partition, a.Hold)
			o.partitions = append(o.partitions, *a.Partition)
		case abi.ActionUpdateClaimUpdateStatus:
			if a.Target.Name != c.vcu.Metadata.Name {
				t.Fatalf("status write aimed at %s", a.Target.Name)
			}
			c.vcu.Status = *a.ClaimUpdateStatus
			o.status = a.ClaimUpdateStatus
		case abi.ActionEvent:
			o.events = append(o.events, *a.Event)
		default:
			t.Fatalf("unexpected action %s", a.Type)
		}
	}
	return o
}

// applyTo applies a ClaimApply as server-side apply would.
func applyTo(c *abi.PersistentVolumeClaim, a *abi.ClaimApply) {
	for k, v := range a.Labels {
		if c.Metadata.Labels == nil {
			c.Metadata.Labels = map[string]string{}
		}
		c.Metadata.Labels[k] = v
	}
	for k, v := range a.Annotations {
		if c.Metadata.Annotations == nil {
			c.Metadata.Annotations = map[string]string{}
		}
		c.Metadata.Annotations[k] = v
	}
	if a.Resources != nil {
		c.Spec.Resources.Requests = map[string]string{"storage": a.Resources.Requests["storage"]}
		// The host records the request it applies.
		if c.Metadata.Annotations == nil {
			c.Metadata.Annotations = map[string]string{}
		}
		c.Metadata.Annotations[abi.AnnotationAppliedStorage] = a.Resources.Requests["storage"]
	}
	if a.VolumeAttributesClassName != nil {
		c.Spec.VolumeAttributesClassName = ptr(*a.VolumeAttributesClassName)
	}
}

// resize does what external-resizer and kubelet do: the volume gets what
// each claim's spec asks for.
func (c *cluster) resize() {
	for _, x := range c.claims {
		if r, ok := x.Status.AllocatedResources["storage"]; ok && r == x.Spec.Resources.Requests["storage"] && failed(x) {
			continue // infeasible until the request changes
		}
		x.Status.Capacity = map[string]string{"storage": x.Spec.Resources.Requests["storage"]}
		x.Status.AllocatedResources = map[string]string{"storage": x.Spec.Resources.Requests["storage"]}
		x.Status.AllocatedResourceStatuses, x.Status.Conditions = nil, nil
		if x.Spec.VolumeAttributesClassName != nil {
			x.Status.CurrentVolumeAttributesClassName = ptr(*x.Spec.VolumeAttributesClassName)
		}
	}
}

// roll does what kube-controller-manager's rollout does, at once: every pod
// at or above the partition runs the update revision and is ready.
func (c *cluster) roll() {
	p := c.partition()
	for i, pod := range c.pods {
		if p == nil || int32(i) >= *p {
			pod.Metadata.Labels["controller-revision-hash"] = c.set.Status.UpdateRevision
		}
	}
}

// steady fails unless a reconcile of the cluster returns no action at all.
func (c *cluster) steady(t *testing.T, h *sdktest.Harness) {
	t.Helper()
	if o := c.reconcile(t, h); len(o.actions) > 0 {
		t.Fatalf("steady state returned actions: %s", describe(o.actions))
	}
}

func describe(actions []abi.Action) string {
	var parts []string
	for _, a := range actions {
		s := a.Type + " " + a.Target.Name
		if a.Event != nil {
			s += " " + a.Event.Reason
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func condition(st abi.VolumeClaimUpdateStatus, typ string) abi.Condition {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return abi.Condition{}
}

// wantCondition fails unless the cluster's VolumeClaimUpdate has condition
// typ with status and reason.
func (c *cluster) wantCondition(t *testing.T, typ, status, reason string) {
	t.Helper()
	got := condition(c.vcu.Status, typ)
	if got.Status != status || got.Reason != reason {
		t.Errorf("%s = %s/%s (%s), want %s/%s", typ, got.Status, got.Reason, got.Message, status, reason)
	}
}

// settle reconciles until a round returns no action (at most 10 rounds,
// as kubeplug test does), with nothing else changing the cluster.
func (c *cluster) settle(t *testing.T, h *sdktest.Harness) {
	t.Helper()
	for i := 0; i < 10; i++ {
		if o := c.reconcile(t, h); len(o.actions) == 0 {
			return
		}
	}
	t.Fatal("no steady state after 10 rounds")
}

// failExpansion does what external-resizer does when the expansion of the
// claim's request is infeasible.
func (c *cluster) failExpansion(name string) {
	x := c.claim(name)
	x.Status.AllocatedResources = map[string]string{"storage": x.Spec.Resources.Requests["storage"]}
	x.Status.AllocatedResourceStatuses = map[string]string{"storage": "ControllerResizeInfeasible"}
	x.Status.Conditions = []abi.Condition{{Type: "ControllerResizeError", Status: "True"}}
}
