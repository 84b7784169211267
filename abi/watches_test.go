package abi_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
)

// watchesVersion is the first ABI version with Watches. The host serves
// them from then on; until it does, no module can be built for it.
var watchesVersion = abi.Version{Major: abi.VersionMajor, Minor: abi.WatchesMinMinor}

// declared is a valid manifest of a module of Deployments: the example
// of Watches' documentation.
func declared() *abi.Manifest {
	return &abi.Manifest{
		Name: "pdb", Version: "0.1.0", ABIVersion: watchesVersion.String(),
		Hooks: []string{abi.HookReconcile},
		Watches: &abi.Watches{
			Subject: abi.Resource{Group: "apps", Version: "v1", Resource: "deployments"},
			Relations: []abi.Relation{
				{Name: "replicaSets", Type: abi.RelationOwned, Resource: abi.Resource{Group: "apps", Version: "v1", Resource: "replicasets"}},
				{Name: "pods", Type: abi.RelationSelected, Path: "spec.selector", Resource: abi.Resource{Version: "v1", Resource: "pods"}},
				{Name: "budget", Type: abi.RelationNamed, Path: "metadata.name", Resource: abi.Resource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}},
				{Name: "classes", Type: abi.RelationAll, LabelSelector: "tier in (a,b)", Resource: abi.Resource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}},
			},
		},
		Capabilities: []abi.Capability{{Action: abi.ActionEvent, Resources: []string{"deployments", "poddisruptionbudgets.policy"}}},
	}
}

