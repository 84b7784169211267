package templateupdate

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kubeplug/kubeplug/e2e/internal/kubelet"
	"github.com/kubeplug/kubeplug/e2e/internal/resizer"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// allowRetention grants what guests/retention's manifest asks.
const allowRetention = "  allow: [{action: updateOwnerReferences, resources: [persistentvolumeclaims]}, {action: event, resources: [statefulsets]}, {action: mutate, resources: [persistentvolumeclaims], paths: [/metadata/ownerReferences]}]\n"

// startWorld installs the VolumeClaimUpdate CRD (before the host starts: the
// host discovers it at start), the storage classes, starts the kubelet
// stand-in and one host running retention and templateupdate with its
// webhook served over HTTPS, registers the webhook with the API server and
// waits until claim creations go through it.
func startWorld(t *testing.T) *world {
	t.Helper()
	ctx := t.Context()
	c := kubernetes.NewForConfigOrDie(userConfig())
	if err := testenv.InstallCRDs(ctx, cp.Config, testenv.ClaimUpdateCRD()); err != nil {
		t.Fatal(err)
	}
	for name, expand := range map[string]bool{expandable: true, fast: true, fixed: false} {
		_, err := c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
			ObjectMeta:           metav1.ObjectMeta{Name: name},
			Provisioner:          resizer.Driver,
			AllowVolumeExpansion: ptr.To(expand),
		}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}

	kc := rest.CopyConfig(cp.Config)
	kc.UserAgent = "kubeplug-e2e-kubelet"
	kc.QPS, kc.Burst = -1, 0
	kl, err := kubelet.Start(ctx, kubernetes.NewForConfigOrDie(kc), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kl.Stop)

	tuWasm, err := testenv.Guest("guests/templateupdate")
	if err != nil {
		t.Fatal(err)
	}
	retWasm, err := testenv.Guest("guests/retention")
	if err != nil {
		t.Fatal(err)
	}
	certDir, caFile := testenv.ServingCert(t)
	addr := testenv.FreeAddr(t)
	config := fmt.Sprintf("modules:\n"+
		"- name: retention\n  path: %s\n  workers: 4\n%s"+
		"  admission: {failurePolicy: Ignore}\n"+
		"- name: templateupdate\n  path: %s\n  workers: 4\n%s"+
		"  admission: {failurePolicy: Fail, timeout: 10s}\n",
		retWasm, allowRetention, tuWasm, testenv.Allow["guests/templateupdate"])
	h := testenv.StartHost(t, testenv.HostOptions{
		Kubeconfig: cp.Kubeconfig, Config: config,
		Args: []string{"--webhook-addr", addr, "--webhook-cert-dir", certDir},
	})
	h.WaitReady(t)
	if hooks := testenv.RegisterWebhooks(t, c, h.ConfigPath, addr, caFile); len(hooks.Mutating) != 1 {
		t.Fatalf("webhook-config printed %d mutating configurations, want one, with retention's and templateupdate's webhooks:\n%s", len(hooks.Mutating), hooks.Printed)
	}
	awaitWebhook(t, c, kl)
	return &world{host: h, kl: kl}
}

// awaitWebhook waits until the API server calls the host's webhook and the
// host's caches hold a set and its VolumeClaimUpdate: a dry-run claim of a
// probe set comes back rewritten to the VolumeClaimUpdate's template.
func awaitWebhook(t *testing.T, c kubernetes.Interface, kl *kubelet.Kubelet) {
	t.Helper()
	cfg := userConfig()
	e := &env{t: t, ctx: t.Context(), c: c}
	e.ns = testenv.Namespace(t, c)
	e.dyn = dynamic.NewForConfigOrDie(cfg)
	set := newSet(setOptions{replicas: 0, class: expandable, size: "1Gi"})
	if _, err := c.AppsV1().StatefulSets(e.ns).Create(e.ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.applyVCU("OnDelete", "Async", vcuTemplate{class: fast, size: "3Gi"})
	probe := set.Spec.VolumeClaimTemplates[0].DeepCopy()
	probe.Name = claimName(0)
	probe.Labels = map[string]string{"app": setName}
	testenv.Eventually(t, testenv.Timeout, "the webhook to rewrite a probe claim", func() (bool, error) {
		got, err := c.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, nil
		}
		q := got.Spec.Resources.Requests[corev1.ResourceStorage]
		return q.Cmp(resource.MustParse("3Gi")) == 0 && ptr.Deref(got.Spec.StorageClassName, "") == fast, nil
	})
}
