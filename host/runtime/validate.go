package runtime

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/kubeplug/kubeplug/abi"
)

// signature is a function type.
type signature struct {
	params, results []api.ValueType
}

func (s signature) String() string {
	return fmt.Sprintf("(%s) -> (%s)", strings.Join(typeNames(s.params), ", "), strings.Join(typeNames(s.results), ", "))
}

func (s signature) matches(def api.FunctionDefinition) bool {
	return slices.Equal(s.params, def.ParamTypes()) && slices.Equal(s.results, def.ResultTypes())
}

var (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64

	sigNone   = signature{}
	sigMalloc = signature{[]api.ValueType{i32}, []api.ValueType{i32}}
	sigRegion = signature{nil, []api.ValueType{i64}}
	sigHook   = signature{[]api.ValueType{i32, i32}, []api.ValueType{i64}}
	sigLog    = signature{[]api.ValueType{i32, i32, i32}, nil}
)

// requiredExports every module has, whatever its hooks.
var requiredExports = []struct {
	name string
	sig  signature
}{
	{abi.ExportInitialize, sigNone},
	{abi.ExportMalloc, sigMalloc},
	{abi.ExportManifest, sigRegion},
}

// hostImports are the functions of abi.ImportModule the host provides.
var hostImports = map[string]signature{
	abi.ImportWriteLog: sigLog,
}

// memoryExport is the name under which WASI guests export their memory.
const memoryExport = "memory"

// checkVersion finds the one version marker export and checks this host can
// run it.
func checkVersion(source string, compiled wazero.CompiledModule) (abi.Version, error) {
	var markers []string
	for name := range compiled.ExportedFunctions() {
		if strings.HasPrefix(name, abi.VersionExportPrefix) {
			markers = append(markers, name)
		}
	}
	sort.Strings(markers)
	switch len(markers) {
	case 0:
		return abi.Version{}, loadError(source, ErrMissingExport,
			"no ABI version marker (an export named %s<major>_<minor>_<patch>): build the module against github.com/kubeplug/kubeplug/abi v%d",
			abi.VersionExportPrefix, abi.VersionMajor)
	case 1:
	default:
		return abi.Version{}, loadError(source, ErrABIVersion,
			"it exports %d version markers (%s) but may claim one ABI version only: rebuild it against abi v%d",
			len(markers), strings.Join(markers, ", "), abi.VersionMajor)
	}
	v, _, err := abi.ParseVersionExport(markers[0])
	if err != nil {
		return abi.Version{}, loadError(source, ErrABIVersion, "%v: rebuild it against abi v%d", err, abi.VersionMajor)
	}
	if !sigNone.matches(compiled.ExportedFunctions()[markers[0]]) {
		return abi.Version{}, loadError(source, ErrMissingExport, "version marker %s must have signature %v: rebuild it against abi v%d",
			markers[0], sigNone, abi.VersionMajor)
	}
	if !v.Compatible() {
		fix := fmt.Sprintf("rebuild it against abi v%d", abi.VersionMajor)
		if v.Major == abi.VersionMajor {
			fix = fmt.Sprintf("upgrade the host, or rebuild the module against abi v%d.%d", abi.VersionMajor, abi.VersionMinor)
		}
		return abi.Version{}, loadError(source, ErrABIVersion, "it was built for kubeplug ABI %v; this host speaks %v: %s",
			v, abi.Current, fix)
	}
	return v, nil
}

// checkImports refuses imports the host does not provide.
func checkImports(source string, compiled wazero.CompiledModule) error {
	for _, def := range compiled.ImportedFunctions() {
		mod, name, _ := def.Import()
		switch mod {
		case abi.WASIModule:
			// wazero implements every WASI preview 1 function; instantiation
			// reports a wrong signature.
		case checkpointImport.Module:
			// Inserted by instrument, which refuses modules that import
			// from this module themselves.
		case abi.ImportModule:
			sig, ok := hostImports[name]
			if !ok {
				return loadError(source, ErrForbiddenImport, "it imports %s.%s, which this host does not provide: rebuild it against abi v%d.%d or upgrade the host",
					mod, name, abi.VersionMajor, abi.VersionMinor)
			}
			if !sig.matches(def) {
				return loadError(source, ErrForbiddenImport, "it imports %s.%s with signature %v, want %v: rebuild it against abi v%d",
					mod, name, signature{def.ParamTypes(), def.ResultTypes()}, sig, abi.VersionMajor)
			}
		default:
			return loadError(source, ErrForbiddenImport, "it imports function %s.%s; modules may import only from %s and %s: remove the import",
				mod, name, abi.WASIModule, abi.ImportModule)
		}
	}
	for _, def := range compiled.ImportedMemories() {
		mod, name, _ := def.Import()
		return loadError(source, ErrForbiddenImport, "it imports memory %s.%s; modules must define and export their own memory: remove the import", mod, name)
	}
	return nil
}

