package workload

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// ClaimUpdate builds the reconcile input of StatefulSet(tb, replicas) with a
// VolumeClaimUpdate (InPlace, LockStep) that grows template "data" from 10Gi
// to 20Gi, so every claim needs expansion, and a StorageClass that allows
// it. The VolumeClaimUpdate goes through the host's own projection
// (snapshot.ProjectClaimUpdate), as the informer's object would.
func ClaimUpdate(tb testing.TB, replicas int) *abi.ReconcileRequest {
	tb.Helper()
	req := StatefulSet(tb, replicas)
	for i := range req.StatefulSet.StorageClasses {
		req.StatefulSet.StorageClasses[i].AllowVolumeExpansion = true
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeplug.dev/v1alpha1",
		"kind":       "VolumeClaimUpdate",
		"metadata": map[string]any{
			"name": "web-data", "namespace": "default", "uid": "vcu-uid", "resourceVersion": "7", "generation": int64(1),
		},
		"spec": map[string]any{
			"statefulSetName":           "web",
			"volumeClaimUpdateStrategy": "InPlace",
			"volumeClaimSyncStrategy":   "LockStep",
			"volumeClaimTemplates": []any{map[string]any{
				"metadata": map[string]any{"name": "data", "labels": map[string]any{"tier": "db"}},
				"spec": map[string]any{
					"accessModes":      []any{"ReadWriteOnce"},
					"storageClassName": "fast",
					"resources":        map[string]any{"requests": map[string]any{"storage": "20Gi"}},
				},
			}},
		},
	}}
	cu, err := snapshot.ProjectClaimUpdate(u)
	Must(tb, err, "project VolumeClaimUpdate")
	req.StatefulSet.ClaimUpdate = cu
	return req
}
