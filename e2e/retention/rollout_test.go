package retention

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeplug/kubeplug/e2e/internal/kubelet"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// changeTemplate changes the set's pod template, hence its update revision.
func (e *env) changeTemplate() {
	e.t.Helper()
	e.updateSet(func(s *appsv1.StatefulSet) {
		if s.Spec.Template.Annotations == nil {
			s.Spec.Template.Annotations = map[string]string{}
		}
		s.Spec.Template.Annotations["e2e.kubeplug.dev/rollout"] = "2"
	})
}

// rollOut changes the pod template of a set whose pods run (mode ordered),
// waits until the rolling update is done, and checks from the pods' and the
// set's changes, watched throughout, that kube-controller-manager did it as
// on a real cluster: see checkRollout.
func (e *env) rollOut() {
	e.t.Helper()
	before := e.set()
	r1 := before.Status.UpdateRevision
	if before.Status.CurrentRevision != r1 {
		e.t.Fatalf("before the update: currentRevision %s, updateRevision %s; want them equal", before.Status.CurrentRevision, r1)
	}
	old := e.podUIDs()
	for ord := range int32(2) {
		if rev := e.pod(ord).Labels[appsv1.ControllerRevisionHashLabelKey]; rev != r1 {
			e.t.Fatalf("before the update: pod %d at revision %s, want %s", ord, rev, r1)
		}
	}
	w := e.watchRollout()
	e.changeTemplate()
	var r2 string
	testenv.Eventually(e.t, testenv.Timeout, "rolling update of "+e.ns+" done", func() (bool, error) {
		s := e.set()
		st := s.Status
		if st.ObservedGeneration != s.Generation || st.UpdateRevision == r1 || st.CurrentRevision != st.UpdateRevision ||
			st.UpdatedReplicas != 2 || st.ReadyReplicas != 2 {
			return false, nil
		}
		for ord := range int32(2) {
			p := e.pod(ord)
			if p == nil || p.UID == old[ord] || p.DeletionTimestamp != nil ||
				p.Labels[appsv1.ControllerRevisionHashLabelKey] != st.UpdateRevision || !kubelet.RunningAndReady(p) {
				return false, nil
			}
		}
		r2 = st.UpdateRevision
		return true, nil
	})
	final := e.podUIDs()
	testenv.Eventually(e.t, testenv.Timeout, "the watches of "+e.ns+" caught up", func() (bool, error) {
		return w.caughtUp(r2, final)
	})
	initial, pods, statuses, err := w.stop()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, p := range checkRollout(r1, r2, initial, pods, statuses) {
		e.t.Errorf("rolling update in %s: %s", e.ns, p)
	}
}

// checkRollout lists what is wrong with a rolling update of a two-pod set
// from revision r1 to r2, given the pods' watch events from its start and
// the statuses the set went through (initial are the pods at its start). As
// kube-controller-manager does it
// with OrderedReady and running pods:
//   - the set's status passes through currentRevision r1, updateRevision r2
//     and one updated replica: half done, one pod at each revision;
//   - each ordinal's pod is replaced exactly once, by a pod labelled r2,
//     after terminating (a deletionTimestamp first, then gone: the pods are
//     on a node);
//   - web-1 goes first, and web-0 only once the new web-1 is Running and
//     Ready;
//   - at no time are both ordinals unavailable (no pod, terminating, or not
//     Running and Ready).
func checkRollout(r1, r2 string, initial []corev1.Pod, events []watch.Event, statuses []appsv1.StatefulSetStatus) []string {
	var out []string
	if !slices.ContainsFunc(statuses, func(s appsv1.StatefulSetStatus) bool {
		return s.CurrentRevision == r1 && s.UpdateRevision == r2 && s.UpdatedReplicas == 1
	}) {
		var seen []string
		for _, s := range statuses {
			seen = append(seen, fmt.Sprintf("current %s update %s updated %d", s.CurrentRevision, s.UpdateRevision, s.UpdatedReplicas))
		}
		out = append(out, fmt.Sprintf("the set's status never showed one pod updated of two (current %s, update %s); it went: %s",
			r1, r2, strings.Join(seen, "; ")))
	}

	revision := func(p *corev1.Pod) string { return p.Labels[appsv1.ControllerRevisionHashLabelKey] }
	pods := map[int32]*corev1.Pod{}
	for i := range initial {
		if ord := ordinalOf(initial[i].Name); ord >= 0 {
			pods[ord] = &initial[i]
		}
	}
	created := map[int32]int{}
	going := map[types.UID]bool{}
	terminating := map[types.UID]bool{}
	var order []int32
	newReady := map[int32]bool{}
	for _, ev := range events {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		ord := ordinalOf(p.Name)
		if ord < 0 {
			continue
		}
		switch ev.Type {
		case watch.Added:
			created[ord]++
			if revision(p) != r2 {
				out = append(out, fmt.Sprintf("pod %s (uid %s) created at revision %s, not %s", p.Name, p.UID, revision(p), r2))
			}
			pods[ord] = p
		case watch.Modified:
			pods[ord] = p
		case watch.Deleted:
			if !terminating[p.UID] {
				out = append(out, fmt.Sprintf("pod %s (uid %s) deleted without terminating first", p.Name, p.UID))
			}
			if q := pods[ord]; q != nil && q.UID == p.UID {
				delete(pods, ord)
			}
		}
		if p.DeletionTimestamp != nil && ev.Type == watch.Modified {
			terminating[p.UID] = true
		}
		if revision(p) == r1 && (ev.Type == watch.Deleted || p.DeletionTimestamp != nil) && !going[p.UID] {
			going[p.UID] = true
			order = append(order, ord)
			if ord == 0 && !newReady[1] {
				out = append(out, fmt.Sprintf("%s at revision %s went before a %s at revision %s was Running and Ready", p.Name, r1, setName+"-1", r2))
			}
		}
		if revision(p) == r2 && p.DeletionTimestamp == nil && kubelet.RunningAndReady(p) {
			newReady[ord] = true
		}
		var down []string
		for o := range int32(2) {
			if q := pods[o]; q == nil || q.DeletionTimestamp != nil || !kubelet.RunningAndReady(q) {
				down = append(down, fmt.Sprintf("%s-%d", setName, o))
			}
		}
		if len(down) > 1 {
			out = append(out, fmt.Sprintf("after %s of %s (rv %s), %v unavailable at once", ev.Type, p.Name, p.ResourceVersion, down))
		}
	}
	if !slices.Equal(order, []int32{1, 0}) {
		out = append(out, fmt.Sprintf("pods at revision %s went in the order of ordinals %v, want [1 0]", r1, order))
	}
	for o := range int32(2) {
		if created[o] != 1 {
			out = append(out, fmt.Sprintf("%d pods %s-%d created during the update, want 1", created[o], setName, o))
		}
	}
	return out
}

