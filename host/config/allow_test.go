package config_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/config"
)

var (
	ownerRefs   = abi.Capability{Action: abi.ActionUpdateOwnerReferences, Resources: []string{"persistentvolumeclaims"}}
	setEvents   = abi.Capability{Action: abi.ActionEvent, Resources: []string{"statefulsets"}}
	deleteVol   = abi.Capability{Action: abi.ActionDeleteVolume}
	everything  = abi.Capability{Action: abi.ActionDeleteObject, Resources: []string{"*"}}
	retentionOK = abi.Manifest{Name: "retention", Capabilities: []abi.Capability{ownerRefs, setEvents}}
)

func TestAllowParses(t *testing.T) {
	f := mustLoad(t, `modules:
- path: guests/m.wasm
  allow:
  - {action: updateOwnerReferences, resources: [persistentvolumeclaims, pods]}
  - {action: deleteVolume}
  - {action: deleteObject, resources: ["*"]}
- path: guests/n.wasm
  allow: []
- path: guests/retention.wasm
`)
	require.Equal(t, []abi.Capability{
		{Action: abi.ActionUpdateOwnerReferences, Resources: []string{"persistentvolumeclaims", "pods"}},
		deleteVol,
		everything,
	}, f.Modules[0].Allow)
	require.NotNil(t, f.Modules[1].Allow, "allow: [] grants nothing, which is not the same as no allow:")
	require.Empty(t, f.Modules[1].Allow)
	require.Nil(t, f.Modules[2].Allow)
}

