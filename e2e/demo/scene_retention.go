package demo

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/e2e/internal/setctl"
)

// The retention scenes play KEP-1847's user stories 1 to 3. The demo's
// control plane runs no StatefulSet controller, so setctl plays its part
// (pods and claims, scaling): every owner reference the audience sees on a
// claim is the retention module's decision, and every claim that goes away
// was deleted by kube-controller-manager's garbage collector because of it.

// retentionSource is the event source of the retention module's writes.
const retentionSource = "kubeplug.dev/retention"

// story is the StatefulSet of one retention scene.
type story struct {
	d   *demo
	s   *setctl.Set
	set *appsv1.StatefulSet
}

// applyStory creates the namespace and the StatefulSet of examples/demo/file
// and, playing the StatefulSet controller, its claims and pods.
func (d *demo) applyStory(ctx context.Context, file string) (*story, error) {
	set, err := readSet(d.Root, file)
	if err != nil {
		return nil, err
	}
	if err := ensureNamespace(ctx, d.client, set.Namespace); err != nil {
		return nil, err
	}
	p := setctl.PolicyOf(set)
	d.n.say("The demo plays the StatefulSet controller's part: it creates the pods and the claims (without owner references).")
	s, err := setctl.Create(ctx, d.client, set)
	if err != nil {
		return nil, err
	}
	st := &story{d: d, s: s, set: set}
	start, end := setctl.Range(set)
	d.n.step("applied examples/demo/%s: StatefulSet %s/%s, %d replicas, whenDeleted: %s, whenScaled: %s",
		file, set.Namespace, set.Name, end-start, p.WhenDeleted, p.WhenScaled)
	d.n.step("created claims %s and their pods", st.claimNames(start, end))
	return st, nil
}

// reapply creates the StatefulSet of the story again, under the same name,
// with its pods; claims that exist are reused, as the StatefulSet controller
// reuses them.
func (st *story) reapply(ctx context.Context) error {
	set := st.set.DeepCopy()
	set.ResourceVersion, set.UID = "", ""
	s, err := setctl.Create(ctx, st.d.client, set)
	if err != nil {
		return err
	}
	st.s = s
	return nil
}

func (st *story) claimName(ordinal int32) string {
	return setctl.ClaimName(st.set.Spec.VolumeClaimTemplates[0].Name, st.set.Name, ordinal)
}

func (st *story) claimNames(from, to int32) string {
	var names []string
	for ord := from; ord < to; ord++ {
		names = append(names, st.claimName(ord))
	}
	return strings.Join(names, ", ")
}

func (st *story) claim(ctx context.Context, ordinal int32) (*corev1.PersistentVolumeClaim, error) {
	c, err := st.d.client.CoreV1().PersistentVolumeClaims(st.set.Namespace).Get(ctx, st.claimName(ordinal), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return c, err
}

// uids returns the UIDs of the claims of [from, to) that exist.
func (st *story) uids(ctx context.Context, from, to int32) (map[int32]types.UID, error) {
	out := map[int32]types.UID{}
	for ord := from; ord < to; ord++ {
		c, err := st.claim(ctx, ord)
		if err != nil {
			return nil, err
		}
		if c != nil {
			out[ord] = c.UID
		}
	}
	return out, nil
}

// decided waits until the claims of ordinals carry the references the
// policy asks and the host has recorded at least writes[i]
// OwnerReferencesUpdated events on each (nil: none expected), then says
// what the module decided.
func (st *story) decided(ctx context.Context, writes map[int32]int, ordinals ...int32) error {
	for _, ord := range ordinals {
		if err := st.s.AwaitOwners(ctx, ord); err != nil {
			return err
		}
	}
	for ord, n := range writes {
		name := st.claimName(ord)
		err := st.d.await(ctx, fmt.Sprintf("%d OwnerReferencesUpdated events on %s", n, name), func(ctx context.Context) (bool, error) {
			got, err := st.hostEvents(ctx, name)
			return got >= n, err
		})
		if err != nil {
			return err
		}
	}
	byOwner := map[string][]string{}
	var order []string
	for _, ord := range ordinals {
		c, err := st.claim(ctx, ord)
		if err != nil {
			return err
		}
		if c == nil {
			return fmt.Errorf("claim %s/%s is gone", st.set.Namespace, st.claimName(ord))
		}
		o := ownerWords(c.OwnerReferences)
		if _, ok := byOwner[o]; !ok {
			order = append(order, o)
		}
		byOwner[o] = append(byOwner[o], c.Name)
	}
	for _, o := range order {
		if len(writes) == 0 {
			st.d.n.step("%s: %s, as the policy asks", strings.Join(byOwner[o], ", "), o)
			continue
		}
		st.d.n.step("retention decided: %s for %s", o, strings.Join(byOwner[o], ", "))
	}
	if len(writes) > 0 {
		var names []string
		for _, ord := range ordinals {
			if writes[ord] > 0 {
				names = append(names, st.claimName(ord))
			}
		}
		st.d.n.say("kubeplug wrote the references and recorded a Normal event OwnerReferencesUpdated (from %s) on %s.",
			retentionSource, strings.Join(names, ", "))
	}
	return nil
}

// hostEvents counts the host's OwnerReferencesUpdated events on a claim.
func (st *story) hostEvents(ctx context.Context, claim string) (int, error) {
	list, err := eventsFor(ctx, st.d.client, st.set.Namespace, "PersistentVolumeClaim", claim, "OwnerReferencesUpdated")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range list {
		if e.Source.Component == retentionSource {
			n += int(max(e.Count, 1))
		}
	}
	return n, nil
}

// awaitGone waits until the garbage collector has deleted the claims of
// ordinals.
func (st *story) awaitGone(ctx context.Context, ordinals ...int32) error {
	var names []string
	for _, ord := range ordinals {
		names = append(names, st.claimName(ord))
	}
	return st.d.await(ctx, "the garbage collector to delete "+strings.Join(names, ", "), func(ctx context.Context) (bool, error) {
		for _, ord := range ordinals {
			c, err := st.claim(ctx, ord)
			if err != nil || c != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// kept checks that the claims of before still exist with the same UIDs:
// kept, not deleted and created anew.
func (st *story) kept(ctx context.Context, before map[int32]types.UID) error {
	for ord, uid := range before {
		c, err := st.claim(ctx, ord)
		if err != nil {
			return err
		}
		if c == nil || c.UID != uid || c.DeletionTimestamp != nil {
			return fmt.Errorf("claim %s/%s was not kept", st.set.Namespace, st.claimName(ord))
		}
	}
	return nil
}

// awaitNoPods waits until the garbage collector has deleted the set's pods.
func (st *story) awaitNoPods(ctx context.Context) error {
	sel := metav1.FormatLabelSelector(st.set.Spec.Selector)
	return st.d.await(ctx, "the garbage collector to delete the pods of "+st.set.Name, func(ctx context.Context) (bool, error) {
		pods, err := st.d.client.CoreV1().Pods(st.set.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		return err == nil && len(pods.Items) == 0, err
	})
}

// ownerWords says who owns a claim, in plain words.
func ownerWords(refs []metav1.OwnerReference) string {
	if len(refs) == 0 {
		return "no owner"
	}
	var parts []string
	for _, r := range refs {
		parts = append(parts, r.Kind+" "+r.Name)
	}
	return "owner " + strings.Join(parts, " and ")
}
