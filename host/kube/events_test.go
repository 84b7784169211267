package kube

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeplug/kubeplug/abi"
)

func claim(i int) abi.ObjectRef {
	return abi.ObjectRef{Kind: abi.KindPersistentVolumeClaim, Namespace: "default", Name: fmt.Sprintf("data-web-%d", i), UID: fmt.Sprintf("uid-%d", i)}
}

func events(t *testing.T, c *fake.Clientset) []corev1.Event {
	t.Helper()
	list, err := c.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	return list.Items
}

// TestShutdownSendsWhatWasRecorded: events recorded just before Shutdown
// reach the API server before Shutdown returns. client-go's broadcaster
// alone drops what it still holds when it stops.
func TestShutdownSendsWhatWasRecorded(t *testing.T) {
	for round := range 20 {
		c := fake.NewClientset()
		s := NewEventSink(context.Background(), c, 0)
		for i := range 5 {
			require.NoError(t, s.Record(claim(i), corev1.EventTypeNormal, "FinalizerAdded", "added a finalizer", "protect"))
		}
		s.Shutdown()
		require.Len(t, events(t, c), 5, "round %d", round)
	}
}

// TestPerObjectLimit: distinct events on one object are limited to a burst
// of 25 as client-go's spam filter limits them; another object has its own
// budget, and identical events are dropped before they count.
func TestPerObjectLimit(t *testing.T) {
	c := fake.NewClientset()
	s := NewEventSink(context.Background(), c, 0)
	for i := range 30 {
		require.NoError(t, s.Record(claim(0), corev1.EventTypeWarning, "Conflict", fmt.Sprintf("message %d", i), "m"))
		require.NoError(t, s.Record(claim(0), corev1.EventTypeWarning, "Conflict", fmt.Sprintf("message %d", i), "m"))
	}
	require.NoError(t, s.Record(claim(1), corev1.EventTypeWarning, "Conflict", "message 0", "m"))
	require.NoError(t, s.Record(claim(0), corev1.EventTypeWarning, "Conflict", "from another module", "other"))
	s.Shutdown()

	per := map[string]int{}
	for _, e := range events(t, c) {
		per[e.InvolvedObject.Name+" "+e.Source.Component] += int(e.Count)
	}
	require.Equal(t, map[string]int{
		"data-web-0 kubeplug.dev/m":     objectBurst,
		"data-web-1 kubeplug.dev/m":     1,
		"data-web-0 kubeplug.dev/other": 1,
	}, per)
}

// TestShutdownGivesUpOnAnUnreachableServer: an event the API server never
// answers holds Shutdown for the flush timeout only.
func TestShutdownGivesUpOnAnUnreachableServer(t *testing.T) {
	c := fake.NewClientset()
	c.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	s := NewEventSink(context.Background(), c, 0)
	s.flushTimeout = 50 * time.Millisecond
	require.NoError(t, s.Record(claim(0), corev1.EventTypeNormal, "FinalizerAdded", "added a finalizer", "protect"))
	require.False(t, s.flush(s.flushTimeout), "an event that was never written counted as settled")
	s.Shutdown()
}

// TestRejectedEventsSettle: an event the API server rejects is not retried,
// and Shutdown does not wait for it.
func TestRejectedEventsSettle(t *testing.T) {
	c := fake.NewClientset()
	c.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewBadRequest("event rejected")
	})
	s := NewEventSink(context.Background(), c, 0)
	require.NoError(t, s.Record(claim(0), corev1.EventTypeNormal, "FinalizerAdded", "added a finalizer", "protect"))
	require.True(t, s.flush(time.Minute), "a rejected event did not settle")
	s.Shutdown()
}

// TestRememberedEventsAreBounded: the sink remembers at most maxRemembered
// events, the least recently used going first, so a module that emits
// distinct events without end cannot grow the host's memory; the cost is
// that a forgotten event may be recorded once more.
func TestRememberedEventsAreBounded(t *testing.T) {
	s := NewEventSink(context.Background(), fake.NewClientset(), 0)
	defer s.Shutdown()
	k := func(i int) eventKey {
		return eventKey{objectKey{types.UID(fmt.Sprint(i)), abi.KindPod, "default", fmt.Sprint(i), "m"}, corev1.EventTypeWarning, "R", "msg"}
	}
	now := time.Now()
	for i := range maxRemembered + 1 {
		require.True(t, s.fresh(k(i), now), "event %d is new", i)
		require.True(t, s.allow(k(i).objectKey, now))
	}
	require.Equal(t, maxRemembered, s.seen.Len())
	require.Equal(t, maxRemembered, s.limiters.Len())
	require.False(t, s.fresh(k(maxRemembered), now), "the newest is remembered")
	require.True(t, s.fresh(k(0), now), "the oldest was forgotten")
}

