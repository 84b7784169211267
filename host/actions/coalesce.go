package actions

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/internal/ownerref"
)

// coalesced reports whether actions of type typ are gathered into one write
// per object: the metadata lists one merge patch can carry whole. Events
// join the batch so that interleaving them does not split it; they are
// recorded in their place when the batch is written.
func coalesced(typ string) bool {
	switch typ {
	case abi.ActionUpdateOwnerReferences, abi.ActionAddFinalizer, abi.ActionRemoveFinalizer, abi.ActionEvent:
		return true
	}
	return false
}

// batch gathers consecutive coalesced actions of one Result until an action
// of another type, a refusal, or the end of the Result, and then writes each
// object once. Without it, 9,000 addFinalizer actions on one claim were
// 9,000 patches, each carrying the whole list grown so far. The writes are
// made in action order (an object's write where its first action stands),
// with the UID and resourceVersion preconditions of one write; every action
// keeps its own outcome.
type batch struct {
	e       *Executor
	ctx     context.Context
	m       abi.Manifest
	req     *abi.ReconcileRequest
	actions []abi.Action
	states  objectStates
	reports []ActionReport

	// queued lists the actions waiting for the write, in order; objects
	// holds their objects' pending lists.
	queued  []queuedAction
	objects map[abi.ObjectRef]*pendingObject
	// stopped is set by the first action that was refused, conflicted or
	// failed; later actions stay Skipped.
	stopped bool
}

type queuedAction struct {
	index int
	obj   *pendingObject // nil for an event
}

// pendingObject is one object's lists as the queued actions leave them.
type pendingObject struct {
	t          Target
	st         *objectState
	indexes    []int
	ownerRefs  []abi.OwnerReference
	finalizers []string
	has        map[string]bool // finalizers, as a set
	// finalizersOnly is set while every queued action on the object is a
	// finalizer action, the only kind finishVolumeDeletion can plan again.
	finalizersOnly bool
}

func (b *batch) set(i int, o Outcome, write string, err error) {
	r := &b.reports[i]
	r.Outcome, r.Write, r.Err = o, write, err
	if o == Refused || o == Conflict || o == Failed {
		b.stopped = true
	}
}

// fail ends the batch at action i: the actions queued before it are written
// first, as they would have been without coalescing, and i gets outcome o
// unless that write stopped the Result already.
func (b *batch) fail(i int, o Outcome, err error) {
	b.flush()
	if !b.stopped {
		b.set(i, o, "", err)
	}
}

// queue validates action i and adds it to the batch.
func (b *batch) queue(i int) {
	a := b.actions[i]
	t, err := Validate(b.m, b.req, a)
	if err != nil {
		b.fail(i, Refused, err)
		return
	}
	if a.Type == abi.ActionEvent {
		b.queued = append(b.queued, queuedAction{index: i})
		return
	}
	st := b.states.of(t)
	if st.gone != "" {
		b.fail(i, Conflict, fmt.Errorf("%w: %s %s", ErrConflict, t, st.gone))
		return
	}
	p := b.object(t, st)
	switch a.Type {
	case abi.ActionUpdateOwnerReferences:
		next := changeOwnerReferences(p.ownerRefs, a.OwnerReferences)
		if sameOwnerReferences(p.ownerRefs, next) {
			b.set(i, Unchanged, "", nil)
			return
		}
		if ownerref.Controllers(next) > 1 {
			b.fail(i, Refused, refusal(a, t, "the resulting owner references would name more than one controller"))
			return
		}
		if !b.e.Shadow {
			if err := b.e.checkNewOwners(b.ctx, a, t, p.ownerRefs); err != nil {
				o, err := classify(err)
				b.fail(i, o, err)
				return
			}
			if err := b.e.checkRemovedPodOwners(b.ctx, a, t, p.ownerRefs, b.req); err != nil {
				o, err := classify(err)
				b.fail(i, o, err)
				return
			}
		}
		p.ownerRefs = next
		p.finalizersOnly = false
	case abi.ActionAddFinalizer:
		if p.has[a.Finalizer] {
			b.set(i, Unchanged, "", nil)
			return
		}
		p.has[a.Finalizer] = true
		p.finalizers = append(p.finalizers, a.Finalizer)
	case abi.ActionRemoveFinalizer:
		if !p.has[a.Finalizer] {
			b.set(i, Unchanged, "", nil)
			return
		}
		delete(p.has, a.Finalizer)
		p.finalizers = slices.DeleteFunc(p.finalizers, func(f string) bool { return f == a.Finalizer })
	}
	p.indexes = append(p.indexes, i)
	b.queued = append(b.queued, queuedAction{index: i, obj: p})
}

// object returns t's pending lists, starting from st.
func (b *batch) object(t Target, st *objectState) *pendingObject {
	if b.objects == nil {
		b.objects = map[abi.ObjectRef]*pendingObject{}
	}
	ref := t.Ref()
	if p, ok := b.objects[ref]; ok {
		return p
	}
	p := &pendingObject{
		t: t, st: st,
		ownerRefs:      st.ownerRefs,
		finalizers:     slices.Clone(st.finalizers),
		has:            make(map[string]bool, len(st.finalizers)),
		finalizersOnly: true,
	}
	for _, f := range st.finalizers {
		p.has[f] = true
	}
	b.objects[ref] = p
	return p
}

