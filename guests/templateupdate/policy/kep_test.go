package policy

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// The tests below each quote the KEP-4650 sentence they hold the module to.

// TestRecoverFailedExpansion: "Do not perform the update that will be
// rejected by API server, such as decreasing the storage size below its
// current status. Note that decrease the size can help recover from a failed
// expansion". A request kubeplug set is lowered to the template's while it
// stays strictly above status.capacity; a request set by hand never is.
func TestRecoverFailedExpansion(t *testing.T) {
	h := sdktest.New(t)
	// failedAt10 is a 1Gi claim data-web-2 whose expansion to 10Gi (the
	// template's, applied by kubeplug) failed.
	failedAt10 := func(sync string) *cluster {
		c := newCluster(3, "InPlace", sync, "10Gi")
		if got := c.reconcile(t, h).applied(); !slices.Equal(got, []string{"data-web-2"}) {
			t.Fatalf("applied %v, want data-web-2", got)
		}
		c.failExpansion("data-web-2")
		c.reconcile(t, h)
		c.wantCondition(t, ConditionBlocked, "True", ReasonClaimUpdateFailed)
		c.steady(t, h)
		return c
	}
	t.Run("lowering the template recovers", func(t *testing.T) {
		for _, sync := range []string{"Async", "LockStep"} {
			t.Run(sync, func(t *testing.T) {
				c := failedAt10(sync)
				c.template().Spec.Resources.Requests["storage"] = "2Gi"
				c.vcu.Metadata.Generation = 2
				o := c.reconcile(t, h)
				if len(o.applies) != 1 || o.applies[0].Target.Name != "data-web-2" || o.applies[0].Claim.Resources.Requests["storage"] != "2Gi" {
					t.Fatalf("actions %s, want data-web-2 lowered to 2Gi", describe(o.actions))
				}
				if msg := o.events[len(o.events)-1].Message; !strings.Contains(msg, "storage 10Gi to 2Gi") {
					t.Errorf("ClaimUpdating says %q", msg)
				}
				c.wantCondition(t, ConditionBlocked, "False", ReasonNotBlocked)
				c.wantCondition(t, ConditionProgressing, "True", ReasonClaimsUpdating)
				// The resizer retries at the lower size and succeeds; the
				// rollout goes on.
				c.resize()
				c.roll()
				if got := c.reconcile(t, h).applied(); !slices.Equal(got, []string{"data-web-1"}) {
					t.Fatalf("applied %v after the recovery, want data-web-1", got)
				}
			})
		}
	})
	t.Run("never to the capacity", func(t *testing.T) {
		c := failedAt10("Async")
		c.template().Spec.Resources.Requests["storage"] = "1Gi"
		c.vcu.Metadata.Generation = 2
		o := c.reconcile(t, h)
		for _, a := range o.applies {
			if a.Target.Name == "data-web-2" {
				t.Fatalf("applied %+v to data-web-2: the API server refuses a request at its capacity", a.Claim)
			}
		}
		// 1Gi of capacity is compatible with a 1Gi template.
		c.wantCondition(t, ConditionProgressing, "False", ReasonComplete)
	})
	t.Run("never below a request set by hand", func(t *testing.T) {
		c := failedAt10("Async")
		// The user asked 10Gi by hand after kubeplug's 10Gi: same value,
		// but the record still names kubeplug's; this claim's user asked
		// 12Gi instead.
		x := c.claim("data-web-2")
		x.Spec.Resources.Requests["storage"] = "12Gi"
		c.failExpansion("data-web-2")
		c.template().Spec.Resources.Requests["storage"] = "2Gi"
		c.vcu.Metadata.Generation = 2
		o := c.reconcile(t, h)
		if len(o.applies) != 0 {
			t.Fatalf("lowered a request set by hand: %s", describe(o.actions))
		}
		c.wantCondition(t, ConditionBlocked, "True", ReasonClaimUpdateFailed)
	})
}