func TestAllowRefusesBadEntries(t *testing.T) {
	for _, tc := range []struct{ name, allow, want string }{
		{"unknown action", `[{action: addFinaliser, resources: [pods]}]`, `modules[0].allow[0].action: "addFinaliser" is not an action (did you mean addFinalizer?)`},
		{"unknown resource", `[{action: addFinalizer, resources: [claims]}]`, `modules[0].allow[0].resources[0]: "claims" is not a resource`},
		{"missing resources", `[{action: addFinalizer}]`, `modules[0].allow[0]: resources is missing`},
		{"missing action", `[{resources: [pods]}]`, `modules[0].allow[0]: action is missing`},
		{"not a list", `{action: addFinalizer}`, `modules[0].allow: must be a list of capabilities`},
		{"unknown field", `[{action: addFinalizer, resource: [pods]}]`, `modules[0].allow[0].resource: unknown field; did you mean resources?`},
		{"apply without paths", `[{action: apply, resources: [poddisruptionbudgets]}]`, `modules[0].allow[0]: paths is missing; name the JSON Pointers apply may touch`},
		{"force on create", `[{action: create, resources: [poddisruptionbudgets], force: true}]`, `modules[0].allow[0].force: force applies to the apply capability only`},
		{"force not a bool", `[{action: apply, resources: [poddisruptionbudgets], paths: [/spec], force: always}]`, `modules[0].allow[0].force: force is true or false`},
		{"a resource that is no name", `[{action: create, resources: [Pod_Budgets]}]`, `"Pod_Budgets" is not a resource; name one as the API server does`},
		{"every resource of a declared kind", `[{action: create, resources: ["*"]}]`, `"*" is not a resource`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := load(t, "modules:\n- path: guests/m.wasm\n  allow: "+tc.allow+"\n")
			require.ErrorIs(t, err, config.ErrInvalid)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestGrant(t *testing.T) {
	for _, tc := range []struct {
		name  string
		entry string
		man   abi.Manifest
		want  []abi.Capability // nil: refused
		msg   []string         // what the refusal must say
	}{
		{
			name:  "exactly allowed",
			entry: "allow: [{action: updateOwnerReferences, resources: [persistentvolumeclaims]}, {action: event, resources: [statefulsets]}]",
			man:   retentionOK,
			want:  []abi.Capability{ownerRefs, setEvents},
		},
		{
			name:  "allow wider than the manifest grants only what the manifest asks",
			entry: `allow: [{action: updateOwnerReferences, resources: ["*"]}, {action: event, resources: [statefulsets, pods]}, {action: deleteVolume}]`,
			man:   retentionOK,
			want:  []abi.Capability{ownerRefs, setEvents},
		},
		{
			name:  "a resource beyond allow",
			entry: "allow: [{action: updateOwnerReferences, resources: [persistentvolumeclaims]}]",
			man:   retentionOK,
			msg:   []string{"{action: event, resources: [statefulsets]}", "does not grant"},
		},
		{
			name:  "a star asked is granted only by a star",
			entry: "allow: [{action: deleteObject, resources: [pods, persistentvolumeclaims]}]",
			man:   abi.Manifest{Name: "greedy", Capabilities: []abi.Capability{everything}},
			msg:   []string{`{action: deleteObject, resources: ["*"]}`},
		},
		{
			name:  "deleteVolume beyond allow",
			entry: "allow: []",
			man:   abi.Manifest{Name: "reclaim", Capabilities: []abi.Capability{deleteVol}},
			msg:   []string{"asks for {action: deleteVolume}"},
		},
		{
			name:  "no allow in enforce mode",
			entry: "mode: enforce",
			man:   retentionOK,
			msg:   []string{"has no allow: list", "or set mode: shadow"},
		},
		{
			name:  "no allow in shadow mode runs with the manifest's capabilities",
			entry: "mode: shadow",
			man:   retentionOK,
			want:  []abi.Capability{ownerRefs, setEvents},
		},
		{
			name:  "shadow mode does not excuse a manifest beyond allow",
			entry: "mode: shadow\n  allow: []",
			man:   retentionOK,
			msg:   []string{"{action: updateOwnerReferences, resources: [persistentvolumeclaims]}, {action: event, resources: [statefulsets]}"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustLoad(t, "modules:\n- path: guests/m.wasm\n  "+tc.entry+"\n")
			got, err := f.Modules[0].Grant(tc.man)
			if tc.want != nil {
				require.NoError(t, err)
				require.Equal(t, tc.want, got)
				return
			}
			require.ErrorIs(t, err, config.ErrNotAllowed)
			require.ErrorContains(t, err, `module "m"`)
			require.ErrorContains(t, err, "host.yaml:2 (modules[0])")
			for _, m := range tc.msg {
				require.ErrorContains(t, err, m)
			}
			// The block the error prints, pasted into the entry, grants
			// the module.
			require.Contains(t, err.Error(), config.AllowBlock(tc.man.Capabilities))
			fixed := mustLoad(t, "modules:\n- path: guests/m.wasm\n"+indent(config.AllowBlock(tc.man.Capabilities)))
			granted, err := fixed.Modules[0].Grant(tc.man)
			require.NoError(t, err)
			require.Equal(t, tc.man.Capabilities, granted)
		})
	}
}

func TestAllowBlockIsYAML(t *testing.T) {
	caps := []abi.Capability{everything, deleteVol, ownerRefs, {Action: "true", Resources: []string{"a b", "null"}}}
	var doc struct {
		Allow []abi.Capability `yaml:"allow"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(config.AllowBlock(caps)), &doc))
	require.Equal(t, caps, doc.Allow)
}

// indent puts every line of s two spaces in, as under a module's entry.
func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}

// A declared module's resources are granted by their names, any the API
// server may serve; apply by paths, forcing only when the grant says so.
func TestAllowDeclaredResources(t *testing.T) {
	f, _, err := load(t, `modules:
- path: guests/m.wasm
  allow:
  - {action: apply, resources: [poddisruptionbudgets.policy], paths: [/spec], force: true}
  - {action: create, resources: [poddisruptionbudgets]}
  - {action: deleteObject, resources: [poddisruptionbudgets.policy]}
`)
	require.NoError(t, err)
	require.Equal(t, []abi.Capability{
		{Action: abi.ActionApply, Resources: []string{"poddisruptionbudgets.policy"}, Paths: []string{"/spec"}, Force: true},
		{Action: abi.ActionCreate, Resources: []string{"poddisruptionbudgets"}},
		{Action: abi.ActionDeleteObject, Resources: []string{"poddisruptionbudgets.policy"}},
	}, f.Modules[0].Allow)

	asked := []abi.Capability{{Action: abi.ActionApply, Resources: []string{"poddisruptionbudgets.policy"}, Paths: []string{"/spec/minAvailable", "/metadata/labels"}, Force: true}}
	require.Equal(t, []abi.Capability{{Action: abi.ActionApply, Resources: []string{"poddisruptionbudgets.policy"}, Paths: []string{"/metadata/labels"}, Force: true}},
		config.Beyond(asked, f.Modules[0].Allow), "a path outside the grant")
	asked[0].Paths = asked[0].Paths[:1]
	require.Empty(t, config.Beyond(asked, f.Modules[0].Allow))
	unforced := []abi.Capability{{Action: abi.ActionApply, Resources: []string{"poddisruptionbudgets.policy"}, Paths: []string{"/spec"}}}
	forcing := []abi.Capability{{Action: abi.ActionApply, Resources: []string{"poddisruptionbudgets.policy"}, Paths: []string{"/spec"}, Force: true}}
	require.Equal(t, []abi.Capability{{Action: abi.ActionApply, Resources: []string{"poddisruptionbudgets.policy"}, Force: true}},
		config.Beyond(forcing, unforced), "force asked, not granted")
	require.Empty(t, config.Beyond(unforced, forcing), "a grant that may force covers an apply that does not")
	require.Equal(t, "allow:\n- {action: apply, resources: [poddisruptionbudgets.policy], paths: [\"/spec\"], force: true}\n", config.AllowBlock(forcing))
}
