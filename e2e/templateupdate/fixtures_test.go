package templateupdate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/kubeplug/kubeplug/e2e/internal/kubelet"
	"github.com/kubeplug/kubeplug/e2e/internal/resizer"
	"github.com/kubeplug/kubeplug/e2e/internal/setctl"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

const (
	// setName and template name every scenario's StatefulSet and its one
	// claim template: the claims are data-web-0, data-web-1, ...
	setName  = "web"
	template = "data"
	vcuName  = "web-data"
	// testAgent is the user agent, hence the field manager, of the test's
	// own writes: a user's.
	testAgent = "kubeplug-e2e-test"
	// kubeplugManager is the field manager of the host's server-side
	// applies.
	kubeplugManager = "kubeplug"
	// resizeDelay is how long the resizer stand-in takes to grow a volume
	// unless a scenario says otherwise.
	resizeDelay = time.Second
)

var vcuGVR = schema.GroupVersionResource{Group: "kubeplug.dev", Version: "v1alpha1", Resource: "volumeclaimupdates"}

// Storage classes every scenario may use, all of the resizer stand-in's
// driver (classes are cluster-wide: made once, in world).
const (
	expandable = "expandable" // allowVolumeExpansion: true
	fast       = "fast"       // allowVolumeExpansion: true, another class
	fixed      = "fixed"      // allowVolumeExpansion: false
)

// world is what the scenarios share: the host running both modules, the
// kubelet stand-in.
type world struct {
	host *testenv.Host
	kl   *kubelet.Kubelet
}

func userConfig() *rest.Config {
	cfg := rest.CopyConfig(cp.Config)
	cfg.UserAgent = testAgent
	cfg.QPS, cfg.Burst = -1, 0 // no client-side throttling: the scenarios share this client's limits otherwise
	return cfg
}

// env is one scenario's namespace and what serves it.
type env struct {
	t   *testing.T
	ctx context.Context
	c   kubernetes.Interface
	dyn dynamic.Interface
	ns  string
	// r binds the namespace's claims and grows them.
	r   *resizer.Resizer
	rec *recorder
}

// setOptions say what set a scenario starts from.
type setOptions struct {
	replicas int32
	class    string // default expandable
	size     string // default 1Gi
	// partition is the user's rollingUpdate.partition; nil: none.
	partition *int32
	// whenScaled is the retention policy's whenScaled; "": Retain.
	whenScaled appsv1.PersistentVolumeClaimRetentionPolicyType
	// delay is the resizer stand-in's; 0: resizeDelay.
	delay time.Duration
	// orderedReady makes the set's podManagementPolicy OrderedReady
	// (testenv's sets are Parallel).
	orderedReady bool
}

// newEnv makes a namespace served by the kubelet stand-in and a resizer
// stand-in of its own, starts recording it, creates the set and waits
// until its pods run and its claims are bound.
func newEnv(t *testing.T, w *world, o setOptions) *env {
	t.Helper()
	cfg := userConfig()
	e := &env{t: t, ctx: t.Context(), c: kubernetes.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg)}
	e.ns = testenv.Namespace(t, e.c)
	if o.delay == 0 {
		o.delay = resizeDelay
	}
	if o.class == "" {
		o.class = expandable
	}
	if o.size == "" {
		o.size = "1Gi"
	}
	rc := rest.CopyConfig(cp.Config)
	rc.UserAgent = "kubeplug-e2e-resizer"
	rc.QPS, rc.Burst = -1, 0
	e.r = resizer.Start(e.ctx, kubernetes.NewForConfigOrDie(rc), resizer.Options{Namespace: e.ns, Delay: o.delay, Provision: true})
	e.rec = record(t, e.c, e.ns)
	w.kl.Serve(e.ns)
	set := newSet(o)
	if _, err := e.c.AppsV1().StatefulSets(e.ns).Create(e.ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.awaitSet(o.replicas)
	return e
}

func newSet(o setOptions) *appsv1.StatefulSet {
	s := testenv.StatefulSet(setName, o.class, o.size, o.replicas)
	s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}
	if o.orderedReady {
		s.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if o.partition != nil {
		s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: o.partition}
	}
	if o.whenScaled != "" {
		s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			WhenScaled:  o.whenScaled,
		}
	}
	return s
}