// TestNoExpansionAppliesTheRest: "update the PVC in-place to the extent
// possible. Do not perform the update that will be rejected by API server".
// A class without allowVolumeExpansion refuses only the size: the labels,
// annotations and VolumeAttributesClass the template adds are applied, the
// size is left as it is, and Blocked says why.
func TestNoExpansionAppliesTheRest(t *testing.T) {
	for _, sync := range []string{"Async", "LockStep"} {
		t.Run(sync, func(t *testing.T) {
			h := sdktest.New(t)
			c := newCluster(2, "InPlace", sync, "2Gi")
			c.classes[0].AllowVolumeExpansion = false
			c.template().Metadata.Labels = map[string]string{"tier": "gold"}
			c.template().Metadata.Annotations = map[string]string{"backup": "daily"}
			c.template().Spec.VolumeAttributesClassName = ptr("gold")
			o := c.reconcile(t, h)
			if len(o.applies) != 1 {
				t.Fatalf("actions %s, want one apply", describe(o.actions))
			}
			a := o.applies[0].Claim
			if o.applies[0].Target.Name != "data-web-1" || a.Labels["tier"] != "gold" || a.Annotations["backup"] != "daily" ||
				a.VolumeAttributesClassName == nil || *a.VolumeAttributesClassName != "gold" || a.Resources.Requests["storage"] != "1Gi" {
				t.Errorf("apply %s %+v, want the label, annotation and class, storage kept at 1Gi", o.applies[0].Target.Name, a)
			}
			c.wantCondition(t, ConditionBlocked, "True", ReasonStorageClassDoesNotAllowExpansion)
			if !strings.Contains(condition(c.vcu.Status, ConditionBlocked).Message, "data-web-1") {
				t.Errorf("Blocked message does not name the claim: %s", condition(c.vcu.Status, ConditionBlocked).Message)
			}
			if n := count(o.reasons(), ReasonStorageClassDoesNotAllowExpansion); n != 1 {
				t.Errorf("events %v, want one %s", o.reasons(), ReasonStorageClassDoesNotAllowExpansion)
			}
			c.resize() // the class is modified; the size is not
			c.reconcile(t, h)
			if got := c.claim("data-web-1"); got.Spec.Resources.Requests["storage"] != "1Gi" || *got.Status.CurrentVolumeAttributesClassName != "gold" {
				t.Errorf("claim %+v %+v", got.Spec, got.Status)
			}
			c.wantCondition(t, ConditionBlocked, "True", ReasonStorageClassDoesNotAllowExpansion)
			c.steady(t, h)
		})
	}
}

// TestAsyncWaitsForReadyReplicas: "A replica is considered ready if the Pod
// is ready and all its volumes are not being updated in-place. Wait for a
// replica to be ready for at least minReadySeconds before proceeding to the
// next replica" holds under Async too.
func TestAsyncWaitsForReadyReplicas(t *testing.T) {
	h := sdktest.New(t)
	t.Run("pod not Ready", func(t *testing.T) {
		c := newCluster(3, "InPlace", "Async", "2Gi")
		c.claims[2].Spec.Resources.Requests["storage"] = "2Gi"
		c.claims[2].Status.Capacity["storage"] = "2Gi"
		c.pod(2).Status.Conditions = []abi.Condition{{Type: "Ready", Status: "False"}}
		if got := c.reconcile(t, h).applied(); len(got) != 0 {
			t.Fatalf("applied %v while pod web-2 is not Ready", got)
		}
		c.wantCondition(t, ConditionProgressing, "True", ReasonWaitingForReplicaReady)
		if msg := condition(c.vcu.Status, ConditionProgressing).Message; !strings.Contains(msg, "web-2") {
			t.Errorf("Progressing message %q does not name the replica", msg)
		}
		c.steady(t, h)
		c.pod(2).Status.Conditions = []abi.Condition{{Type: "Ready", Status: "True"}}
		if got := c.reconcile(t, h).applied(); !slices.Equal(got, []string{"data-web-1"}) {
			t.Fatalf("applied %v once web-2 is Ready, want data-web-1", got)
		}
	})
	t.Run("claim still updating", func(t *testing.T) {
		c := newCluster(3, "InPlace", "Async", "2Gi")
		c.reconcile(t, h) // data-web-2 asks 2Gi
		// Capacity reached the template, but the user's own expansion is
		// still in flight: the replica is not ready.
		x := c.claim("data-web-2")
		x.Status.Capacity["storage"] = "2Gi"
		x.Spec.Resources.Requests["storage"] = "3Gi"
		if got := c.reconcile(t, h).applied(); len(got) != 0 {
			t.Fatalf("applied %v while data-web-2 is updating", got)
		}
		c.wantCondition(t, ConditionProgressing, "True", ReasonWaitingForReplicaReady)
	})
	t.Run("claim and pod being recreated", func(t *testing.T) {
		c := newCluster(3, "InPlace", "Async", "2Gi")
		c.claim("data-web-2").Spec.AccessModes = []string{"ReadWriteOncePod"}
		c.claim("data-web-2").Metadata.DeletionTimestamp = now.Format(time.RFC3339)
		c.pods = c.pods[:2]
		if got := c.reconcile(t, h).applied(); len(got) != 0 {
			t.Fatalf("applied %v while replica 2 is being recreated", got)
		}
		c.wantCondition(t, ConditionProgressing, "True", ReasonWaitingForReplicaReady)
	})
}

