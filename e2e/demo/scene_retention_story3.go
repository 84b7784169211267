package demo

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
)

// retentionStory3 is KEP-1847's user story 3, Delete on both: volumes are
// given back as soon as their replica is scaled away and when the set is
// deleted, yet survive a pod being killed and recreated.
func retentionStory3(ctx context.Context, d *demo) error {
	st, err := d.applyStory(ctx, "story3-delete-both.yaml")
	if err != nil {
		return err
	}
	if err := st.decided(ctx, map[int32]int{0: 1, 1: 1}, 0, 1); err != nil {
		return err
	}
	d.n.say("While their replicas are wanted, the claims belong to the set, not to the pods.")
	before, err := st.uids(ctx, 0, 2)
	if err != nil {
		return err
	}

	if err := st.s.RestartPod(ctx, 0); err != nil {
		return err
	}
	d.n.step("deleted pod %s-0 and created it again, as a rolling update or a node drain does", st.set.Name)
	if err := st.decided(ctx, nil, 0); err != nil {
		return err
	}
	if err := st.kept(ctx, map[int32]types.UID{0: before[0]}); err != nil {
		return err
	}
	d.n.say("Claim %s was kept (same UID): the pod never owned it.", st.claimName(0))

	if err := st.s.SetReplicas(ctx, 1); err != nil {
		return err
	}
	d.n.step("scaled to 1: pod %s-1 is to go", st.set.Name)
	if err := st.decided(ctx, map[int32]int{1: 2}, 1); err != nil {
		return err
	}
	d.n.say("The module exchanged the owner of %s, the set, for its pod, before the pod goes.", st.claimName(1))
	if err := st.s.DeletePod(ctx, 1); err != nil {
		return err
	}
	d.n.step("deleted pod %s-1", st.set.Name)
	if err := st.awaitGone(ctx, 1); err != nil {
		return err
	}
	d.n.step("the garbage collector deleted %s right after its pod", st.claimName(1))

	if err := st.s.Delete(ctx, ""); err != nil {
		return err
	}
	d.n.step("deleted StatefulSet %s/%s", st.set.Namespace, st.set.Name)
	if err := st.awaitNoPods(ctx); err != nil {
		return err
	}
	if err := st.awaitGone(ctx, 0); err != nil {
		return err
	}
	d.n.step("the garbage collector deleted pod %s-0, then %s: no volume is left to pay for", st.set.Name, st.claimName(0))
	return nil
}
