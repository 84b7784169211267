package policy

import (
	"slices"
	"strings"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// TestDeletionSecrets checks the deletion secret as external-provisioner
// resolves it: through the whole module, a deleteVolume that names no
// secret (the host resolves it and ignores a module's) or a Warning event
// and no deletion; and the secret the module's check resolves, which is
// the one the host will pass.
func TestDeletionSecrets(t *testing.T) {
	h := sdktest.New(t)
	params := func(kv ...string) *abi.StorageClass {
		sc := sdktest.StorageClass("fast", driver)
		sc.Parameters = map[string]string{"type": "ssd"}
		for i := 0; i < len(kv); i += 2 {
			sc.Parameters[kv[i]] = kv[i+1]
		}
		return sc
	}
	const (
		name   = ParamProvisionerSecretName
		ns     = ParamProvisionerSecretNamespace
		oldNm  = ParamDeprecatedSecretName
		oldNs  = ParamDeprecatedSecretNamespace
		defNm  = ParamDefaultSecretName
		defNs  = ParamDefaultSecretNamespace
		noneOK = ""
	)
	tests := []struct {
		name  string
		pv    *abi.PersistentVolume
		class *abi.StorageClass
		// secret is "namespace/name", noneOK for none; err, when set, is
		// a part of the Warning event's message.
		secret string
		err    string
	}{
		{"no secret parameters", csiPV(released), params(), noneOK, ""},
		{"no StorageClass: delete without secrets", csiPV(released), nil, noneOK, ""},
		{"fixed provisioner secret", csiPV(released), params(name, "key", ns, "storage"), "storage/key", ""},
		{"templates", csiPV(released), params(name, "${pvc.name}-${pv.name}", ns, "${pvc.namespace}"), "default/data-db-0-pv-1", ""},
		{"namespace from the volume's name", csiPV(released), params(name, "key", ns, "ns-${pv.name}"), "ns-pv-1/key", ""},
		{"deprecated keys", csiPV(released), params(oldNm, "old", oldNs, "storage"), "storage/old", ""},
		{"current name with deprecated namespace", csiPV(released), params(name, "key", oldNs, "storage"), "storage/key", ""},
		{"default keys when no provisioner secret", csiPV(released), params(defNm, "any", defNs, "kube-system"), "kube-system/any", ""},
		{"provisioner secret wins over the default", csiPV(released), params(name, "key", ns, "storage", defNm, "any", defNs, "kube-system"), "storage/key", ""},
		{"beta class annotation wins", csiPV(released, sdktest.Annotations(AnnBetaStorageClass, "fast"), sdktest.StorageClassName("slow")), params(name, "key", ns, "storage"), "storage/key", ""},
		{"class named by spec but annotation names another", csiPV(released, sdktest.Annotations(AnnBetaStorageClass, "gone")), params(name, "key", ns, "storage"), noneOK, ""},
		{"PV annotations win over the class", csiPV(released, sdktest.Annotations(AnnDeletionSecretName, "recorded", AnnDeletionSecretNamespace, "vault")), params(name, "key", ns, "storage"), "vault/recorded", ""},
		{"PV annotations both empty: no secret", csiPV(released, sdktest.Annotations(AnnDeletionSecretName, "", AnnDeletionSecretNamespace, "")), params(name, "key", ns, "storage"), noneOK, ""},
		{"PV annotation name only: the class decides", csiPV(released, sdktest.Annotations(AnnDeletionSecretName, "recorded")), params(name, "key", ns, "storage"), "storage/key", ""},
		{"both current and deprecated name", csiPV(released), params(name, "a", oldNm, "b", ns, "storage"), "", "under both " + name},
		{"name without namespace", csiPV(released), params(name, "key"), "", "gives the provisioner secret's name but not its namespace"},
		{"namespace without name", csiPV(released), params(ns, "storage"), "", "namespace but not its name"},
		{"empty value", csiPV(released), params(name, "", ns, "storage"), "", "to an empty value"},
		{"default name without namespace", csiPV(released), params(defNm, "any"), "", "default secret's name but not its namespace"},
		{"claim name in the namespace", csiPV(released), params(name, "key", ns, "${pvc.name}"), "", "uses pvc.name, which cannot be resolved"},
		{"claim annotation in the name", csiPV(released), params(name, "${pvc.annotations['example.com/secret']}", ns, "storage"), "", "uses pvc.annotations['example.com/secret']"},
		{"unknown token", csiPV(released), params(name, "$user", ns, "storage"), "", "uses user, which"},
		{"invalid namespace", csiPV(released), params(name, "key", ns, "Storage"), "", `resolves to "Storage", which is not a valid namespace name`},
		{"invalid name", csiPV(released), params(name, "${pvc.name}_key", ns, "storage"), "", "not a valid secret name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []any{drivers}
			if tt.class != nil {
				args = append(args, tt.class)
			}
			res := h.MustReconcile(sdktest.Request(now, append([]any{tt.pv}, args...)...))
			if tt.err != "" {
				got := describe(res.Actions)
				if !slices.Equal(got, []string{"event Warning " + ReasonVolumeFailedDelete}) {
					t.Fatalf("actions = %v, want only a %s warning", got, ReasonVolumeFailedDelete)
				}
				if msg := res.Actions[0].Event.Message; !strings.Contains(msg, tt.err) || !strings.Contains(msg, handle) {
					t.Errorf("message %q does not contain %q and the volume handle", msg, tt.err)
				}
				if res.RequeueAfterMillis == 0 {
					t.Error("no requeue: the deletion would not be retried once the class is fixed")
				}
				return
			}
			if len(res.Actions) == 0 || res.Actions[0].Type != abi.ActionDeleteVolume {
				t.Fatalf("actions = %v, want a deleteVolume first", describe(res.Actions))
			}
			if s := res.Actions[0].Volume.Secrets; s != nil {
				t.Errorf("deleteVolume names secret %s/%s; the host resolves it, the module must not name one", s.Namespace, s.Name)
			}
			v := newVolume(tt.pv, nil, drivers)
			v.class = tt.class
			if v.className() != "fast" {
				v.class = nil
			}
			ref, err := deletionSecret(v)
			if err != nil {
				t.Fatal(err)
			}
			got := noneOK
			if ref != nil {
				got = ref.Namespace + "/" + ref.Name
			}
			if got != tt.secret {
				t.Errorf("secret = %q, want %q", got, tt.secret)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	params := map[string]string{"pv.name": "pv-1", "a": "A", "1": "one"}
	tests := []struct {
		template, want string
		missing        []string
	}{
		{"plain", "plain", nil},
		{"${pv.name}", "pv-1", nil},
		{"x-${pv.name}-y", "x-pv-1-y", nil},
		{"$a.b", "A.b", nil},
		{"$1x", "onex", nil},
		{"cost$", "cost$", nil},
		{"a $ b", "a $ b", nil},
		{"${}x", "x", nil},
		{"${pv.name", "pv.name", nil},
		{"${b}${b}${c}", "", []string{"b", "c"}},
		{"$pv.name", ".name", []string{"pv"}},
	}
	for _, tt := range tests {
		t.Run(tt.template, func(t *testing.T) {
			got, missing := expand(tt.template, params)
			if got != tt.want || !slices.Equal(missing, tt.missing) {
				t.Errorf("expand(%q) = %q, %q; want %q, %q", tt.template, got, missing, tt.want, tt.missing)
			}
		})
	}
}

func TestNames(t *testing.T) {
	long := strings.Repeat("a", 64)
	tests := []struct {
		s                string
		label, subdomain bool
	}{
		{"storage", true, true},
		{"a-b-1", true, true},
		{"a.b", false, true},
		{"", false, false},
		{"-a", false, false},
		{"a-", false, false},
		{"A", false, false},
		{"a_b", false, false},
		{"a..b", false, false},
		{"a.", false, false},
		{long, false, true},
		{strings.Repeat("a.", 127), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.s, func(t *testing.T) {
			if got := isDNS1123Label(tt.s); got != tt.label {
				t.Errorf("isDNS1123Label(%q) = %v", tt.s, got)
			}
			if got := isDNS1123Subdomain(tt.s); got != tt.subdomain {
				t.Errorf("isDNS1123Subdomain(%q) = %v", tt.s, got)
			}
		})
	}
}