// TestMinReadySeconds: the next replica's claims wait until the previous
// replica's pod has been Ready for minReadySeconds, measured on the host's
// clock in the request, and the module asks to be called again then.
func TestMinReadySeconds(t *testing.T) {
	h := sdktest.New(t)
	for _, sync := range []string{"Async", "LockStep"} {
		t.Run(sync, func(t *testing.T) {
			c := newCluster(3, "InPlace", sync, "2Gi")
			c.set.Spec.MinReadySeconds = 300
			for i := range c.pods {
				c.pods[i] = sdktest.Pod(c.set, i, sdktest.Labels("controller-revision-hash", oldRev), sdktest.ReadySince(now.Add(-time.Hour)))
			}
			if got := c.reconcile(t, h).applied(); !slices.Equal(got, []string{"data-web-2"}) {
				t.Fatalf("applied %v, want data-web-2", got)
			}
			c.resize()
			// web-2 restarted 30 s ago.
			c.pod(2).Status.Conditions[0].LastTransitionTime = now.Add(-30 * time.Second).Format(time.RFC3339)
			res := h.MustReconcile(c.request())
			for _, a := range res.Actions {
				if a.Type == abi.ActionApplyClaim {
					t.Fatalf("applied %s 30 s after web-2 became Ready under minReadySeconds 300", a.Target.Name)
				}
			}
			if got, want := res.RequeueAfterMillis, int64(270_000); got != want {
				t.Errorf("requeueAfterMillis %d, want %d (the 270 s left)", got, want)
			}
			c.reconcile(t, h)
			c.wantCondition(t, ConditionProgressing, "True", ReasonWaitingForReplicaReady)
			// A second short of minReadySeconds is not enough; exactly
			// minReadySeconds is (kube-controller-manager 1.37's
			// IsPodAvailable: Ready time plus minReadySeconds <= now).
			c.pod(2).Status.Conditions[0].LastTransitionTime = now.Add(-299 * time.Second).Format(time.RFC3339)
			if got := c.reconcile(t, h).applied(); len(got) != 0 {
				t.Fatalf("applied %v a second before minReadySeconds", got)
			}
			c.pod(2).Status.Conditions[0].LastTransitionTime = now.Add(-300 * time.Second).Format(time.RFC3339)
			if got := c.reconcile(t, h).applied(); !slices.Equal(got, []string{"data-web-1"}) {
				t.Fatalf("applied %v at exactly minReadySeconds, want data-web-1", got)
			}
		})
	}
	t.Run("a Ready time in the future waits at most minReadySeconds", func(t *testing.T) {
		c := newCluster(2, "InPlace", "Async", "2Gi")
		c.set.Spec.MinReadySeconds = 60
		c.claims[1].Spec.Resources.Requests["storage"] = "2Gi"
		c.claims[1].Status.Capacity["storage"] = "2Gi"
		c.pods[1] = sdktest.Pod(c.set, 1, sdktest.ReadySince(now.Add(24*time.Hour)))
		res := h.MustReconcile(c.request())
		if res.RequeueAfterMillis != 60_000 {
			t.Errorf("requeueAfterMillis %d, want 60000", res.RequeueAfterMillis)
		}
	})
	t.Run("Ready without a time is not available", func(t *testing.T) {
		c := newCluster(2, "InPlace", "Async", "2Gi")
		c.set.Spec.MinReadySeconds = 60
		c.claims[1].Spec.Resources.Requests["storage"] = "2Gi"
		c.claims[1].Status.Capacity["storage"] = "2Gi"
		res := h.MustReconcile(c.request())
		if res.RequeueAfterMillis != 0 || slices.ContainsFunc(res.Actions, func(a abi.Action) bool { return a.Type == abi.ActionApplyClaim }) {
			t.Errorf("result %s requeue %d, want a wait without requeue", describe(res.Actions), res.RequeueAfterMillis)
		}
	})
}

