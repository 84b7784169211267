package actions

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeplug/kubeplug/abi"
)

// Executor validates and carries out the actions of one module's results.
// It holds no state between calls and is safe for concurrent use when its
// Cluster and Volumes are.
type Executor struct {
	// Cluster receives the writes and events.
	Cluster Cluster
	// Volumes deletes backing volumes; nil refuses every deleteVolume.
	Volumes VolumeDeleter
	// Module is the module's name, for events and logs.
	Module string
	// Shadow validates and reports actions without executing any.
	Shadow bool
	// Logger receives one record per action; nil discards them.
	Logger *slog.Logger
}

// Execute carries out res, the answer of the module with manifest m to req,
// action by action in order:
//   - an action that Validate refuses, or that breaks one of the host's
//     own rules, is not executed: it is reported as Refused, logged, and
//     recorded as a Warning event (reason ActionRefused) on the subject;
//     the rest are Skipped, and Execute returns an error wrapping
//     ErrRefused. The host's rules, whatever the module asks: a backing
//     volume is deleted only when the host's own read of the PV and its
//     claim from the API server finds what external-provisioner's
//     shouldDelete requires (Released, reclaim policy Delete, a configured
//     driver that provisioned it, the action's driver and handle, not under
//     deletion unless it carries FinalizerExternalProvisioner) and the
//     claim gone or replaced, and it is deleted with the secret the host
//     resolves, never the module's; an owner reference is added only to the
//     subject StatefulSet or one of its pods, never to an owner being
//     deleted with orphan propagation;
//   - an action that needs no write, because the object already is as it
//     asks, is Unchanged and sends nothing;
//   - consecutive updateOwnerReferences, addFinalizer, removeFinalizer and
//     event actions are gathered, and each object they change is written
//     once, where its first such action stands (see batch); each action
//     keeps its own outcome;
//   - every write carries the UID and resourceVersion the module saw as
//     preconditions, the resourceVersion being the one returned by this
//     Result's previous write on the same object, if any;
//   - a Conflict or Failed action stops the rest, which are Skipped, and
//     Execute returns an error naming it that wraps ErrConflict (reconcile
//     again on fresh state) or the failure.
//
// In shadow mode Execute validates and plans every action but sends nothing,
// not even the refusal events: valid actions that would write are Shadow,
// and the error is always nil.
func (e *Executor) Execute(ctx context.Context, m abi.Manifest, req *abi.ReconcileRequest, res *abi.Result) (Report, error) {
	var rep Report
	if res == nil {
		return rep, nil
	}
	log := e.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("module", e.Module)
	if req != nil {
		log = log.With("key", req.Key)
	}

	b := &batch{e: e, ctx: ctx, m: m, req: req, actions: res.Actions, states: objectStates{}, reports: make([]ActionReport, len(res.Actions))}
	for i, a := range res.Actions {
		b.reports[i] = ActionReport{Index: i, Type: a.Type, Target: a.Target, Outcome: Skipped}
	}
	for i, a := range res.Actions {
		if b.stopped {
			break
		}
		if coalesced(a.Type) {
			b.queue(i)
			continue
		}
		// The batch is written first: the module ordered its actions, and
		// what follows may depend on it (a finalizer removed before its
		// object is deleted, a claim given to its pod before the pod goes).
		b.flush()
		if b.stopped {
			break
		}
		o, w, err := e.execute(ctx, i, m, req, a, b.states)
		b.set(i, o, w, err)
	}
	b.flush()

	var stop error
	for i, a := range res.Actions {
		r := b.reports[i]
		attrs := []any{"action", i, "type", a.Type, "target", RefString(a.Target)}
		if a.Type == abi.ActionDeleteVolume && a.Volume != nil && a.Volume.Secrets != nil {
			log.Warn("deleteVolume names a Secret, which the host ignores: it resolves the deletion secret from the volume and its StorageClass, as external-provisioner does",
				append(attrs, "secret", a.Volume.Secrets.Namespace+"/"+a.Volume.Secrets.Name)...)
		}
		switch r.Outcome {
		case Refused:
			// The rest is skipped too: the module ordered its actions, and
			// running what follows a refused deleteVolume (the finalizer's
			// removal) would leak the volume it protects.
			stop = cmp.Or(stop, fmt.Errorf("module %s: action %d (%s on %s): %w", e.Module, i, a.Type, RefString(a.Target), r.Err))
			log.Warn("refused action; skipping the rest", append(attrs, "err", r.Err)...)
			e.recordRefusal(ctx, log, req, r)
		case Conflict, Failed:
			stop = cmp.Or(stop, fmt.Errorf("module %s: action %d (%s on %s): %w", e.Module, i, a.Type, RefString(a.Target), r.Err))
			log.Warn("action did not complete; skipping the rest", append(attrs, "outcome", r.Outcome, "err", r.Err)...)
		case Executed:
			log.Info("executed action", append(attrs, "write", r.Write)...)
		case Shadow:
			// Debug: a shadow module's state never moves, so it asks
			// for the same actions on every resync (kubeplug_actions_total
			// counts them at any level).
			log.Debug("shadow mode: action not executed", append(attrs, "write", r.Write)...)
		case Unchanged:
			log.Debug("action needs no write", attrs...)
		}
		rep.add(r)
	}
	rep.Written = b.states.written()
	if e.Shadow {
		return rep, nil
	}
	return rep, stop
}