func (e *env) set() *appsv1.StatefulSet {
	e.t.Helper()
	s, err := e.c.AppsV1().StatefulSets(e.ns).Get(e.ctx, setName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// updateSet changes the set, and returns the resourceVersion of the write.
func (e *env) updateSet(change func(*appsv1.StatefulSet)) string {
	e.t.Helper()
	var rv string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := e.c.AppsV1().StatefulSets(e.ns).Get(e.ctx, setName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(s)
		s, err = e.c.AppsV1().StatefulSets(e.ns).Update(e.ctx, s, metav1.UpdateOptions{})
		if err == nil {
			rv = s.ResourceVersion
		}
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return rv
}

// changePodTemplate changes the set's pod template (a new revision) and
// returns the resourceVersion of the write.
func (e *env) changePodTemplate() string {
	e.t.Helper()
	return e.updateSet(func(s *appsv1.StatefulSet) {
		if s.Spec.Template.Annotations == nil {
			s.Spec.Template.Annotations = map[string]string{}
		}
		s.Spec.Template.Annotations["kubeplug.dev/e2e-revision"] = time.Now().Format(time.RFC3339Nano)
	})
}

func (e *env) scale(n int32) { e.updateSet(func(s *appsv1.StatefulSet) { s.Spec.Replicas = &n }) }

// awaitSet waits until kube-controller-manager is done with the set: its
// generation observed, n replicas ready and at the update revision with
// exactly pods 0..n-1, none terminating, and each pod's claims bound.
func (e *env) awaitSet(n int32) {
	e.t.Helper()
	e.awaitRollout(n, n)
}

// awaitRollout is awaitSet with `updated` of the n replicas at the update
// revision (the others held back by a partition).
func (e *env) awaitRollout(n, updated int32) {
	e.t.Helper()
	last := ""
	await(e.t, fmt.Sprintf("set %s/%s at %d replicas, %d updated", e.ns, setName, n, updated), func() (bool, error) {
		s := e.set()
		last = fmt.Sprintf("generation %d observed %d, status %+v", s.Generation, s.Status.ObservedGeneration, s.Status)
		if s.Status.ObservedGeneration != s.Generation || s.Status.Replicas != n || s.Status.ReadyReplicas != n ||
			s.Status.UpdatedReplicas != updated {
			return false, nil
		}
		pods, err := e.c.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: "app=" + setName})
		if err != nil {
			return false, err
		}
		if int32(len(pods.Items)) != n {
			return false, nil
		}
		for ord := range n {
			p := e.pod(ord)
			if p == nil || p.DeletionTimestamp != nil || !kubelet.RunningAndReady(p) {
				return false, nil
			}
			c := e.claimOrNil(ord)
			if c == nil || c.Status.Phase != corev1.ClaimBound {
				last = fmt.Sprintf("claim %s not bound", setctl.ClaimName(template, setName, ord))
				return false, nil
			}
		}
		return true, nil
	}, func() string { return last })
}

func (e *env) pod(ordinal int32) *corev1.Pod {
	e.t.Helper()
	p, err := e.c.CoreV1().Pods(e.ns).Get(e.ctx, setctl.PodName(setName, ordinal), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func claimName(ordinal int32) string { return setctl.ClaimName(template, setName, ordinal) }

func (e *env) claimOrNil(ordinal int32) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	c, err := e.c.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, claimName(ordinal), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) claim(ordinal int32) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	c := e.claimOrNil(ordinal)
	if c == nil {
		e.t.Fatalf("claim %s/%s does not exist", e.ns, claimName(ordinal))
	}
	return c
}

// patchClaim merge-patches a claim as a user would.
func (e *env) patchClaim(ordinal int32, patch string) {
	e.t.Helper()
	if _, err := e.c.CoreV1().PersistentVolumeClaims(e.ns).Patch(e.ctx, claimName(ordinal), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// awaitCapacity waits until the claim's status.capacity.storage is size.
func (e *env) awaitCapacity(ordinal int32, size string) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	var c *corev1.PersistentVolumeClaim
	testenv.Eventually(e.t, testenv.Timeout, fmt.Sprintf("claim %s/%s at %s", e.ns, claimName(ordinal), size), func() (bool, error) {
		c = e.claimOrNil(ordinal)
		return c != nil && c.DeletionTimestamp == nil && capacity(c) == size, nil
	})
	return c
}

// replaceReplica deletes the claim and the pod of ordinal, as a user who
// wants the replica's volume made anew does, and waits until the set has
// made both again and the new claim is bound.
func (e *env) replaceReplica(ordinal int32, replicas int32) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	old := e.claim(ordinal)
	if err := e.c.CoreV1().PersistentVolumeClaims(e.ns).Delete(e.ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatal(err)
	}
	if err := e.c.CoreV1().Pods(e.ns).Delete(e.ctx, setctl.PodName(setName, ordinal), metav1.DeleteOptions{}); err != nil {
		e.t.Fatal(err)
	}
	var c *corev1.PersistentVolumeClaim
	testenv.Eventually(e.t, testenv.Timeout, fmt.Sprintf("claim %s/%s made again", e.ns, old.Name), func() (bool, error) {
		c = e.claimOrNil(ordinal)
		return c != nil && c.UID != old.UID && c.Status.Phase == corev1.ClaimBound, nil
	})
	e.awaitSet(replicas)
	return c
}

func capacity(c *corev1.PersistentVolumeClaim) string {
	return quantity(c.Status.Capacity)
}

func request(c *corev1.PersistentVolumeClaim) string {
	return quantity(c.Spec.Resources.Requests)
}

// sameQuantity reports whether l's storage is want, however written.
func sameQuantity(l corev1.ResourceList, want string) bool {
	q, ok := l[corev1.ResourceStorage]
	return ok && q.Cmp(resource.MustParse(want)) == 0
}

func quantity(l corev1.ResourceList) string {
	q, ok := l[corev1.ResourceStorage]
	if !ok {
		return "none"
	}
	return q.String()
}

// vcuTemplate is the one template of a scenario's VolumeClaimUpdate.
type vcuTemplate struct {
	class, size string
	labels      map[string]string
	// vac is the volumeAttributesClassName; "": unset.
	vac string
}

// applyVCU creates the VolumeClaimUpdate of the set, named vcuName, with one
// template named as the set's.
func (e *env) applyVCU(update, sync string, t vcuTemplate) {
	e.t.Helper()
	meta := map[string]any{"name": template}
	if len(t.labels) > 0 {
		labels := map[string]any{}
		for k, v := range t.labels {
			labels[k] = v
		}
		meta["labels"] = labels
	}
	spec := map[string]any{
		"accessModes": []any{"ReadWriteOnce"},
		"resources":   map[string]any{"requests": map[string]any{"storage": t.size}},
	}
	if t.class != "" {
		spec["storageClassName"] = t.class
	}
	if t.vac != "" {
		spec["volumeAttributesClassName"] = t.vac
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeplug.dev/v1alpha1",
		"kind":       "VolumeClaimUpdate",
		"metadata":   map[string]any{"name": vcuName, "namespace": e.ns},
		"spec": map[string]any{
			"statefulSetName":           setName,
			"volumeClaimUpdateStrategy": update,
			"volumeClaimSyncStrategy":   sync,
			"volumeClaimTemplates":      []any{map[string]any{"metadata": meta, "spec": spec}},
		},
	}}
	if _, err := e.dyn.Resource(vcuGVR).Namespace(e.ns).Create(e.ctx, obj, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// vcu is what the tests read of a VolumeClaimUpdate.
type vcu struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Status   struct {
		ObservedGeneration   int64              `json:"observedGeneration"`
		HeldPartition        *int32             `json:"heldPartition"`
		UserPartition        *int32             `json:"userPartition"`
		VolumeClaimTemplates []templateStatus   `json:"volumeClaimTemplates"`
		Conditions           []metav1.Condition `json:"conditions"`
	} `json:"status"`
}

type templateStatus struct {
	TemplateName       string              `json:"templateName"`
	CompatibleReplicas int32               `json:"compatibleReplicas"`
	UpdatingReplicas   int32               `json:"updatingReplicas"`
	OverSizedReplicas  int32               `json:"overSizedReplicas"`
	TotalCapacity      corev1.ResourceList `json:"totalCapacity"`
}

func (v *vcu) observed() bool { return v.Status.ObservedGeneration == v.Metadata.Generation }

func (v *vcu) condition(typ string) *metav1.Condition {
	for i := range v.Status.Conditions {
		if v.Status.Conditions[i].Type == typ {
			return &v.Status.Conditions[i]
		}
	}
	return nil
}

// is reports whether condition typ has status and reason ("" any reason).
func (v *vcu) is(typ string, status metav1.ConditionStatus, reason string) bool {
	c := v.condition(typ)
	return c != nil && c.Status == status && (reason == "" || c.Reason == reason)
}

func (v *vcu) template() templateStatus {
	for _, t := range v.Status.VolumeClaimTemplates {
		if t.TemplateName == template {
			return t
		}
	}
	return templateStatus{}
}

func (v *vcu) String() string {
	b, _ := json.Marshal(v.Status)
	return fmt.Sprintf("generation %d, status %s", v.Metadata.Generation, b)
}

func (e *env) vcu() *vcu {
	e.t.Helper()
	u, err := e.dyn.Resource(vcuGVR).Namespace(e.ns).Get(e.ctx, vcuName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	b, err := json.Marshal(u.Object)
	if err != nil {
		e.t.Fatal(err)
	}
	v := &vcu{}
	if err := json.Unmarshal(b, v); err != nil {
		e.t.Fatalf("VolumeClaimUpdate %s/%s: %v", e.ns, vcuName, err)
	}
	return v
}

// awaitVCU waits until the VolumeClaimUpdate's status, for its current
// generation, satisfies ok, and returns it.
func (e *env) awaitVCU(what string, ok func(*vcu) bool) *vcu {
	e.t.Helper()
	var v *vcu
	await(e.t, fmt.Sprintf("VolumeClaimUpdate %s/%s: %s", e.ns, vcuName, what), func() (bool, error) {
		v = e.vcu()
		return v.observed() && ok(v), nil
	}, func() string {
		if v == nil {
			return "not read yet"
		}
		return "last seen: " + v.String()
	})
	return v
}

// awaitEvent waits for an event of reason and type on the object of kind
// and name whose message contains text, and returns it.
func (e *env) awaitEvent(kind, name, typ, reason, text string) corev1.Event {
	e.t.Helper()
	var found corev1.Event
	testenv.Eventually(e.t, testenv.Timeout, fmt.Sprintf("%s event %s on %s %s/%s", typ, reason, kind, e.ns, name), func() (bool, error) {
		for _, ev := range e.events(kind, name, reason) {
			if ev.Type == typ && strings.Contains(ev.Message, text) {
				found = ev
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

// events lists the events of reason on the object of kind and name.
func (e *env) events(kind, name, reason string) []corev1.Event {
	e.t.Helper()
	var out []corev1.Event
	for _, ev := range testenv.Events(e.t, e.c, e.ns, reason) {
		if ev.InvolvedObject.Kind == kind && ev.InvolvedObject.Name == name {
			out = append(out, ev)
		}
	}
	return out
}

// managed lists the field paths (as "f:metadata.f:labels.f:tier") that
// manager owns on the claim.
func managed(t *testing.T, c *corev1.PersistentVolumeClaim, manager string) []string {
	t.Helper()
	var out []string
	for _, m := range c.ManagedFields {
		if m.Manager != manager || m.FieldsV1 == nil {
			continue
		}
		var tree map[string]any
		if err := json.Unmarshal(m.FieldsV1.Raw, &tree); err != nil {
			t.Fatalf("managedFields of %s: %v", c.Name, err)
		}
		out = append(out, leaves("", tree)...)
	}
	return out
}

func leaves(prefix string, tree map[string]any) []string {
	var out []string
	for k, v := range tree {
		if k == "." {
			continue
		}
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 && !(len(sub) == 1 && sub["."] != nil) {
			out = append(out, leaves(p, sub)...)
			continue
		}
		out = append(out, p)
	}
	return out
}

// await is testenv.Eventually with the generous timeout of every wait
// here, saying what detail reports when it gives up.
func await(t *testing.T, what string, cond func() (bool, error), detail func() string) {
	t.Helper()
	defer func() {
		if t.Failed() {
			t.Logf("%s: %s", what, detail())
		}
	}()
	testenv.Eventually(t, testenv.Timeout, what, cond)
}

func eventMessages(evs []corev1.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Message)
	}
	return out
}