func TestValidateWatches(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name string
		edit func(m *abi.Manifest)
		// field, rule and text of the first error; rule empty for a
		// valid manifest.
		field string
		rule  abi.ManifestRule
		want  string
	}{
		{"the example", func(*abi.Manifest) {}, "", "", ""},
		{"a cluster-scoped subject with all and named relations", func(m *abi.Manifest) {
			m.Watches.Subject = abi.Resource{Version: "v1", Resource: "persistentvolumes", Namespaced: &no}
			m.Watches.Relations = []abi.Relation{
				{Name: "claim", Type: abi.RelationNamed, Path: "spec.claimRef", Resource: abi.Resource{Version: "v1", Resource: "persistentvolumeclaims", Namespaced: &yes}},
				{Name: "classes", Type: abi.RelationAll, Resource: abi.Resource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}},
			}
			m.Capabilities = nil
		}, "", "", ""},
		{"a built-in subject beside", func(m *abi.Manifest) { m.Subject = abi.SubjectStatefulSet },
			"subject", abi.RuleUnexpected, `subject "statefulset" is set beside watches`},
		{"no version", func(m *abi.Manifest) { m.Watches.Subject.Version = "" },
			"watches.subject", abi.RuleSyntax, "watches.subject: version is empty"},
		{"a kind for a resource", func(m *abi.Manifest) { m.Watches.Subject.Resource = "Deployment" },
			"watches.subject", abi.RuleSyntax, `resource "Deployment" is not a plural, lower-case resource name`},
		{"a subresource", func(m *abi.Manifest) { m.Watches.Relations[0].Resource.Resource = "replicasets/status" },
			"watches.relations.resource", abi.RuleSyntax, `watches.relations[0].resource: resource "replicasets/status" is not`},
		{"a group that is not one", func(m *abi.Manifest) { m.Watches.Subject.Group = "Apps_" },
			"watches.subject", abi.RuleSyntax, `group "Apps_" is not an API group`},
		{"a kind that is not one", func(m *abi.Manifest) { m.Watches.Subject.Kind = "deployment" },
			"watches.subject", abi.RuleSyntax, `kind "deployment" is not a kind`},
		{"secrets", func(m *abi.Manifest) {
			m.Watches.Relations[3].Resource = abi.Resource{Version: "v1", Resource: "secrets"}
		}, "watches.relations.resource", abi.RuleSyntax, "watches.relations[3].resource: secrets are withheld from every module"},
		{"leases as the subject", func(m *abi.Manifest) {
			m.Watches.Subject = abi.Resource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
		}, "watches.subject", abi.RuleSyntax, "leases are withheld"},
		{"a relation without a name", func(m *abi.Manifest) { m.Watches.Relations[1].Name = "" },
			"watches.relations.name", abi.RuleSyntax, `watches.relations[1].name "" is empty`},
		{"a name that is not an identifier", func(m *abi.Manifest) { m.Watches.Relations[1].Name = "my-pods" },
			"watches.relations.name", abi.RuleSyntax, `has '-', which is not a letter or digit`},
		{"two relations of one name", func(m *abi.Manifest) { m.Watches.Relations[2].Name = "pods" },
			"watches.relations.name", abi.RuleDuplicate, `watches.relations[2].name "pods" is the name of watches.relations[1] too`},
		{"an unknown type", func(m *abi.Manifest) { m.Watches.Relations[0].Type = "children" },
			"watches.relations.type", abi.RuleUnknown, `watches.relations[0].type "children" is not one of owned, selected, named, all`},
		{"selected without a path", func(m *abi.Manifest) { m.Watches.Relations[1].Path = "" },
			"watches.relations.path", abi.RuleEmpty, "watches.relations[1].path is empty: a relation of type selected reads the subject's field at path (e.g. spec.selector)"},
		{"owned with a path", func(m *abi.Manifest) { m.Watches.Relations[0].Path = "spec" },
			"watches.relations.path", abi.RuleUnexpected, "a relation of type owned reads no field of the subject"},
		{"a path with brackets", func(m *abi.Manifest) { m.Watches.Relations[2].Path = "metadata.labels[app]" },
			"watches.relations.path", abi.RuleSyntax, `has brackets`},
		{"a path that does not parse", func(m *abi.Manifest) { m.Watches.Relations[2].Path = "spec..name" },
			"watches.relations.path", abi.RuleSyntax, `"spec..name" is not a field path`},
		{"a path too long", func(m *abi.Manifest) {
			m.Watches.Relations[2].Path = strings.Repeat("a.", abi.MaxFieldPathLength) + "b"
		},
			"watches.relations.path", abi.RuleTooLong, "more than 512"},
		{"a cluster-scoped subject selecting namespaced objects", func(m *abi.Manifest) {
			m.Watches.Subject = abi.Resource{Version: "v1", Resource: "persistentvolumes", Namespaced: &no}
			m.Watches.Relations[1].Resource.Namespaced = &yes
		}, "watches.relations.type", abi.RuleUnexpected, "the subject persistentvolumes is cluster-scoped and has none"},
		{"a cluster-scoped subject's namespace", func(m *abi.Manifest) {
			m.Watches.Subject = abi.Resource{Version: "v1", Resource: "persistentvolumes", Namespaced: &no}
			m.Watches.Relations = m.Watches.Relations[3:]
			m.Watches.Relations[0].InNamespace = true
			m.Capabilities = nil
		}, "watches.relations.inNamespace", abi.RuleUnexpected, "drop inNamespace"},
		{"a selector on a named relation", func(m *abi.Manifest) { m.Watches.Relations[2].LabelSelector = "a=b" },
			"watches.relations.labelSelector", abi.RuleUnexpected, "which only a relation of type all reads"},
		{"a selector too long", func(m *abi.Manifest) {
			m.Watches.Relations[3].LabelSelector = strings.Repeat("a", abi.MaxLabelSelectorLength+1)
		},
			"watches.relations.labelSelector", abi.RuleTooLong, "more than 4096"},
		{"too many relations", func(m *abi.Manifest) {
			for len(m.Watches.Relations) <= abi.MaxRelations {
				m.Watches.Relations = append(m.Watches.Relations, m.Watches.Relations[0])
			}
		}, "watches.relations", abi.RuleTooMany, "more than 16"},
		{"a grant beyond the declaration", func(m *abi.Manifest) {
			m.Capabilities = append(m.Capabilities, abi.Capability{Action: abi.ActionDeleteObject, Resources: []string{"replicasets", "services"}})
		}, "capabilities.resources", abi.RuleUnexpected, `capabilities[1].resources names "services", which watches does not declare`},
		{"a wildcard grant", func(m *abi.Manifest) { m.Capabilities[0].Resources = []string{"*"} },
			"capabilities.resources", abi.RuleUnexpected, `names "*"`},
		{"deleting volumes", func(m *abi.Manifest) {
			m.Capabilities = append(m.Capabilities, abi.Capability{Action: abi.ActionDeleteVolume})
		}, "capabilities.action", abi.RuleUnexpected, `capabilities[1] asks for "deleteVolume", which acts on a built-in subject's objects: a declared module acts through apply, create, applyStatus, deleteObject, addFinalizer, removeFinalizer, event`},
		{"a typed action", func(m *abi.Manifest) {
			m.Capabilities = append(m.Capabilities, abi.Capability{Action: abi.ActionSetPartition, Resources: []string{"deployments"}})
		}, "capabilities.action", abi.RuleUnexpected, `asks for "setPartition", which acts on a built-in subject's objects`},
		{"the generic actions", func(m *abi.Manifest) {
			m.Capabilities = append(m.Capabilities,
				abi.Capability{Action: abi.ActionApply, Resources: []string{"poddisruptionbudgets"}, Paths: []string{"/spec"}, Force: true},
				abi.Capability{Action: abi.ActionCreate, Resources: []string{"poddisruptionbudgets.policy"}},
				abi.Capability{Action: abi.ActionApplyStatus, Resources: []string{"deployments/status"}},
				abi.Capability{Action: abi.ActionDeleteObject, Resources: []string{"replicasets"}})
		}, "", "", ""},
		{"apply without paths", func(m *abi.Manifest) {
			m.Capabilities = append(m.Capabilities, abi.Capability{Action: abi.ActionApply, Resources: []string{"poddisruptionbudgets"}})
		}, "capabilities.paths", abi.RuleEmpty, "capabilities[1].paths is empty: list the JSON Pointer prefixes an applied object may set"},
		{"paths on create", func(m *abi.Manifest) {
			m.Capabilities = append(m.Capabilities, abi.Capability{Action: abi.ActionCreate, Resources: []string{"poddisruptionbudgets"}, Paths: []string{"/spec"}})
		}, "capabilities.paths", abi.RuleUnexpected, "only mutate and apply read paths"},
		{"force on create", func(m *abi.Manifest) {
			m.Capabilities = append(m.Capabilities, abi.Capability{Action: abi.ActionCreate, Resources: []string{"poddisruptionbudgets"}, Force: true})
		}, "capabilities.force", abi.RuleUnexpected, "only apply forces"},
		{"a projection", func(m *abi.Manifest) {
			m.Projection = []abi.ObjectFields{{Kind: "Deployment", Fields: []string{"spec"}}}
		},
			"projection", abi.RuleUnexpected, "a declared module's request is not projected yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := declared()
			tc.edit(m)
			err := m.Validate(watchesVersion)
			if tc.rule == "" {
				if err != nil {
					t.Fatalf("valid manifest refused: %v", err)
				}
				return
			}
			var first *abi.ManifestError
			if !errors.As(err, &first) {
				t.Fatalf("got %v, want %s refused", err, tc.field)
			}
			if first.Field != tc.field || first.Rule != tc.rule || !strings.Contains(first.Error(), tc.want) {
				t.Errorf("got %s (%s): %q, want %s (%s) with %q", first.Field, first.Rule, first, tc.field, tc.rule, tc.want)
			}
		})
	}
}

