package demo

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// retentionStory2 is KEP-1847's user story 2, whenDeleted Retain and
// whenScaled Delete: a scale-down gives the volumes of the removed replicas
// back; deleting the set keeps the rest, and the set comes back on them.
func retentionStory2(ctx context.Context, d *demo) error {
	st, err := d.applyStory(ctx, "story2-when-scaled.yaml")
	if err != nil {
		return err
	}
	if err := st.decided(ctx, nil, 0, 1, 2); err != nil {
		return err
	}
	d.n.say("Nothing to write: whenScaled matters only once a replica is scaled away, and whenDeleted: Retain keeps claims with no owner.")

	if err := st.s.SetReplicas(ctx, 1); err != nil {
		return err
	}
	d.n.step("scaled to 1: pods %s-1 and %s-2 are to go", st.set.Name, st.set.Name)
	if err := st.decided(ctx, map[int32]int{1: 1, 2: 1}, 1, 2); err != nil {
		return err
	}
	d.n.say("Before the pods are deleted, each of their claims gets its pod as owner.")
	for _, ord := range []int32{2, 1} {
		if err := st.s.DeletePod(ctx, ord); err != nil {
			return err
		}
	}
	d.n.step("deleted pods %s-2 and %s-1, as the StatefulSet controller does next", st.set.Name, st.set.Name)
	if err := st.awaitGone(ctx, 1, 2); err != nil {
		return err
	}
	d.n.step("the garbage collector deleted %s after their pods", st.claimNames(1, 3))

	keep, err := st.uids(ctx, 0, 1)
	if err != nil {
		return err
	}
	if err := st.s.Delete(ctx, ""); err != nil {
		return err
	}
	d.n.step("deleted StatefulSet %s/%s to bring it down for a while", st.set.Namespace, st.set.Name)
	if err := st.awaitNoPods(ctx); err != nil {
		return err
	}
	if err := st.keptUnowned(ctx, keep); err != nil {
		return err
	}
	d.n.step("the garbage collector deleted pod %s-0; claim %s stays, with no owner", st.set.Name, st.claimName(0))

	if err := st.reapply(ctx); err != nil {
		return err
	}
	d.n.step("applied examples/demo/story2-when-scaled.yaml again: 3 replicas")
	if err := st.decided(ctx, nil, 0, 1, 2); err != nil {
		return err
	}
	if err := st.kept(ctx, keep); err != nil {
		return err
	}
	d.n.say("Pod %s-0 is back on its old claim %s (same UID); %s were created empty.", st.set.Name, st.claimName(0), st.claimNames(1, 3))
	return nil
}

// keptUnowned checks that the claims of before are kept and have no owner.
func (st *story) keptUnowned(ctx context.Context, before map[int32]types.UID) error {
	if err := st.kept(ctx, before); err != nil {
		return err
	}
	for ord := range before {
		c, err := st.claim(ctx, ord)
		if err != nil {
			return err
		}
		if len(c.OwnerReferences) > 0 {
			return fmt.Errorf("claim %s/%s has owner references %v; want none", c.Namespace, c.Name, c.OwnerReferences)
		}
	}
	return nil
}
