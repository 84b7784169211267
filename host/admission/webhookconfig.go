package admission

import (
	"fmt"
	"net/url"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Endpoint is where the API server reaches the host's webhook server:
// through a Service, or at a URL; CABundle is the PEM of the CA that signed
// the serving certificate.
type Endpoint struct {
	// Service names the Service in front of the host; Port defaults to 443.
	ServiceNamespace, ServiceName string
	ServicePort                   int32
	// URL is the base URL ("https://host:port") when there is no Service.
	URL      string
	CABundle []byte
}

// WebhookModule is an admitting module as its webhook configuration needs
// it: the module, and the namespaces its entry limits it to (empty: all).
type WebhookModule struct {
	*Module
	Namespaces []string
}

// WebhookConfigurations returns the configurations that register mods with
// the API server under name: one mutating webhook per module whose manifest
// says admission.mutates, one validating webhook per other module; a
// configuration with no webhook is nil. Rules and matchConditions come
// from each module's manifest, failurePolicy and timeoutSeconds from its
// entry; sideEffects is None (modules are pure functions of their input) and
// a module limited to namespaces gets a namespaceSelector on their names.
func WebhookConfigurations(name string, mods []WebhookModule, ep Endpoint) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	var mutating []admissionregistrationv1.MutatingWebhook
	var validating []admissionregistrationv1.ValidatingWebhook
	for _, m := range mods {
		man := m.Admitter.Manifest()
		if man.Admission == nil {
			continue // no admit hook
		}
		client, err := ep.clientConfig(m.Name)
		if err != nil {
			return nil, nil, err
		}
		rules := make([]admissionregistrationv1.RuleWithOperations, len(man.Admission.Rules))
		for i, r := range man.Admission.Rules {
			rules[i] = admissionregistrationv1.RuleWithOperations{Rule: admissionregistrationv1.Rule{
				APIGroups: r.APIGroups, APIVersions: r.APIVersions, Resources: r.Resources,
			}}
			for _, op := range r.Operations {
				rules[i].Operations = append(rules[i].Operations, admissionregistrationv1.OperationType(op))
			}
			if r.Scope != "" {
				scope := admissionregistrationv1.ScopeType(r.Scope)
				rules[i].Scope = &scope
			}
		}
		var conditions []admissionregistrationv1.MatchCondition
		for _, c := range man.Admission.MatchConditions {
			conditions = append(conditions, admissionregistrationv1.MatchCondition{Name: c.Name, Expression: c.Expression})
		}
		policy := admissionregistrationv1.FailurePolicyType(m.failurePolicy())
		sideEffects := admissionregistrationv1.SideEffectClassNone
		timeout := int32(m.timeout().Seconds())
		var nsSelector *metav1.LabelSelector
		if len(m.Namespaces) > 0 {
			nsSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: m.Namespaces,
			}}}
		}
		webhook := m.Name + ".admit.kubeplug.dev"
		versions := []string{"v1"}
		if man.Admission.Mutates {
			never := admissionregistrationv1.NeverReinvocationPolicy
			mutating = append(mutating, admissionregistrationv1.MutatingWebhook{
				Name: webhook, ClientConfig: client, Rules: rules, FailurePolicy: &policy, SideEffects: &sideEffects,
				TimeoutSeconds: &timeout, AdmissionReviewVersions: versions, MatchConditions: conditions,
				NamespaceSelector: nsSelector, ReinvocationPolicy: &never,
			})
			continue
		}
		validating = append(validating, admissionregistrationv1.ValidatingWebhook{
			Name: webhook, ClientConfig: client, Rules: rules, FailurePolicy: &policy, SideEffects: &sideEffects,
			TimeoutSeconds: &timeout, AdmissionReviewVersions: versions, MatchConditions: conditions,
			NamespaceSelector: nsSelector,
		})
	}
	var mc *admissionregistrationv1.MutatingWebhookConfiguration
	var vc *admissionregistrationv1.ValidatingWebhookConfiguration
	meta := metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "kubeplug"}}
	if len(mutating) > 0 {
		mc = &admissionregistrationv1.MutatingWebhookConfiguration{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
			ObjectMeta: meta, Webhooks: mutating,
		}
	}
	if len(validating) > 0 {
		vc = &admissionregistrationv1.ValidatingWebhookConfiguration{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
			ObjectMeta: meta, Webhooks: validating,
		}
	}
	return mc, vc, nil
}

// clientConfig is how the API server reaches module name's webhook.
func (ep Endpoint) clientConfig(name string) (admissionregistrationv1.WebhookClientConfig, error) {
	path := PathPrefix + name
	cc := admissionregistrationv1.WebhookClientConfig{CABundle: ep.CABundle}
	if ep.ServiceName != "" {
		port := ep.ServicePort
		if port == 0 {
			port = 443
		}
		cc.Service = &admissionregistrationv1.ServiceReference{Namespace: ep.ServiceNamespace, Name: ep.ServiceName, Path: &path, Port: &port}
		return cc, nil
	}
	u, err := url.Parse(ep.URL)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return cc, fmt.Errorf("webhook URL %q: want https://HOST[:PORT][/PATH], with no query or fragment (the API server calls https only)", ep.URL)
	}
	s := strings.TrimSuffix(ep.URL, "/") + path
	cc.URL = &s
	return cc, nil
}
