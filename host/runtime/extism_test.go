package runtime_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime"
	"github.com/kubeplug/kubeplug/host/runtime/hostile"
)

// warning is a plugin's answer with one event action on the request's set.
const warning = `{"status":0,"result":{"actions":[{"type":"event","target":{"kind":"StatefulSet","namespace":"default","name":"web","uid":"u1"},` +
	`"event":{"type":"Warning","reason":"Because","message":"caf\u00e9"}}],"requeueAfterMillis":5000}}`

func loadPlugin(t *testing.T, response string, limits runtime.Limits) runtime.Loaded {
	t.Helper()
	p, err := newEngine(t, runtime.Options{}).LoadAny(context.Background(), "plugin.wasm", hostile.ExtismAnswering([]byte(response)), limits)
	require.NoError(t, err)
	return p
}

// LoadAny tells the two kinds apart by the extism:host/env import, and the
// plugin answers through the same interface as a native module.
func TestExtismLoadAnyAndReconcile(t *testing.T) {
	eng := newEngine(t, runtime.Options{})
	native, err := eng.LoadAny(context.Background(), "good.wasm", guest(t, "good"), runtime.Limits{})
	require.NoError(t, err)
	require.IsType(t, &runtime.Module{}, native)
	require.False(t, native.Info().Extism)

	p := loadPlugin(t, warning, runtime.Limits{})
	require.IsType(t, &runtime.Plugin{}, p)
	info := p.Info()
	require.True(t, info.Extism)
	require.Equal(t, runtime.EncodingJSON, info.Encoding)
	require.Equal(t, abi.Current, info.ABIVersion)
	require.Equal(t, "hostile", p.Manifest().Name)

	res, err := p.Reconcile(context.Background(), request("default/web"))
	require.NoError(t, err)
	require.Len(t, res.Actions, 1)
	a := res.Actions[0]
	require.Equal(t, abi.ActionEvent, a.Type)
	require.Equal(t, abi.ObjectRef{Kind: "StatefulSet", Namespace: "default", Name: "web", UID: "u1"}, a.Target)
	require.Equal(t, "café", a.Event.Message)
	require.EqualValues(t, 5000, res.RequeueAfterMillis)
}

// The guest's own statuses become the same errors as a native module's,
// and its output the same checks.
func TestExtismStatusesAndOutputChecks(t *testing.T) {
	tests := []struct {
		name     string
		response string
		kind     runtime.ErrorKind
		want     string
		kept     bool
	}{
		{"failed", `{"status":2,"message":"config: unknown field"}`, runtime.KindStatus, "config: unknown field", true},
		{"panic", `{"status":3,"message":"boom"}`, runtime.KindStatus, "boom", false},
		{"unknown status", `{"status":42}`, runtime.KindStatus, "42", true},
		{"string too long", `{"status":2,"message":"` + strings.Repeat("x", 65<<10) + `"}`, runtime.KindOutput, "message: a string of 66560 bytes", false},
		{"actions flood under other-case keys", `{"status":0,"Result":{"ACTIONS":[` + strings.Repeat(`{},`, 4096) + `{}]}}`, runtime.KindOutput, "actions, the limit", false},
		{"trailing data", `{"status":0} {}`, runtime.KindOutput, "invalid character", false},
		{"an admit answer", `{"status":0,"admit":{"allowed":true}}`, runtime.KindOutput, "no answer to the reconcile hook", false},
		{"element flood", `{"status":0,"result":{"actions":[{"type":"event","event":{"message":[` + strings.Repeat("1,", 70_000) + `1]}}]}}`, runtime.KindOutput, "array elements and object members", false},
		{"member flood", `{"status":0,"result":{"actions":[{"type":"event","event":{"x":{` + strings.Repeat(`"a":1,`, 70_000) + `"a":1}}}]}}`, runtime.KindOutput, "array elements and object members", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Generous: the test plugin copies its output through the
			// host, 8 bytes a call, and the machine may be busy.
			p := loadPlugin(t, tt.response, runtime.Limits{Instances: 1, Deadline: 30 * time.Second})
			_, err := p.Reconcile(context.Background(), request("default/web"))
			require.ErrorIs(t, err, tt.kind)
			require.ErrorContains(t, err, tt.want)
			require.ErrorContains(t, err, `module "hostile" reconcile "default/web"`)
			discarded := uint64(1)
			if tt.kept {
				discarded = 0
			}
			require.Equal(t, discarded, p.Stats().Discarded)
		})
	}
}

