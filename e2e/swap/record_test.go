package swap

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// TestRecord: `kubeplug record` writes, from the real API server, a case
// holding exactly the objects of one StatefulSet's input; with the decision
// the retention module then takes on the live cluster written in as
// expect:, `kubeplug test` passes on it, and with another decision it
// fails.
func TestRecord(t *testing.T) {
	c := cp.Client()
	ns := testenv.Namespace(t, c)
	web := createSet(t, c, ns, "web", 2, &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	})
	createSet(t, c, ns, "db", 1, nil) // another set, whose objects stay out of web's case
	bin, err := testenv.Kubeplug()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "web.yaml")
	if out, err := exec.Command(bin, "record", "--kubeconfig", cp.Kubeconfig, "--subject", "statefulset/"+ns+"/web", "-o", file).CombinedOutput(); err != nil {
		t.Fatalf("kubeplug record: %v\n%s", err, out)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Name    string           `json:"name"`
		Objects []map[string]any `json:"objects"`
	}
	if err := yaml.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range rec.Objects {
		md := o["metadata"].(map[string]any)
		got = append(got, fmt.Sprintf("%s %s", o["kind"], md["name"]))
	}
	want := []string{"StatefulSet web", "Pod web-0", "Pod web-1", "PersistentVolumeClaim data-web-0", "PersistentVolumeClaim data-web-1"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("recorded %v, want %v", got, want)
	}
	for _, noise := range []string{"managedFields", "resourceVersion", "db-0"} {
		if strings.Contains(string(data), noise) {
			t.Errorf("the case holds %q:\n%s", noise, data)
		}
	}

	t.Run("persistentvolume", func(t *testing.T) {
		claim, err := c.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), "data-db-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "pv-record-"},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: claim.Spec.Resources.Requests[corev1.ResourceStorage]},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/pv"}},
				ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: claim.Name, UID: claim.UID},
			},
		}
		pv, err = c.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = c.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
		})
		out, err := exec.Command(bin, "record", "--kubeconfig", cp.Kubeconfig, "--subject", "persistentvolumes/"+pv.Name).Output() // as kubectl names the type
		if err != nil {
			t.Fatalf("kubeplug record: %v", err)
		}
		var rec struct {
			Objects []map[string]any `json:"objects"`
		}
		if err := yaml.Unmarshal(out, &rec); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, o := range rec.Objects {
			got = append(got, fmt.Sprintf("%s %s", o["kind"], o["metadata"].(map[string]any)["name"]))
		}
		if want := []string{"PersistentVolume " + pv.Name, "PersistentVolumeClaim data-db-0"}; strings.Join(got, ", ") != strings.Join(want, ", ") {
			t.Fatalf("recorded %v, want %v", got, want)
		}
	})

	// The live decision: the retention module gives each claim the set as
	// owner.
	testenv.StartModule(t, cp.Kubeconfig, "guests/retention", "retention", 2)
	var refs []string
	testenv.Eventually(t, testenv.Timeout, "the claims owned by the set", func() (bool, error) {
		refs = refs[:0]
		for _, n := range []string{"data-web-0", "data-web-1"} {
			pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), n, metav1.GetOptions{})
			if err != nil || len(pvc.OwnerReferences) == 0 {
				return false, err
			}
			o := pvc.OwnerReferences[0]
			refs = append(refs, fmt.Sprintf("- apiVersion: v1\n    kind: PersistentVolumeClaim\n    metadata:\n      name: %s\n      namespace: %s\n"+
				"      ownerReferences: [{apiVersion: %s, kind: %s, name: %s, uid: %s}]\n", n, ns, o.APIVersion, o.Kind, o.Name, o.UID))
		}
		return true, nil
	})
	if !strings.Contains(refs[0], string(web.UID)) {
		t.Fatalf("the live owner is not the set: %s", refs[0])
	}
	wasm, err := testenv.Guest("guests/retention")
	if err != nil {
		t.Fatal(err)
	}
	run := func(expect string) (string, error) {
		f := filepath.Join(t.TempDir(), "case.yaml")
		if err := os.WriteFile(f, append(append([]byte{}, data...), []byte(expect)...), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "test", "--module", wasm, f).CombinedOutput()
		return string(out), err
	}
	if out, err := run("expect:\n  present:\n  " + strings.Join(refs, "  ")); err != nil || !strings.Contains(out, "PASS") {
		t.Fatalf("the recorded case with the live decision does not pass: %v\n%s", err, out)
	}
	if out, err := run("expect:\n  noActions: true\n"); err == nil || !strings.Contains(out, "FAIL") {
		t.Fatalf("the recorded case passes with a decision the module did not take: %s", out)
	}
}

// createSet creates a StatefulSet with one claim template, and its pods and
// claims as the StatefulSet controller would (none runs here).
func createSet(t *testing.T, c kubernetes.Interface, ns, name string, replicas int32, policy *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy) *appsv1.StatefulSet {
	t.Helper()
	ctx := context.Background()
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    &replicas,
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
			},
			VolumeClaimTemplates:                 []corev1.PersistentVolumeClaim{claimTemplate()},
			PersistentVolumeClaimRetentionPolicy: policy,
		},
	}
	s, err := c.AppsV1().StatefulSets(ns).Create(ctx, s, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	for i := range replicas {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Namespace: ns, Labels: map[string]string{"app": name},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name, UID: s.UID, Controller: &yes}}},
			Spec: s.Spec.Template.Spec,
		}
		if _, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pvc := claimTemplate()
		pvc.Name, pvc.Namespace = fmt.Sprintf("data-%s-%d", name, i), ns
		if _, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &pvc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}
