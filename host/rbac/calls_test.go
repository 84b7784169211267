package rbac_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
	"github.com/kubeplug/kubeplug/host/kube"
	"github.com/kubeplug/kubeplug/host/rbac"
	"github.com/kubeplug/kubeplug/host/webhookcert"
)

// call is one API request the host made, as RBAC sees it.
type call struct {
	verb, group, resource, namespace, name string
}

func (c call) String() string {
	return fmt.Sprintf("%s %s/%s in %q name %q", c.verb, c.group, c.resource, c.namespace, c.name)
}

// calls turns the requests recorded by client-go's fakes into calls.
// Discovery (recorded as a get of "resource") is left out: every
// authenticated user may discover, through the system:discovery role.
func calls(recorded ...[]k8stesting.Action) []call {
	var out []call
	for _, as := range recorded {
		for _, a := range as {
			gvr := a.GetResource()
			if gvr.Resource == "resource" {
				continue
			}
			c := call{verb: a.GetVerb(), group: gvr.Group, resource: gvr.Resource, namespace: a.GetNamespace()}
			if a.GetSubresource() != "" {
				c.resource += "/" + a.GetSubresource()
			}
			switch a := a.(type) {
			case interface{ GetName() string }:
				c.name = a.GetName()
			case k8stesting.UpdateAction:
				// An update names its object in the URL, as a get does;
				// a create does not (RBAC cannot limit it to a name).
				if m, err := meta.Accessor(a.GetObject()); err == nil {
					c.name = m.GetName()
				}
			}
			out = append(out, c)
		}
	}
	return out
}

// requireCovered fails t unless r allows every call, and there is one.
func requireCovered(t *testing.T, r rbac.Rules, cs []call) {
	t.Helper()
	require.NotEmpty(t, cs, "no call was recorded: the check would prove nothing")
	for _, c := range cs {
		require.True(t, allowed(r, c.verb, c.group, c.resource, c.namespace, c.name), "no rule allows %s; rules: %+v", c, r)
	}
}

// The fake API: a typed client whose discovery serves VolumeClaimUpdates,
// and a dynamic client that knows the list kind of every kind the host
// reads.
func fakes(objs ...k8sruntime.Object) (*fake.Clientset, *dynamicfake.FakeDynamicClient) {
	client := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "pv-1-deleter"}})
	client.Resources = []*metav1.APIResourceList{{
		GroupVersion: kube.ClaimUpdateGVR.GroupVersion().String(),
		APIResources: []metav1.APIResource{{Name: kube.ClaimUpdateGVR.Resource, Namespaced: true, Kind: abi.KindVolumeClaimUpdate}},
	}}
	lists := map[schema.GroupVersionResource]string{}
	for kind := range abi.Kinds() {
		gvr, _, err := kube.GVR(kind)
		if err != nil {
			panic(err)
		}
		lists[gvr] = kind + "List"
	}
	return client, dynamicfake.NewSimpleDynamicClientWithCustomListKinds(k8sruntime.NewScheme(), lists, objs...)
}

// Every list and watch the host's informers make, whole or in a shard's
// namespace, is allowed by the rules Derive gives even a host whose one
// module may do nothing.
func TestInformerCallsAreCovered(t *testing.T) {
	for _, shard := range []string{"", "shard"} {
		t.Run("shard="+shard, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			client, dyn := fakes()
			c, err := kube.NewCache(client, dyn, kube.Options{Namespace: shard})
			require.NoError(t, err)
			c.Start(ctx)
			require.True(t, c.WaitForSync(ctx))
			require.NotNil(t, c.Informer(abi.KindVolumeClaimUpdate), "the check must cover the VolumeClaimUpdate informer")
			cancel()
			c.Shutdown()

			nothing := rbac.Module{Name: "m", Subject: abi.SubjectStatefulSet, Granted: []abi.Capability{}}
			r := derive(t, rbac.Host{Modules: []rbac.Module{nothing}, ShardNamespace: shard})
			cs := calls(client.Actions(), dyn.Actions())
			requireCovered(t, r, cs)
			var kinds []string
			for _, c := range cs {
				if c.verb == "watch" && !slices.Contains(kinds, c.resource) {
					kinds = append(kinds, c.resource)
				}
			}
			require.Len(t, kinds, len(abi.Kinds()), "a watch of every kind: %v", kinds)
		})
	}
}

func object(apiVersion, kind, ns, name, uid string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetUID(k8stypes.UID(uid))
	u.SetResourceVersion("7")
	return u
}

// recordingDeleter stands for the CSI client: it reads the deletion Secret
// as csi.Client does, through kube.SecretGetter.
type recordingDeleter struct {
	secret func(ctx context.Context, namespace, name string) (map[string]string, error)
	called bool
}

