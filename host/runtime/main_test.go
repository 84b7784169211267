package runtime_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime"
)

// The test guests are built from source under testdata/guests, once per test
// binary, the first time a test needs one.

// guestBuilds are the packages under testdata/guests, "good" first.
var guestBuilds = []string{"good", "abi2", "noreconcile", "forbidden", "badmanifest", "admitter"}

var (
	buildOnce sync.Once
	buildErr  error
	guestDir  string

	// cacheDir is the compilation cache the tests' engines share, so that
	// each guest is compiled once per test binary rather than once per test.
	cacheDir string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kubeplug-runtime-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cacheDir = dir
	code := m.Run()
	os.RemoveAll(cacheDir)
	if guestDir != "" {
		os.RemoveAll(guestDir)
	}
	os.Exit(code)
}

// guest returns the bytes of the named test guest, building all of them on
// first use.
func guest(t testing.TB, name string) []byte {
	t.Helper()
	buildOnce.Do(func() { guestDir, buildErr = buildGuests() })
	require.NoError(t, buildErr)
	b, err := os.ReadFile(filepath.Join(guestDir, name+".wasm"))
	require.NoError(t, err)
	return b
}

func buildGuests() (string, error) {
	dir, err := os.MkdirTemp("", "kubeplug-runtime-guests-")
	if err != nil {
		return "", err
	}
	build := func(name string) error {
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", filepath.Join(dir, name+".wasm"), "./testdata/guests/"+name)
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build test guest %s: %v\n%s", name, err, out.String())
		}
		return nil
	}
	// The first build compiles the Go runtime for wasip1 into the build
	// cache; the rest reuse it, two at a time (these machines have 2 cores).
	if err := build(guestBuilds[0]); err != nil {
		return dir, err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(guestBuilds))
	sem := make(chan struct{}, 2)
	for i, g := range guestBuilds[1:] {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = build(g)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return dir, err
		}
	}
	return dir, nil
}

// newEngine returns an engine closed when the test ends, by default on the
// tests' shared compilation cache and discarding logs.
func newEngine(t testing.TB, opts runtime.Options) *runtime.Engine {
	t.Helper()
	if opts.CacheDir == "" {
		opts.CacheDir = cacheDir
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	eng, err := runtime.NewEngine(context.Background(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, eng.Close(context.Background())) })
	return eng
}

// load loads the named guest into a fresh engine.
func load(t testing.TB, name string, limits runtime.Limits, opts runtime.Options) *runtime.Module {
	t.Helper()
	m, err := newEngine(t, opts).Load(context.Background(), name+".wasm", guest(t, name), limits)
	require.NoError(t, err)
	return m
}

func request(key string) *abi.ReconcileRequest {
	return &abi.ReconcileRequest{Subject: abi.SubjectStatefulSet, Key: key, Now: "2024-06-01T12:00:00Z"}
}

// logSink records log records, with the attributes of their logger.
type logSink struct {
	mu      sync.Mutex
	records []logRecord
	waiters map[string]chan struct{}
}

type logRecord struct {
	Level   slog.Level
	Message string
	Attrs   map[string]any
}

func (s *logSink) logger() *slog.Logger { return slog.New(&sinkHandler{sink: s}) }

// when returns a channel closed once a record with message msg is logged.
func (s *logSink) when(msg string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiters == nil {
		s.waiters = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	s.waiters[msg] = ch
	return ch
}

func (s *logSink) all() []logRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]logRecord(nil), s.records...)
}

type sinkHandler struct {
	sink  *logSink
	attrs []slog.Attr
}

func (h *sinkHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *sinkHandler) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{Level: r.Level, Message: r.Message, Attrs: map[string]any{}}
	for _, a := range h.attrs {
		rec.Attrs[a.Key] = a.Value.Any()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.Any()
		return true
	})
	h.sink.mu.Lock()
	defer h.sink.mu.Unlock()
	h.sink.records = append(h.sink.records, rec)
	if ch, ok := h.sink.waiters[r.Message]; ok {
		close(ch)
		delete(h.sink.waiters, r.Message)
	}
	return nil
}

func (h *sinkHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &sinkHandler{sink: h.sink, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

func (h *sinkHandler) WithGroup(string) slog.Handler { return h }
