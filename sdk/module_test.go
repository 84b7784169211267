package sdk_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// The sdk's own test binary is a guest too: it registers testModule, and the
// tests that go through sdktest call it.
var testModule = sdk.Module{
	Name:         "sdk-test",
	Version:      "0.0.1",
	Subject:      abi.SubjectStatefulSet,
	Description:  "exercises the sdk",
	ConfigSchema: `{"type": "object"}`,
	Capabilities: []abi.Capability{{Action: abi.ActionEvent, Resources: []string{"statefulsets"}}},
	Reconcile:    testReconcile,
}

func init() { sdk.Register(testModule) }

// testReconcile behaves as its config says.
func testReconcile(req *sdk.Request) (sdk.Result, error) {
	var cfg struct {
		Log     string `json:"log"`
		Fail    string `json:"fail"`
		Panic   bool   `json:"panic"`
		Requeue string `json:"requeue"`
		Claim   string `json:"claim"`
		Pod     *int   `json:"pod"`
	}
	if err := req.Config(&cfg); err != nil {
		return sdk.Result{}, err
	}
	if cfg.Log != "" {
		sdk.Logf(sdk.LevelWarn, "log: %s", cfg.Log)
	}
	if cfg.Fail != "" {
		return sdk.Result{}, errors.New(cfg.Fail)
	}
	if cfg.Panic {
		panic("asked to panic")
	}
	var res sdk.Result
	if cfg.Requeue != "" {
		d, err := time.ParseDuration(cfg.Requeue)
		if err != nil {
			return sdk.Result{}, err
		}
		res.RequeueAfter = d
	}
	if cfg.Claim != "" {
		res.Message += fmt.Sprintf("claim %s found: %t. ", cfg.Claim, req.Claim(cfg.Claim) != nil)
	}
	if cfg.Pod != nil {
		res.Message += fmt.Sprintf("pod %d found: %t. ", *cfg.Pod, req.Pod(*cfg.Pod) != nil)
	}
	if set := req.StatefulSet(); set != nil {
		res.Actions = append(res.Actions, sdk.Normal(sdk.RefOf(set), "Seen", fmt.Sprintf("at %s with %d pods", req.Now().Format(time.RFC3339), len(req.Pods()))))
	}
	return res, nil
}

func TestModuleManifest(t *testing.T) {
	m, err := testModule.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.ABIVersion != abi.Current.String() || len(m.Hooks) != 1 || m.Hooks[0] != abi.HookReconcile {
		t.Errorf("manifest = %+v: want ABI %s and hook reconcile", m, abi.Current)
	}
	if m.Name != "sdk-test" || m.Version != "0.0.1" || m.Subject != abi.SubjectStatefulSet || m.Description == "" || m.ConfigSchema == "" || len(m.Capabilities) != 1 {
		t.Errorf("manifest = %+v does not carry the module's fields", m)
	}
}

var (
	allowAll = func(*abi.AdmitRequest) (sdk.Admission, error) { return sdk.Allow(), nil }
	pvcRules = &abi.Admission{Rules: []abi.AdmissionRule{{
		Operations: []string{abi.OperationCreate}, APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"persistentvolumeclaims"},
	}}}
)

func TestAdmissionPatch(t *testing.T) {
	a := sdk.Allow()
	if err := a.Patch(abi.PatchReplace, sdk.Pointer("metadata", "labels", "example.com/tier~x"), "gold"); err != nil {
		t.Fatal(err)
	}
	if err := a.Patch(abi.PatchRemove, "/spec/volumeName", "ignored"); err != nil {
		t.Fatal(err)
	}
	if err := a.Patch(abi.PatchAdd, "/x", func() {}); err == nil {
		t.Fatal("a value that does not encode as JSON was accepted")
	}
	want := []abi.PatchOperation{
		{Op: abi.PatchReplace, Path: "/metadata/labels/example.com~1tier~0x", Value: []byte(`"gold"`)},
		{Op: abi.PatchRemove, Path: "/spec/volumeName"},
	}
	if fmt.Sprint(a.Ops) != fmt.Sprint(want) {
		t.Fatalf("ops %q, want %q", a.Ops, want)
	}
}

