package demo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/kubeplug/kubeplug/e2e/internal/kubelet"
	"github.com/kubeplug/kubeplug/e2e/internal/resizer"
)

// claimUpdateResource is the VolumeClaimUpdate resource of
// deploy/crds/volumeclaimupdate-crd.yaml.
var claimUpdateResource = schema.GroupVersionResource{Group: "kubeplug.dev", Version: "v1alpha1", Resource: "volumeclaimupdates"}

const (
	lockStepFile = "templateupdate-lockstep.yaml"
	// resizeDelay is how long the stand-in resizer takes to grow a volume:
	// long enough that the pod template is changed while the first
	// replica's claim still grows, short enough for a demo.
	resizeDelay = 1500 * time.Millisecond
	// newImage is the pod template's change: the application's new release.
	newImage = "registry.k8s.io/pause:3.10"
)

// templateUpdateLockStep is KEP-4650's user story 1 on today's Kubernetes:
// a VolumeClaimUpdate grows a StatefulSet's volumes from 1Gi to 2Gi with
// InPlace and LockStep while a new release of the application rolls out,
// and every replica's claim grows before its pod is updated.
func templateUpdateLockStep(ctx context.Context, d *demo) error {
	set, vcu, err := readLockStepObjects(d.Root)
	if err != nil {
		return err
	}
	ns := set.Namespace
	class := *set.Spec.VolumeClaimTemplates[0].Spec.StorageClassName
	if err := ensureNamespace(ctx, d.client, ns); err != nil {
		return err
	}
	d.n.say("The cluster's part in this scene is played in this process: kube-controller-manager's StatefulSet")
	d.n.say("controller (its own code, on namespace %s), a kubelet that runs the pods, and a stand-in for a CSI", ns)
	d.n.say("driver's provisioner and external-resizer that grows a volume %s after its claim asks.", resizeDelay)
	stopSets := startSetController(ctx, d.client, ns)
	defer stopSets()
	kl, err := kubelet.Start(ctx, d.client, "")
	if err != nil {
		return err
	}
	defer kl.Stop()
	kl.Serve(ns)
	rctx, stopResizer := context.WithCancel(ctx)
	defer stopResizer()
	rz := resizer.Start(rctx, d.client, resizer.Options{Namespace: ns, Delay: resizeDelay, Provision: true})
	allow := true
	_, err = d.client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: class},
		Provisioner:          resizer.Driver,
		AllowVolumeExpansion: &allow,
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}

	if _, err := d.client.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		return err
	}
	d.n.step("applied the StatefulSet of examples/demo/%s: %s/%s, %d replicas, claims of %s in StorageClass %s (allowVolumeExpansion: true)",
		lockStepFile, ns, set.Name, *set.Spec.Replicas, storageOf(set.Spec.VolumeClaimTemplates[0].Spec), class)
	r := &rollout{d: d, ns: ns, set: set.Name, template: set.Spec.VolumeClaimTemplates[0].Name, replicas: *set.Spec.Replicas}
	if err := d.await(ctx, "the set's pods ready and claims bound", r.running); err != nil {
		return err
	}
	d.n.step("pods %s Running and Ready; claims %s bound, %s each", r.names("", 0), r.names(r.template+"-", 0), storageOf(set.Spec.VolumeClaimTemplates[0].Spec))

	if _, err := d.dyn.Resource(claimUpdateResource).Namespace(ns).Create(ctx, vcu, metav1.CreateOptions{}); err != nil {
		return err
	}
	want := templateStorage(vcu)
	r.want = resource.MustParse(want)
	d.n.step("applied the VolumeClaimUpdate %s of the same file: template %s at %s, volumeClaimUpdateStrategy %s, volumeClaimSyncStrategy %s",
		vcu.GetName(), r.template, want, specString(vcu, "volumeClaimUpdateStrategy"), specString(vcu, "volumeClaimSyncStrategy"))
	d.n.say("kube-apiserver refuses any change to a StatefulSet's volumeClaimTemplates: the new template lives beside the set.")
	r.vcu = vcu.GetName()
	if err := r.follow(ctx); err != nil {
		return err
	}
	d.n.say("The resizer completed, in this order: %s.", strings.Join(rz.Resized(), ", "))
	return r.table(ctx)
}

