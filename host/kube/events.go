package kube

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/lru"

	"github.com/kubeplug/kubeplug/abi"
)

// DefaultEventWindow is how long the sink remembers an event it recorded.
const DefaultEventWindow = time.Hour

// maxRemembered bounds the sink's memory: the events it remembers, and the
// objects whose limit it tracks. Past it, the least recently used go: an
// event forgotten early may be recorded once more, an object forgotten gets
// a new burst, and a module that emits distinct events without end cannot
// grow the host's memory.
const maxRemembered = 8192

// The per-object limit on distinct events, client-go's spam filter's
// defaults: a burst of 25, then one every five minutes.
const (
	objectBurst = 25
	objectRate  = rate.Limit(1. / 300.)
)

// DefaultFlushTimeout bounds how long Shutdown waits for events to be sent.
const DefaultFlushTimeout = 5 * time.Second

// EventSink records Kubernetes Events (core/v1) on behalf of modules. Each
// module's events come from the component "kubeplug.dev/<module>".
//
// Reconciles are level-triggered, so a module that warns about a state warns
// on every reconcile of it, resyncs included. The sink records an event once
// and drops identical ones (same object, type, reason, message and module)
// for Window afterwards, so that a converged cluster costs no writes.
// Distinct events on one object are limited as client-go's spam filter
// limits them (a burst of 25, then one every five minutes); the sink
// applies that limit itself, so that it knows every event it hands on.
// Recording is asynchronous: client-go's broadcaster sends, aggregates and
// retries in the background, and Shutdown waits until what was handed on
// has been sent.
type EventSink struct {
	broadcaster record.EventBroadcaster
	window      time.Duration
	now         func() time.Time
	// flushTimeout bounds Shutdown's wait: DefaultFlushTimeout.
	flushTimeout time.Duration

	mu        sync.Mutex
	recorders map[string]record.EventRecorder
	seen      *lru.Cache // eventKey -> time.Time it was recorded
	limiters  *lru.Cache // objectKey -> *rate.Limiter
	// recorded counts the events handed to the broadcaster, settled those
	// the API server stored or rejected; wake is closed and replaced when
	// settled grows.
	recorded, settled int
	wake              chan struct{}
}

// objectKey is what the per-object limit counts by: the object and the
// module.
type objectKey struct {
	uid                   types.UID
	kind, namespace, name string
	by                    string
}

// eventKey is what identical events share: the object, the module, and
// what the event says.
type eventKey struct {
	objectKey
	eventType, reason, message string
}

// NewEventSink starts a broadcaster writing to client. window <= 0 takes
// DefaultEventWindow. Stop it with Shutdown.
func NewEventSink(ctx context.Context, client kubernetes.Interface, window time.Duration) *EventSink {
	return newEventSink(ctx, client, window, retrySleep)
}

// retrySleep is how long client-go's broadcaster waits before it sends an
// event again after a transport error (its default; the first wait is a
// random part of it).
const retrySleep = 10 * time.Second

// maxTries is how many times client-go's broadcaster tries to send one
// event before it drops it (its maxTriesPerEvent, not exported).
const maxTries = 12

func newEventSink(ctx context.Context, client kubernetes.Interface, window, sleep time.Duration) *EventSink {
	if window <= 0 {
		window = DefaultEventWindow
	}
	// The sink limits events per object itself (see limit); client-go's
	// spam filter, whose drops nobody could count, never triggers.
	b := record.NewBroadcaster(record.WithContext(ctx), record.WithSleepDuration(sleep), record.WithCorrelatorOptions(record.CorrelatorOptions{
		BurstSize: math.MaxInt32, QPS: math.MaxFloat32,
	}))
	s := &EventSink{
		broadcaster:  b,
		window:       window,
		now:          time.Now,
		flushTimeout: DefaultFlushTimeout,
		recorders:    map[string]record.EventRecorder{},
		seen:         lru.New(maxRemembered),
		limiters:     lru.New(maxRemembered),
		wake:         make(chan struct{}),
	}
	b.StartRecordingToSink(&settlingSink{EventSink: &typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")}, settle: s.settle, failed: map[string]int{}})
	return s
}

// Shutdown waits up to DefaultFlushTimeout until every event recorded so
// far has been stored or rejected by the API server, then stops the
// broadcaster. client-go's broadcaster alone drops what it still holds when
// it stops: the event of a reconcile that finished during a drain would be
// lost.
func (s *EventSink) Shutdown() {
	s.flush(s.flushTimeout)
	s.broadcaster.Shutdown()
}

// flush waits until every event handed to the broadcaster has settled, or
// until timeout; it reports whether they all did.
func (s *EventSink) flush(timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		done, wake := s.settled >= s.recorded, s.wake
		s.mu.Unlock()
		if done {
			return true
		}
		select {
		case <-wake:
		case <-deadline.C:
			return false
		}
	}
}

// Pending is how many events were handed to client-go's broadcaster and
// are not yet stored, rejected, or given up on after its tries: events an
// unreachable API server holds back, which it sends, one after the other,
// once the server answers again. An event the broadcaster drops unsent
// because its queue is full stays counted.
func (s *EventSink) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recorded - s.settled
}