// execute validates, plans and, unless in shadow mode, makes the call of
// action i.
func (e *Executor) execute(ctx context.Context, i int, m abi.Manifest, req *abi.ReconcileRequest, a abi.Action, states objectStates) (Outcome, string, error) {
	t, err := Validate(m, req, a)
	if err != nil {
		return Refused, "", err
	}
	if a.Type == abi.ActionDeleteVolume {
		// The rules are checked on the module's view here, so that shadow
		// mode reports what the live host would refuse, and again on the
		// API server's before the driver is called.
		configured := func(string) bool { return false }
		if e.Volumes != nil {
			configured = e.Volumes.Configured
		}
		v := inputVolume(t)
		why := deletionRefusal(v, a.Volume, configured)
		if why == "" {
			why = inputClaimRefusal(req, v)
		}
		if why != "" {
			return Refused, "", refusal(a, t, why)
		}
	}
	st := states.of(t)
	// Events do not write the object, so they may follow its deletion.
	if st.gone != "" && a.Type != abi.ActionEvent {
		return Conflict, "", fmt.Errorf("%w: %s %s", ErrConflict, t, st.gone)
	}
	var w *write
	switch a.Type {
	case abi.ActionApply, abi.ActionApplyStatus, abi.ActionCreate:
		w, err = e.planGeneric(m, req, a, t, st)
	default:
		w, err = plan(a, t, st)
	}
	if errors.Is(err, ErrRefused) {
		return Refused, "", err
	}
	if err != nil {
		return Failed, "", err
	}
	if w == nil {
		return Unchanged, "", nil
	}
	if e.Shadow {
		// Later shadow actions on the object are planned as if this one
		// had been made. A delete is not simulated as stopping them: in
		// shadow mode nothing changes, so a requeue would see the same
		// state and stop at the same place forever.
		if w.commit != nil {
			w.commit(st)
		}
		return Shadow, w.desc, nil
	}
	err = e.call(ctx, a, t, st, w)
	if err != nil {
		if w.kind == writeEvent && !errors.Is(err, ErrRefused) {
			return Failed, w.desc, err
		}
		o, err := classify(err)
		return o, w.desc, err
	}
	if w.commit != nil {
		w.commit(st)
	}
	switch {
	case w.kind == writeDelete:
		// After a delete the object is gone, or (with finalizers) carries
		// a deletionTimestamp and a resourceVersion this Result does not
		// know. A later write could only drop the resourceVersion
		// precondition and act on a state the module never saw, so it is
		// not sent: it ends the Result with a conflict and the subject is
		// reconciled again on fresh state. Put deleteObject last, e.g.
		// [deleteVolume, removeFinalizer, deleteObject].
		st.gone = fmt.Sprintf("was deleted by action %d of this result", i)
	case w.kind == writePatch && st.rv == "":
		st.gone = fmt.Sprintf("has an unknown resourceVersion after action %d", i)
	}
	return Executed, w.desc, nil
}