func (d *recordingDeleter) Configured(driver string) bool { return driver == "csi.example.com" }

func (d *recordingDeleter) DeleteVolume(ctx context.Context, driver, handle string, ref *abi.SecretReference) error {
	d.called = true
	if ref != nil {
		if _, err := d.secret(ctx, ref.Namespace, ref.Name); err != nil {
			return err
		}
	}
	return nil
}

// Every request the executor makes, for each action type, and the events
// of refused actions, through the host's real Cluster, EventSink and
// SecretGetter, is allowed by the rules Derive gives the module that
// returned it, limited to its namespace.
func TestExecutorCallsAreCovered(t *testing.T) {
	const ns = "apps"
	set := object("apps/v1", "StatefulSet", ns, "web", "set-uid", nil)
	pod := object("v1", "Pod", ns, "web-0", "pod-uid", nil)
	claim := object("v1", "PersistentVolumeClaim", ns, "data-web-0", "claim-uid", nil)
	update := object("kubeplug.dev/v1alpha1", "VolumeClaimUpdate", ns, "web", "vcu-uid", nil)
	class := object("storage.k8s.io/v1", "StorageClass", "", "secret-class", "class-uid", map[string]any{"parameters": map[string]any{
		actions.ParamProvisionerSecretName: "${pv.name}-deleter", actions.ParamProvisionerSecretNamespace: "${pvc.namespace}",
	}})
	meta := func(u *unstructured.Unstructured) abi.ObjectMeta {
		return abi.ObjectMeta{Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID()), ResourceVersion: u.GetResourceVersion()}
	}
	ref := func(kind string, u *unstructured.Unstructured) abi.ObjectRef {
		return abi.ObjectRef{Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID())}
	}
	gone := &abi.ObjectReference{Kind: abi.KindPersistentVolumeClaim, Namespace: ns, Name: "gone", UID: "gone-uid"}
	volume := object("v1", "PersistentVolume", "", "pv-1", "pv-uid", map[string]any{
		"spec": map[string]any{"claimRef": map[string]any{"kind": gone.Kind, "namespace": ns, "name": gone.Name, "uid": gone.UID},
			"persistentVolumeReclaimPolicy": "Delete", "storageClassName": "secret-class",
			"csi": map[string]any{"driver": "csi.example.com", "volumeHandle": "h-1"}},
		"status": map[string]any{"phase": "Released"},
	})
	volume.SetFinalizers([]string{actions.FinalizerExternalProvisioner})

	setReq := &abi.ReconcileRequest{Subject: abi.SubjectStatefulSet, Key: ns + "/web", StatefulSet: &abi.StatefulSetSubject{
		Set:         &abi.StatefulSet{Metadata: meta(set), Spec: abi.StatefulSetSpec{UpdateStrategy: abi.StatefulSetUpdateStrategy{Type: "RollingUpdate"}}},
		Pods:        []abi.Pod{{Metadata: meta(pod)}},
		Claims:      []abi.PersistentVolumeClaim{{Metadata: meta(claim)}},
		ClaimUpdate: &abi.VolumeClaimUpdate{Metadata: meta(update)},
	}}
	volMeta := meta(volume)
	volMeta.Finalizers = volume.GetFinalizers()
	volReq := &abi.ReconcileRequest{Subject: abi.SubjectPersistentVolume, Key: "pv-1", PersistentVolume: &abi.PersistentVolumeSubject{
		Volume: &abi.PersistentVolume{Metadata: volMeta,
			Spec: abi.PersistentVolumeSpec{ClaimRef: gone, PersistentVolumeReclaimPolicy: "Delete", StorageClassName: "secret-class",
				CSI: &abi.CSIVolumeSource{Driver: "csi.example.com", VolumeHandle: "h-1"}},
			Status: abi.PersistentVolumeStatus{Phase: "Released"}},
		Drivers: []string{"csi.example.com"},
	}}
	partition := int32(1)
	pvc, sts, pv := abi.KindOf(abi.KindPersistentVolumeClaim).Resource, abi.KindOf(abi.KindStatefulSet).Resource, abi.KindOf(abi.KindPersistentVolume).Resource
	tests := []struct {
		name     string
		req      *abi.ReconcileRequest
		granted  []abi.Capability
		action   abi.Action
		deletes  bool // a backing volume is deleted
		wantVerb string
		// errOK: the action fails, as it should (a refusal), or because
		// the fake cannot serve it (a server-side apply) after the request
		// was recorded.
		errOK bool
	}{
		{"owner reference to a pod", setReq, []abi.Capability{{Action: abi.ActionUpdateOwnerReferences, Resources: []string{pvc}}},
			abi.Action{Type: abi.ActionUpdateOwnerReferences, Target: ref(abi.KindPersistentVolumeClaim, claim),
				OwnerReferences: &abi.OwnerReferencesChange{Add: []abi.OwnerReference{{APIVersion: "v1", Kind: abi.KindPod, Name: "web-0", UID: "pod-uid", Controller: true}}}}, false, "patch", false},
		{"add finalizer", setReq, []abi.Capability{{Action: abi.ActionAddFinalizer, Resources: []string{pvc}}},
			abi.Action{Type: abi.ActionAddFinalizer, Target: ref(abi.KindPersistentVolumeClaim, claim), Finalizer: "example.com/f"}, false, "patch", false},
		{"delete claim", setReq, []abi.Capability{{Action: abi.ActionDeleteObject, Resources: []string{pvc}}},
			abi.Action{Type: abi.ActionDeleteObject, Target: ref(abi.KindPersistentVolumeClaim, claim)}, false, "delete", false},
		{"apply claim", setReq, []abi.Capability{{Action: abi.ActionApplyClaim, Resources: []string{pvc}}},
			abi.Action{Type: abi.ActionApplyClaim, Target: ref(abi.KindPersistentVolumeClaim, claim), Claim: &abi.ClaimApply{Labels: map[string]string{"a": "b"}}}, false, "patch", true},
		{"set partition", setReq, []abi.Capability{{Action: abi.ActionSetPartition, Resources: []string{sts}}},
			abi.Action{Type: abi.ActionSetPartition, Target: ref(abi.KindStatefulSet, set), Partition: &partition}, false, "patch", false},
		{"claim update status", setReq, []abi.Capability{{Action: abi.ActionUpdateClaimUpdateStatus, Resources: []string{"volumeclaimupdates"}}},
			abi.Action{Type: abi.ActionUpdateClaimUpdateStatus, Target: ref(abi.KindVolumeClaimUpdate, update),
				ClaimUpdateStatus: &abi.VolumeClaimUpdateStatus{ObservedGeneration: 1}}, false, "patch", false},
		{"event on the set", setReq, []abi.Capability{{Action: abi.ActionEvent, Resources: []string{sts}}},
			abi.Action{Type: abi.ActionEvent, Target: ref(abi.KindStatefulSet, set), Event: &abi.Event{Type: abi.EventWarning, Reason: "R", Message: "m"}}, false, "create", false},
		{"refused action, recorded on the set", setReq, []abi.Capability{},
			abi.Action{Type: abi.ActionDeleteObject, Target: ref(abi.KindPersistentVolumeClaim, claim)}, false, "create", true},
		{"refused action, recorded on the volume", volReq, []abi.Capability{},
			abi.Action{Type: abi.ActionDeleteObject, Target: ref(abi.KindPersistentVolume, volume)}, false, "create", true},
		{"remove finalizer of a volume", volReq, []abi.Capability{{Action: abi.ActionRemoveFinalizer, Resources: []string{pv}}},
			abi.Action{Type: abi.ActionRemoveFinalizer, Target: ref(abi.KindPersistentVolume, volume), Finalizer: actions.FinalizerExternalProvisioner}, false, "patch", false},
		{"delete a backing volume, with its provisioner secret", volReq, []abi.Capability{{Action: abi.ActionDeleteVolume}},
			abi.Action{Type: abi.ActionDeleteVolume, Target: ref(abi.KindPersistentVolume, volume), Volume: &abi.VolumeDelete{Driver: "csi.example.com", VolumeHandle: "h-1"}}, true, "get", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			client, dyn := fakes(set, pod, claim, update, class, volume)
			events := kube.NewEventSink(ctx, client, 0)
			deleter := &recordingDeleter{secret: kube.SecretGetter(client)}
			e := &actions.Executor{Cluster: &kube.Cluster{Dynamic: dyn, Events: events}, Volumes: deleter, Module: "m"}
			_, err := e.Execute(ctx, abi.Manifest{Name: "m", Subject: tt.req.Subject, Capabilities: tt.granted}, tt.req, &abi.Result{Actions: []abi.Action{tt.action}})
			events.Shutdown()
			if !tt.errOK {
				require.NoError(t, err)
			}
			require.Equal(t, tt.deletes, deleter.called)

			m := rbac.Module{Name: "m", Subject: tt.req.Subject, Hooks: []string{abi.HookReconcile}, Granted: tt.granted}
			if tt.req.Subject == abi.SubjectStatefulSet {
				m.Namespaces = []string{ns}
			}
			r := derive(t, rbac.Host{Modules: []rbac.Module{m}, CSIDrivers: true})
			cs := calls(client.Actions(), dyn.Actions())
			requireCovered(t, r, cs)
			require.True(t, slices.ContainsFunc(cs, func(c call) bool { return c.verb == tt.wantVerb }), "no %s among %v", tt.wantVerb, cs)
			if tt.deletes {
				require.True(t, slices.ContainsFunc(cs, func(c call) bool { return c.resource == "secrets" }), "the Secret was not read: %v", cs)
			}
		})
	}
}