// ordinalOf is the ordinal of one of the set's pods by name, -1 for a name
// that is not one.
func ordinalOf(pod string) int32 {
	s, ok := strings.CutPrefix(pod, setName+"-")
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return -1
	}
	return int32(n)
}

// rolloutWatch keeps the pods' watch events and the set's statuses of one
// namespace, from the moment it starts.
type rolloutWatch struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	initial  []corev1.Pod
	pods     []watch.Event
	statuses []appsv1.StatefulSetStatus
	err      error
}

func (e *env) watchRollout() *rolloutWatch {
	e.t.Helper()
	ctx, cancel := context.WithCancel(e.ctx)
	w := &rolloutWatch{cancel: cancel}
	e.t.Cleanup(func() { _, _, _, _ = w.stop() })

	pods := e.c.CoreV1().Pods(e.ns)
	podList, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	w.initial = podList.Items
	w.follow(ctx, podList.ResourceVersion, "pods", pods.Watch, func(ev watch.Event) { w.pods = append(w.pods, ev) })

	sets := e.c.AppsV1().StatefulSets(e.ns)
	one := metav1.ListOptions{FieldSelector: "metadata.name=" + setName}
	setList, err := sets.List(ctx, one)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, s := range setList.Items {
		w.statuses = append(w.statuses, s.Status)
	}
	w.follow(ctx, setList.ResourceVersion, "the set", func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = one.FieldSelector
		return sets.Watch(ctx, o)
	}, func(ev watch.Event) {
		if s, ok := ev.Object.(*appsv1.StatefulSet); ok {
			w.statuses = append(w.statuses, s.Status)
		}
	})
	return w
}

// follow runs the package's follow for the rollout, handing each event to
// keep under w.mu.
func (w *rolloutWatch) follow(ctx context.Context, rv, what string, fn func(context.Context, metav1.ListOptions) (watch.Interface, error), keep func(watch.Event)) {
	w.wg.Go(func() {
		err := follow(ctx, rv, what+" during the rolling update", fn, func(ev watch.Event) {
			w.mu.Lock()
			defer w.mu.Unlock()
			keep(ev)
		})
		if err != nil {
			w.fail(err)
		}
	})
}

func (w *rolloutWatch) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// caughtUp reports whether the watches have seen the end of the rolling
// update to r2: the set's status at r2 with both pods updated, and the pods
// of uids Running and Ready.
func (w *rolloutWatch) caughtUp(r2 string, uids [2]types.UID) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return false, w.err
	}
	done := slices.ContainsFunc(w.statuses, func(s appsv1.StatefulSetStatus) bool {
		return s.CurrentRevision == r2 && s.UpdateRevision == r2 && s.UpdatedReplicas == 2 && s.ReadyReplicas == 2
	})
	for _, uid := range uids {
		done = done && slices.ContainsFunc(w.pods, func(ev watch.Event) bool {
			p, ok := ev.Object.(*corev1.Pod)
			return ok && p.UID == uid && kubelet.RunningAndReady(p)
		})
	}
	return done, nil
}

// stop ends the watches and returns what they saw: the pods at the start,
// the pods' events since, and the set's statuses.
func (w *rolloutWatch) stop() ([]corev1.Pod, []watch.Event, []appsv1.StatefulSetStatus, error) {
	w.cancel()
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.initial, w.pods, w.statuses, w.err
}