// TestEventOnEachKind: an event's involvedObject names its target as the API
// server serves it, the VolumeClaimUpdate custom resource included
// (kubeplug.dev/v1alpha1, namespaced), so that `kubectl describe vcu` and a
// field selector on involvedObject find it; the event lives in the target's
// namespace, or in default for a cluster-scoped target.
func TestEventOnEachKind(t *testing.T) {
	targets := []struct {
		ref        abi.ObjectRef
		apiVersion string
		namespace  string
	}{
		{abi.ObjectRef{Kind: abi.KindVolumeClaimUpdate, Namespace: "shop", Name: "data", UID: "vcu-uid"}, "kubeplug.dev/v1alpha1", "shop"},
		{abi.ObjectRef{Kind: abi.KindStatefulSet, Namespace: "shop", Name: "web", UID: "set-uid"}, "apps/v1", "shop"},
		{abi.ObjectRef{Kind: abi.KindPersistentVolumeClaim, Namespace: "shop", Name: "data-web-0", UID: "claim-uid"}, "v1", "shop"},
		{abi.ObjectRef{Kind: abi.KindPersistentVolume, Name: "pv-1", UID: "pv-uid"}, "v1", "default"},
	}
	c := fake.NewClientset()
	s := NewEventSink(context.Background(), c, 0)
	for _, tt := range targets {
		require.NoError(t, s.Record(tt.ref, corev1.EventTypeWarning, "StorageClassDoesNotAllowExpansion", "class fast", "templateupdate"))
	}
	s.Shutdown()
	for _, tt := range targets {
		list, err := c.CoreV1().Events(tt.namespace).List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		var found *corev1.Event
		for i, e := range list.Items {
			if e.InvolvedObject.Kind == tt.ref.Kind {
				found = &list.Items[i]
			}
		}
		require.NotNil(t, found, "no event on the %s in namespace %q", tt.ref.Kind, tt.namespace)
		require.Equal(t, corev1.ObjectReference{
			APIVersion: tt.apiVersion, Kind: tt.ref.Kind, Namespace: tt.ref.Namespace, Name: tt.ref.Name, UID: types.UID(tt.ref.UID),
		}, found.InvolvedObject)
		require.Equal(t, "StorageClassDoesNotAllowExpansion", found.Reason)
		require.Equal(t, corev1.EventTypeWarning, found.Type)
		require.Equal(t, "kubeplug.dev/templateupdate", found.Source.Component)
	}
}

// TestPending: an event counts as pending from its recording until the API
// server stores it; one that meets only transport errors stops counting
// once client-go's broadcaster has made its maxTries tries and dropped it.
func TestPending(t *testing.T) {
	c := fake.NewClientset()
	var refused atomic.Int32
	release := make(chan struct{})
	c.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if e := a.(k8stesting.CreateAction).GetObject().(*corev1.Event); e.InvolvedObject.Name == claim(1).Name {
			<-release
			refused.Add(1)
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	s := newEventSink(context.Background(), c, 0, time.Millisecond)
	defer s.Shutdown()
	require.Equal(t, 0, s.Pending())
	require.NoError(t, s.Record(claim(1), corev1.EventTypeNormal, "FinalizerAdded", "added a finalizer", "protect"))
	require.NoError(t, s.Record(claim(0), corev1.EventTypeNormal, "FinalizerAdded", "added a finalizer", "protect"))
	require.Equal(t, 2, s.Pending(), "recorded events counted as settled before the API server answered")
	close(release)
	require.True(t, s.flush(time.Minute), "an event the broadcaster gave up on stayed pending")
	require.Equal(t, 0, s.Pending())
	require.Equal(t, int32(maxTries), refused.Load(), "the sink settled before the broadcaster's last try")
	require.Len(t, events(t, c), 1)
}
