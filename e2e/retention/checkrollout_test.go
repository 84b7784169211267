package retention

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// TestCheckRollout feeds checkRollout the changes of made-up rolling
// updates: the one kube-controller-manager makes with OrderedReady, and
// ways of getting it wrong.
func TestCheckRollout(t *testing.T) {
	const r1, r2 = "web-1111", "web-2222"
	now := metav1.Now()
	pod := func(ord int32, uid, rev string, ready, terminating bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: setName + "-" + string(rune('0'+ord)), UID: types.UID(uid),
			Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: rev},
		}}
		p.Status.Phase = corev1.PodPending
		if ready {
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		if terminating {
			p.DeletionTimestamp = &now
		}
		return p
	}
	ev := func(typ watch.EventType, p *corev1.Pod) watch.Event { return watch.Event{Type: typ, Object: p} }
	// replace is what replacing one ordinal's pod, with a node, looks like.
	replace := func(ord int32, oldUID, newUID string) []watch.Event {
		return []watch.Event{
			ev(watch.Modified, pod(ord, oldUID, r1, true, true)),
			ev(watch.Deleted, pod(ord, oldUID, r1, true, true)),
			ev(watch.Added, pod(ord, newUID, r2, false, false)),
			ev(watch.Modified, pod(ord, newUID, r2, true, false)),
		}
	}
	initial := []corev1.Pod{*pod(0, "a0", r1, true, false), *pod(1, "a1", r1, true, false)}
	statuses := []appsv1.StatefulSetStatus{
		{CurrentRevision: r1, UpdateRevision: r1, UpdatedReplicas: 2},
		{CurrentRevision: r1, UpdateRevision: r2, UpdatedReplicas: 1},
		{CurrentRevision: r2, UpdateRevision: r2, UpdatedReplicas: 2},
	}
	for _, tc := range []struct {
		name     string
		events   []watch.Event
		statuses []appsv1.StatefulSetStatus
		want     []string // substrings of the problems, in order; none: no problem
	}{
		{
			name:     "one at a time, highest first",
			events:   append(replace(1, "a1", "b1"), replace(0, "a0", "b0")...),
			statuses: statuses,
		},
		{
			name:     "lowest first",
			events:   append(replace(0, "a0", "b0"), replace(1, "a1", "b1")...),
			statuses: statuses,
			want:     []string{"web-0 at revision web-1111 went before", "order of ordinals [0 1]"},
		},
		{
			name: "both at once",
			events: []watch.Event{
				ev(watch.Modified, pod(1, "a1", r1, true, true)),
				ev(watch.Modified, pod(0, "a0", r1, true, true)),
				ev(watch.Deleted, pod(1, "a1", r1, true, true)),
				ev(watch.Deleted, pod(0, "a0", r1, true, true)),
				ev(watch.Added, pod(0, "b0", r2, true, false)),
				ev(watch.Added, pod(1, "b1", r2, true, false)),
			},
			statuses: statuses[:1:1],
			want: []string{
				"never showed one pod updated of two",
				"went before", "[web-0 web-1] unavailable at once",
				"unavailable at once", "unavailable at once",
			},
		},
		{
			name: "deleted at once, no node",
			events: []watch.Event{
				ev(watch.Deleted, pod(1, "a1", r1, true, false)),
				ev(watch.Added, pod(1, "b1", r2, true, false)),
				ev(watch.Deleted, pod(0, "a0", r1, true, false)),
				ev(watch.Added, pod(0, "b0", r2, true, false)),
			},
			statuses: statuses,
			want:     []string{"web-1 (uid a1) deleted without terminating", "web-0 (uid a0) deleted without terminating"},
		},
		{
			name:     "a pod replaced twice",
			events:   append(append(replace(1, "a1", "b1"), replace(0, "a0", "b0")...), ev(watch.Added, pod(1, "c1", r2, false, false))),
			statuses: statuses,
			want:     []string{"2 pods web-1 created"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkRollout(r1, r2, initial, tc.events, tc.statuses)
			if len(got) != len(tc.want) {
				t.Fatalf("problems:\n%s\nwant %d: %q", strings.Join(got, "\n"), len(tc.want), tc.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Errorf("problem %d: %q, want it to say %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}
