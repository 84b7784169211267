package kube

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kubeplug/kubeplug/abi"
)

// DefaultEventWindow is how long the sink remembers an event it recorded.
const DefaultEventWindow = time.Hour

// maxRemembered bounds the sink's memory; past it, the oldest entries go.
const maxRemembered = 8192

// EventSink records Kubernetes Events (core/v1) on behalf of modules. Each
// module's events come from the component "kubeplug.dev/<module>".
//
// Reconciles are level-triggered, so a module that warns about a state warns
// on every reconcile of it, resyncs included. The sink records an event once
// and drops identical ones (same object, type, reason, message and module)
// for Window afterwards, so that a converged cluster costs no writes.
// Recording is asynchronous: client-go's broadcaster sends, aggregates and
// retries in the background.
type EventSink struct {
	broadcaster record.EventBroadcaster
	window      time.Duration
	now         func() time.Time

	mu        sync.Mutex
	recorders map[string]record.EventRecorder
	seen      map[eventKey]time.Time
}

type eventKey struct {
	uid                            types.UID
	kind, namespace, name          string
	eventType, reason, message, by string
}

// NewEventSink starts a broadcaster writing to client. window <= 0 takes
// DefaultEventWindow. Stop it with Shutdown.
func NewEventSink(ctx context.Context, client kubernetes.Interface, window time.Duration) *EventSink {
	if window <= 0 {
		window = DefaultEventWindow
	}
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return &EventSink{
		broadcaster: b,
		window:      window,
		now:         time.Now,
		recorders:   map[string]record.EventRecorder{},
		seen:        map[eventKey]time.Time{},
	}
}

// Shutdown stops the broadcaster after it has sent what it holds.
func (s *EventSink) Shutdown() { s.broadcaster.Shutdown() }

// Record records an event on target for module, unless the same event was
// recorded within the window.
func (s *EventSink) Record(target abi.ObjectRef, eventType, reason, message, module string) error {
	if eventType != corev1.EventTypeNormal && eventType != corev1.EventTypeWarning {
		return fmt.Errorf("event type %q on %s %s/%s: want Normal or Warning", eventType, target.Kind, target.Namespace, target.Name)
	}
	info, ok := abi.Kinds[target.Kind]
	if !ok {
		return fmt.Errorf("event on unknown kind %q", target.Kind)
	}
	if !s.fresh(eventKey{types.UID(target.UID), target.Kind, target.Namespace, target.Name, eventType, reason, message, module}) {
		return nil
	}
	ref := &corev1.ObjectReference{
		APIVersion: info.APIVersion,
		Kind:       target.Kind,
		Namespace:  target.Namespace,
		Name:       target.Name,
		UID:        types.UID(target.UID),
	}
	s.recorder(module).Event(ref, eventType, reason, message)
	return nil
}

// fresh reports whether k was not recorded within the window, and marks it
// recorded now.
func (s *EventSink) fresh(k eventKey) bool {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if at, ok := s.seen[k]; ok && now.Sub(at) < s.window {
		return false
	}
	if len(s.seen) >= maxRemembered {
		s.forget(now)
	}
	s.seen[k] = now
	return true
}

// forget drops expired entries, and if none had expired, the oldest half.
func (s *EventSink) forget(now time.Time) {
	var oldest []time.Time
	for k, at := range s.seen {
		if now.Sub(at) >= s.window {
			delete(s.seen, k)
		}
	}
	if len(s.seen) < maxRemembered {
		return
	}
	for _, at := range s.seen {
		oldest = append(oldest, at)
	}
	cut := meanTime(oldest)
	for k, at := range s.seen {
		if !at.After(cut) {
			delete(s.seen, k)
		}
	}
}

// meanTime returns the mean of ts. Cutting at the mean rather than the
// median needs no sort and still drops a good share of old entries; this runs
// at most once per maxRemembered events.
func meanTime(ts []time.Time) time.Time {
	var sum int64
	for _, t := range ts {
		sum += t.UnixNano() / int64(len(ts))
	}
	return time.Unix(0, sum)
}

func (s *EventSink) recorder(module string) record.EventRecorder {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recorders[module]
	if !ok {
		r = s.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubeplug.dev/" + module})
		s.recorders[module] = r
	}
	return r
}
