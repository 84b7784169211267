package policy

import (
	"slices"
	"strings"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// TestMaxUnavailable reads rollingUpdate.maxUnavailable as
// kube-controller-manager 1.37's getStatefulSetMaxUnavailable does.
func TestMaxUnavailable(t *testing.T) {
	for _, tc := range []struct {
		value    string
		replicas int
		want     int
	}{
		{"", 4, 1},
		{"2", 4, 2},
		{"50%", 4, 2},
		{"50%", 3, 1}, // rounded down
		{"10%", 4, 1}, // rounded down to 0, and at least 1
		{"0", 4, 1},
		{"100%", 5, 5},
		{"many", 4, 1}, // unreadable: the most careful
		{"-2", 4, 1},
	} {
		t.Run(tc.value+"/"+itoa(int32(tc.replicas)), func(t *testing.T) {
			set := sdktest.StatefulSet("web", int32(tc.replicas))
			if tc.value != "" {
				set.Spec.UpdateStrategy.RollingUpdate = &abi.RollingUpdateStatefulSetStrategy{MaxUnavailable: tc.value}
			}
			p := &plan{set: set, replicas: tc.replicas}
			if got := p.maxUnavailable(); got != tc.want {
				t.Errorf("maxUnavailable %q of %d replicas = %d, want %d", tc.value, tc.replicas, got, tc.want)
			}
		})
	}
}

// TestMaxUnavailableStory walks a whole in-place update of 5 replicas with
// maxUnavailable 2: the claims are grown two replicas at a time, highest
// first, each pair once the one before is compatible and available.
func TestMaxUnavailableStory(t *testing.T) {
	h := sdktest.New(t)
	for _, policy := range []string{"OrderedReady", "Parallel"} {
		t.Run(policy, func(t *testing.T) {
			c := newCluster(5, "InPlace", "Async", "2Gi")
			c.set.Spec.PodManagementPolicy = policy
			c.set.Spec.UpdateStrategy.RollingUpdate = &abi.RollingUpdateStatefulSetStrategy{MaxUnavailable: "2"}
			var rounds [][]string
			for range 10 {
				o := c.reconcile(t, h)
				if len(o.actions) == 0 {
					break
				}
				if got := o.applied(); len(got) > 0 {
					rounds = append(rounds, got)
				}
				c.resize()
			}
			want := [][]string{{"data-web-4", "data-web-3"}, {"data-web-2", "data-web-1"}, {"data-web-0"}}
			if !slices.EqualFunc(rounds, want, slices.Equal) {
				t.Errorf("applied by round %v, want %v", rounds, want)
			}
			c.wantCondition(t, ConditionProgressing, "False", ReasonComplete)
		})
	}
}

// TestUnavailableReplicaStopsTheWalk: under OrderedReady no replica's claims
// are updated while any replica, below the walk or not, is unavailable, as
// kube-controller-manager re-creates no pod then; the walk goes on once it
// is available again.
func TestUnavailableReplicaStopsTheWalk(t *testing.T) {
	h := sdktest.New(t)
	for _, sync := range []string{"Async", "LockStep"} {
		t.Run(sync, func(t *testing.T) {
			c := newCluster(3, "InPlace", sync, "2Gi")
			if got := c.reconcile(t, h).applied(); !slices.Equal(got, []string{"data-web-2"}) {
				t.Fatalf("applied %v, want data-web-2", got)
			}
			c.resize()
			c.roll()
			c.pod(0).Status.Conditions = []abi.Condition{{Type: "Ready", Status: "False"}}
			if got := c.reconcile(t, h).applied(); len(got) != 0 {
				t.Fatalf("applied %v while web-0 is not Ready", got)
			}
			c.wantCondition(t, ConditionProgressing, "True", ReasonWaitingForReplicaReady)
			if msg := condition(c.vcu.Status, ConditionProgressing).Message; !strings.Contains(msg, sdk.PodName("web", 0)) {
				t.Errorf("Progressing message %q does not name web-0", msg)
			}
			c.pod(0).Status.Conditions = []abi.Condition{{Type: "Ready", Status: "True"}}
			if got := c.reconcile(t, h).applied(); !slices.Equal(got, []string{"data-web-1"}) {
				t.Fatalf("applied %v once web-0 is Ready again, want data-web-1", got)
			}
		})
	}
}
