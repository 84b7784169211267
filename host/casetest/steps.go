package casetest

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/internal/input"
	"github.com/kubeplug/kubeplug/host/memcluster"
)

// Step actions: what a user or another controller does to the cluster between
// the host's reconcile rounds. Each step of a case is a mapping with exactly
// one of these keys (see the package documentation).
const (
	StepScale                 = "scale"
	StepDelete                = "delete"
	StepCreate                = "create"
	StepPatch                 = "patch"
	StepStatefulSetController = "statefulSetController"
	StepGarbageCollector      = "garbageCollector"
	StepReleaseVolumes        = "releaseVolumes"
	StepResizeVolumes         = "resizeVolumes"
)

var (
	stepActions = []string{StepScale, StepDelete, StepCreate, StepPatch, StepStatefulSetController, StepGarbageCollector, StepReleaseVolumes, StepResizeVolumes}
	scaleFields = []string{"statefulSet", "namespace", "replicas"}
	deleteStep  = []string{"kind", "namespace", "name"}
	patchFields = []string{"kind", "namespace", "name", "patch"}
	setFields   = []string{"statefulSet", "namespace"}
)

// MaxSteps bounds the steps of one case.
const MaxSteps = 100

// MaxControllerReplicas bounds the replicas of a set the StatefulSet
// controller's step makes pods and claims for: a case's spec.replicas is
// the case's to choose, and each replica costs writes, memory and, under
// kubeplug check, perturbed runs.
const MaxControllerReplicas = 1000

// Step is one action of a case's `steps:`, applied between reconcile
// rounds: after the rounds before it have settled, its writes are made,
// and the host settles again.
type Step struct {
	// Line is the step's line in its file.
	Line int
	// Action is one of the Step* names.
	Action string
	// Kind, Namespace and Name name the step's object: the StatefulSet of
	// scale and statefulSetController, the object of delete and patch, and
	// of create.
	Kind, Namespace, Name string
	// Replicas is scale's new spec.replicas.
	Replicas int64
	// Object is create's object; Patch is patch's JSON merge patch.
	Object map[string]any
	Patch  map[string]any
	// Raw is the step as written, in JSON shape, for a case written back.
	Raw map[string]any
}

// String describes the step for reports: "step 2 (line 40): scale
// StatefulSet default/web to 1".
func (s Step) String() string {
	var what string
	k := ObjectKey{Kind: s.Kind, Namespace: s.Namespace, Name: s.Name}
	switch s.Action {
	case StepScale:
		what = fmt.Sprintf("scale %s to %d", k, s.Replicas)
	case StepGarbageCollector, StepReleaseVolumes, StepResizeVolumes:
		what = s.Action
	default:
		what = s.Action + " " + k.String()
	}
	return what
}

