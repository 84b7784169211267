package faults

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeplug/kubeplug/e2e/internal/kubelet"
	"github.com/kubeplug/kubeplug/host/csi/csitest"
)

// template names every set's one claim template: claims are data-<set>-<n>.
const template = "data"

// setRecord is what the tracker knows of a set the run made.
type setRecord struct {
	spec    setSpec
	uid     types.UID
	deleted bool
	// deletedAt is when the API server answered the workload's delete.
	deletedAt time.Time
	// replicas is every replica count the set was given, with when.
	replicas []replicasAt
	// size is its VolumeClaimUpdate's template request, in GiB.
	size int
}

type replicasAt struct {
	at time.Time
	n  int
}

type claimRecord struct {
	uid     types.UID
	name    string
	set     string
	ordinal int
	seen    time.Time
}

// tracker watches a run's claims and volumes from the start of its load,
// with the test's own connection to the API server (not through a proxy),
// and collects the violations it can see as they happen.
type tracker struct {
	ns     string
	c      kubernetes.Interface
	driver *csitest.Driver
	rev    *revisions // nil: no etcd to place a claim's creation

	mu         sync.Mutex
	sets       map[string]*setRecord
	claims     map[types.UID]claimRecord
	userDelete map[types.UID]bool // claims the workload deleted
	// podsAtDelete is, by claim, the pods the workload read to delete
	// with it (deleteReplica).
	podsAtDelete map[types.UID][]types.UID
	pvOf         map[string]string // volume handle -> PersistentVolume name
	pvGone       map[string]bool   // PersistentVolume names seen deleted
	deletes      map[string]int    // DeleteVolume calls that reached the driver, by handle
	judged       int               // claim deletions judged
	violations   []string
	// The run's claims as first seen: how many, how many with their
	// VolumeClaimUpdate's label (the admit hook rewrote them at
	// creation), how many owned by their set.
	firstSeen, firstLabelled, firstOwned int
	// skips0 is kcmStaleSkips when the run began; nil when unread.
	skips0 map[string]float64
}

func newTracker(ctx context.Context, c kubernetes.Interface, ns string, d *csitest.Driver, rev *revisions) (*tracker, error) {
	tr := &tracker{ns: ns, c: c, driver: d, rev: rev, sets: map[string]*setRecord{}, claims: map[types.UID]claimRecord{},
		userDelete: map[types.UID]bool{}, podsAtDelete: map[types.UID][]types.UID{}, pvOf: map[string]string{}, pvGone: map[string]bool{}, deletes: map[string]int{}}
	tr.skips0, _ = kcmStaleSkips() // an error shows as "not read" in the report
	nsf := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace(ns))
	claims := nsf.Core().V1().PersistentVolumeClaims().Informer()
	if _, err := claims.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { tr.claimSeen(obj.(*corev1.PersistentVolumeClaim)) },
		// An informer keys by name: a claim deleted and created again
		// while its watch was down (an API server restart) comes back
		// from the relist as an update of the old one. Judge the old
		// one's deletion and count the new one as the watch would have.
		UpdateFunc: func(old, cur any) {
			o, c := old.(*corev1.PersistentVolumeClaim), cur.(*corev1.PersistentVolumeClaim)
			if o.UID != c.UID {
				tr.claimGone(o)
				tr.claimSeen(c)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if c, ok := obj.(*corev1.PersistentVolumeClaim); ok {
				tr.claimGone(c)
			}
		},
	}); err != nil {
		return nil, err
	}
	all := informers.NewSharedInformerFactory(c, 0)
	pvs := all.Core().V1().PersistentVolumes().Informer()
	if _, err := pvs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if pv, ok := obj.(*corev1.PersistentVolume); ok {
				tr.mu.Lock()
				tr.pvGone[pv.Name] = true
				tr.mu.Unlock()
			}
		},
	}); err != nil {
		return nil, err
	}
	nsf.Start(ctx.Done())
	all.Start(ctx.Done())
	nsf.WaitForCacheSync(ctx.Done())
	all.WaitForCacheSync(ctx.Done())
	return tr, nil
}