// The configuration reaches a JSON plugin as the JSON value it is, not as
// base64 bytes; a configuration that is not JSON is refused before the
// call.
func TestExtismConfigIsJSON(t *testing.T) {
	p := loadPlugin(t, `{"status":0}`, runtime.Limits{})
	req := request("default/web")
	req.Config = []byte(`{"a": [1`)
	_, err := p.Reconcile(context.Background(), req)
	require.ErrorIs(t, err, runtime.KindInput)
}

// Every hostile Extism plugin is contained: refused at load, or its call
// fails with an error naming the reason, and the next call into it and a
// well-behaved plugin beside it still work.
func TestHostileExtism(t *testing.T) {
	limits := runtime.Limits{Instances: 1, MemoryBytes: 32 << 20} // the default 1s deadline
	eng := newEngine(t, runtime.Options{})
	good, err := eng.LoadAny(context.Background(), "good.wasm", hostile.ExtismAnswering([]byte(`{"status":0}`)), limits)
	require.NoError(t, err)

	for _, h := range hostile.Extism() {
		t.Run(h.Class, func(t *testing.T) {
			ctx := context.Background()
			source := h.Class + ".wasm"
			start := time.Now()
			defer func() {
				t.Logf("%s: %v wall, peak RSS %s", h.Class, time.Since(start).Round(time.Millisecond), peakRSS(t))
			}()
			require.True(t, runtime.IsExtism(h.Wasm))
			m, err := eng.LoadAny(ctx, source, h.Wasm, limits)
			if h.Stage == hostile.StageLoad {
				require.ErrorContains(t, err, `load module "`+source+`"`)
				require.ErrorContains(t, err, h.Want)
				if strings.Contains(h.Want, "import") || strings.Contains(h.Want, "reserved") {
					require.ErrorIs(t, err, runtime.ErrForbiddenImport)
				}
				return
			}
			require.NoError(t, err)
			defer m.Close(ctx)
			for range 2 { // the second call runs on a fresh instance
				_, err = m.Reconcile(ctx, request("default/web"))
				var ce *runtime.CallError
				require.True(t, errors.As(err, &ce), "%v", err)
				require.Equal(t, "hostile", ce.Module)
				require.ErrorContains(t, err, h.Want)
				if strings.Contains(h.Want, "deadline") {
					require.ErrorIs(t, err, runtime.KindDeadline)
				}
				if strings.Contains(h.Want, "memory") {
					require.ErrorIs(t, err, runtime.KindMemory)
				}
			}
			require.Equal(t, uint64(2), m.Stats().Discarded)
			_, err = good.Reconcile(ctx, request("default/other"))
			require.NoError(t, err, "another plugin keeps serving")
		})
	}
}

// The Extism plugins of go-sdk's own test corpus are Extism plugins, not
// kubeplug modules: each is refused with an error that says what is
// missing or forbidden.
func TestExtismPluginThatIsNotAModule(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/extism/go-sdk").Output()
	require.NoError(t, err)
	dir := filepath.Join(strings.TrimSpace(string(out)), "wasm")
	tests := []struct {
		file string
		want error
		msg  string
	}{
		{"count_vowels.wasm", runtime.ErrForbiddenImport, "config_get"},
		{"hello.wasm", runtime.ErrMissingExport, "it is an Extism plugin but not a kubeplug module: it has no Extism function kubeplug_manifest() -> (i32)"},
		{"http.wasm", runtime.ErrForbiddenImport, "http_request"},
	}
	eng := newEngine(t, runtime.Options{})
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			wasm, err := os.ReadFile(filepath.Join(dir, tt.file))
			require.NoError(t, err)
			require.True(t, runtime.IsExtism(wasm))
			_, err = eng.LoadAny(context.Background(), tt.file, wasm, runtime.Limits{})
			require.ErrorIs(t, err, tt.want)
			require.ErrorContains(t, err, tt.msg)
		})
	}
}

