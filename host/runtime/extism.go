package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"sort"
	"strings"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime/internal/projection"
)

// An Extism plugin is a kubeplug module in the Extism profile (SPEC.md, "The
// Extism profile"): it imports Extism's kernel functions from ExtismEnv,
// exports kubeplug_manifest and its hooks as Extism functions, and is run
// through github.com/extism/go-sdk under the same sandbox as a native module
// (RATIONALE.md: "Why do Extism plugins run inside package runtime?").

// ExtismEnv is the import module of Extism's kernel functions; a module that
// imports from it is an Extism plugin.
const ExtismEnv = "extism:host/env"

// Encodings of the Extism profile's hook messages, named by the manifest's
// encoding field.
const (
	EncodingJSON    = "json"
	EncodingMsgpack = "msgpack"
)

// extismWASIOutputEnv, when set in the host's environment, makes go-sdk give
// every plugin instance the process's stdout and stderr.
const extismWASIOutputEnv = "EXTISM_ENABLE_WASI_OUTPUT"

// extismCloseOnDone, set only by the benchmark that compares the two,
// enforces the deadline as go-sdk does (wazero's close-on-context-done,
// the plugin not rewritten) instead of by checkpoints (RATIONALE.md: "Why
// are Extism plugins stopped by the same checkpoints?").
var extismCloseOnDone bool

// A plugin may import from ExtismEnv the kernel's memory, input, output
// and error functions, and logging (extismEnvFuncs). The rest (config_get,
// var_get, var_set, http_request, http_status_code, http_headers, and the
// kernel's own bookkeeping) are refused at load: a plugin's configuration
// is in its request, it keeps no state between calls, and it has no network
// (SPEC.md).

// sigExtismFunc is the signature of an Extism function: no parameters, an
// i32 return code.
var sigExtismFunc = signature{nil, []api.ValueType{i32}}

// extismManifest is what kubeplug_manifest outputs: the manifest, as JSON,
// and the encoding of the hooks' messages.
type extismManifest struct {
	abi.Manifest
	Encoding string `json:"encoding,omitempty"`
	// projection is Manifest.Projection compiled by checkManifest.
	projection *projection.Projection
}

// extismInfo describes the Extism profile (SPEC.md, "The Extism profile"), as Info.Profile.
var extismInfo = Profile{Name: "extism", Label: "Extism plugin", Memories: 2, Memory: "the plugin's and Extism's kernel's"}

// extismProfile registers it (profiles).
var extismProfile = profile{
	Profile: extismInfo,
	detect:  IsExtism,
	load: func(e *Engine, ctx context.Context, source string, wasm []byte, limits Limits) (Loaded, error) {
		return e.LoadPlugin(ctx, source, wasm, limits)
	},
}

// Plugin is a loaded, validated Extism plugin with its pools of instances.
// It answers the same calls as Module (base's methods), which are safe for
// concurrent use.
type Plugin struct {
	base[*pluginInstance]
	encoding string
	compiled *extism.CompiledPlugin
}

// LoadPlugin compiles and validates an Extism plugin, starts one instance,
// reads its manifest, and returns the plugin ready to serve calls. It takes
// the same arguments as Load, and its errors wrap the same sentinels.
func (e *Engine) LoadPlugin(ctx context.Context, source string, wasm []byte, limits Limits) (*Plugin, error) {
	limits, err := e.beginLoad(source, limits)
	if err != nil {
		return nil, err
	}
	defer e.loads.Done()

	if _, set := os.LookupEnv(extismWASIOutputEnv); set {
		return nil, loadError(source, ErrStart, "%s is set, which makes go-sdk write Extism plugins' stdout and stderr to the host's, past the log budget: unset it", extismWASIOutputEnv)
	}
	sum := sha256.Sum256(wasm)
	p := &Plugin{base: newBase[*pluginInstance](e, source, limits, Info{Source: source, Size: len(wasm), SHA256: hex.EncodeToString(sum[:]), Profile: extismInfo, Extism: true})}
	p.base.newInstance = p.newInstance
	p.base.call = p.callHook
	p.free = func(ctx context.Context) error { return p.compiled.Close(ctx) }
	p.setLogger(e.logger.With("module", source))
	if err := p.load(ctx, wasm); err != nil {
		if p.compiled != nil {
			_ = p.compiled.Close(context.WithoutCancel(ctx))
		}
		return nil, err
	}

	if err := e.register(ctx, source, &p.base, p.compiled.Close); err != nil {
		return nil, err
	}
	return p, nil
}