// checkNewOwners reads, from the API server, each owner that a adds and
// referenced does not hold yet. It refuses the write
// (ErrRefused) when an owner is being deleted with orphan propagation: the
// informer caches are not in step with each other, so a module can see a
// claim that the garbage collector just orphaned from a StatefulSet deleted
// with `kubectl delete --cascade=orphan`, next to a cached set that does not
// show its deletion yet, and putting the set's reference back would have
// the collector delete the claim with the set, the one thing an orphaning
// deletion promises not to do. An owner gone or replaced (another UID) is a
// conflict: reconcile again. An owner that is merely terminating is a valid
// owner, as upstream's StatefulSet controller has it: a condemned pod that
// is already terminating gets its claim under whenScaled: Delete, so that
// the collector removes the claim after the pod.
func (e *Executor) checkNewOwners(ctx context.Context, a abi.Action, t Target, referenced []abi.OwnerReference) error {
	for _, r := range a.OwnerReferences.Add {
		if slices.ContainsFunc(referenced, func(o abi.OwnerReference) bool { return o.UID == r.UID }) {
			continue
		}
		// Validate admits only the subject set and its pods, which live in
		// the dependent's namespace.
		cur, why, err := e.currentAs(ctx, r.Kind, t.Namespace, r.Name, r.UID)
		switch {
		case err != nil:
			return fmt.Errorf("check owner %s %s: %w", r.Kind, r.Name, err)
		case why == "" && cur.Deleting && slices.Contains(cur.Finalizers, metav1.FinalizerOrphanDependents):
			return refusal(a, t, fmt.Sprintf("owner %s %s (uid %s) is being deleted with orphan propagation (finalizer %q): its dependents are to be kept, so no reference to it is added",
				r.Kind, r.Name, r.UID, metav1.FinalizerOrphanDependents))
		}
		if why != "" {
			return conflict(t, fmt.Errorf("owner %s %s (uid %s) %s: not adding a reference to it", r.Kind, r.Name, r.UID, why))
		}
	}
	return nil
}

// checkRemovedPodOwners reads the subject StatefulSet from the API server
// when a removes a reference to a Pod that the object holds, and finds a
// conflict when the set is gone, replaced, or its spec has moved since the
// module's input (another generation). A pod reference on a claim is how a
// scale-down under whenScaled: Delete has the garbage collector delete the
// claim with its condemned pod: kube-controller-manager writes it just
// before it deletes the pod, from its own view of the set. The host's
// informers lag independently, so a module can see the claim with that
// reference beside a set still at the old replica count, judge the claim
// in range, and remove the reference; the pod is then deleted and the
// claim stays for good, since nothing reaches a condemned claim whose pod
// is gone (the fault campaign's seed 2435). On the set the module saw, the
// removal is what the policy asks (a scale-up that brought the pod back
// into range), and that is the only set it is allowed on.
func (e *Executor) checkRemovedPodOwners(ctx context.Context, a abi.Action, t Target, referenced []abi.OwnerReference, req *abi.ReconcileRequest) error {
	removes := slices.ContainsFunc(a.OwnerReferences.Remove, func(uid string) bool {
		return slices.ContainsFunc(referenced, func(o abi.OwnerReference) bool { return o.UID == uid && o.Kind == abi.KindPod })
	})
	if !removes || req == nil || req.StatefulSet == nil || req.StatefulSet.Set == nil {
		return nil
	}
	set := &req.StatefulSet.Set.Metadata
	cur, why, err := e.currentAs(ctx, abi.KindStatefulSet, set.Namespace, set.Name, set.UID)
	switch {
	case err != nil:
		return fmt.Errorf("check StatefulSet %s/%s before removing a pod reference: %w", set.Namespace, set.Name, err)
	case why == "" && cur.Generation != set.Generation:
		why = fmt.Sprintf("is at generation %d, the module saw %d", cur.Generation, set.Generation)
	}
	if why != "" {
		return conflict(t, fmt.Errorf("StatefulSet %s/%s %s: not removing a pod's reference on the module's view of it", set.Namespace, set.Name, why))
	}
	return nil
}