// rollout follows one StatefulSet's LockStep update and narrates it.
type rollout struct {
	d                  *demo
	ns, set, template  string
	vcu                string
	replicas           int32
	want               resource.Quantity
	asked, grown, done []bool
	partition          int32
	held, released     bool
	oldRevision        string
}

// running reports whether every replica's pod is Running and Ready and its
// claim bound.
func (r *rollout) running(ctx context.Context) (bool, error) {
	st, err := r.read(ctx)
	if err != nil {
		return false, err
	}
	for i := range r.replicas {
		p, c := st.pods[i], st.claims[i]
		if p == nil || !kubelet.RunningAndReady(p) || c == nil || c.Status.Phase != corev1.ClaimBound {
			return false, nil
		}
	}
	r.oldRevision = st.set.Status.UpdateRevision
	return r.oldRevision != "", nil
}

// state is what one look at the cluster found.
type state struct {
	set    *appsv1.StatefulSet
	vcu    *unstructured.Unstructured
	pods   map[int32]*corev1.Pod
	claims map[int32]*corev1.PersistentVolumeClaim
}

// read takes one look: the set and the VolumeClaimUpdate first, then pods,
// then claims. Claims only ever grow, so a claim found grown after its pod
// was found updated may have grown in between; one found not grown had not
// grown when the pod was seen.
func (r *rollout) read(ctx context.Context) (*state, error) {
	st := &state{pods: map[int32]*corev1.Pod{}, claims: map[int32]*corev1.PersistentVolumeClaim{}}
	var err error
	if st.set, err = r.d.client.AppsV1().StatefulSets(r.ns).Get(ctx, r.set, metav1.GetOptions{}); err != nil {
		return nil, err
	}
	if r.vcu != "" {
		if st.vcu, err = r.d.dyn.Resource(claimUpdateResource).Namespace(r.ns).Get(ctx, r.vcu, metav1.GetOptions{}); err != nil {
			return nil, err
		}
	}
	pods, err := r.d.client.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i, p := range pods.Items {
		if ord, ok := r.ordinal(p.Name, r.set+"-"); ok {
			st.pods[ord] = &pods.Items[i]
		}
	}
	claims, err := r.d.client.CoreV1().PersistentVolumeClaims(r.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i, c := range claims.Items {
		if ord, ok := r.ordinal(c.Name, r.template+"-"+r.set+"-"); ok {
			st.claims[ord] = &claims.Items[i]
		}
	}
	return st, nil
}

// ordinal returns the replica ordinal of a name "<prefix><ordinal>".
func (r *rollout) ordinal(name, prefix string) (int32, bool) {
	for ord := range r.replicas {
		if name == fmt.Sprintf("%s%d", prefix, ord) {
			return ord, true
		}
	}
	return 0, false
}

func (r *rollout) claimName(ord int32) string { return fmt.Sprintf("%s-%s-%d", r.template, r.set, ord) }

// names lists "<prefix><set>-<ordinal>" for the replicas from ordinal from.
func (r *rollout) names(prefix string, from int32) string {
	var out []string
	for i := from; i < r.replicas; i++ {
		out = append(out, fmt.Sprintf("%s%s-%d", prefix, r.set, i))
	}
	return strings.Join(out, ", ")
}

// follow narrates the update as it happens, from the hold to the release,
// and fails if a pod is updated before its claim has grown or a replica's
// claim is touched before the replica above it is done.
func (r *rollout) follow(ctx context.Context) error {
	r.asked = make([]bool, r.replicas)
	r.grown = make([]bool, r.replicas)
	r.done = make([]bool, r.replicas)
	return r.d.await(ctx, "the VolumeClaimUpdate complete and every pod updated", func(ctx context.Context) (bool, error) {
		st, err := r.read(ctx)
		if err != nil {
			return false, err
		}
		if err := blocked(st.vcu); err != nil {
			return false, err
		}
		if !r.held {
			if err := r.observeHold(ctx, st); err != nil || !r.held {
				return false, err
			}
		}
		if err := r.observeReplicas(ctx, st); err != nil {
			return false, err
		}
		return r.finished(ctx, st)
	})
}

// observeHold narrates the partition the module holds, and changes the pod
// template once the hold is in place, as story 1's procedure says.
func (r *rollout) observeHold(ctx context.Context, st *state) error {
	held, holding, _ := unstructured.NestedInt64(st.vcu.Object, "status", "heldPartition")
	p := partitionOf(st.set)
	if !holding || int64(p) != held {
		return nil
	}
	r.held, r.partition = true, p
	user, _, _ := unstructured.NestedInt64(st.vcu.Object, "status", "userPartition")
	r.d.n.step("templateupdate decided: hold the rollout at partition %d (VolumeClaimUpdate status.heldPartition %d, userPartition %d),", p, held, user)
	r.d.n.say("so that kube-controller-manager updates no pod whose claims are not %s yet.", r.want.String())
	ev, err := r.event(ctx, "StatefulSet", r.set, "PartitionHeld")
	if err != nil {
		return err
	}
	r.d.n.say("PartitionHeld on StatefulSet %s: %q", r.set, ev.Message)
	// The same decision may have asked replica 2's claim to grow: say so
	// before the template change, which comes after it.
	if err := r.observeReplicas(ctx, st); err != nil {
		return err
	}
	return r.changeTemplate(ctx)
}

// changeTemplate is the user's act: a new release of the application.
func (r *rollout) changeTemplate(ctx context.Context) error {
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":%q}]}}}}`, newImage)
	if _, err := r.d.client.AppsV1().StatefulSets(r.ns).Patch(ctx, r.set, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return err
	}
	r.d.n.step("changed the pod template: image %s, a new release (kubectl set image statefulset/%s app=%s)", newImage, r.set, newImage)
	var rev string
	err := r.d.await(ctx, "the set's new revision", func(ctx context.Context) (bool, error) {
		set, err := r.d.client.AppsV1().StatefulSets(r.ns).Get(ctx, r.set, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		rev = set.Status.UpdateRevision
		return rev != r.oldRevision, nil
	})
	if err != nil {
		return err
	}
	r.d.n.say("kube-controller-manager made revision %s of the pod template and updates no pod yet: the partition is %d.", rev, r.partition)
	return nil
}

// observeReplicas narrates, replica by replica from the highest ordinal,
// what happened since the last look: the claim asked to grow, the claim
// grown, the partition lowered, the pod updated; then the hold's end. It
// fails if the partition lets a pod be updated before its claim has grown,
// if a pod is, or if a replica's claim is touched before the pod above it
// is updated and ready.
func (r *rollout) observeReplicas(ctx context.Context, st *state) error {
	_, holding, _ := unstructured.NestedFieldNoCopy(st.vcu.Object, "status", "heldPartition")
	part := partitionOf(st.set)
	for i := part; i < r.replicas; i++ {
		if !grownTo(st.claims[i], r.want) {
			return fmt.Errorf("partition %d lets pod %s-%d be updated while its claim %s is not %s", part, r.set, i, r.claimName(i), r.want.String())
		}
	}
	for i := r.replicas - 1; i >= 0; i-- {
		c := st.claims[i]
		if c == nil {
			return fmt.Errorf("claim %s/%s is gone", r.ns, r.claimName(i))
		}
		if !r.asked[i] && asks(c, r.want) {
			if i+1 < r.replicas && !r.done[i+1] {
				return fmt.Errorf("claim %s asked for %s before pod %s-%d was updated and ready", c.Name, r.want.String(), r.set, i+1)
			}
			r.asked[i] = true
			ev, err := r.event(ctx, "PersistentVolumeClaim", c.Name, "ClaimUpdating")
			if err != nil {
				return err
			}
			r.d.n.part(fmt.Sprintf("replica %d", i))
			r.d.n.step("templateupdate decided: %s asks for %s (server-side apply, field manager kubeplug)", c.Name, r.want.String())
			r.d.n.say("ClaimUpdating on %s: %q", c.Name, ev.Message)
		}
		if r.asked[i] && !r.grown[i] && grownTo(c, r.want) {
			r.grown[i] = true
			r.d.n.step("the resizer grew volume %s: %s is %s (status.capacity)", c.Spec.VolumeName, c.Name, r.want.String())
		}
		if part <= i && r.partition > i {
			r.partition = part
			r.d.n.step("templateupdate decided: partition %d: kube-controller-manager may update pod %s-%d", part, r.set, i)
		}
		if p := st.pods[i]; !r.done[i] && updated(p, r.oldRevision, st.set.Status.UpdateRevision) {
			if !r.grown[i] {
				return fmt.Errorf("pod %s was updated before its claim %s was %s", p.Name, c.Name, r.want.String())
			}
			r.done[i] = true
			r.d.n.step("kube-controller-manager updated pod %s to revision %s; it is Running and Ready", p.Name, st.set.Status.UpdateRevision)
		}
	}
	if !holding && !r.released {
		r.released = true
		r.d.n.step("templateupdate decided: every claim is %s: the hold ends, partition %d is the user's value again; heldPartition and userPartition cleared", r.want.String(), part)
	}
	return nil
}

// updated reports whether the pod runs the update revision, not the old
// one, and is Running and Ready.
func updated(p *corev1.Pod, oldRevision, updateRevision string) bool {
	if p == nil || p.DeletionTimestamp != nil || !kubelet.RunningAndReady(p) {
		return false
	}
	rev := p.Labels[appsv1.ControllerRevisionHashLabelKey]
	return rev != oldRevision && rev == updateRevision
}

// finished reports whether the update is over: every pod updated, the
// partition given back, Progressing False Complete.
func (r *rollout) finished(ctx context.Context, st *state) (bool, error) {
	for i := range r.replicas {
		if !r.done[i] {
			return false, nil
		}
	}
	if _, holding, _ := unstructured.NestedFieldNoCopy(st.vcu.Object, "status", "heldPartition"); holding {
		return false, nil
	}
	progressing := condition(st.vcu, "Progressing")
	if progressing == nil || progressing["status"] != "False" || progressing["reason"] != "Complete" {
		return false, nil
	}
	r.d.n.part("done")
	ev, err := r.event(ctx, "StatefulSet", r.set, "PartitionReleased")
	if err != nil {
		return false, err
	}
	r.d.n.say("PartitionReleased on StatefulSet %s: %q", r.set, ev.Message)
	r.d.n.step("VolumeClaimUpdate %s: Progressing=False, reason Complete: %q", r.vcu, progressing["message"])
	r.d.n.say("StatefulSet %s: partition %d, update revision %s on all %d pods; claims %s all %s.",
		r.set, partitionOf(st.set), st.set.Status.UpdateRevision, r.replicas, r.names(r.template+"-", 0), r.want.String())
	return true, nil
}

// event waits for the event of reason on the named object of the scene's
// namespace and returns the newest.
func (r *rollout) event(ctx context.Context, kind, name, reason string) (corev1.Event, error) {
	var ev corev1.Event
	err := r.d.await(ctx, fmt.Sprintf("event %s on %s %s", reason, kind, name), func(ctx context.Context) (bool, error) {
		list, err := eventsFor(ctx, r.d.client, r.ns, kind, name, reason)
		if err != nil || len(list) == 0 {
			return false, err
		}
		ev = list[len(list)-1]
		return true, nil
	})
	return ev, err
}

// table prints the VolumeClaimUpdate as `kubectl get vcu` does: the API
// server's Table, built from the CRD's printer columns.
func (r *rollout) table(ctx context.Context) error {
	raw, err := r.d.client.CoreV1().RESTClient().Get().
		AbsPath("/apis", claimUpdateResource.Group, claimUpdateResource.Version, "namespaces", r.ns, claimUpdateResource.Resource).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("list volumeclaimupdates as a table: %w", err)
	}
	t, err := kubectlTable(raw, time.Now())
	if err != nil {
		return err
	}
	r.d.n.step("kubectl get vcu -n %s", r.ns)
	r.d.n.say("%s", strings.TrimRight(t, "\n"))
	return nil
}

// blocked returns the Blocked condition's message as an error when it is
// True: the scene expects none.
func blocked(vcu *unstructured.Unstructured) error {
	if c := condition(vcu, "Blocked"); c != nil && c["status"] == "True" {
		return fmt.Errorf("VolumeClaimUpdate %s is Blocked, %v: %v", vcu.GetName(), c["reason"], c["message"])
	}
	return nil
}

// condition returns the VolumeClaimUpdate's condition of type typ, or nil.
func condition(vcu *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(vcu.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

func partitionOf(set *appsv1.StatefulSet) int32 {
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		return *ru.Partition
	}
	return 0
}

// asks reports whether the claim's spec requests want or more.
func asks(c *corev1.PersistentVolumeClaim, want resource.Quantity) bool {
	q, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]
	return ok && q.Cmp(want) >= 0
}

// grownTo reports whether the claim's volume has want or more.
func grownTo(c *corev1.PersistentVolumeClaim, want resource.Quantity) bool {
	if c == nil {
		return false
	}
	q, ok := c.Status.Capacity[corev1.ResourceStorage]
	return ok && q.Cmp(want) >= 0
}

func storageOf(spec corev1.PersistentVolumeClaimSpec) string {
	q := spec.Resources.Requests[corev1.ResourceStorage]
	return q.String()
}

// templateStorage is the storage the VolumeClaimUpdate's first template
// requests.
func templateStorage(vcu *unstructured.Unstructured) string {
	ts, _, _ := unstructured.NestedSlice(vcu.Object, "spec", "volumeClaimTemplates")
	if len(ts) == 0 {
		return ""
	}
	s, _, _ := unstructured.NestedFieldNoCopy(ts[0].(map[string]any), "spec", "resources", "requests", "storage")
	return fmt.Sprint(s)
}

func specString(vcu *unstructured.Unstructured, field string) string {
	v, _, _ := unstructured.NestedString(vcu.Object, "spec", field)
	return v
}

// readLockStepObjects reads the StatefulSet and the VolumeClaimUpdate of
// examples/demo/templateupdate-lockstep.yaml.
func readLockStepObjects(root string) (*appsv1.StatefulSet, *unstructured.Unstructured, error) {
	b, err := os.ReadFile(filepath.Join(root, "examples", "demo", lockStepFile))
	if err != nil {
		return nil, nil, err
	}
	docs := bytes.Split(b, []byte("\n---\n"))
	if len(docs) != 2 {
		return nil, nil, fmt.Errorf("examples/demo/%s: want 2 documents, got %d", lockStepFile, len(docs))
	}
	var set appsv1.StatefulSet
	if err := yaml.UnmarshalStrict(docs[0], &set); err != nil {
		return nil, nil, fmt.Errorf("examples/demo/%s document 1: %w", lockStepFile, err)
	}
	vcu := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(docs[1], &vcu.Object); err != nil {
		return nil, nil, fmt.Errorf("examples/demo/%s document 2: %w", lockStepFile, err)
	}
	if set.Spec.Replicas == nil || len(set.Spec.VolumeClaimTemplates) != 1 || set.Spec.VolumeClaimTemplates[0].Spec.StorageClassName == nil ||
		vcu.GetKind() != "VolumeClaimUpdate" || templateStorage(vcu) == "" ||
		specString(vcu, "volumeClaimUpdateStrategy") != "InPlace" || specString(vcu, "volumeClaimSyncStrategy") != "LockStep" {
		return nil, nil, fmt.Errorf("examples/demo/%s: want a StatefulSet with replicas and one claim template naming its StorageClass, "+
			"then a VolumeClaimUpdate with a storage request, InPlace and LockStep", lockStepFile)
	}
	return &set, vcu, nil
}