// A module built for 1.5 cannot declare watches, and one without them must
// name a built-in subject.
func TestWatchesNeedMinor6(t *testing.T) {
	m := declared()
	m.ABIVersion = "1.5.0"
	var first *abi.ManifestError
	if err := m.Validate(abi.Version{Major: 1, Minor: 5}); !errors.As(err, &first) || first.Rule != abi.RuleTooNew ||
		!strings.Contains(first.Error(), "watches needs ABI 1.6, but the module was built for 1.5.0") {
		t.Fatalf("got %v, want watches refused as too new", err)
	}
	m = declared()
	m.Watches = nil
	if err := m.Validate(watchesVersion); !errors.As(err, &first) || first.Field != "subject" || first.Rule != abi.RuleUnknown {
		t.Errorf("neither subject nor watches: got %v", err)
	}
}

func TestWatchesRoundTrip(t *testing.T) {
	m := declared()
	b, err := m.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got abi.Manifest
	if _, err := got.UnmarshalMsg(b); err != nil {
		t.Fatal(err)
	}
	if got.Watches == nil || len(got.Watches.Relations) != 4 || got.Watches.Relations[3].LabelSelector != "tier in (a,b)" ||
		got.Watches.Subject.String() != "deployments.apps/v1" {
		t.Errorf("round trip: %+v", got.Watches)
	}
}

// A built-in module cannot ask for the generic actions.
func TestGenericActionsNeedWatches(t *testing.T) {
	m := &abi.Manifest{Name: "m", Version: "1", ABIVersion: watchesVersion.String(), Subject: abi.SubjectStatefulSet, Hooks: []string{abi.HookReconcile},
		Capabilities: []abi.Capability{{Action: abi.ActionCreate, Resources: []string{"persistentvolumeclaims"}}}}
	var first *abi.ManifestError
	if err := m.Validate(watchesVersion); !errors.As(err, &first) || first.Field != "capabilities.action" ||
		!strings.Contains(first.Error(), `asks for "create", which only a module that declares watches may (ABI 1.6)`) {
		t.Errorf("got %v", err)
	}
}