// checkExports checks the exports every module needs.
func checkExports(source string, compiled wazero.CompiledModule) error {
	fns := compiled.ExportedFunctions()
	for _, want := range requiredExports {
		if err := checkExport(source, fns, want.name, want.sig, ""); err != nil {
			return err
		}
	}
	if _, ok := compiled.ExportedMemories()[memoryExport]; !ok {
		return loadError(source, ErrMissingExport, "no exported memory named %q: build it as a WASI reactor (GOOS=wasip1 -buildmode=c-shared)", memoryExport)
	}
	return nil
}

// checkHookExports checks the export of every hook the manifest declares.
func checkHookExports(source string, compiled wazero.CompiledModule, hooks []string) error {
	fns := compiled.ExportedFunctions()
	for _, h := range hooks {
		if err := checkExport(source, fns, abi.HookExports[h], sigHook, h); err != nil {
			return err
		}
	}
	return nil
}

func checkExport(source string, fns map[string]api.FunctionDefinition, name string, sig signature, hook string) error {
	why := ""
	if hook != "" {
		why = fmt.Sprintf(" (the manifest declares hook %q)", hook)
	}
	def, ok := fns[name]
	if !ok {
		return loadError(source, ErrMissingExport, "no export %s%v%s: export it, or build the module with the kubeplug sdk", name, sig, why)
	}
	if !sig.matches(def) {
		return loadError(source, ErrMissingExport, "export %s has signature %v, want %v%s: fix its declaration",
			name, signature{def.ParamTypes(), def.ResultTypes()}, sig, why)
	}
	return nil
}

// checkManifest validates a decoded manifest against the version marker and
// what this ABI version knows.
func checkManifest(source string, m *abi.Manifest, marker abi.Version) error {
	bad := func(format string, args ...any) error {
		return loadError(source, ErrManifest, "%s: fix the manifest the module returns from %s", fmt.Sprintf(format, args...), abi.ExportManifest)
	}
	switch {
	case m.Name == "":
		return bad("name is empty")
	case m.Version == "":
		return bad("version is empty")
	case m.ABIVersion != marker.String():
		return bad("abiVersion %q differs from the version marker export %s", m.ABIVersion, marker.ExportName())
	case !slices.Contains(abi.Subjects, m.Subject):
		return bad("subject %q is not one of %s", m.Subject, strings.Join(abi.Subjects, ", "))
	case len(m.Hooks) == 0:
		return bad("hooks is empty")
	}
	for i, h := range m.Hooks {
		if _, ok := abi.HookExports[h]; !ok {
			return bad("hooks[%d] %q is not a known hook (%s)", i, h, strings.Join(knownHooks(), ", "))
		}
		if h == abi.HookAdmit && marker.Minor < 1 {
			return bad("hooks[%d] %q needs ABI 1.1, but the module was built for %s", i, h, marker)
		}
	}
	for i, c := range m.Capabilities {
		if !slices.Contains(abi.CapabilityNames, c.Action) {
			return bad("capabilities[%d].action %q is not a known action type (%s)", i, c.Action, strings.Join(abi.CapabilityNames, ", "))
		}
		if c.Action != abi.ActionDeleteVolume && len(c.Resources) == 0 {
			return bad("capabilities[%d].resources is empty: list the resources action %q may touch", i, c.Action)
		}
		if c.Action == abi.CapabilityMutate && len(c.Paths) == 0 {
			return bad("capabilities[%d].paths is empty: list the JSON Pointer prefixes a patch may touch, e.g. /metadata/labels", i)
		}
	}
	return checkAdmission(m, bad)
}

// checkAdmission checks the admission section against the hooks: present,
// with rules, exactly when the module admits.
func checkAdmission(m *abi.Manifest, bad func(string, ...any) error) error {
	admits := slices.Contains(m.Hooks, abi.HookAdmit)
	switch {
	case !admits && m.Admission != nil:
		return bad("admission is set but hooks does not list %q", abi.HookAdmit)
	case !admits:
		return nil
	case m.Admission == nil || len(m.Admission.Rules) == 0:
		return bad("hook %q needs admission.rules: say which operations on which resources the module admits", abi.HookAdmit)
	case len(m.Admission.MatchConditions) > 64:
		return bad("admission.matchConditions holds %d conditions, more than the API server's 64", len(m.Admission.MatchConditions))
	}
	for i, r := range m.Admission.Rules {
		if len(r.Operations) == 0 || len(r.APIVersions) == 0 || len(r.Resources) == 0 || r.APIGroups == nil {
			return bad("admission.rules[%d] needs operations, apiGroups, apiVersions and resources", i)
		}
		for j, op := range r.Operations {
			if !slices.Contains([]string{abi.OperationCreate, abi.OperationUpdate, abi.OperationDelete, abi.OperationConnect, "*"}, op) {
				return bad("admission.rules[%d].operations[%d] %q is not CREATE, UPDATE, DELETE, CONNECT or *", i, j, op)
			}
		}
	}
	return nil
}

func knownHooks() []string {
	hooks := make([]string, 0, len(abi.HookExports))
	for h := range abi.HookExports {
		hooks = append(hooks, h)
	}
	sort.Strings(hooks)
	return hooks
}
