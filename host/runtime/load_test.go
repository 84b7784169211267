package runtime_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime"
	wb "github.com/kubeplug/kubeplug/host/runtime/internal/wasmbuild"
)

func TestLoadRefusesBadModules(t *testing.T) {
	// withFunc returns the raw guest with one function replaced or added.
	withFunc := func(f wb.Func) func(testing.TB) []byte {
		return func(testing.TB) []byte {
			g := rawGuest(nil)
			for i := range g.Funcs {
				if g.Funcs[i].Export == f.Export {
					g.Funcs[i] = f
					return g.Bytes()
				}
			}
			g.Funcs = append(g.Funcs, f)
			return g.Bytes()
		}
	}
	built := func(name string) func(testing.TB) []byte {
		return func(t testing.TB) []byte { return guest(t, name) }
	}
	// manifest returns the raw guest with its manifest changed by edit.
	manifest := func(edit func(*abi.Manifest)) func(testing.TB) []byte {
		return func(testing.TB) []byte {
			m := rawManifest()
			edit(m)
			return rawGuestWith(encode(m), nil).Bytes()
		}
	}
	tests := []struct {
		name   string
		wasm   func(testing.TB) []byte
		err    error
		reason []string // substrings of the error besides the source
	}{
		{
			name:   "not wasm",
			wasm:   func(testing.TB) []byte { return []byte("apiVersion: v1\nkind: Pod\n") },
			err:    runtime.ErrNotModule,
			reason: []string{"not a WebAssembly module", "magic"},
		},
		{
			name:   "truncated wasm",
			wasm:   func(t testing.TB) []byte { b := guest(t, "good"); return b[:len(b)/2] },
			err:    runtime.ErrNotModule,
			reason: []string{"not a WebAssembly module", "truncated"},
		},
		{
			name:   "abi major 2",
			wasm:   built("abi2"),
			err:    runtime.ErrABIVersion,
			reason: []string{"built for kubeplug ABI 2.0.0", "this host speaks " + abi.Current.String(), "rebuild it against abi v1"},
		},
		{
			name: "abi minor newer than the host's",
			wasm: func(testing.TB) []byte {
				g := rawGuest(nil)
				g.Funcs[1].Export = abi.Version{Major: abi.VersionMajor, Minor: abi.VersionMinor + 1}.ExportName()
				return g.Bytes()
			},
			err:    runtime.ErrABIVersion,
			reason: []string{"built for kubeplug ABI " + abi.Version{Major: abi.VersionMajor, Minor: abi.VersionMinor + 1}.String(), "upgrade the host"},
		},
		{
			name:   "two version markers",
			wasm:   withFunc(wb.Func{Export: abi.Version{Major: 1, Minor: 0, Patch: 1}.ExportName()}),
			err:    runtime.ErrABIVersion,
			reason: []string{"exports 2 version markers (kubeplug_abi_version_1_0_1, " + abi.VersionExport + ")"},
		},
		{
			name:   "no version marker",
			wasm:   func(testing.TB) []byte { g := rawGuest(nil); g.Funcs[1].Export = ""; return g.Bytes() },
			err:    runtime.ErrMissingExport,
			reason: []string{"no ABI version marker", abi.VersionExportPrefix},
		},
		{
			name: "malformed version marker",
			wasm: func(testing.TB) []byte {
				g := rawGuest(nil)
				g.Funcs[1].Export = "kubeplug_abi_version_1_x_0"
				return g.Bytes()
			},
			err:    runtime.ErrABIVersion,
			reason: []string{`"x" is not a non-negative integer`},
		},
		{
			name:   "missing hook export",
			wasm:   built("noreconcile"),
			err:    runtime.ErrMissingExport,
			reason: []string{abi.ExportReconcile, `hook "reconcile"`},
		},
		{
			name:   "malloc with the wrong signature",
			wasm:   withFunc(wb.Func{Export: abi.ExportMalloc, Params: []byte{wb.I64}, Results: []byte{wb.I32}, Body: wb.I32Const(0)}),
			err:    runtime.ErrMissingExport,
			reason: []string{"export kubeplug_malloc has signature (i64) -> (i32), want (i32) -> (i32)"},
		},
		{
			name:   "no memory",
			wasm:   func(testing.TB) []byte { g := rawGuest(nil); g.NoMemory, g.Data = true, nil; return g.Bytes() },
			err:    runtime.ErrMissingExport,
			reason: []string{`no exported memory named "memory"`},
		},
		{
			name:   "forbidden import module",
			wasm:   built("forbidden"),
			err:    runtime.ErrForbiddenImport,
			reason: []string{"env.open_socket", "wasi_snapshot_preview1 and kubeplug"},
		},
		{
			name: "unknown host function",
			wasm: func(testing.TB) []byte {
				g := rawGuest(nil)
				g.Imports = []wb.Import{{Module: abi.ImportModule, Name: "kubeplug_open_socket"}}
				return g.Bytes()
			},
			err:    runtime.ErrForbiddenImport,
			reason: []string{"kubeplug.kubeplug_open_socket", "does not provide"},
		},
		{
			name: "imports the runtime's own checkpoint",
			wasm: func(testing.TB) []byte {
				g := rawGuest(nil)
				g.Imports = []wb.Import{{Module: "kubeplug:runtime", Name: "checkpoint", Results: []byte{wb.I32}}}
				return g.Bytes()
			},
			err:    runtime.ErrForbiddenImport,
			reason: []string{`"kubeplug:runtime" is reserved for the host`, "remove the import"},
		},
		{
			// Five bytes declare 3.3 billion types: a decoder that believed
			// them would allocate 80 GiB before reading the first.
			name: "declares more types than it has bytes",
			wasm: func(testing.TB) []byte {
				return append([]byte("\x00asm\x01\x00\x00\x00"), wb.Section(1, []byte{0xc6, 0xc6, 0xc6, 0xc6, 0x0c, 0x60})...)
			},
			err:    runtime.ErrNotModule,
			reason: []string{"type section", "a vector of 3369182022 elements in 1 bytes"},
		},
		{
			name: "declares four billion locals",
			wasm: func(testing.TB) []byte {
				g := rawGuest(nil)
				g.Funcs = append(g.Funcs, wb.Func{Locals: []wb.Locals{{N: 1<<32 - 1, Type: wb.I32}}})
				return g.Bytes()
			},
			err:    runtime.ErrNotModule,
			reason: []string{"declares more than 50000 locals"},
		},
		{
			name: "imported memory",
			wasm: func(testing.TB) []byte {
				g := rawGuest(nil)
				g.Imports = []wb.Import{{Module: "env", Name: "memory", Memory: true}}
				g.NoMemory, g.Data = true, nil
				return g.Bytes()
			},
			err:    runtime.ErrForbiddenImport,
			reason: []string{"imports memory env.memory"},
		},
		{
			name:   "initialize traps",
			wasm:   withFunc(wb.Func{Export: abi.ExportInitialize, Body: []byte{wb.OpUnreachable}}),
			err:    runtime.ErrStart,
			reason: []string{"_initialize", "unreachable"},
		},
		{
			name:   "manifest with an unknown action",
			wasm:   built("badmanifest"),
			err:    runtime.ErrManifest,
			reason: []string{`capabilities[1].action "execShell" is not a known action type`, "fix the manifest"},
		},
		{
			name:   "manifest without a name",
			wasm:   manifest(func(m *abi.Manifest) { m.Name = "" }),
			err:    runtime.ErrManifest,
			reason: []string{"name is empty"},
		},
		{
			name:   "manifest without a version",
			wasm:   manifest(func(m *abi.Manifest) { m.Version = "" }),
			err:    runtime.ErrManifest,
			reason: []string{"version is empty"},
		},
		{
			name:   "manifest abiVersion differs from the marker",
			wasm:   manifest(func(m *abi.Manifest) { m.ABIVersion = "1.0.0" }),
			err:    runtime.ErrManifest,
			reason: []string{`abiVersion "1.0.0" differs from the version marker export ` + abi.VersionExport},
		},
		{
			name:   "manifest with an unknown subject",
			wasm:   manifest(func(m *abi.Manifest) { m.Subject = "deployment" }),
			err:    runtime.ErrManifest,
			reason: []string{`subject "deployment" is not one of statefulset, persistentvolume`},
		},
		{
			name:   "manifest without hooks",
			wasm:   manifest(func(m *abi.Manifest) { m.Hooks = nil }),
			err:    runtime.ErrManifest,
			reason: []string{"hooks is empty"},
		},
		{
			name:   "manifest with an unknown hook",
			wasm:   manifest(func(m *abi.Manifest) { m.Hooks = append(m.Hooks, "validate") }),
			err:    runtime.ErrManifest,
			reason: []string{`hooks[1] "validate" is not a known hook (admit, reconcile)`},
		},
		{
			name: "manifest capability without resources",
			wasm: manifest(func(m *abi.Manifest) {
				m.Capabilities = []abi.Capability{{Action: abi.ActionDeleteVolume}, {Action: abi.ActionAddFinalizer}}
			}),
			err:    runtime.ErrManifest,
			reason: []string{`capabilities[1].resources is empty: list the resources action "addFinalizer" may touch`},
		},
		{
			name: "projection with brackets in a 1.4 module",
			wasm: func(testing.TB) []byte {
				m := rawManifest()
				m.ABIVersion = "1.4.0"
				m.Projection = []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"metadata.labels[controller-revision-hash]"}}}
				g := rawGuestWith(encode(m), nil)
				g.Funcs[1].Export = abi.Version{Major: 1, Minor: 4}.ExportName()
				return g.Bytes()
			},
			err: runtime.ErrManifest,
			reason: []string{`projection[0].fields[0] "metadata.labels[controller-revision-hash]" has brackets (a map key or a list filter), which need ABI 1.5, but the module was built for 1.4.0: rebuild it against abi v1.5, or keep the whole field`,
				"fix the manifest the module returns from kubeplug_manifest"},
		},
		{
			name: "projection filtering a map",
			wasm: manifest(func(m *abi.Manifest) {
				m.Projection = []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"status.phase", "metadata.labels[app=web]"}}}
			}),
			err:    runtime.ErrManifest,
			reason: []string{`projection[0].fields[1] "metadata.labels[app=web]" is not a field path of Pod: metadata.labels is a map: name one of its keys, metadata.labels[key]`},
		},
		{
			name: "projection with an unterminated bracket",
			wasm: manifest(func(m *abi.Manifest) {
				m.Projection = []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"status.conditions[type=Ready"}}}
			}),
			err:    runtime.ErrManifest,
			reason: []string{`projection[0].fields[0] "status.conditions[type=Ready" is not a field path: "[" at byte 17 is never closed: end the key or filter with "]"`},
		},
		{
			name:   "manifest that is not MessagePack",
			wasm:   func(testing.TB) []byte { return rawGuestWith([]byte{0xc1, 0x00}, nil).Bytes() },
			err:    runtime.ErrManifest,
			reason: []string{"kubeplug_manifest", "malformed message"},
		},
		{
			name: "manifest outside memory",
			wasm: withFunc(wb.Func{Export: abi.ExportManifest, Results: []byte{wb.I64},
				Body: wb.I64Const(abi.PackPtrLen(60000, 100000))}),
			err:    runtime.ErrManifest,
			reason: []string{"outside the guest's 65536-byte memory"},
		},
	}
	eng := newEngine(t, runtime.Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := eng.Load(context.Background(), "modules/bad.wasm", tt.wasm(t), runtime.Limits{})
			require.Error(t, err)
			require.Nil(t, m)
			require.ErrorIs(t, err, tt.err)
			require.Contains(t, err.Error(), `load module "modules/bad.wasm": `)
			for _, r := range tt.reason {
				require.Contains(t, err.Error(), r)
			}
		})
	}
}