// No instance serves two calls at once, and there are never more than
// Limits.Instances of them.
func TestExtismPoolUnderConcurrentCalls(t *testing.T) {
	p := loadPlugin(t, warning, runtime.Limits{Instances: 2})
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() {
			_, err := p.Reconcile(context.Background(), request("default/web"))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	s := p.Stats()
	require.LessOrEqual(t, s.Peak, 2)
	require.Zero(t, s.Discarded)
	require.NoError(t, p.Close(context.Background()))
	_, err := p.Reconcile(context.Background(), request("default/web"))
	require.ErrorIs(t, err, runtime.ErrClosed)
}

// A plugin whose manifest asks for MessagePack gets the native module's
// encoding and checks.
func TestExtismMsgpack(t *testing.T) {
	resp, err := (&abi.Response{Status: abi.StatusOK, Result: &abi.Result{RequeueAfterMillis: 42}}).MarshalMsg(nil)
	require.NoError(t, err)
	eng := newEngine(t, runtime.Options{})
	p, err := eng.LoadAny(context.Background(), "msgpack.wasm", hostile.ExtismAnsweringMsgpack(resp), runtime.Limits{})
	require.NoError(t, err)
	require.Equal(t, runtime.EncodingMsgpack, p.Info().Encoding)
	res, err := p.Reconcile(context.Background(), request("default/web"))
	require.NoError(t, err)
	require.EqualValues(t, 42, res.RequeueAfterMillis)

	// JSON where MessagePack was declared is not one well-formed message.
	p, err = eng.LoadAny(context.Background(), "liar.wasm", hostile.ExtismAnsweringMsgpack([]byte(`{"status":0}`)), runtime.Limits{})
	require.NoError(t, err)
	_, err = p.Reconcile(context.Background(), request("default/web"))
	require.ErrorIs(t, err, runtime.KindOutput)
}

// A manifest that declares an encoding the profile does not know, or an
// ABI this host does not speak, is refused with what to fix.
func TestExtismManifestRefusals(t *testing.T) {
	eng := newEngine(t, runtime.Options{})
	_, err := eng.LoadAny(context.Background(), "xml.wasm", hostile.ExtismWithManifest(`{"name":"x","version":"1","abiVersion":"1.0.0","subject":"statefulset","hooks":["reconcile"],"encoding":"xml"}`), runtime.Limits{})
	require.ErrorIs(t, err, runtime.ErrManifest)
	require.ErrorContains(t, err, `encoding "xml" is not "json" or "msgpack"`)
	_, err = eng.LoadAny(context.Background(), "abi2.wasm", hostile.ExtismWithManifest(`{"name":"x","version":"1","abiVersion":"2.0.0","subject":"statefulset","hooks":["reconcile"]}`), runtime.Limits{})
	require.ErrorIs(t, err, runtime.ErrABIVersion)
	require.ErrorContains(t, err, "built for kubeplug ABI 2.0.0")
	_, err = eng.LoadAny(context.Background(), "noversion.wasm", hostile.ExtismWithManifest(`{"name":"x","version":"1","subject":"statefulset","hooks":["reconcile"]}`), runtime.Limits{})
	require.ErrorIs(t, err, runtime.ErrABIVersion)
	require.ErrorContains(t, err, `abiVersion ""`)
	_, err = eng.LoadAny(context.Background(), "admit.wasm", hostile.ExtismWithManifest(`{"name":"x","version":"1","abiVersion":"1.0.0","subject":"statefulset","hooks":["reconcile","admit"]}`), runtime.Limits{})
	require.ErrorIs(t, err, runtime.ErrManifest)
	// A map key in a projection needs ABI 1.5: a plugin that says 1.4 is
	// refused rather than sent what a 1.4 host would not send.
	_, err = eng.LoadAny(context.Background(), "keys.wasm", hostile.ExtismWithManifest(`{"name":"x","version":"1","abiVersion":"1.4.0","subject":"statefulset","hooks":["reconcile"],"projection":[{"kind":"Pod","fields":["status.conditions[type=Ready].status"]}]}`), runtime.Limits{})
	require.ErrorIs(t, err, runtime.ErrManifest)
	require.ErrorContains(t, err, `"status.conditions[type=Ready].status" has brackets (a map key or a list filter), which need ABI 1.5, but the module was built for 1.4.0`)
}

// What a plugin logs with the PDK reaches the host log, tagged with the
// module's name, within the same per-call budget as a native module's log.
func TestExtismLogs(t *testing.T) {
	tests := []struct {
		name    string
		message string
		times   int32
		records int
		dropped int
	}{
		{"one line", "hello from the plugin", 1, 1, 0},
		{"long line truncated", strings.Repeat("z", 5000), 1, 1, 0},
		{"flood", "again", 1000, 256, 1},
		// Each record spends the 4 KiB it is cut to, as a native module's
		// does: 16 fit the 64 KiB budget, and no empty record follows.
		{"long lines spend what is logged", strings.Repeat("y", 8000), 20, 16, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := &logSink{}
			eng := newEngine(t, runtime.Options{Logger: sink.logger()})
			p, err := eng.LoadAny(context.Background(), "logs.wasm", hostile.ExtismLogging(tt.message, tt.times), runtime.Limits{})
			require.NoError(t, err)
			p.SetName("entry")
			_, err = p.Reconcile(context.Background(), request("default/web"))
			require.NoError(t, err)
			records, dropped := 0, 0
			for _, r := range sink.all() {
				require.Equal(t, "entry", r.Attrs["module"], "%+v", r)
				if r.Message == "guest output over the per-call budget was dropped" {
					dropped++
					continue
				}
				require.Equal(t, slog.LevelInfo, r.Level)
				require.LessOrEqual(t, len(r.Message), 4096)
				require.True(t, strings.HasPrefix(tt.message, r.Message), "%q", r.Message)
				records++
			}
			require.Equal(t, tt.records, records)
			require.Equal(t, tt.dropped, dropped)
		})
	}
}

