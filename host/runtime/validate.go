package runtime

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime/internal/projection"
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
		info, _ := abi.Hook(h).Info() // checkManifest refuses unknown hooks
		if err := checkExport(source, fns, info.Export, sigHook, h); err != nil {
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
// what this ABI version knows (abi's Manifest.Validate, which the SDK runs
// too), reporting the first problem, and returns its projection compiled
// (nil when it declares none).
func checkManifest(source string, m *abi.Manifest, marker abi.Version) (*projection.Projection, error) {
	var first *abi.ManifestError
	if err := m.Validate(marker); errors.As(err, &first) {
		return nil, loadError(source, ErrManifest, "%s: fix the manifest the module returns from %s", first, abi.ExportManifest)
	}
	p, err := projection.Compile(m.Projection)
	if err != nil {
		return nil, loadError(source, ErrManifest, "%v: fix the manifest the module returns from %s", err, abi.ExportManifest)
	}
	return p, nil
}
