package controller

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The queue's storage is internal; this test drives it through client-go's
// real work queue, as the controller does.
func TestChangesBeforeResyncs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		steps  func(add func(key string, change bool))
		want   []string
		length int
	}{
		{"fifo among resyncs", func(add func(string, bool)) {
			add("r1", false)
			add("r2", false)
		}, []string{"r1", "r2"}, 2},
		{"a change overtakes a resync pass", func(add func(string, bool)) {
			add("r1", false)
			add("r2", false)
			add("c1", true)
		}, []string{"c1", "r1", "r2"}, 3},
		{"a change to a key queued by the resync moves it ahead, once", func(add func(string, bool)) {
			add("r1", false)
			add("r2", false)
			add("r3", false)
			add("r2", true)
			add("r2", true)
		}, []string{"r2", "r1", "r3"}, 3},
		{"a resync does not demote a change", func(add func(string, bool)) {
			add("c1", true)
			add("r1", false)
			add("c1", false)
		}, []string{"c1", "r1"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			order := newChangesFirst()
			q := newQueue("", order, nil)
			defer q.ShutDown()
			tc.steps(func(key string, change bool) {
				if change {
					order.mark(key)
				}
				q.Add(key)
			})
			require.Equal(t, tc.length, q.Len())
			var got []string
			for q.Len() > 0 {
				k, _ := q.Get()
				got = append(got, k)
				q.Done(k)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// A change to a key being reconciled queues it again, ahead of a resync,
// once the reconcile is done: client-go's queue re-adds it then.
func TestChangeDuringReconcile(t *testing.T) {
	order := newChangesFirst()
	q := newQueue("", order, nil)
	defer q.ShutDown()
	q.Add("k")
	k, _ := q.Get()
	q.Add("r1")
	order.mark("k")
	q.Add("k")
	q.Done(k)
	var got []string
	for q.Len() > 0 {
		k, _ := q.Get()
		got = append(got, k)
		q.Done(k)
	}
	require.Equal(t, []string{"k", "r1"}, got)
}

func TestSameVersionIsAResync(t *testing.T) {
	pod := func(rv string) *corev1.Pod { return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}} }
	for _, tc := range []struct {
		name string
		a, b any
		want bool
	}{
		{"resync", pod("7"), pod("7"), true},
		{"change", pod("7"), pod("8"), false},
		{"no version", pod(""), pod(""), false},
		{"not an object", "x", "x", false},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, sameVersion(tc.a, tc.b)) })
	}
}
