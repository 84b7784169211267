package admission_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/admission"
)

func TestWebhookConfigurations(t *testing.T) {
	rule := abi.AdmissionRule{Operations: []string{"CREATE", "UPDATE"}, APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"statefulsets"}, Scope: "Namespaced"}
	mutating := &fakeAdmitter{mutates: true}
	validating := &fakeAdmitter{}
	mods := []admission.WebhookModule{
		{Module: &admission.Module{Name: "mut", Admitter: withRules(mutating, rule)}, Namespaces: []string{"a", "b"}},
		{Module: &admission.Module{Name: "val", Admitter: withRules(validating, rule), FailurePolicy: admission.Ignore, Timeout: 3 * time.Second}},
		{Module: &admission.Module{Name: "reconciler", Admitter: &fakeAdmitter{}}}, // no admission: not registered
	}
	mc, vc, _, err := admission.WebhookConfigurations("kubeplug", mods, admission.Endpoint{ServiceNamespace: "sys", ServiceName: "hook", CABundle: []byte("pem")})
	require.NoError(t, err)
	require.Len(t, mc.Webhooks, 1)
	require.Len(t, vc.Webhooks, 1)
	require.Equal(t, "kubeplug", mc.Name)
	require.Equal(t, "MutatingWebhookConfiguration", mc.Kind)

	m := mc.Webhooks[0]
	require.Equal(t, "mut.admit.kubeplug.dev", m.Name)
	require.Equal(t, "/admit/mut", *m.ClientConfig.Service.Path)
	require.Equal(t, int32(443), *m.ClientConfig.Service.Port)
	require.Equal(t, []byte("pem"), m.ClientConfig.CABundle)
	require.Equal(t, admissionregistrationv1.Fail, *m.FailurePolicy)
	require.Equal(t, int32(10), *m.TimeoutSeconds)
	require.Equal(t, admissionregistrationv1.SideEffectClassNone, *m.SideEffects)
	require.Equal(t, []string{"v1"}, m.AdmissionReviewVersions)
	require.Equal(t, []string{"a", "b"}, m.NamespaceSelector.MatchExpressions[0].Values)
	require.Equal(t, []admissionregistrationv1.OperationType{"CREATE", "UPDATE"}, m.Rules[0].Operations)
	require.Equal(t, admissionregistrationv1.NamespacedScope, *m.Rules[0].Scope)
	require.Equal(t, "c", m.MatchConditions[0].Name)

	v := vc.Webhooks[0]
	require.Equal(t, admissionregistrationv1.Ignore, *v.FailurePolicy)
	require.Equal(t, int32(3), *v.TimeoutSeconds)
	require.Nil(t, v.NamespaceSelector)

	_, _, _, err = admission.WebhookConfigurations("kubeplug", mods[:1], admission.Endpoint{URL: "http://127.0.0.1:1"})
	require.ErrorContains(t, err, "want https://HOST[:PORT]")
	mc, _, _, err = admission.WebhookConfigurations("kubeplug", mods[:1], admission.Endpoint{URL: "https://127.0.0.1:9443/"})
	require.NoError(t, err)
	require.Equal(t, "https://127.0.0.1:9443/admit/mut", *mc.Webhooks[0].ClientConfig.URL)
}

// withRules gives a fake admitter an admission section.
func withRules(f *fakeAdmitter, r abi.AdmissionRule) admission.Admitter {
	f.rules = []abi.AdmissionRule{r}
	return f
}

// The templateupdate module's admission (a mutating CREATE rule on core/v1
// persistentvolumeclaims) becomes one mutating webhook for claims and no
// validating one.
func TestWebhookConfigurationForTemplateUpdate(t *testing.T) {
	rule := abi.AdmissionRule{Operations: []string{"CREATE"}, APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"persistentvolumeclaims"}}
	tu := &fakeAdmitter{mutates: true, rules: []abi.AdmissionRule{rule}}
	mods := []admission.WebhookModule{{Module: &admission.Module{Name: "templateupdate", Admitter: tu, Granted: claimUpdateGrant, FailurePolicy: admission.Ignore}}}
	mc, vc, _, err := admission.WebhookConfigurations("kubeplug", mods, admission.Endpoint{ServiceNamespace: "kubeplug-system", ServiceName: "kubeplug-webhook", CABundle: []byte("pem")})
	require.NoError(t, err)
	require.Nil(t, vc, "no validating configuration")
	require.Len(t, mc.Webhooks, 1)
	w := mc.Webhooks[0]
	require.Equal(t, "templateupdate.admit.kubeplug.dev", w.Name)
	require.Equal(t, "/admit/templateupdate", *w.ClientConfig.Service.Path)
	require.Equal(t, admissionregistrationv1.Ignore, *w.FailurePolicy)
	require.Len(t, w.Rules, 1)
	require.Equal(t, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, w.Rules[0].Operations)
	require.Equal(t, []string{""}, w.Rules[0].APIGroups)
	require.Equal(t, []string{"v1"}, w.Rules[0].APIVersions)
	require.Equal(t, []string{"persistentvolumeclaims"}, w.Rules[0].Resources)
}

// A registration of every resource of a group is refused under Fail and
// warned of under Ignore; one that reaches what the host withholds is
// refused whatever the policy.
func TestWebhookConfigurationsRefuseWideRegistrations(t *testing.T) {
	rule := func(groups []string, resources ...string) abi.AdmissionRule {
		return abi.AdmissionRule{Operations: []string{"CREATE"}, APIGroups: groups, APIVersions: []string{"*"}, Resources: resources}
	}
	ep := admission.Endpoint{URL: "https://127.0.0.1:9443"}
	for _, tc := range []struct {
		name    string
		rule    abi.AdmissionRule
		policy  string
		err     string
		warning string
	}{
		{"named resources", rule([]string{"*"}, "statefulsets"), "", "", ""},
		{"every resource, Fail", rule([]string{"apps"}, "*"), "", `admission.rules[0] registers every resource of the API groups [apps] with failurePolicy Fail`, ""},
		{"every subresource, Fail", rule([]string{"apps"}, "*/status"), "", "with failurePolicy Fail", ""},
		{"every resource, Ignore", rule([]string{"apps"}, "*"), admission.Ignore, "", `admission.rules[0] registers every resource of the API groups [apps]`},
		{"secrets, Ignore", rule([]string{""}, "secrets"), admission.Ignore, "registers secrets, which the host never sends to a module", ""},
		{"everything, Ignore", rule([]string{"*"}, "*/*"), admission.Ignore, "which the host never sends to a module", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mods := []admission.WebhookModule{{Module: &admission.Module{Name: "m", Admitter: withRules(&fakeAdmitter{}, tc.rule), FailurePolicy: tc.policy}}}
			_, vc, warnings, err := admission.WebhookConfigurations("kubeplug", mods, ep)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, vc)
			if tc.warning == "" {
				require.Empty(t, warnings)
				return
			}
			require.Len(t, warnings, 1)
			require.Contains(t, warnings[0], tc.warning)
		})
	}
}
