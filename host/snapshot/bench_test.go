package snapshot_test

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// indexedLister answers ByIndex from keys computed once, as the live
// cache's informer indexers compute them when an object arrives, so that a
// benchmark of the builder does not time the fake's scan of every object.
type indexedLister struct {
	*fakeLister
	filed map[string]map[string][]runtime.Object // index name, key
}

func newIndexedLister(tb testing.TB, l *fakeLister) *indexedLister {
	il := &indexedLister{fakeLister: l, filed: map[string]map[string][]runtime.Object{}}
	for _, idx := range snapshot.Indexes() {
		byKey := map[string][]runtime.Object{}
		for _, o := range l.objs {
			if kindOf(o) != idx.Kind {
				continue
			}
			keys, err := idx.Keys(o)
			if err != nil {
				tb.Fatal(err)
			}
			for _, k := range keys {
				byKey[k] = append(byKey[k], o)
			}
		}
		il.filed[idx.Name] = byKey
	}
	return il
}

func (l *indexedLister) ByIndex(idx snapshot.Index, key string) ([]runtime.Object, error) {
	return l.filed[idx.Name][key], nil
}

// BenchmarkBuildStatefulSet builds the input of one set with 100 pods and 100
// claims, each with the metadata, volumes and conditions a real one has.
func BenchmarkBuildStatefulSet(b *testing.B) {
	const replicas = 100
	set := newSet("default", "web", new(int32(replicas)), 0, template{"data", new("fast")})
	set.Labels = map[string]string{"app": "web"}
	objs := []runtime.Object{set, newClass("fast"), claimUpdateObject("default", "web-update", "web")}
	conditions := []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: created},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: created},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: created},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: created},
	}
	for i := range replicas {
		ord := strconv.Itoa(i)
		p := newPod("default", "web-"+ord, set.UID)
		p.Labels = map[string]string{"app": "web", "apps.kubernetes.io/pod-index": ord, "statefulset.kubernetes.io/pod-name": p.Name}
		p.ResourceVersion = "1000" + ord
		p.CreationTimestamp = created
		p.Spec.NodeName = "node-" + ord
		p.Spec.Volumes = []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-" + ord}}},
			{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}},
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = conditions

		c := newClaim("default", "data-web-"+ord, new("fast"))
		c.Labels = map[string]string{"app": "web"}
		c.ResourceVersion = "2000" + ord
		c.CreationTimestamp = created
		c.Finalizers = []string{"kubernetes.io/pvc-protection"}
		c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID, Controller: new(true)}}
		c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
		c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: qty("10Gi")}
		c.Spec.VolumeName = "pvc-" + ord
		c.Spec.VolumeMode = new(corev1.PersistentVolumeFilesystem)
		c.Status.Phase = corev1.ClaimBound
		c.Status.AccessModes = c.Spec.AccessModes
		c.Status.Capacity = c.Spec.Resources.Requests
		objs = append(objs, p, c)
	}
	bld := builder(newIndexedLister(b, newFakeLister(objs...)))

	b.ReportAllocs()
	var req *abi.ReconcileRequest
	for b.Loop() {
		var err error
		if req, err = bld.StatefulSet("default/web", nil); err != nil {
			b.Fatal(err)
		}
	}
	if len(req.StatefulSet.Pods) != replicas || len(req.StatefulSet.Claims) != replicas {
		b.Fatalf("built %d pods and %d claims, want %d each", len(req.StatefulSet.Pods), len(req.StatefulSet.Claims), replicas)
	}
}