// birth places cl's creation against the deletion of its set by etcd's
// revisions, with the revision it was created at (0 when etcd does not
// say); birthUnknown when the tracker has no etcd or etcd cannot tell.
func (tr *tracker) birth(ctx context.Context, cl *corev1.PersistentVolumeClaim, set string) (birth, int64) {
	if tr.rev == nil {
		return birthUnknown, 0
	}
	b, rev, err := tr.rev.claimBirth(ctx, cl, set)
	if err != nil {
		return birthUnknown, rev
	}
	return b, rev
}

func (tr *tracker) violate(format string, args ...any) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.violations = append(tr.violations, fmt.Sprintf(format, args...))
}

// parseClaim splits data-<set>-<ordinal>.
func parseClaim(name string) (set string, ordinal int, ok bool) {
	rest, ok := strings.CutPrefix(name, template+"-")
	if !ok {
		return "", 0, false
	}
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(rest[i+1:])
	return rest[:i], n, err == nil
}

func (tr *tracker) claimSeen(c *corev1.PersistentVolumeClaim) {
	set, ord, ok := parseClaim(c.Name)
	if !ok {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.claims[c.UID] = claimRecord{uid: c.UID, name: c.Name, set: set, ordinal: ord, seen: time.Now()}
	tr.firstSeen++
	if c.Labels["tier"] == "gold" {
		tr.firstLabelled++
	}
	if slices.ContainsFunc(c.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "StatefulSet" && o.Name == set }) {
		tr.firstOwned++
	}
}

// claimGone checks that a claim's deletion was one the workload or the
// policies called for: the workload deleted it; its set was deleted with
// whenDeleted: Delete; or its set, with whenScaled: Delete, had at most
// its ordinal replicas at some time while the claim existed.
func (tr *tracker) claimGone(c *corev1.PersistentVolumeClaim) {
	tr.mu.Lock()
	rec, seen := tr.claims[c.UID]
	user := tr.userDelete[c.UID]
	var set *setRecord
	if seen {
		set = tr.sets[rec.set]
	}
	allowed := user
	if !allowed && set != nil {
		if set.deleted && set.spec.whenDeleted == "Delete" {
			allowed = true
		}
		if set.spec.whenScaled == "Delete" {
			for i, r := range set.replicas {
				inEffect := i+1 == len(set.replicas) || set.replicas[i+1].at.After(rec.seen)
				if inEffect && r.n <= rec.ordinal {
					allowed = true
				}
			}
		}
	}
	if seen {
		tr.judged++
	}
	tr.mu.Unlock()
	if !seen || allowed {
		return
	}
	if set == nil {
		tr.violate("claim %s/%s (uid %s) of no set the run made was deleted", c.Namespace, c.Name, c.UID)
		return
	}
	tr.violate("claim %s/%s (uid %s) deleted, which the policy of set %s (whenDeleted=%s, whenScaled=%s, replicas %s) keeps and the workload did not delete",
		c.Namespace, c.Name, c.UID, rec.set, set.spec.whenDeleted, set.spec.whenScaled, set.history())
}

func (s *setRecord) history() string {
	var b []string
	for _, r := range s.replicas {
		b = append(b, strconv.Itoa(r.n))
	}
	return strings.Join(b, "→")
}