// The host's own calls: its Pod and ReplicaSet read to find the
// Deployment that owns its Lease, client-go's LeaseLock taking and renewing
// the leader Lease as that Deployment's, a Warning event on the host's Pod,
// the namespace informer of the admission webhook.
func TestHostCallsAreCovered(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client, _ := fakes()
	yes := true
	_, err := client.AppsV1().ReplicaSets("kp").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "kubeplug-5d8f", UID: "rs-uid",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "kubeplug", UID: "d-uid", Controller: &yes}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = client.CoreV1().Pods("kp").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kubeplug-5d8f-x2x9z",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "kubeplug-5d8f", UID: "rs-uid", Controller: &yes}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	client.ClearActions()
	owner, err := kube.InstallOwner(ctx, client, "kp", "kubeplug-5d8f-x2x9z")
	require.NoError(t, err)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: "kp", Name: "kubeplug"},
		Client:     kube.OwnedLeases(client.CoordinationV1(), owner),
		LockConfig: resourcelock.ResourceLockConfig{Identity: "me"},
	}
	_, _, err = lock.Get(ctx)
	require.Error(t, err, "no Lease yet")
	rec := resourcelock.LeaderElectionRecord{HolderIdentity: "me", LeaseDurationSeconds: 15}
	require.NoError(t, lock.Create(ctx, rec))
	require.NoError(t, lock.Update(ctx, rec))

	events := kube.NewEventSink(ctx, client, 0)
	require.NoError(t, events.Record(abi.ObjectRef{Kind: abi.KindPod, Namespace: "kp", Name: "kubeplug-0"}, abi.EventWarning, "ModuleRejected", "m", "host"))
	events.Shutdown()

	factory := informers.NewSharedInformerFactory(client, 0)
	factory.Core().V1().Namespaces().Informer()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	cancel()
	factory.Shutdown()

	admit := rbac.Module{Name: "policy", Subject: abi.SubjectStatefulSet, Hooks: []string{abi.HookAdmit}}
	r := derive(t, rbac.Host{Modules: []rbac.Module{admit}, PodNamespace: "kp", Lease: &rbac.Ref{Namespace: "kp", Name: "kubeplug"}})
	cs := calls(client.Actions())
	requireCovered(t, r, cs)
	for _, want := range []string{"pods", "replicasets", "leases", "events", "namespaces"} {
		require.True(t, slices.ContainsFunc(cs, func(c call) bool { return c.resource == want }), "no call on %s: %v", want, cs)
	}
}