// flush makes the batch's writes and records its events, in action order,
// and empties it.
func (b *batch) flush() {
	queued := b.queued
	b.queued, b.objects = nil, nil
	for _, q := range queued {
		if b.stopped {
			return
		}
		if q.obj == nil {
			o, w, err := b.e.execute(b.ctx, q.index, b.m, b.req, b.actions[q.index], b.states)
			b.set(q.index, o, w, err)
			continue
		}
		if q.obj.indexes[0] == q.index {
			b.write(q.obj)
		}
	}
}

// write makes p's one write and sets the outcome of each of its actions.
func (b *batch) write(p *pendingObject) {
	first := p.indexes[0]
	w, err := b.plan(p)
	if err != nil {
		b.setAll(p, Failed, "", err)
		return
	}
	if w == nil {
		// The actions undid each other (add, then remove).
		b.setAll(p, Unchanged, "", nil)
		return
	}
	if b.e.Shadow {
		b.commit(p)
		b.setAll(p, Shadow, w.desc, nil)
		return
	}
	err = b.e.call(b.ctx, b.actions[first], p.t, p.st, w)
	if err != nil && apierrors.IsConflict(err) && p.st.volumeDeleted && p.finalizersOnly {
		retried, done, rerr := b.finishVolumeDeletion(p, err)
		if done {
			b.setAll(p, Unchanged, "", nil)
			return
		}
		if retried != nil {
			w = retried
		}
		err = rerr
	}
	if err != nil {
		o, err := classify(err)
		b.setAll(p, o, w.desc, err)
		return
	}
	b.commit(p)
	if p.st.rv == "" {
		p.st.gone = fmt.Sprintf("has an unknown resourceVersion after action %d", first)
	}
	b.setAll(p, Executed, w.desc, nil)
}

// setAll sets the outcome of every action of p; the write is described on
// the first only, so that a batch of thousands is not logged thousands of
// times over.
func (b *batch) setAll(p *pendingObject, o Outcome, desc string, err error) {
	first := p.indexes[0]
	for _, i := range p.indexes {
		d := desc
		if i != first && desc != "" {
			d = fmt.Sprintf("coalesced into the write of action %d", first)
		}
		b.set(i, o, d, err)
	}
}

// plan returns the merge patch that takes p's object from its state to p's
// lists, or nil when they are the same.
func (b *batch) plan(p *pendingObject) (*write, error) {
	st := p.st
	meta := metaPatch{UID: p.t.UID, ResourceVersion: st.rv}
	if !sameOwnerReferences(st.ownerRefs, p.ownerRefs) {
		refs := p.ownerRefs
		if len(refs) == 0 {
			refs = nil // a JSON null removes the field
		}
		meta.OwnerReferences = &refs
	}
	if !slices.Equal(st.finalizers, p.finalizers) {
		fins := p.finalizers
		if len(fins) == 0 {
			fins = nil
		}
		meta.Finalizers = &fins
	}
	if meta.OwnerReferences == nil && meta.Finalizers == nil {
		return nil, nil
	}
	return mergePatch(meta, nil, nil, nil)
}

// commit records p's lists as its object's state.
func (b *batch) commit(p *pendingObject) {
	p.st.ownerRefs = p.ownerRefs
	p.st.finalizers = p.finalizers
}

// finishVolumeDeletion retries the finalizer write of p that conflicted
// after this Result deleted the object's backing volume. Other controllers
// write a volume at the moment it is released (the binder its status,
// pv-protection its own finalizer), so the write often races them; and
// once the driver has deleted the volume, keeping the finalizer protects
// nothing and would only make the next reconcile call DeleteVolume again.
// So p's finalizer actions are applied again to the object as the API
// server has it now, with that resourceVersion as precondition, as long as
// it is still the same object (same UID). done reports that nothing is left
// to do: the object is gone or already as the actions ask. err is the
// conflict that started it, returned if the object is no longer the same.
func (b *batch) finishVolumeDeletion(p *pendingObject, err error) (_ *write, done bool, _ error) {
	const attempts = 3
	var w *write
	for range attempts {
		cur, gerr := b.e.Cluster.Current(b.ctx, p.t.Kind, p.t.Namespace, p.t.Name)
		switch {
		case apierrors.IsNotFound(gerr):
			return w, true, nil
		case gerr != nil:
			return w, false, gerr
		case cur.UID != p.t.UID:
			return w, false, err
		}
		p.st.rv, p.st.finalizers = cur.ResourceVersion, cur.Finalizers
		p.finalizers = slices.Clone(cur.Finalizers)
		for _, i := range p.indexes {
			if a := b.actions[i]; a.Type == abi.ActionAddFinalizer {
				p.finalizers, _ = withFinalizer(p.finalizers, a.Finalizer)
			} else {
				p.finalizers, _ = withoutFinalizer(p.finalizers, a.Finalizer)
			}
		}
		next, perr := b.plan(p)
		if perr != nil {
			return w, false, perr
		}
		if next == nil {
			return w, true, nil
		}
		w = next
		if err = b.e.call(b.ctx, b.actions[p.indexes[0]], p.t, p.st, w); err == nil || !apierrors.IsConflict(err) {
			return w, false, err
		}
	}
	return w, false, err
}

// classify returns the outcome of a call that failed with err, and the
// error to report: a conflict, or an object gone, wraps ErrConflict.
func classify(err error) (Outcome, error) {
	switch {
	case errors.Is(err, ErrRefused):
		return Refused, err
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return Conflict, fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return Failed, err
}