// load checks the plugin as written, inserts the deadline checkpoints,
// compiles it through go-sdk into a runtime of its own (the memory cap, the
// Engine's compilation cache), and reads its manifest.
func (p *Plugin) load(ctx context.Context, wasm []byte) error {
	instrumented, err := instrument(p.source, wasm, p.limits, map[string]string{ExtismEnv: extismGuardedEnv})
	if err != nil {
		return err
	}
	if extismCloseOnDone {
		instrumented = wasm
	}
	// The interpreter both validates the plugin as written (see original.go)
	// and describes its imports and exports.
	written, err := p.engine.validator.CompileModule(ctx, wasm)
	if err != nil {
		return loadError(p.source, ErrNotModule, "%v: rebuild it, or check that the file is not truncated", err)
	}
	defer written.Close(context.WithoutCancel(ctx))
	wasi, err := checkExtismImports(p.source, written)
	if err != nil {
		return err
	}
	fns := written.ExportedFunctions()
	if def, ok := fns[abi.ExportManifest]; !ok || !sigExtismFunc.matches(def) {
		return loadError(p.source, ErrMissingExport,
			"it is an Extism plugin but not a kubeplug module: it has no Extism function %s%v; export one that outputs the module's manifest (abi/SPEC.md, \"The Extism profile\")",
			abi.ExportManifest, sigExtismFunc)
	}
	p.info.Exports, p.info.Imports = describeFuncs(written)

	cfg := wazero.NewRuntimeConfig().
		WithCompilationCache(p.engine.cache).
		WithMemoryLimitPages(p.limits.memoryPages()).
		WithCloseOnContextDone(extismCloseOnDone)
	manifest := extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: instrumented, Name: "main"}}}
	checkpoint := extism.NewHostFunctionWithStack(checkpointImport.Name, p.checkpoint, nil, []extism.ValueType{extism.ValueTypeI32})
	checkpoint.SetNamespace(checkpointImport.Module)
	p.compiled, err = extism.NewCompiledPlugin(withWASIGuard(experimental.WithCompilationWorkers(ctx, p.engine.workers)), manifest,
		extism.PluginConfig{RuntimeConfig: cfg, EnableWasi: wasi}, append(p.envFunctions(), checkpoint))
	if err != nil {
		if strings.Contains(err.Error(), "over limit of") {
			return loadError(p.source, ErrLimits, "%v: raise the module's memory limit (now %d bytes)", err, p.limits.MemoryBytes)
		}
		return loadError(p.source, ErrNotModule, "%v: rebuild it, or check that the file is not truncated", err)
	}

	inst, _, err := p.newInstance(ctx)
	if err != nil {
		return loadError(p.source, ErrStart, "%v: fix the plugin's initialization", err)
	}
	man, err := p.readManifest(ctx, inst)
	if err == nil {
		err = checkHookFunctions(p.source, fns, man.Hooks)
	}
	if err != nil {
		inst.close()
		return err
	}
	p.encoding = man.Encoding
	p.info.ABIVersion, _ = parseABIVersion(man.ABIVersion)
	p.info.Encoding = man.Encoding
	p.started(man.Manifest, man.projection, inst)
	return nil
}

// checkpoint is the checkpoint import (checkpoint.go) as go-sdk calls host
// functions: it ends the call at its deadline, or once Close gave up
// waiting for it.
func (p *Plugin) checkpoint(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
	checkpointDeadline(ctx)
	if p.interrupted.Load() {
		panic(sys.NewExitError(sys.ExitCodeContextCanceled))
	}
	stack[0] = checkpointInterval
}