// go-sdk hands plugins the process's stdout and stderr when
// EXTISM_ENABLE_WASI_OUTPUT is set: the host refuses to load plugins then,
// rather than let their output past the log budget.
func TestExtismRefusesWASIOutputEnvironment(t *testing.T) {
	t.Setenv("EXTISM_ENABLE_WASI_OUTPUT", "1")
	_, err := newEngine(t, runtime.Options{}).LoadAny(context.Background(), "plugin.wasm", hostile.ExtismAnswering([]byte(`{"status":0}`)), runtime.Limits{})
	require.ErrorIs(t, err, runtime.ErrStart)
	require.ErrorContains(t, err, "EXTISM_ENABLE_WASI_OUTPUT is set")
}

// A plugin is compiled through the Engine's compilation cache: loading it
// fills the cache directory, and a second Engine on the same directory
// loads it again.
func TestExtismSharesTheCompilationCache(t *testing.T) {
	dir := t.TempDir()
	wasm := hostile.ExtismAnswering([]byte(`{"status":0}`))
	_, err := newEngine(t, runtime.Options{CacheDir: dir}).LoadAny(context.Background(), "plugin.wasm", wasm, runtime.Limits{})
	require.NoError(t, err)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.NotEmpty(t, entries, "compiled code in the cache directory")
	p, err := newEngine(t, runtime.Options{CacheDir: dir}).LoadAny(context.Background(), "plugin.wasm", wasm, runtime.Limits{})
	require.NoError(t, err)
	_, err = p.Reconcile(context.Background(), request("default/web"))
	require.NoError(t, err)
}
