package runtime

import (
	"sort"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/kubeplug/kubeplug/abi"
)

// Info describes a loaded module, for `kubeplug inspect` and logs.
type Info struct {
	// Name and Version come from the manifest.
	Name    string
	Version string
	// Source is where the module's bytes came from, as given to Load.
	Source string
	// ABIVersion is the version in the module's marker export.
	ABIVersion abi.Version
	// Exports and Imports are the module's functions, sorted by module and
	// name.
	Exports []Func
	Imports []Func
	// Profile is the module's runtime profile.
	Profile Profile
	// Extism is Profile.Name == "extism": an Extism plugin (SPEC.md, "The
	// Extism profile"). Encoding is then the encoding of its hook
	// messages, EncodingJSON or EncodingMsgpack. ABIVersion is its
	// manifest's abiVersion.
	Extism   bool
	Encoding string
	// Size is the module's size in bytes; SHA256 its hex digest.
	Size   int
	SHA256 string
}

// Func is an exported or imported function.
type Func struct {
	// Module is the import module name; empty for exports.
	Module  string
	Name    string
	Params  []string // value types: "i32", "i64", "f32", "f64", ...
	Results []string
}

func describeFuncs(compiled wazero.CompiledModule) (exports, imports []Func) {
	for name, def := range compiled.ExportedFunctions() {
		exports = append(exports, newFunc("", name, def))
	}
	for _, def := range compiled.ImportedFunctions() {
		mod, name, _ := def.Import()
		if mod == checkpointImport.Module {
			continue // the runtime's, not the module's
		}
		imports = append(imports, newFunc(mod, name, def))
	}
	for _, fs := range [][]Func{exports, imports} {
		sort.Slice(fs, func(i, j int) bool {
			if fs[i].Module != fs[j].Module {
				return fs[i].Module < fs[j].Module
			}
			return fs[i].Name < fs[j].Name
		})
	}
	return exports, imports
}

func newFunc(module, name string, def api.FunctionDefinition) Func {
	return Func{Module: module, Name: name, Params: typeNames(def.ParamTypes()), Results: typeNames(def.ResultTypes())}
}

func typeNames(ts []api.ValueType) []string {
	if len(ts) == 0 {
		return nil
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = api.ValueTypeName(t)
	}
	return names
}