func TestLoadDescribesModule(t *testing.T) {
	wasm := guest(t, "good")
	// No cache directory and no logger: the in-memory cache and slog.Default.
	eng, err := runtime.NewEngine(context.Background(), runtime.Options{})
	require.NoError(t, err)
	defer eng.Close(context.Background())
	m, err := eng.Load(context.Background(), "guests/good.wasm", wasm, runtime.Limits{})
	require.NoError(t, err)

	require.Equal(t, abi.Manifest{
		Name: "good", Version: "0.1.0", ABIVersion: "1.0.0",
		Subject:      abi.SubjectStatefulSet,
		Hooks:        []string{abi.HookReconcile},
		Capabilities: []abi.Capability{{Action: abi.ActionEvent, Resources: []string{"statefulsets"}}},
	}, m.Manifest())
	require.Equal(t, runtime.DefaultLimits(), m.Limits())

	info := m.Info()
	sum := sha256.Sum256(wasm)
	require.Equal(t, "good", info.Name)
	require.Equal(t, "0.1.0", info.Version)
	require.Equal(t, "guests/good.wasm", info.Source)
	require.Equal(t, abi.Version{Major: 1}, info.ABIVersion)
	require.Equal(t, len(wasm), info.Size)
	require.Equal(t, hex.EncodeToString(sum[:]), info.SHA256)
	require.Contains(t, info.Exports, runtime.Func{Name: abi.ExportReconcile, Params: []string{"i32", "i32"}, Results: []string{"i64"}})
	require.Contains(t, info.Exports, runtime.Func{Name: abi.Version{Major: 1}.ExportName()}, "a 1.0 module loads unchanged")
	require.Contains(t, info.Imports, runtime.Func{Module: abi.ImportModule, Name: abi.ImportWriteLog, Params: []string{"i32", "i32", "i32"}})
	for _, f := range info.Imports {
		require.Contains(t, []string{abi.WASIModule, abi.ImportModule}, f.Module, f.Name)
	}
	require.Equal(t, runtime.Stats{Live: 1, Peak: 1, Created: 1}, m.Stats(), "Load starts one instance")
}