// checkDelete runs when a DeleteVolume call reaches the driver, before the
// driver acts on it: the volume's PersistentVolume must not be gone
// already (the volume deleted twice), and its claim must not exist (the
// volume deleted while bound).
func (tr *tracker) checkDelete(handle string) {
	tr.mu.Lock()
	tr.deletes[handle]++
	pvName, known := tr.pvOf[handle]
	gone := tr.pvGone[pvName]
	tr.mu.Unlock()
	if !known {
		return // a volume of an earlier run
	}
	if gone {
		tr.violate("DeleteVolume of %s after its PersistentVolume %s was deleted: the volume deleted twice", handle, pvName)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pv, err := tr.c.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
	if err != nil || pv.Spec.ClaimRef == nil {
		return
	}
	ref := pv.Spec.ClaimRef
	claim, err := tr.c.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err == nil && claim.UID == ref.UID {
		tr.violate("DeleteVolume of %s while its claim %s/%s (uid %s) exists: the volume deleted while bound", handle, ref.Namespace, ref.Name, ref.UID)
	}
}

// unmet lists what keeps the run's cluster from the state the policies
// require; none means converged. It reads everything from the API server
// and the driver afresh. With detail, a set not rolled out is described
// with its pods and its Warning events (one more read per set): for the
// report, not for every poll.
func (tr *tracker) unmet(ctx context.Context, detail bool) ([]string, error) {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	c := tr.c
	claims, err := c.CoreV1().PersistentVolumeClaims(tr.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	pods, err := c.CoreV1().Pods(tr.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	pvs, err := c.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	tr.mu.Lock()
	sets := map[string]setRecord{}
	for name, s := range tr.sets {
		sets[name] = *s
	}
	handles := map[string]string{}
	for h, pv := range tr.pvOf {
		handles[h] = pv
	}
	seenAt := map[types.UID]time.Time{}
	for uid, c := range tr.claims {
		seenAt[uid] = c.seen
	}
	tr.mu.Unlock()

	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			add("pod %s terminating", p.Name)
		}
	}
	byName := map[string]*corev1.PersistentVolumeClaim{}
	for i := range claims.Items {
		cl := &claims.Items[i]
		byName[cl.Name] = cl
		if cl.DeletionTimestamp != nil {
			add("claim %s terminating (finalizers %v, mounted by %s)", cl.Name, cl.Finalizers, mountedBy(pods.Items, cl.Name))
		}
		setName, ord, ok := parseClaim(cl.Name)
		if !ok {
			continue
		}
		s, ok := sets[setName]
		if !ok {
			add("claim %s of no set the run made", cl.Name)
			continue
		}
		ownedBySet, ownedByPod := false, false
		for _, o := range cl.OwnerReferences {
			switch o.Kind {
			case "StatefulSet":
				ownedBySet = ownedBySet || o.UID == s.uid
			case "Pod":
				ownedByPod = true
			}
		}
		if ownedByPod {
			add("claim %s owned by a pod", cl.Name)
		}
		switch {
		case s.deleted && s.spec.whenDeleted == "Delete":
			b, rev := tr.birth(ctx, cl, setName)
			add("claim %s of set %s deleted with whenDeleted=Delete still exists, owned by %s (created %s at revision %d, %s; first seen %s; set deleted %s)",
				cl.Name, setName, owners(cl.OwnerReferences), cl.CreationTimestamp.UTC().Format("15:04:05"), rev, b,
				seenAt[cl.UID].Format("15:04:05.000"), s.deletedAt.Format("15:04:05.000"))
		case s.deleted:
			if ownedBySet {
				add("claim %s of set %s deleted with whenDeleted=Retain still owned by it", cl.Name, setName)
			}
		default:
			n := s.replicas[len(s.replicas)-1].n
			if ord >= n && s.spec.whenScaled == "Delete" {
				add("claim %s beyond %s's %d replicas with whenScaled=Delete still exists, owned by %s, mounted by %s",
					cl.Name, setName, n, owners(cl.OwnerReferences), mountedBy(pods.Items, cl.Name))
			}
			if ownedBySet != (s.spec.whenDeleted == "Delete") {
				add("claim %s owned by its set: %v, want %v (whenDeleted=%s)", cl.Name, ownedBySet, !ownedBySet, s.spec.whenDeleted)
			}
		}
	}
	for name, s := range sets {
		if s.deleted {
			continue
		}
		set, err := c.AppsV1().StatefulSets(tr.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		n := s.replicas[len(s.replicas)-1].n
		st := set.Status
		if st.ObservedGeneration != set.Generation || st.Replicas != int32(n) || st.ReadyReplicas != int32(n) ||
			st.UpdatedReplicas != int32(n) || st.CurrentRevision != st.UpdateRevision {
			if detail {
				add("set %s not rolled out at %d replicas: %+v (generation %d); its pods: %s; its warnings: %s; "+
					"syncs of sets kube-controller-manager put off in this run, its informer behind its own write: %s",
					name, n, st, set.Generation, podsOf(pods.Items, set), tr.warnings(ctx, "StatefulSet", name), tr.staleSkips())
			} else {
				add("set %s not rolled out at %d replicas: %+v", name, n, st)
			}
		}
		want := resource.MustParse(fmt.Sprintf("%dGi", s.size))
		for ord := range n {
			cl := byName[fmt.Sprintf("%s-%s-%d", template, name, ord)]
			switch {
			case cl == nil:
				add("claim %s-%s-%d missing", template, name, ord)
			case cl.Status.Phase != corev1.ClaimBound:
				add("claim %s %s", cl.Name, cl.Status.Phase)
			case cl.Status.Capacity.Storage().Cmp(want) < 0:
				add("claim %s at %s, its VolumeClaimUpdate asks %s", cl.Name, cl.Status.Capacity.Storage(), &want)
			case cl.Labels["tier"] != "gold":
				add("claim %s without the template's label tier=gold", cl.Name)
			}
		}
	}

	// Volumes: every one of the run's volumes Bound to an existing claim,
	// every backing volume the run made backing a PersistentVolume.
	bound := map[string]bool{}
	live := map[string]bool{}
	for _, cl := range claims.Items {
		live[string(cl.UID)] = true
	}
	for _, pv := range pvs.Items {
		if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Namespace != tr.ns || pv.Spec.CSI == nil {
			continue
		}
		bound[pv.Spec.CSI.VolumeHandle] = true
		switch {
		case pv.DeletionTimestamp != nil:
			add("volume %s terminating", pv.Name)
		case pv.Status.Phase != corev1.VolumeBound || !live[string(pv.Spec.ClaimRef.UID)]:
			add("volume %s %s, its claim %s gone", pv.Name, pv.Status.Phase, pv.Spec.ClaimRef.Name)
		}
	}
	have := map[string]bool{}
	for _, h := range tr.driver.Volumes() {
		have[h] = true
		if pv, ours := handles[h]; ours && !bound[h] {
			add("backing volume %s leaked: PersistentVolume %s gone, the volume still in the driver", h, pv)
		}
	}
	for h := range bound {
		if _, ours := handles[h]; ours && !have[h] {
			add("PersistentVolume of handle %s exists, its backing volume is gone", h)
		}
	}
	slices.Sort(out)
	return out, nil
}

// owners says who owns an object, for a message: kind/name(uid), or none.
func owners(refs []metav1.OwnerReference) string {
	if len(refs) == 0 {
		return "none"
	}
	var out []string
	for _, o := range refs {
		out = append(out, fmt.Sprintf("%s/%s(%s)", o.Kind, o.Name, o.UID))
	}
	return strings.Join(out, ", ")
}

// podsOf describes the pods named after set's replicas, and whether set
// owns each: what kube-controller-manager's status for it counts.
func podsOf(pods []corev1.Pod, set *appsv1.StatefulSet) string {
	var out []string
	for _, p := range pods {
		if name, _, ok := parseClaim(template + "-" + p.Name); !ok || name != set.Name {
			continue
		}
		owned := false
		if ref := metav1.GetControllerOf(&p); ref != nil {
			owned = ref.UID == set.UID
		}
		sched := ""
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				sched = ", " + c.Message
			}
		}
		out = append(out, fmt.Sprintf("%s (%s, ready %v, node %q, owned %v, created %s%s)", p.Name, p.Status.Phase,
			kubelet.RunningAndReady(&p), p.Spec.NodeName, owned, p.CreationTimestamp.UTC().Format("15:04:05"), sched))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// staleSkips is skipsSince the run began, by resource.
func (tr *tracker) staleSkips() string {
	if tr.skips0 == nil {
		return "not read when the run began"
	}
	now, err := kcmStaleSkips()
	if err != nil {
		return "not read: " + err.Error()
	}
	return skipsSince(tr.skips0, now)
}

// warnings lists the Warning events about the object of kind and name in
// the run's namespace, the last few: why a controller did not act.
func (tr *tracker) warnings(ctx context.Context, kind, name string) string {
	evs, err := tr.c.CoreV1().Events(tr.ns).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=" + kind + ",involvedObject.name=" + name + ",type=Warning"})
	if err != nil {
		return "not read: " + err.Error()
	}
	var out []string
	for _, e := range evs.Items[max(0, len(evs.Items)-4):] {
		out = append(out, fmt.Sprintf("%s ×%d: %s", e.Reason, max(e.Count, 1), e.Message))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "; ")
}

// mountedBy names the pods whose volumes use claim, with their phase and
// node, or "no pod": what the pvc-protection finalizer waits for.
func mountedBy(pods []corev1.Pod, claim string) string {
	var out []string
	for _, p := range pods {
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
				out = append(out, fmt.Sprintf("%s (%s, node %q, uid %s, created %s)", p.Name, p.Status.Phase, p.Spec.NodeName, p.UID, p.CreationTimestamp.UTC().Format("15:04:05")))
			}
		}
	}
	if len(out) == 0 {
		return "no pod"
	}
	return strings.Join(out, ", ")
}
