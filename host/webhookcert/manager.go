package webhookcert

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Label marks the Secret as the host's: the Manager overwrites no Secret
// without it, unless the Secret is empty (created in advance for it).
const (
	LabelKey   = "app.kubernetes.io/managed-by"
	LabelValue = "kubeplug"
)

// attempts bounds the read-decide-write rounds of one Sync that lose a race
// with another replica.
const attempts = 5

// Manager keeps the webhook's certificate in the Secret, the caBundle of the
// webhook configurations equal to the Secret's ca.crt, and serves the
// Secret's serving certificate.
type Manager struct {
	Client kubernetes.Interface
	// Namespace and Name name the Secret.
	Namespace, Name string
	// WebhookConfig names the MutatingWebhookConfiguration and the
	// ValidatingWebhookConfiguration whose caBundle the Manager patches
	// (kubeplug webhook-config --name); either may not exist.
	WebhookConfig string
	Issuer        *Issuer
	Log           *slog.Logger
	// Owner, when set, is given to the Secret as an owner reference (the
	// Deployment that runs the host, kube.InstallOwner), so that removing
	// the install removes the CA's key with it. A Secret made before the
	// Manager had one gets it at the next Sync.
	Owner *metav1.OwnerReference

	cert atomic.Pointer[tls.Certificate]
	stop context.CancelFunc
	done chan struct{}
}

// Start makes sure the Secret holds a current bundle and serves it, then
// keeps it current in the background until ctx ends or Close.
func (m *Manager) Start(ctx context.Context) error {
	if err := m.Issuer.Lifetimes.Validate(); err != nil {
		return err
	}
	recheck, err := m.Sync(ctx)
	if err != nil {
		return err
	}
	ctx, m.stop = context.WithCancel(ctx)
	m.done = make(chan struct{})
	go m.run(ctx, recheck)
	return nil
}

// Close stops keeping the certificate current.
func (m *Manager) Close() {
	if m.stop != nil {
		m.stop()
		<-m.done
	}
}

// GetCertificate is tls.Config.GetCertificate.
func (m *Manager) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := m.cert.Load(); c != nil {
		return c, nil
	}
	return nil, errors.New("no webhook certificate yet")
}

// run syncs again at each recheck, and every Propagation/2 to see what
// another replica wrote; after a failure, sooner, backing off.
func (m *Manager) run(ctx context.Context, recheck time.Time) {
	defer close(m.done)
	every := m.Issuer.Lifetimes.Propagation / 2
	backoff := time.Second
	for {
		wait := min(time.Until(recheck), every)
		t := time.NewTimer(max(wait, 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		next, err := m.Sync(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if m.Log != nil {
				m.Log.Warn("webhook certificate: will retry", "secret", m.Namespace+"/"+m.Name, "in", backoff, "err", err)
			}
			recheck = time.Now().Add(backoff)
			backoff = min(2*backoff, every)
			continue
		}
		recheck, backoff = next, time.Second
	}
}

// Sync reads the Secret, writes what the Issuer says it should hold (create
// if absent, update at the resourceVersion read; a lost race reads again),
// serves its certificate and patches the caBundles. It returns when it
// should run again at the latest.
func (m *Manager) Sync(ctx context.Context) (time.Time, error) {
	log := m.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	secrets := m.Client.CoreV1().Secrets(m.Namespace)
	where := m.Namespace + "/" + m.Name
	for range attempts {
		s, err := secrets.Get(ctx, m.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			s = nil
		case err != nil:
			return time.Time{}, fmt.Errorf("webhook certificate: read Secret %s: %w", where, err)
		}
		var cur *Bundle
		if s != nil {
			if err := ours(s); err != nil {
				return time.Time{}, fmt.Errorf("webhook certificate: Secret %s: %w", where, err)
			}
			if len(s.Data) > 0 {
				if cur, err = Parse(s.Data); err != nil {
					log.Warn("webhook certificate: the Secret holds no usable bundle; making a new CA", "secret", where, "err", err)
				}
			}
		}
		next, changed, recheck, err := m.Issuer.Next(cur)
		if err != nil {
			return time.Time{}, err
		}
		owners, unowned := m.owners(s)
		if changed || unowned {
			data, err := next.Data()
			if err != nil {
				return time.Time{}, err
			}
			if s == nil {
				_, err = secrets.Create(ctx, &corev1.Secret{
					ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name, Labels: map[string]string{LabelKey: LabelValue}, OwnerReferences: owners},
					Type:       corev1.SecretTypeTLS, Data: data,
				}, metav1.CreateOptions{})
			} else {
				s = s.DeepCopy()
				s.Data, s.OwnerReferences = data, owners
				if s.Labels == nil {
					s.Labels = map[string]string{}
				}
				s.Labels[LabelKey] = LabelValue
				_, err = secrets.Update(ctx, s, metav1.UpdateOptions{}) // at s's resourceVersion
			}
			if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
				continue // another replica wrote first: take its bundle
			}
			if err != nil {
				return time.Time{}, fmt.Errorf("webhook certificate: write Secret %s: %w", where, err)
			}
			log.Info("webhook certificate: Secret written", "secret", where, "cas", len(next.CAs),
				"servingNotAfter", next.Serving.NotAfter, "recheck", recheck)
		}
		c := next.TLSCertificate()
		m.cert.Store(&c)
		return recheck, m.patchCABundles(ctx, log, next.TrustPEM())
	}
	return time.Time{}, fmt.Errorf("webhook certificate: Secret %s changed under every one of %d attempts", where, attempts)
}

