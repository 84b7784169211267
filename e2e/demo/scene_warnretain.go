package demo

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// warnRetained: a StatefulSet without a retention policy; warnretain, a
// vendor-style module, records a Warning on it.
func warnRetained(ctx context.Context, d *demo) error {
	set, err := readSet(d.Root, "web-retained.yaml")
	if err != nil {
		return err
	}
	if err := ensureNamespace(ctx, d.client, set.Namespace); err != nil {
		return err
	}
	d.n.say("StatefulSet %s/%s has claim template %q and no persistentVolumeClaimRetentionPolicy,",
		set.Namespace, set.Name, set.Spec.VolumeClaimTemplates[0].Name)
	d.n.say("so by the API's default its claims are kept after the set is deleted.")
	if _, err := d.client.AppsV1().StatefulSets(set.Namespace).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		return err
	}
	d.n.step("applied examples/demo/web-retained.yaml")
	var ev corev1.Event
	err = d.await(ctx, "warnretain's event", func(ctx context.Context) (bool, error) {
		list, err := eventsFor(ctx, d.client, set.Namespace, "StatefulSet", set.Name, "ClaimsRetainedForever")
		if err != nil || len(list) == 0 {
			return false, err
		}
		ev = list[0]
		return true, nil
	})
	if err != nil {
		return err
	}
	d.n.step("warnretain decided: %s event %s on StatefulSet %s (from %s)", ev.Type, ev.Reason, set.Name, ev.Source.Component)
	d.n.say("%q", ev.Message)
	d.n.say("The module asked for one action, an event, which its manifest declares; the host checked it and recorded it.")
	return nil
}