// checkExtismImports refuses every import the Extism profile does not
// provide, and reports whether the plugin imports WASI.
func checkExtismImports(source string, compiled wazero.CompiledModule) (wasi bool, err error) {
	for _, def := range compiled.ImportedFunctions() {
		mod, name, _ := def.Import()
		switch {
		case mod == abi.WASIModule:
			wasi = true
		case mod == ExtismEnv && extismImports[name]:
		case mod == ExtismEnv:
			return false, loadError(source, ErrForbiddenImport,
				"it imports %s.%s, which kubeplug does not provide to Extism plugins (only %s): the configuration is in the request; remove the call",
				mod, name, strings.Join(allowedExtismImports(), ", "))
		case mod == "env" && name == "abort":
			return false, loadError(source, ErrForbiddenImport,
				"it imports env.abort (AssemblyScript's default abort handler): build it with asc --use abort=<your abort function>")
		default:
			return false, loadError(source, ErrForbiddenImport,
				"it imports function %s.%s; Extism plugins may import only from %s and %s: remove the import", mod, name, ExtismEnv, abi.WASIModule)
		}
	}
	for _, def := range compiled.ImportedMemories() {
		mod, name, _ := def.Import()
		return false, loadError(source, ErrForbiddenImport, "it imports memory %s.%s; plugins must define their own memory: remove the import", mod, name)
	}
	return wasi, nil
}

func allowedExtismImports() []string {
	names := make([]string, 0, len(extismImports))
	for n := range extismImports {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// checkHookFunctions checks the Extism function of every hook the manifest
// declares.
func checkHookFunctions(source string, fns map[string]api.FunctionDefinition, hooks []string) error {
	for _, h := range hooks {
		info, ok := abi.Hook(h).Info()
		if !ok {
			return loadError(source, ErrManifest, "hooks: %q has no Extism function in this host (it knows %s): fix the manifest", h, strings.Join(abi.HookNames(), ", "))
		}
		if err := checkExport(source, fns, info.Extism, sigExtismFunc, h); err != nil {
			return err
		}
	}
	return nil
}

// parseABIVersion parses "major.minor.patch".
func parseABIVersion(s string) (abi.Version, error) {
	v, ok, err := abi.ParseVersionExport(abi.VersionExportPrefix + strings.ReplaceAll(s, ".", "_"))
	if err == nil && !ok {
		err = errors.New("not major.minor.patch")
	}
	return v, err
}

// readManifest calls kubeplug_manifest and decodes and checks its answer.
func (p *Plugin) readManifest(ctx context.Context, inst *pluginInstance) (*extismManifest, error) {
	out, _, _, err := inst.call(ctx, p.limits, abi.ExportManifest, nil)
	if err != nil {
		return nil, loadError(p.source, ErrStart, "%s: %v: fix the plugin", abi.ExportManifest, err)
	}
	man := &extismManifest{}
	if err := decodeJSONOutput(out, p.limits, man); err != nil {
		return nil, loadError(p.source, ErrManifest, "%s: %v: output the manifest as one JSON object (SPEC.md, \"The Extism profile\")", abi.ExportManifest, err)
	}
	if err := ownStrings(&man.Manifest); err != nil {
		return nil, loadError(p.source, ErrManifest, "%s: %v: fix the manifest the plugin returns", abi.ExportManifest, err)
	}
	switch man.Encoding {
	case "":
		man.Encoding = EncodingJSON
	case EncodingJSON, EncodingMsgpack:
	default:
		return nil, loadError(p.source, ErrManifest, "%s: encoding %q is not %q or %q: fix the manifest", abi.ExportManifest, man.Encoding, EncodingJSON, EncodingMsgpack)
	}
	v, err := parseABIVersion(man.ABIVersion)
	if err != nil {
		return nil, loadError(p.source, ErrABIVersion, "%s: abiVersion %q: %v: declare the kubeplug ABI version the plugin speaks, e.g. %q", abi.ExportManifest, man.ABIVersion, err, abi.Current.String())
	}
	if !v.Compatible() {
		return nil, loadError(p.source, ErrABIVersion, "it was built for kubeplug ABI %v; this host speaks %v: upgrade the host, or build the plugin for ABI %d.%d",
			v, abi.Current, abi.VersionMajor, abi.VersionMinor)
	}
	// The manifest's abiVersion is the plugin's only version marker, so it
	// is checked against itself.
	if man.projection, err = checkManifest(p.source, &man.Manifest, v); err != nil {
		return nil, err
	}
	return man, nil
}