func TestLoadThroughFileCache(t *testing.T) {
	dir := t.TempDir()
	wasm := guest(t, "good")
	_, err := newEngine(t, runtime.Options{CacheDir: dir}).Load(context.Background(), "good.wasm", wasm, runtime.Limits{})
	require.NoError(t, err)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.NotEmpty(t, entries, "the compiled module is in the cache directory")

	// A second engine, as after a restart, loads from the directory.
	m, err := newEngine(t, runtime.Options{CacheDir: dir}).Load(context.Background(), "good.wasm", wasm, runtime.Limits{})
	require.NoError(t, err)
	res, err := m.Reconcile(context.Background(), request("default/ok"))
	require.NoError(t, err)
	require.Len(t, res.Actions, 1)
}

func TestLoadRefusesMemoryTooSmallForModule(t *testing.T) {
	// A stock Go guest's memory starts at a few MiB.
	_, err := newEngine(t, runtime.Options{}).Load(context.Background(), "good.wasm", guest(t, "good"), runtime.Limits{MemoryBytes: 64 << 10})
	require.ErrorIs(t, err, runtime.ErrLimits)
	require.Contains(t, err.Error(), `load module "good.wasm": invalid limits: `)
	require.Contains(t, err.Error(), "raise the module's memory limit")
}

// The table limit reaches the rewrite: a stock-Go guest declares about 6,600
// table elements, so a limit of 100 refuses it, saying what to raise.
func TestLoadAppliesTableLimit(t *testing.T) {
	eng := newEngine(t, runtime.Options{})
	_, err := eng.Load(context.Background(), "good.wasm", guest(t, "good"), runtime.Limits{MaxTableElements: 100})
	require.ErrorIs(t, err, runtime.ErrLimits)
	require.Regexp(t, `load module "good.wasm": invalid limits: table of \d+ elements exceeds the limit of 100: raise the module's limits.maxTableElements \(now 100\)`, err.Error())
	_, err = eng.Load(context.Background(), "good.wasm", guest(t, "good"), runtime.Limits{})
	require.NoError(t, err, "the default fits")
}
