package controller

import (
	"fmt"
	"log/slog"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// Informers is what Wire needs of the host's cache: the informer of each
// watched kind (nil when the cluster does not serve it) and a Lister.
type Informers interface {
	Informer(kind string) cache.SharedIndexInformer
	snapshot.Lister
}

// Wire registers event handlers on the informers that queue, for every
// added, changed or deleted object (resyncs included), the keys of the
// subjects whose input holds it:
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
func Wire(inf Informers, ctrls []*Controller, log *slog.Logger) error {
	var sets, volumes []*Controller
	for _, c := range ctrls {
		switch c.Subject() {
		case abi.SubjectStatefulSet:
			sets = append(sets, c)
		case abi.SubjectPersistentVolume:
			volumes = append(volumes, c)
		}
	}
	enqueue := func(cs []*Controller, keys ...string) {
		for _, k := range keys {
			if k == "" {
				continue
			}
			for _, c := range cs {
				c.Enqueue(k)
			}
		}
	}
	handlers := map[string]func(obj any){
		abi.KindStatefulSet: func(obj any) {
			if s, ok := obj.(*appsv1.StatefulSet); ok {
				enqueue(sets, s.Namespace+"/"+s.Name)
			}
		},
		abi.KindPod: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				enqueue(sets, snapshot.SetKeysForPod(p)...)
			}
		},
		abi.KindPersistentVolumeClaim: func(obj any) {
			c, ok := obj.(*corev1.PersistentVolumeClaim)
			if !ok {
				return
			}
			if len(sets) > 0 {
				keys, err := snapshot.SetKeysForClaim(c, inf)
				if err != nil {
					log.Warn("map claim to statefulsets", "claim", c.Namespace+"/"+c.Name, "err", err)
				}
				enqueue(sets, keys...)
			}
			enqueue(volumes, snapshot.VolumeKeyForClaim(c))
		},
		abi.KindPersistentVolume: func(obj any) {
			if v, ok := obj.(*corev1.PersistentVolume); ok {
				enqueue(volumes, v.Name)
			}
		},
		abi.KindVolumeClaimUpdate: func(obj any) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				enqueue(sets, snapshot.SetKeyForClaimUpdate(u))
			}
		},
	}
	for kind, h := range handlers {
		i := inf.Informer(kind)
		if i == nil {
			continue
		}
		if _, err := i.AddEventHandler(eventHandler(h)); err != nil {
			return fmt.Errorf("watch %s: %w", kind, err)
		}
	}
	return nil
}

// eventHandler calls h with the object of every add, delete and both sides
// of every update, unwrapping deletions the informer only learned of late.
func eventHandler(h func(any)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { h(obj) },
		UpdateFunc: func(old, obj any) {
			h(old)
			h(obj)
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			h(obj)
		},
	}
}
