package bench_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/memcluster"
	kpruntime "github.com/kubeplug/kubeplug/host/runtime"
	"github.com/kubeplug/kubeplug/host/snapshot"
	_ "github.com/kubeplug/kubeplug/internal/benchpolicy" // registers the native baseline
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// replicas is the fixed workload: one StatefulSet, this many pods and claims.
const replicas = 100

var (
	buildOnce sync.Once
	wasmPath  string
	buildErr  error
)

// guestWASM builds internal/benchpolicy/guest once per test binary.
func guestWASM(tb testing.TB) []byte {
	tb.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kubeplug-bench-")
		if err != nil {
			buildErr = err
			return
		}
		wasmPath = filepath.Join(dir, "benchpolicy.wasm")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", wasmPath, "./internal/benchpolicy/guest")
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build benchmark guest: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	b, err := os.ReadFile(wasmPath)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// statefulSetRequest builds the reconcile input for one StatefulSet with
// `replicas` pods and claims, shaped like what the StatefulSet controller and
// kubelet leave behind, through the host's own snapshot builder.
func statefulSetRequest(tb testing.TB) *abi.ReconcileRequest {
	tb.Helper()
	c := memcluster.New(memcluster.Config{})
	class := "fast"
	n := int32(replicas)
	set := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "set-uid", Labels: map[string]string{"app": "web", "tier": "db"}},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    &n,
			ServiceName: "web",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: &class,
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
				},
			}},
		},
		Status: appsv1.StatefulSetStatus{Replicas: n, ReadyReplicas: n, CurrentRevision: "web-6d4b8c", UpdateRevision: "web-6d4b8c"},
	}
	objs := []runtime.Object{set, &storagev1.StorageClass{
		TypeMeta:    metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"},
		ObjectMeta:  metav1.ObjectMeta{Name: class},
		Provisioner: "hostpath.csi.k8s.io",
	}}
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for i := 0; i < replicas; i++ {
		pod := fmt.Sprintf("web-%d", i)
		claim := fmt.Sprintf("data-web-%d", i)
		objs = append(objs, &corev1.Pod{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{
				Name: pod, Namespace: "default", UID: types.UID(pod + "-uid"), CreationTimestamp: now,
				Labels: map[string]string{
					"app": "web", "controller-revision-hash": "web-6d4b8c",
					"statefulset.kubernetes.io/pod-name": pod, "apps.kubernetes.io/pod-index": fmt.Sprint(i),
				},
				Annotations:     map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))},
			},
			Spec: corev1.PodSpec{
				NodeName: fmt.Sprintf("node-%d", i%3),
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
				Containers: []corev1.Container{{Name: "db", Image: "example/db:1"}},
			},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			}},
		}, &corev1.PersistentVolumeClaim{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
			ObjectMeta: metav1.ObjectMeta{
				Name: claim, Namespace: "default", UID: types.UID(claim + "-uid"), CreationTimestamp: now,
				Labels:      map[string]string{"app": "web"},
				Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes", "volume.kubernetes.io/storage-provisioner": "hostpath.csi.k8s.io"},
				Finalizers:  []string{"kubernetes.io/pvc-protection"},
			},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: &class,
				VolumeName:       "pvc-" + claim,
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
			},
			Status: corev1.PersistentVolumeClaimStatus{
				Phase:       corev1.ClaimBound,
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			},
		})
	}
	for _, o := range objs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			tb.Fatal(err)
		}
		if err := c.Load(u); err != nil {
			tb.Fatal(err)
		}
	}
	b := snapshot.Builder{Lister: c, Now: func() time.Time { return now.Time }}
	req, err := b.StatefulSet("default/web", nil)
	if err != nil || req == nil {
		tb.Fatalf("build request: %v (nil request: %v)", err, req == nil)
	}
	if len(req.StatefulSet.Pods) != replicas || len(req.StatefulSet.Claims) != replicas {
		tb.Fatalf("request holds %d pods and %d claims, want %d each", len(req.StatefulSet.Pods), len(req.StatefulSet.Claims), replicas)
	}
	return req
}

// wantActions is what benchpolicy answers for the workload: an owner
// reference on every claim and one event.
const wantActions = replicas + 1

func checkResult(tb testing.TB, res *abi.Result) {
	if len(res.Actions) != wantActions {
		tb.Fatalf("module returned %d actions, want %d", len(res.Actions), wantActions)
	}
}

func loadModule(tb testing.TB, ctx context.Context) *kpruntime.Module {
	tb.Helper()
	e, err := kpruntime.NewEngine(ctx, kpruntime.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close(ctx) })
	m, err := e.Load(ctx, "benchpolicy.wasm", guestWASM(tb), kpruntime.DefaultLimits())
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// nativeNsPerOp runs the same module code natively (sdktest's native harness:
// the SDK's dispatch and codec, no wasm) and returns its ns/op, the baseline
// the wasm run is reported against. testing.Benchmark cannot run inside a
// benchmark, so it times a fixed loop itself: at least 100 calls and 500 ms.
func nativeNsPerOp(tb testing.TB, req *abi.ReconcileRequest) float64 {
	h := sdktest.New(tb)
	start, n := time.Now(), 0
	for n < 100 || time.Since(start) < 500*time.Millisecond {
		res, err := h.Reconcile(req)
		if err != nil {
			tb.Fatal(err)
		}
		checkResult(tb, res)
		n++
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

// BenchmarkReconcileStatefulSet100 is the reconcile budget's workload: host
// encode, guest decode/decide/encode, host decode, deadline mode on. It
// reports the ratio to the native run of the same code as x-native.
func BenchmarkReconcileStatefulSet100(b *testing.B) {
	ctx := context.Background()
	req := statefulSetRequest(b)
	m := loadModule(b, ctx)
	native := nativeNsPerOp(b, req)
	b.ResetTimer()
	for b.Loop() {
		res, err := m.Reconcile(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		checkResult(b, res)
	}
	b.StopTimer()
	perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(native, "native-ns/op")
	b.ReportMetric(perOp/native, "x-native")
}

// BenchmarkReconcileStatefulSet100Native is the baseline on its own.
func BenchmarkReconcileStatefulSet100Native(b *testing.B) {
	req := statefulSetRequest(b)
	h := sdktest.New(b)
	for b.Loop() {
		res, err := h.Reconcile(req)
		if err != nil {
			b.Fatal(err)
		}
		checkResult(b, res)
	}
}

// TestWorkload keeps the benchmark honest in `make test`: the wasm module and
// the native run give the same answer for the workload.
func TestWorkload(t *testing.T) {
	ctx := context.Background()
	req := statefulSetRequest(t)
	m := loadModule(t, ctx)
	wasm, err := m.Reconcile(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	native, err := sdktest.New(t).Reconcile(req)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, wasm)
	require.Equal(t, native, wasm, "the compiled module and the native run must answer alike")
}

// BenchmarkReconcileEmpty is the smallest round trip through an SDK-built
// module: a request with no objects (the module answers with no action),
// codec included, deadline mode on.
func BenchmarkReconcileEmpty(b *testing.B) {
	ctx := context.Background()
	m := loadModule(b, ctx)
	req := &abi.ReconcileRequest{Subject: abi.SubjectStatefulSet, Key: "default/web", Now: "2026-01-01T00:00:00Z"}
	for b.Loop() {
		res, err := m.Reconcile(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Actions) != 0 {
			b.Fatalf("module returned %d actions, want none", len(res.Actions))
		}
	}
}