// The webhook certificate's calls: the Secret read, created, then (on a
// second replica's sync) read again; the webhook configurations read and
// patched; all by the names Derive is given.
func TestWebhookCertCallsAreCovered(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "kubeplug", ResourceVersion: "1"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "m.admit.kubeplug.dev"}}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "kubeplug", ResourceVersion: "1"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "v.admit.kubeplug.dev"}}})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := &webhookcert.Manager{Client: client, Namespace: "kp", Name: "webhook-cert", WebhookConfig: "kubeplug",
		Issuer: &webhookcert.Issuer{DNSNames: webhookcert.ServiceDNSNames("kp", "webhook"), Lifetimes: webhookcert.DefaultLifetimes(),
			Now: func() time.Time { return now }}}
	_, err := m.Sync(ctx)
	require.NoError(t, err)
	// A year on the serving certificate is renewed: an update.
	now = now.Add(300 * 24 * time.Hour)
	_, err = m.Sync(ctx)
	require.NoError(t, err)

	r := derive(t, rbac.Host{PodNamespace: "kp", WebhookCertSecret: &rbac.Ref{Namespace: "kp", Name: "webhook-cert"},
		WebhookConfigs: rbac.WebhookConfigs{Mutating: "kubeplug", Validating: "kubeplug"}})
	cs := calls(client.Actions())
	requireCovered(t, r, cs)
	for _, want := range []string{"create", "update", "patch"} {
		require.True(t, slices.ContainsFunc(cs, func(c call) bool { return c.verb == want }), "no %s among %v", want, cs)
	}
}
