package controller

import (
	"errors"
	"fmt"
	"log/slog"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeplug/kubeplug/host/snapshot"
)

// Informers is what Wire needs of the host's cache: the informer of each
// watched kind (nil when the cluster does not serve it) and a Lister.
type Informers interface {
	Informer(kind string) cache.SharedIndexInformer
	snapshot.Lister
}

// Wire registers the event handlers of every controller of ctrls on the
// informers; see WireOne.
func Wire(inf Informers, ctrls []*Controller, log *slog.Logger) error {
	for _, c := range ctrls {
		if _, err := WireOne(inf, c, log); err != nil {
			return err
		}
	}
	return nil
}

// Wiring is the event handlers WireOne registered for one controller.
type Wiring struct {
	regs []registration
}

type registration struct {
	informer cache.SharedIndexInformer
	reg      cache.ResourceEventHandlerRegistration
}

// Unwire removes the handlers: the controller is queued nothing more.
func (w *Wiring) Unwire() error {
	var errs []error
	for _, r := range w.regs {
		if err := r.informer.RemoveEventHandler(r.reg); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// WireOne registers event handlers on the informers that queue on c, for
// every added, changed or deleted object (resyncs included, behind the
// changes), the keys of the subjects whose input holds it: an object of
// the subject's kind (abi's descriptor) queues itself, one of a related kind
// what snapshot.RelatedKeys maps it to. Today:
//   - a StatefulSet: itself;
//   - a Pod: the StatefulSet that controls it;
//   - a PersistentVolumeClaim: the StatefulSets it belongs to by name, and
//     the PersistentVolume it is bound to;
//   - a PersistentVolume: itself;
//   - a VolumeClaimUpdate: the StatefulSet it names.
//
// StorageClass changes queue nothing: a class's fields that modules read
// (provisioner, reclaim policy, parameters) are immutable in the API, and
// resync covers the rest.
//
// Each controller has handlers of its own, so that one added while the
// host runs is told of every object already in the caches (an informer
// replays them to a new handler as adds), and one removed is told of
// nothing more, without touching the others'.
func WireOne(inf Informers, c *Controller, log *slog.Logger) (*Wiring, error) {
	subject := c.Subject()
	if subject.Kind() == "" {
		return &Wiring{}, nil
	}
	// A resync's keys wait behind every change's (see changesFirst).
	enqueue := func(resync bool, keys ...string) {
		for _, k := range keys {
			switch {
			case k == "":
			case resync:
				c.EnqueueResync(k)
			default:
				c.Enqueue(k)
			}
		}
	}
	handlers := map[string]func(obj any, resync bool){
		// The subject's own kind queues its key: "namespace/name", or
		// "name" for a cluster-scoped kind.
		subject.Kind(): func(obj any, resync bool) {
			if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
				enqueue(resync, key)
			}
		},
	}
	for kind, keys := range subject.RelatedKeys() {
		handlers[kind] = func(obj any, resync bool) {
			ks, err := keys(obj, inf)
			if err != nil {
				key, _ := cache.MetaNamespaceKeyFunc(obj)
				log.Warn("map "+kind+" to the subjects "+subject.Name(), "object", key, "err", err)
			}
			enqueue(resync, ks...)
		}
	}
	w := &Wiring{}
	for kind, h := range handlers {
		i := inf.Informer(kind)
		if i == nil {
			continue
		}
		reg, err := i.AddEventHandler(eventHandler(h))
		if err != nil {
			_ = w.Unwire()
			return nil, fmt.Errorf("watch %s: %w", kind, err)
		}
		w.regs = append(w.regs, registration{informer: i, reg: reg})
	}
	return w, nil
}

// EnqueueAll queues every subject of c the caches hold: after a swap, so
// that the new module decides on each of them.
func EnqueueAll(inf Informers, c *Controller) {
	i := inf.Informer(c.Subject().Kind())
	if i == nil {
		return
	}
	for _, k := range i.GetStore().ListKeys() {
		c.Enqueue(k)
	}
}

// eventHandler calls h with the object of every add, delete and both sides
// of every update, unwrapping deletions the informer only learned of late.
// An update whose two sides have the same resourceVersion is a resync.
func eventHandler(h func(obj any, resync bool)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { h(obj, false) },
		UpdateFunc: func(old, obj any) {
			resync := sameVersion(old, obj)
			h(old, resync)
			h(obj, resync)
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			h(obj, false)
		},
	}
}

func sameVersion(a, b any) bool {
	ma, errA := meta.Accessor(a)
	mb, errB := meta.Accessor(b)
	return errA == nil && errB == nil && ma.GetResourceVersion() != "" && ma.GetResourceVersion() == mb.GetResourceVersion()
}