// owners returns the owner references s should have (nil s: a Secret to
// create), and whether s lacks the Manager's Owner.
func (m *Manager) owners(s *corev1.Secret) ([]metav1.OwnerReference, bool) {
	var refs []metav1.OwnerReference
	if s != nil {
		refs = s.OwnerReferences
	}
	if m.Owner == nil || slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == m.Owner.UID }) {
		return refs, false
	}
	return append(slices.Clone(refs), *m.Owner), s != nil
}

// ours refuses a Secret the Manager must not overwrite.
func ours(s *corev1.Secret) error {
	if s.Type != corev1.SecretTypeTLS {
		return fmt.Errorf("it is of type %q, not %s: it is not the host's; name another with --webhook-cert-secret", s.Type, corev1.SecretTypeTLS)
	}
	if len(s.Data) > 0 && s.Labels[LabelKey] != LabelValue {
		return fmt.Errorf("it holds data and lacks the label %s=%s: it is not the host's; name another with --webhook-cert-secret, "+
			"or label it if the host may overwrite it", LabelKey, LabelValue)
	}
	return nil
}

// patchCABundles sets the caBundle of every webhook of the named webhook
// configurations to trust.
func (m *Manager) patchCABundles(ctx context.Context, log *slog.Logger, trust []byte) error {
	if m.WebhookConfig == "" {
		return nil
	}
	adm := m.Client.AdmissionregistrationV1()
	mutating := adm.MutatingWebhookConfigurations()
	validating := adm.ValidatingWebhookConfigurations()
	return errors.Join(
		patchCABundle(ctx, log, "MutatingWebhookConfiguration", m.WebhookConfig, trust, mutating.Get, mutating.Patch,
			func(c *admissionregistrationv1.MutatingWebhookConfiguration) (bundles [][]byte) {
				for _, w := range c.Webhooks {
					bundles = append(bundles, w.ClientConfig.CABundle)
				}
				return bundles
			}),
		patchCABundle(ctx, log, "ValidatingWebhookConfiguration", m.WebhookConfig, trust, validating.Get, validating.Patch,
			func(c *admissionregistrationv1.ValidatingWebhookConfiguration) (bundles [][]byte) {
				for _, w := range c.Webhooks {
					bundles = append(bundles, w.ClientConfig.CABundle)
				}
				return bundles
			}),
	)
}

// patchCABundle sets the caBundle of every webhook of the configuration
// called name to trust, by a JSON patch that first tests the
// resourceVersion read, so that it never overwrites webhooks it did not
// see. A configuration that does not exist (not applied yet) is left for
// a later sync.
func patchCABundle[T metav1.Object](ctx context.Context, log *slog.Logger, kind, name string, trust []byte,
	get func(context.Context, string, metav1.GetOptions) (T, error),
	patch func(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (T, error),
	bundles func(T) [][]byte) error {
	c, err := get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s %s: %w", kind, name, err)
	}
	ops := []map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": c.GetResourceVersion()}}
	for i, b := range bundles(c) {
		if !bytes.Equal(b, trust) {
			ops = append(ops, map[string]any{"op": "add", "path": fmt.Sprintf("/webhooks/%d/clientConfig/caBundle", i), "value": base64.StdEncoding.EncodeToString(trust)})
		}
	}
	if len(ops) == 1 {
		return nil
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if _, err := patch(ctx, name, types.JSONPatchType, data, metav1.PatchOptions{FieldManager: LabelValue}); err != nil {
		return fmt.Errorf("patch the caBundle of %s %s: %w", kind, name, err)
	}
	log.Info("webhook certificate: caBundle patched", "kind", kind, "name", name, "webhooks", len(ops)-1)
	return nil
}