func TestModuleValidation(t *testing.T) {
	valid := testModule
	tests := []struct {
		name   string
		change func(m *sdk.Module)
		want   string // substring of the error, "" for valid
	}{
		{"valid", func(*sdk.Module) {}, ""},
		{"no name", func(m *sdk.Module) { m.Name = "" }, "Name is empty"},
		{"no version", func(m *sdk.Module) { m.Version = "" }, "Version is empty"},
		{"unknown subject", func(m *sdk.Module) { m.Subject = "deployment" }, `Subject "deployment" is not one of statefulset, persistentvolume`},
		{"no hook", func(m *sdk.Module) { m.Reconcile = nil }, "Reconcile and Admit are nil"},
		{"admit only", func(m *sdk.Module) { m.Reconcile, m.Admit, m.Admission = nil, allowAll, pvcRules }, ""},
		{"admit without rules", func(m *sdk.Module) { m.Admit = allowAll }, "Admission has no Rules"},
		{"admission without admit", func(m *sdk.Module) { m.Admission = pvcRules }, "Admit is nil"},
		{"mutate without paths", func(m *sdk.Module) {
			m.Capabilities = []abi.Capability{{Action: abi.CapabilityMutate, Resources: []string{"persistentvolumeclaims"}}}
		}, "mutate names no Paths"},
		{"unknown action", func(m *sdk.Module) { m.Capabilities = []abi.Capability{{Action: "patch", Resources: []string{"pods"}}} }, `unknown action "patch"`},
		{"a declared module's action", func(m *sdk.Module) {
			m.Capabilities = []abi.Capability{{Action: abi.ActionCreate, Resources: []string{"pods"}}}
		}, `capabilities[0] asks for "create", which only a module that declares watches may`},
		{"no resources", func(m *sdk.Module) { m.Capabilities = []abi.Capability{{Action: abi.ActionDeleteObject}} }, "names no Resources"},
		{"delete volume needs none", func(m *sdk.Module) { m.Capabilities = []abi.Capability{{Action: abi.ActionDeleteVolume}} }, ""},
		{"bad schema", func(m *sdk.Module) { m.ConfigSchema = `{"type":` }, "not valid JSON"},
		{"prose schema", func(m *sdk.Module) { m.ConfigSchema = "a list of namespaces" }, ""},
		{"projection", func(m *sdk.Module) {
			m.Projection = []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"status.conditions"}}, {Kind: abi.KindStorageClass}}
		}, ""},
		{"projection naming no field", func(m *sdk.Module) {
			m.Projection = []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"status.podIP"}}}
		}, `projection[0].fields[0] "status.podIP" is not a field path of Pod: status has no field "podIP"`},
		{"projection of another subject's kind", func(m *sdk.Module) {
			m.Projection = []abi.ObjectFields{{Kind: abi.KindPersistentVolume}}
		}, `projection[0].kind "PersistentVolume" is not a kind a statefulset request carries`},
		{"every problem at once", func(m *sdk.Module) { *m = sdk.Module{} }, "Version is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := valid
			tt.change(&m)
			_, err := m.Manifest()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Manifest: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Manifest: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestRegisterPanics(t *testing.T) {
	tests := []struct {
		name string
		m    sdk.Module
		want string
	}{
		{"second registration", testModule, "already registered"},
		{"incomplete module", sdk.Module{Name: "x"}, "Version is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, tt.want) || !strings.HasPrefix(s, "sdk.Register: ") {
					t.Errorf("panic %v, want one from sdk.Register containing %q", r, tt.want)
				}
			}()
			sdk.Register(tt.m)
		})
	}
}

func mustDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestAdmitConfig(t *testing.T) {
	var cfg struct {
		Strict bool `json:"strict"`
	}
	if err := sdk.AdmitConfig(&abi.AdmitRequest{Config: []byte(`{"strict":true}`)}, &cfg); err != nil || !cfg.Strict {
		t.Fatalf("AdmitConfig: %v, %+v", err, cfg)
	}
	if err := sdk.AdmitConfig(&abi.AdmitRequest{Config: []byte(`{"strikt":true}`)}, &cfg); !errors.Is(err, sdk.ErrConfig) {
		t.Fatalf("an unknown field: %v, want ErrConfig", err)
	}
}

// The manifest carries the module's projection as declared.
func TestManifestCarriesProjection(t *testing.T) {
	m := testModule
	m.Projection = []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"status.conditions"}}}
	man, err := m.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(man.Projection) != fmt.Sprint(m.Projection) {
		t.Errorf("manifest projection %v, want %v", man.Projection, m.Projection)
	}
}
