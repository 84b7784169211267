package webhookcert_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeplug/kubeplug/host/webhookcert"
)

func webhookConfigs() []k8sruntime.Object {
	return []k8sruntime.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "kubeplug", ResourceVersion: "1"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "a.admit.kubeplug.dev"}, {Name: "b.admit.kubeplug.dev"}}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "kubeplug", ResourceVersion: "1"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "c.admit.kubeplug.dev"}}},
	}
}

func manager(client *fake.Clientset, c *clock) *webhookcert.Manager {
	return &webhookcert.Manager{Client: client, Namespace: "kp", Name: "webhook-cert", WebhookConfig: "kubeplug", Issuer: newIssuer(c)}
}

// served is the certificate m serves.
func served(t *testing.T, m *webhookcert.Manager) *x509.Certificate {
	t.Helper()
	c, err := m.GetCertificate(nil)
	require.NoError(t, err)
	return c.Leaf
}

// bundles returns the caBundle of every webhook of both configurations.
func bundles(t *testing.T, client *fake.Clientset) [][]byte {
	t.Helper()
	ctx := context.Background()
	mc, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "kubeplug", metav1.GetOptions{})
	require.NoError(t, err)
	vc, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "kubeplug", metav1.GetOptions{})
	require.NoError(t, err)
	var out [][]byte
	for _, w := range mc.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	for _, w := range vc.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out
}

// Two replicas agree on one bundle: the first creates the Secret, the
// second serves what it holds; every webhook's caBundle is its ca.crt.
func TestReplicasShareOneBundle(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	client := fake.NewClientset(webhookConfigs()...)
	a, b := manager(client, c), manager(client, c)
	_, err := a.Sync(ctx)
	require.NoError(t, err)
	_, err = b.Sync(ctx)
	require.NoError(t, err)
	require.Equal(t, served(t, a).Raw, served(t, b).Raw)

	s, err := client.CoreV1().Secrets("kp").Get(ctx, "webhook-cert", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, corev1.SecretTypeTLS, s.Type)
	require.Equal(t, webhookcert.LabelValue, s.Labels[webhookcert.LabelKey])
	for _, bundle := range bundles(t, client) {
		require.Equal(t, s.Data[webhookcert.KeyCA], bundle)
	}
	creates := 0
	for _, act := range client.Actions() {
		if act.GetVerb() == "create" {
			creates++
		}
	}
	require.Equal(t, 1, creates)
}

// With an Owner, the Secret is created owned by it, so that the garbage
// collector removes the CA's key with the install; a Secret an older host
// made without one is given it, and keeps its bundle and its other owners.
func TestSecretOwnedByTheInstall(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "kubeplug", UID: "deploy-uid"}
	client := fake.NewClientset(webhookConfigs()...)
	m := manager(client, c)
	m.Owner = &owner
	_, err := m.Sync(ctx)
	require.NoError(t, err)
	s, err := client.CoreV1().Secrets("kp").Get(ctx, "webhook-cert", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, []metav1.OwnerReference{owner}, s.OwnerReferences)

	old := manager(fake.NewClientset(webhookConfigs()...), c)
	_, err = old.Sync(ctx)
	require.NoError(t, err)
	made, err := old.Client.CoreV1().Secrets("kp").Get(ctx, "webhook-cert", metav1.GetOptions{})
	require.NoError(t, err)
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "x-uid"}
	made.OwnerReferences = []metav1.OwnerReference{other}
	_, err = old.Client.CoreV1().Secrets("kp").Update(ctx, made, metav1.UpdateOptions{})
	require.NoError(t, err)
	m = manager(old.Client.(*fake.Clientset), c)
	m.Owner = &owner
	_, err = m.Sync(ctx)
	require.NoError(t, err)
	s, err = m.Client.CoreV1().Secrets("kp").Get(ctx, "webhook-cert", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, []metav1.OwnerReference{other, owner}, s.OwnerReferences)
	require.Equal(t, made.Data, s.Data, "the bundle is kept")
	require.Equal(t, served(t, old).Raw, served(t, m).Raw)
}

// A replica that loses the race to create the Secret serves the winner's.
func TestLoserTakesTheWinnersBundle(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	client := fake.NewClientset(webhookConfigs()...)
	winner := manager(fake.NewClientset(), c)
	_, err := winner.Sync(ctx)
	require.NoError(t, err)
	won, err := winner.Client.CoreV1().Secrets("kp").Get(ctx, "webhook-cert", metav1.GetOptions{})
	require.NoError(t, err)
	// The winner's create lands between the loser's read and its create.
	client.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		require.NoError(t, client.Tracker().Add(won.DeepCopy()))
		return true, nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "secrets"}, "webhook-cert")
	})
	loser := manager(client, c)
	_, err = loser.Sync(ctx)
	require.NoError(t, err)
	require.Equal(t, served(t, winner).Raw, served(t, loser).Raw)
}

// A rotation reaches the Secret and the caBundles: after the CA's 2/3, both
// CAs are trusted, and the certificate served still verifies.
func TestRotationPatchesCABundle(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	client := fake.NewClientset(webhookConfigs()...)
	m := manager(client, c)
	recheck, err := m.Sync(ctx)
	require.NoError(t, err)
	first := bundles(t, client)[0]
	for range 100 {
		c.t = recheck.Add(time.Second)
		if recheck, err = m.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(bundles(t, client)[0], first) {
			break
		}
	}
	now := bundles(t, client)[0]
	require.NotEqual(t, first, now, "the caBundle never changed")
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(now))
	_, err = served(t, m).Verify(x509.VerifyOptions{Roots: pool, DNSName: "webhook.kp.svc", CurrentTime: c.t})
	require.NoError(t, err)
	require.Greater(t, bytes.Count(now, []byte("BEGIN CERTIFICATE")), 1, "the new CA joins the old one")
}

// A Secret of that name that is not the host's is left alone.
func TestForeignSecretRefused(t *testing.T) {
	for name, s := range map[string]*corev1.Secret{
		"opaque":          {Type: corev1.SecretTypeOpaque},
		"tls, unlabelled": {Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": []byte("x")}},
	} {
		t.Run(name, func(t *testing.T) {
			s.ObjectMeta = metav1.ObjectMeta{Namespace: "kp", Name: "webhook-cert"}
			client := fake.NewClientset(s)
			_, err := manager(client, &clock{t: time.Now()}).Sync(context.Background())
			require.ErrorContains(t, err, "not the host's")
			got, err := client.CoreV1().Secrets("kp").Get(context.Background(), "webhook-cert", metav1.GetOptions{})
			require.NoError(t, err)
			require.Equal(t, s.Data, got.Data)
		})
	}
	// An empty one, created in advance for the host, is taken.
	empty := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kp", Name: "webhook-cert"}, Type: corev1.SecretTypeTLS}
	_, err := manager(fake.NewClientset(empty), &clock{t: time.Now()}).Sync(context.Background())
	require.NoError(t, err)
}
