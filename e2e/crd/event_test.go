package crd

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
	"github.com/kubeplug/kubeplug/host/kube"
)

// The host's event sink records an event on a VolumeClaimUpdate that the
// API server stores and that a field selector on the object finds, as
// `kubectl describe vcu` does.
func TestEventOnVolumeClaimUpdate(t *testing.T) {
	c, ns := vcus(t)
	vcu, err := c.Create(context.Background(), object(t, valid), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sink := kube.NewEventSink(context.Background(), cp.Client(), 0)
	ref := abi.ObjectRef{Kind: abi.KindVolumeClaimUpdate, Namespace: ns, Name: vcu.GetName(), UID: string(vcu.GetUID())}
	if err := sink.Record(ref, corev1.EventTypeWarning, "UnknownTemplate", "template logs is not one of StatefulSet web's", "templateupdate"); err != nil {
		t.Fatal(err)
	}
	sink.Shutdown()
	selector := fields.Set{
		"involvedObject.apiVersion": "kubeplug.dev/v1alpha1",
		"involvedObject.kind":       "VolumeClaimUpdate",
		"involvedObject.name":       vcu.GetName(),
		"involvedObject.uid":        string(vcu.GetUID()),
	}.String()
	testenv.Eventually(t, 30*time.Second, "the event on the VolumeClaimUpdate", func() (bool, error) {
		list, err := cp.Client().CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			return false, err
		}
		return len(list.Items) == 1 && list.Items[0].Reason == "UnknownTemplate" && list.Items[0].Source.Component == "kubeplug.dev/templateupdate", nil
	})
}
