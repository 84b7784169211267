package admission

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeplug/kubeplug/abi"
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
//
// A rule that registers every resource of a group ("*") is refused with
// failurePolicy Fail, which would refuse every write of the group in the
// cluster while the host is down or busy, and returned as a warning with
// Ignore; a rule that reaches what the host withholds (abi.Withheld) is
// refused (the host's load refuses it first).
func WebhookConfigurations(name string, mods []WebhookModule, ep Endpoint) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, []string, error) {
	var mutating []admissionregistrationv1.MutatingWebhook
	var validating []admissionregistrationv1.ValidatingWebhook
	var warnings []string
	for _, m := range mods {
		man := m.Admitter.Manifest()
		if man.Admission == nil {
			continue // no admit hook
		}
		client, err := ep.clientConfig(m.Name)
		if err != nil {
			return nil, nil, nil, err
		}
		for i, r := range man.Admission.Rules {
			warning, err := m.registers(i, r)
			if err != nil {
				return nil, nil, nil, err
			}
			if warning != "" {
				warnings = append(warnings, warning)
			}
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
	return mc, vc, warnings, nil
}

// registers checks rule i of m's manifest as a registration: an error for
// one never to print, a warning for one to think twice about.
func (m WebhookModule) registers(i int, r abi.AdmissionRule) (warning string, err error) {
	if w, ok := r.Withholds(); ok {
		return "", fmt.Errorf("module %q: admission.rules[%d] registers %s, which the host never sends to a module: it cannot be registered", m.Name, i, w.Resource)
	}
	if !slices.ContainsFunc(r.Resources, func(res string) bool { return strings.HasPrefix(res, "*") }) {
		return "", nil
	}
	groups := strings.Join(r.APIGroups, ", ")
	if m.failurePolicy() == Fail {
		return "", fmt.Errorf("module %q: admission.rules[%d] registers every resource of the API groups [%s] with failurePolicy Fail: "+
			"while the host is down or busy, the API server would refuse every such write in the cluster; "+
			"have the module name its resources, or set admission: {failurePolicy: Ignore} in its entry", m.Name, i, groups)
	}
	return fmt.Sprintf("module %q: admission.rules[%d] registers every resource of the API groups [%s]: the API server calls the host for each such write in the cluster",
		m.Name, i, groups), nil
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