// TestLockStepOnDeleteNeedsUser: LockStep under volumeClaimUpdateStrategy
// OnDelete "wait[s] for the user to delete/update the old PVC manually", and
// "Provide accurate status and error messages to users": Blocked True names
// the claim and what to do, as ImmutableFieldChanged does under InPlace, and
// Progressing is not False until the update is done.
func TestLockStepOnDeleteNeedsUser(t *testing.T) {
	h := sdktest.New(t)
	c := newCluster(3, "OnDelete", "LockStep", "2Gi")
	c.set.Status.UpdateRevision = newRev
	o := c.reconcile(t, h)
	if len(o.applies) != 0 || len(o.partitions) != 1 || o.partitions[0] != 3 {
		t.Fatalf("actions %s, want the hold at 3 and no apply", describe(o.actions))
	}
	c.wantCondition(t, ConditionBlocked, "True", ReasonClaimNeedsRecreation)
	c.wantCondition(t, ConditionProgressing, "Unknown", ReasonBlocked)
	msg := condition(c.vcu.Status, ConditionBlocked).Message
	for _, want := range []string{"claim data-web-2", "pod web-2", "delete"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Blocked message %q lacks %q", msg, want)
		}
	}
	if n := count(o.reasons(), ReasonClaimNeedsRecreation); n != 1 {
		t.Errorf("events %v, want one Warning %s", o.reasons(), ReasonClaimNeedsRecreation)
	}
	c.steady(t, h)

	// The user deletes the claim: it waits for its pod, which the user
	// must delete too.
	c.claim("data-web-2").Metadata.DeletionTimestamp = now.Format(time.RFC3339)
	c.reconcile(t, h)
	c.wantCondition(t, ConditionBlocked, "True", ReasonClaimNeedsRecreation)
	if msg := condition(c.vcu.Status, ConditionBlocked).Message; !strings.Contains(msg, "delete pod web-2") {
		t.Errorf("Blocked message %q does not say to delete the pod", msg)
	}
	// And the pod: they are being recreated.
	c.pod(2).Metadata.DeletionTimestamp = now.Format(time.RFC3339)
	c.reconcile(t, h)
	c.wantCondition(t, ConditionBlocked, "False", ReasonNotBlocked)
	c.wantCondition(t, ConditionProgressing, "True", ReasonClaimsRecreating)

	// The StatefulSet controller recreates both; admission gave the claim
	// the template. While it is being bound it needs nobody.
	fresh := sdktest.Claim("data", c.set, 2, sdktest.Storage("2Gi"))
	fresh.Status = abi.PersistentVolumeClaimStatus{Phase: "Pending"}
	c.claims[2] = fresh
	c.pods[2] = sdktest.Pod(c.set, 2, sdktest.Labels("controller-revision-hash", newRev))
	c.reconcile(t, h)
	c.wantCondition(t, ConditionBlocked, "False", ReasonNotBlocked)
	c.wantCondition(t, ConditionProgressing, "True", ReasonClaimsUpdating)
	// Bound at 2Gi: the next replica now needs the user.
	fresh.Status = abi.PersistentVolumeClaimStatus{Phase: "Bound", Capacity: map[string]string{"storage": "2Gi"}}
	o = c.reconcile(t, h)
	if len(o.partitions) != 1 || o.partitions[0] != 2 {
		t.Fatalf("actions %s, want the hold stepped to 2", describe(o.actions))
	}
	c.wantCondition(t, ConditionBlocked, "True", ReasonClaimNeedsRecreation)
	if msg := condition(c.vcu.Status, ConditionBlocked).Message; !strings.Contains(msg, "data-web-1") {
		t.Errorf("Blocked message %q does not name data-web-1", msg)
	}
}

// TestBlockedNeverEndsTheUpdate: every block, under either strategy, leaves
// Progressing Unknown, so `kubectl wait --for=condition=Progressing=False`
// returns only at the end of the update.
func TestBlockedNeverEndsTheUpdate(t *testing.T) {
	h := sdktest.New(t)
	for _, update := range []string{"InPlace", "OnDelete"} {
		t.Run(update, func(t *testing.T) {
			c := newCluster(2, update, "LockStep", "2Gi")
			c.template().Spec.AccessModes = []string{"ReadWriteOncePod"}
			c.reconcile(t, h)
			c.wantCondition(t, ConditionBlocked, "True", ReasonImmutableFieldChanged)
			c.wantCondition(t, ConditionProgressing, "Unknown", ReasonBlocked)
		})
	}
}