func (s *EventSink) settle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settled++
	close(s.wake)
	s.wake = make(chan struct{})
}

// settlingSink calls settle once for each event the broadcaster is done
// with: stored, rejected by the API server (the broadcaster does not retry
// those), or dropped after maxTries transport errors. A transport error
// before that is retried, and a patch of an event that no longer exists is
// followed by a create: neither settles. The broadcaster sends one event
// at a time, so the failures it counts, by event, are each one try.
type settlingSink struct {
	record.EventSink
	settle func()

	mu     sync.Mutex
	failed map[string]int // transport errors so far, by event namespace/name
}

func (s *settlingSink) Create(e *corev1.Event) (*corev1.Event, error) {
	out, err := s.EventSink.Create(e)
	s.done(e, err, false)
	return out, err
}

func (s *settlingSink) Update(e *corev1.Event) (*corev1.Event, error) {
	out, err := s.EventSink.Update(e)
	s.done(e, err, false)
	return out, err
}

func (s *settlingSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	out, err := s.EventSink.Patch(e, data)
	s.done(e, err, true)
	return out, err
}

func (s *settlingSink) done(e *corev1.Event, err error, patch bool) {
	var status *apierrors.StatusError
	var construction *rest.RequestConstructionError
	key := e.Namespace + "/" + e.Name
	switch {
	case err == nil:
	case patch && apierrors.IsNotFound(err):
		return
	case errors.As(err, &status), errors.As(err, &construction):
	default:
		s.mu.Lock()
		s.failed[key]++
		last := s.failed[key] >= maxTries
		if last {
			delete(s.failed, key)
		}
		s.mu.Unlock()
		if last {
			s.settle()
		}
		return
	}
	s.mu.Lock()
	delete(s.failed, key)
	s.mu.Unlock()
	s.settle()
}

// Record records an event on target for module, unless the same event was
// recorded within the window.
func (s *EventSink) Record(target abi.ObjectRef, eventType, reason, message, module string) error {
	if eventType != corev1.EventTypeNormal && eventType != corev1.EventTypeWarning {
		return fmt.Errorf("event type %q on %s %s/%s: want Normal or Warning", eventType, target.Kind, target.Namespace, target.Name)
	}
	info, ok := abi.LookupKind(target.Kind)
	if !ok {
		return fmt.Errorf("event on unknown kind %q", target.Kind)
	}
	obj := objectKey{types.UID(target.UID), target.Kind, target.Namespace, target.Name, module}
	if !s.admit(eventKey{obj, eventType, reason, message}) {
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

// admit reports whether an event goes on to the broadcaster: it was not
// recorded within the window, and its object's limit allows it. An admitted
// event counts as recorded, for Shutdown to wait for.
func (s *EventSink) admit(k eventKey) bool {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.fresh(k, now) || !s.allow(k.objectKey, now) {
		return false
	}
	s.recorded++
	return true
}

// allow takes a token of k's per-object limit. The caller holds mu.
func (s *EventSink) allow(k objectKey, now time.Time) bool {
	var l *rate.Limiter
	if v, ok := s.limiters.Get(k); ok {
		l = v.(*rate.Limiter)
	} else {
		l = rate.NewLimiter(objectRate, objectBurst)
		s.limiters.Add(k, l)
	}
	return l.AllowN(now, 1)
}

// fresh reports whether k was not recorded within the window, and marks it
// recorded now. The caller holds mu.
func (s *EventSink) fresh(k eventKey, now time.Time) bool {
	if v, ok := s.seen.Get(k); ok && now.Sub(v.(time.Time)) < s.window {
		return false
	}
	s.seen.Add(k, now)
	return true
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