// steps parses a case's `steps:`.
func (p *parser) steps(n *yaml.Node) ([]Step, error) {
	items, err := p.seq(n, "steps")
	if err != nil {
		return nil, err
	}
	if len(items) > MaxSteps {
		return nil, p.errorf(n, "steps: %d steps, more than the %d a case may have: split the case", len(items), MaxSteps)
	}
	out := make([]Step, 0, len(items))
	for _, item := range items {
		s, err := p.step(item)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (p *parser) step(n *yaml.Node) (Step, error) {
	fields, err := p.fields(n, "a step", stepActions)
	if err != nil {
		return Step{}, err
	}
	if len(fields) != 1 {
		return Step{}, p.errorf(n, "a step has exactly one action, one of %s: write one step per action", strings.Join(stepActions, ", "))
	}
	raw, err := p.value(n)
	if err != nil {
		return Step{}, err
	}
	s := Step{Line: n.Line, Raw: raw.(map[string]any)}
	for action, v := range fields {
		s.Action = action
		err = p.stepBody(&s, v)
	}
	return s, err
}

func (p *parser) stepBody(s *Step, v *yaml.Node) error {
	what := "step " + s.Action
	str := func(fields map[string]*yaml.Node, name string, required bool) (string, error) {
		n, ok := fields[name]
		if !ok {
			if required {
				return "", p.errorf(v, "%s has no %s", what, name)
			}
			return "", nil
		}
		out, err := p.str(n, what+"."+name)
		if err == nil && out == "" && required {
			err = p.errorf(n, "%s.%s is empty", what, name)
		}
		return out, err
	}
	switch s.Action {
	case StepScale, StepStatefulSetController:
		known := setFields
		if s.Action == StepScale {
			known = scaleFields
		}
		fields, err := p.fields(v, what, known)
		if err != nil {
			return err
		}
		s.Kind = abi.KindStatefulSet
		if s.Name, err = str(fields, "statefulSet", true); err != nil {
			return err
		}
		if s.Namespace, err = str(fields, "namespace", false); err != nil {
			return err
		}
		if s.Namespace == "" {
			s.Namespace = memcluster.DefaultNamespace
		}
		if s.Action == StepScale {
			r, ok := fields["replicas"]
			if !ok {
				return p.errorf(v, "%s has no replicas", what)
			}
			n, err := strconv.ParseInt(r.Value, 10, 32)
			if r.Kind != yaml.ScalarNode || r.Tag != "!!int" || err != nil || n < 0 {
				return p.errorf(r, "%s.replicas must be a whole number from 0 to %d", what, int32(1<<31-1))
			}
			s.Replicas = n
		}
	case StepDelete, StepPatch:
		known := deleteStep
		if s.Action == StepPatch {
			known = patchFields
		}
		fields, err := p.fields(v, what, known)
		if err != nil {
			return err
		}
		if s.Kind, err = str(fields, "kind", true); err != nil {
			return err
		}
		if s.Name, err = str(fields, "name", true); err != nil {
			return err
		}
		if s.Namespace, err = str(fields, "namespace", false); err != nil {
			return err
		}
		k := ObjectKey{Kind: s.Kind, Namespace: s.Namespace, Name: s.Name}
		if err := p.checkKind(fields["kind"], k, true); err != nil {
			return err
		}
		if s.Namespace, err = p.namespace(v, k); err != nil {
			return err
		}
		if s.Action == StepPatch {
			pn, ok := fields["patch"]
			if !ok {
				return p.errorf(v, "%s has no patch: give the JSON merge patch, e.g. patch: {spec: {replicas: 2}}", what)
			}
			val, err := p.value(pn)
			if err != nil {
				return err
			}
			if s.Patch, ok = val.(map[string]any); !ok {
				return p.errorf(pn, "%s.patch must be a mapping (a JSON merge patch)", what)
			}
		}
	case StepCreate:
		obj, k, err := p.object(v, what)
		if err != nil {
			return err
		}
		if err := memcluster.Check(obj); err != nil {
			return p.errorf(v, "%s", strings.TrimPrefix(err.Error(), memcluster.ErrInvalidObject.Error()+": "))
		}
		s.Object, s.Kind, s.Namespace, s.Name = obj, k.Kind, k.Namespace, k.Name
	case StepGarbageCollector, StepReleaseVolumes, StepResizeVolumes:
		if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
			return nil
		}
		if _, err := p.fields(v, what, nil); err != nil {
			return p.errorf(v, "%s takes no fields: write %s: {}", what, s.Action)
		}
	}
	return nil
}

// Controller reports whether the step stands for a controller that keeps
// running (statefulSetController, garbageCollector, releaseVolumes,
// resizeVolumes), whose writes are decided on the state, as opposed to a
// user's one-off action.
func (s Step) Controller() bool {
	switch s.Action {
	case StepStatefulSetController, StepGarbageCollector, StepReleaseVolumes, StepResizeVolumes:
		return true
	}
	return false
}

// Write is one write a step makes to the cluster: steps that stand for a
// controller (statefulSetController, garbageCollector, releaseVolumes) make
// several, decided on the state the step starts from, as a controller's sync
// decides on its cache.
type Write struct {
	// Op is "create", "patch" or "delete".
	Op                    string
	Kind, Namespace, Name string
	// Object is a create's object; Patch a patch's JSON merge patch.
	Object map[string]any
	Patch  map[string]any
}

// String renders w as "delete Pod default/web-2".
func (w Write) String() string {
	return w.Op + " " + ObjectKey{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name}.String()
}

// Writes returns the writes step number i (from 0) makes on the cluster c as
// it is now. An error means the step cannot be carried out on this state (a
// StatefulSet to scale that does not exist): the case is wrong.
func (s Step) Writes(i int, c *memcluster.Cluster) ([]Write, error) {
	switch s.Action {
	case StepScale:
		if _, ok := c.Get(s.Kind, s.Namespace, s.Name); !ok {
			return nil, fmt.Errorf("%s: no such object", ObjectKey{Kind: s.Kind, Namespace: s.Namespace, Name: s.Name})
		}
		return []Write{{Op: "patch", Kind: s.Kind, Namespace: s.Namespace, Name: s.Name,
			Patch: map[string]any{"spec": map[string]any{"replicas": s.Replicas}}}}, nil
	case StepPatch:
		return []Write{{Op: "patch", Kind: s.Kind, Namespace: s.Namespace, Name: s.Name, Patch: s.Patch}}, nil
	case StepDelete:
		return []Write{{Op: "delete", Kind: s.Kind, Namespace: s.Namespace, Name: s.Name}}, nil
	case StepCreate:
		obj := runtime.DeepCopyJSON(s.Object)
		meta, _ := obj["metadata"].(map[string]any)
		if meta["uid"] == nil {
			// Not the name's uid: an object created again under a
			// deleted one's name is another object.
			meta["uid"] = stepUID(i, s.Kind, s.Namespace, s.Name)
		}
		return []Write{{Op: "create", Kind: s.Kind, Namespace: s.Namespace, Name: s.Name, Object: obj}}, nil
	case StepStatefulSetController:
		return statefulSetWrites(i, s, c)
	case StepGarbageCollector:
		return garbageWrites(c), nil
	case StepReleaseVolumes:
		return releaseWrites(c), nil
	case StepResizeVolumes:
		return resizeWrites(c), nil
	}
	return nil, fmt.Errorf("unknown step action %q", s.Action)
}

// Apply makes w on c, as the user or controller it stands for would: without
// preconditions.
func (w Write) Apply(ctx context.Context, c *memcluster.Cluster) error {
	switch w.Op {
	case "create":
		return c.Load(w.Object)
	case "patch":
		// .status goes through the status subresource, the rest through
		// the object, as kubectl --subresource and controllers split them.
		main := make(map[string]any, len(w.Patch))
		for k, v := range w.Patch {
			if k != "status" {
				main[k] = v
			}
		}
		if st, ok := w.Patch["status"]; ok {
			if err := patch(ctx, c, w, map[string]any{"status": st}, "status"); err != nil {
				return err
			}
			if len(main) == 0 {
				return nil
			}
		}
		return patch(ctx, c, w, main)
	case "delete":
		return c.Delete(ctx, w.Kind, w.Namespace, w.Name, "", "")
	}
	return fmt.Errorf("unknown write %q", w.Op)
}

func patch(ctx context.Context, c *memcluster.Cluster, w Write, p map[string]any, subresource ...string) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = c.Patch(ctx, w.Kind, w.Namespace, w.Name, types.MergePatchType, data, "kubectl", subresource...)
	return err
}

