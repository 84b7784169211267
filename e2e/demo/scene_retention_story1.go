package demo

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// retentionStory1 is KEP-1847's user story 1, whenDeleted Delete and
// whenScaled Retain: an application with a finite lifetime keeps its
// volumes across scale-down and scale-up, and gives them back when it is
// deleted.
func retentionStory1(ctx context.Context, d *demo) error {
	st, err := d.applyStory(ctx, "story1-when-deleted.yaml")
	if err != nil {
		return err
	}
	if err := st.decided(ctx, map[int32]int{0: 1, 1: 1, 2: 1}, 0, 1, 2); err != nil {
		return err
	}
	d.n.say("The StatefulSet owns every claim: they go when the set goes, and only then.")
	before, err := st.uids(ctx, 0, 3)
	if err != nil {
		return err
	}

	if err := st.s.Scale(ctx, 1); err != nil {
		return err
	}
	d.n.step("scaled to 1: pods %s-1 and %s-2 deleted", st.set.Name, st.set.Name)
	if err := st.keptOwnedBySet(ctx, map[int32]types.UID{1: before[1], 2: before[2]}); err != nil {
		return err
	}
	d.n.say("Their claims %s stay, still owned by the set and not by the pods.", st.claimNames(1, 3))

	if err := st.s.Scale(ctx, 3); err != nil {
		return err
	}
	d.n.step("scaled back to 3: pods %s-1 and %s-2 created again", st.set.Name, st.set.Name)
	if err := st.decided(ctx, nil, 0, 1, 2); err != nil {
		return err
	}
	if err := st.kept(ctx, before); err != nil {
		return err
	}
	d.n.say("The new pods found their old claims (same UIDs), data and all.")

	if err := st.s.Delete(ctx, ""); err != nil {
		return err
	}
	d.n.step("deleted StatefulSet %s/%s: the application is finished", st.set.Namespace, st.set.Name)
	if err := st.awaitNoPods(ctx); err != nil {
		return err
	}
	if err := st.awaitGone(ctx, 0, 1, 2); err != nil {
		return err
	}
	d.n.step("the garbage collector deleted the pods, then the claims %s: the volumes are given back", st.claimNames(0, 3))
	return nil
}

// keptOwnedBySet checks that the claims of before are kept and owned by the
// set alone.
func (st *story) keptOwnedBySet(ctx context.Context, before map[int32]types.UID) error {
	if err := st.kept(ctx, before); err != nil {
		return err
	}
	set, err := st.s.Get(ctx)
	if err != nil {
		return err
	}
	for ord := range before {
		c, err := st.claim(ctx, ord)
		if err != nil {
			return err
		}
		if len(c.OwnerReferences) != 1 || c.OwnerReferences[0].UID != set.UID {
			return fmt.Errorf("claim %s/%s has owner references %v; want the StatefulSet alone", c.Namespace, c.Name, c.OwnerReferences)
		}
	}
	return nil
}