// currentAs reads the named object from the API server (Cluster.Current)
// and says why it is not the object uid names: "does not exist", "has
// another UID (…)", or "" when it is. err is any other failure to read it.
func (e *Executor) currentAs(ctx context.Context, kind, namespace, name, uid string) (cur Meta, why string, err error) {
	cur, err = e.Cluster.Current(ctx, kind, namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		return cur, "does not exist", nil
	case err != nil:
		return cur, "", err
	case cur.UID != uid:
		return cur, "has another UID (" + cur.UID + ")", nil
	}
	return cur, "", nil
}

// call makes the API or CSI call of w, recording a patch's new
// resourceVersion in st.
func (e *Executor) call(ctx context.Context, a abi.Action, t Target, st *objectState, w *write) error {
	switch w.kind {
	case writePatch:
		var sub []string
		if w.subresource != "" {
			sub = []string{w.subresource}
		}
		rv, err := e.Cluster.Patch(ctx, t.Kind, t.Namespace, t.Name, w.patchType, w.data, FieldManager, sub...)
		if err != nil {
			return err
		}
		st.rv, st.written = rv, true
		return nil
	case writeDelete:
		if err := e.Cluster.Delete(ctx, t.Kind, t.Namespace, t.Name, t.UID, st.rv); err != nil {
			return err
		}
		st.written = true
		return nil
	case writeDeleteVolume:
		// The driver takes no precondition, and a backing volume deleted
		// wrongly is data lost: the host's rules are checked again on the
		// volume and claim as the API server has them now.
		cur, err := e.checkVolumeDeletion(ctx, a, t, st)
		if err != nil {
			return err
		}
		secrets, err := e.deletionSecret(ctx, cur, t.Name)
		if err != nil {
			return err
		}
		// The volume as read: the action's for a CSI volume, the
		// translation of the in-tree source for a migrated one.
		if err := e.Volumes.DeleteVolume(ctx, cur.CSI.Driver, cur.CSI.VolumeHandle, secrets); err != nil {
			return err
		}
		st.volumeDeleted = true
		return nil
	case writeEvent:
		return e.Cluster.RecordEvent(ctx, t.Ref(), a.Event.Type, a.Event.Reason, truncate(a.Event.Message, MaxEventMessage), e.Module)
	case writeApply, writeCreate:
		return e.callGeneric(ctx, t, st, w)
	}
	return fmt.Errorf("unknown write kind %d", w.kind)
}

// recordRefusal records a Warning event on the subject, so that whoever
// looks at the StatefulSet or volume learns that a module tried something it
// may not. Shadow mode records nothing in the cluster.
func (e *Executor) recordRefusal(ctx context.Context, log *slog.Logger, req *abi.ReconcileRequest, r ActionReport) {
	if e.Shadow {
		return
	}
	subject, ok := subjectRef(req)
	if !ok {
		return
	}
	msg := truncate(fmt.Sprintf("module %s, action %d: %v", e.Module, r.Index, r.Err), MaxEventMessage)
	if err := e.Cluster.RecordEvent(ctx, subject, abi.EventWarning, ReasonActionRefused, msg, e.Module); err != nil {
		log.Warn("record refusal event", "action", r.Index, "err", err)
	}
}

// ReasonActionRefused is the reason of the Warning event recorded on the
// subject for each refused action.
const ReasonActionRefused = "ActionRefused"