// ApplyStep makes every write of step number i on c, in order. A write that
// fails stops the step: the case names what cannot be done.
func ApplyStep(ctx context.Context, c *memcluster.Cluster, i int, s Step) error {
	ws, err := s.Writes(i, c)
	if err != nil {
		return err
	}
	for _, w := range ws {
		if err := w.Apply(ctx, c); err != nil {
			return fmt.Errorf("%s: %w", w, err)
		}
	}
	return nil
}

// stepUID is the uid of an object step i creates: the same in every run of
// the case, and different from the uid of an object of the same name loaded
// or created by another step.
func stepUID(i int, kind, namespace, name string) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("step %d %s/%s/%s", i, kind, namespace, name)))
	h := fmt.Sprintf("%x", sum[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// statefulSetWrites is what kube-controller-manager's StatefulSet controller
// does in one sync, all replicas at once: for each ordinal below
// spec.replicas, create the claims of its templates and then its pod where
// missing; delete the pods of ordinals at or above it, highest first. A set
// that is gone or being deleted gets nothing. Pods are created running
// and Ready (no kubelet runs) and claims pending (no binder runs).
func statefulSetWrites(i int, s Step, c *memcluster.Cluster) ([]Write, error) {
	set, ok := c.Get(abi.KindStatefulSet, s.Namespace, s.Name)
	if !ok {
		return nil, nil
	}
	meta, _ := set["metadata"].(map[string]any)
	if meta["deletionTimestamp"] != nil {
		return nil, nil
	}
	spec, _ := set["spec"].(map[string]any)
	replicas := int64(1)
	if r, ok := spec["replicas"].(int64); ok {
		replicas = r
	}
	if replicas > MaxControllerReplicas {
		return nil, fmt.Errorf("StatefulSet %s/%s has %d replicas, more than the %d the StatefulSet controller's step makes pods for: a case needs only a few",
			s.Namespace, s.Name, replicas, MaxControllerReplicas)
	}
	uid, _ := meta["uid"].(string)
	tmpl, _ := spec["template"].(map[string]any)
	tmeta, _ := tmpl["metadata"].(map[string]any)
	podSpec, _ := tmpl["spec"].(map[string]any)
	templates, _ := spec["volumeClaimTemplates"].([]any)
	owner := map[string]any{"apiVersion": "apps/v1", "kind": abi.KindStatefulSet, "name": s.Name, "uid": uid, "controller": true, "blockOwnerDeletion": true}

	var out []Write
	for ord := int64(0); ord < replicas; ord++ {
		var volumes []any
		for _, t := range templates {
			tm, _ := t.(map[string]any)
			tmMeta, _ := tm["metadata"].(map[string]any)
			tname, _ := tmMeta["name"].(string)
			claimName := fmt.Sprintf("%s-%s-%d", tname, s.Name, ord)
			volumes = append(volumes, map[string]any{"name": tname, "persistentVolumeClaim": map[string]any{"claimName": claimName}})
			if _, ok := c.Get(abi.KindPersistentVolumeClaim, s.Namespace, claimName); ok {
				continue
			}
			labels := map[string]any{}
			if l, ok := tmMeta["labels"].(map[string]any); ok {
				labels = runtime.DeepCopyJSON(l)
			}
			if sel, ok := nestedMap(spec, "selector", "matchLabels"); ok {
				for k, v := range sel {
					labels[k] = v
				}
			}
			claim := map[string]any{
				"apiVersion": "v1", "kind": abi.KindPersistentVolumeClaim,
				"metadata": map[string]any{"name": claimName, "namespace": s.Namespace, "labels": labels,
					"uid": stepUID(i, abi.KindPersistentVolumeClaim, s.Namespace, claimName)},
				"spec":   runtime.DeepCopyJSONValue(tm["spec"]),
				"status": map[string]any{"phase": "Pending"},
			}
			out = append(out, Write{Op: "create", Kind: abi.KindPersistentVolumeClaim, Namespace: s.Namespace, Name: claimName, Object: claim})
		}
		podName := fmt.Sprintf("%s-%d", s.Name, ord)
		if _, ok := c.Get(abi.KindPod, s.Namespace, podName); ok {
			continue
		}
		labels := map[string]any{}
		if l, ok := tmeta["labels"].(map[string]any); ok {
			labels = runtime.DeepCopyJSON(l)
		}
		labels["statefulset.kubernetes.io/pod-name"] = podName
		labels["apps.kubernetes.io/pod-index"] = strconv.FormatInt(ord, 10)
		ps := map[string]any{}
		if podSpec != nil {
			ps = runtime.DeepCopyJSON(podSpec)
		}
		vols, _ := ps["volumes"].([]any)
		ps["volumes"] = append(vols, volumes...)
		ps["hostname"] = podName
		pod := map[string]any{
			"apiVersion": "v1", "kind": abi.KindPod,
			"metadata": map[string]any{"name": podName, "namespace": s.Namespace, "labels": labels,
				"uid": stepUID(i, abi.KindPod, s.Namespace, podName), "ownerReferences": []any{owner}},
			"spec":   ps,
			"status": map[string]any{"phase": "Running", "conditions": []any{map[string]any{"type": "Ready", "status": "True"}}},
		}
		out = append(out, Write{Op: "create", Kind: abi.KindPod, Namespace: s.Namespace, Name: podName, Object: pod})
	}
	var condemned []int64
	for _, p := range c.List(abi.KindPod) {
		pm, _ := p["metadata"].(map[string]any)
		if pm["namespace"] != s.Namespace || pm["deletionTimestamp"] != nil || !controlledBy(pm, uid) {
			continue
		}
		name, _ := pm["name"].(string)
		ord, err := strconv.ParseInt(strings.TrimPrefix(name, s.Name+"-"), 10, 64)
		if err == nil && strings.HasPrefix(name, s.Name+"-") && ord >= replicas {
			condemned = append(condemned, ord)
		}
	}
	slices.Sort(condemned)
	slices.Reverse(condemned)
	for _, ord := range condemned {
		out = append(out, Write{Op: "delete", Kind: abi.KindPod, Namespace: s.Namespace, Name: fmt.Sprintf("%s-%d", s.Name, ord)})
	}
	return out, nil
}

func controlledBy(meta map[string]any, uid string) bool {
	refs, _ := meta["ownerReferences"].([]any)
	for _, r := range refs {
		rm, _ := r.(map[string]any)
		if rm["uid"] == uid && rm["controller"] == true {
			return true
		}
	}
	return false
}

func nestedMap(m map[string]any, path ...string) (map[string]any, bool) {
	for _, p := range path {
		next, ok := m[p].(map[string]any)
		if !ok {
			return nil, false
		}
		m = next
	}
	return m, true
}

// garbageWrites is one pass of the garbage collector: every object with
// owner references none of whose owners exists (by uid) is deleted, in
// kind order.
func garbageWrites(c *memcluster.Cluster) []Write {
	var out []Write
	for _, kind := range SortedKinds() {
		for _, obj := range c.List(kind) {
			meta, _ := obj["metadata"].(map[string]any)
			refs, _ := meta["ownerReferences"].([]any)
			if len(refs) == 0 || meta["deletionTimestamp"] != nil {
				continue
			}
			ns, _ := meta["namespace"].(string)
			alive := false
			for _, r := range refs {
				rm, _ := r.(map[string]any)
				k, _ := rm["kind"].(string)
				n, _ := rm["name"].(string)
				if o, ok := c.Get(k, ns, n); ok {
					om, _ := o["metadata"].(map[string]any)
					alive = alive || om["uid"] == rm["uid"]
				}
			}
			if !alive {
				name, _ := meta["name"].(string)
				out = append(out, Write{Op: "delete", Kind: kind, Namespace: ns, Name: name})
			}
		}
	}
	return out
}

// releaseWrites is the PersistentVolume controller's release: a Bound
// volume whose claim (by uid) is gone becomes Released.
func releaseWrites(c *memcluster.Cluster) []Write {
	var out []Write
	for _, pv := range c.List(abi.KindPersistentVolume) {
		meta, _ := pv["metadata"].(map[string]any)
		status, _ := pv["status"].(map[string]any)
		ref, ok := nestedMap(pv, "spec", "claimRef")
		if !ok || status["phase"] != "Bound" {
			continue
		}
		ns, _ := ref["namespace"].(string)
		name, _ := ref["name"].(string)
		if claim, ok := c.Get(abi.KindPersistentVolumeClaim, ns, name); ok {
			cm, _ := claim["metadata"].(map[string]any)
			if cm["uid"] == ref["uid"] {
				continue
			}
		}
		pvName, _ := meta["name"].(string)
		out = append(out, Write{Op: "patch", Kind: abi.KindPersistentVolume, Name: pvName,
			Patch: map[string]any{"status": map[string]any{"phase": "Released"}}})
	}
	return out
}

// resizeWrites is the external resizer and kubelet finishing an
// expansion: a Bound claim whose storage request is above its capacity gets
// that capacity.
func resizeWrites(c *memcluster.Cluster) []Write {
	var out []Write
	for _, claim := range c.List(abi.KindPersistentVolumeClaim) {
		meta, _ := claim["metadata"].(map[string]any)
		status, _ := claim["status"].(map[string]any)
		reqs, _ := nestedMap(claim, "spec", "resources", "requests")
		caps, _ := nestedMap(claim, "status", "capacity")
		req, _ := reqs["storage"].(string)
		cur, _ := caps["storage"].(string)
		rq, err1 := resource.ParseQuantity(req)
		cq, err2 := resource.ParseQuantity(cur)
		if status["phase"] != "Bound" || err1 != nil || (cur != "" && err2 != nil) || (cur != "" && rq.Cmp(cq) <= 0) {
			continue
		}
		ns, _ := meta["namespace"].(string)
		name, _ := meta["name"].(string)
		out = append(out, Write{Op: "patch", Kind: abi.KindPersistentVolumeClaim, Namespace: ns, Name: name,
			Patch: map[string]any{"status": map[string]any{"capacity": map[string]any{"storage": req}}}})
	}
	return out
}

// SortedKinds returns the kinds a case may hold, sorted.
func SortedKinds() []string { return slices.Clone(sortedKinds) }

// sortedKinds is SortedKinds, computed once: abi's kinds are fixed.
var sortedKinds = slices.Sorted(maps.Keys(abi.Kinds()))

// IsNotFound reports whether a step's write failed because its object is
// gone: a perturbed run may reach a step with the object already deleted.
func IsNotFound(err error) bool { return apierrors.IsNotFound(err) }

// stepError is the error of a step that cannot be carried out, naming the
// case file's line.
func stepError(c Case, i int, s Step, err error) error {
	return inputErrorf(c.File, s.Line, "step %d (%s): %s", i+1, input.Excerpt(s.String(), input.MaxExcerpt), err)
}
