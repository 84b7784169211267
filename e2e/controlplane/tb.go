package controlplane

import (
	"fmt"
	"os"
	"runtime"
	"sync"
)

// tb gives kube-apiserver's test server the testing.TB it asks for, outside
// of a test: log lines go to logf, a fatal error stops the goroutine that
// hit it (as testing.T does), and cleanups run when the control plane stops.
type tb struct {
	name string
	logf func(string, ...any)

	mu       sync.Mutex
	failed   bool
	cleanups []func()
}

func newTB(name string, logf func(string, ...any)) *tb { return &tb{name: name, logf: logf} }

func (t *tb) Attr(key, value string) {}
func (t *tb) Chdir(dir string)       { panic("controlplane: Chdir is not supported") }
func (t *tb) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}
func (t *tb) Error(args ...any) { t.Log(args...); t.Fail() }
func (t *tb) Errorf(format string, args ...any) {
	t.Logf(format, args...)
	t.Fail()
}
func (t *tb) Fail() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed = true
}
func (t *tb) FailNow() { t.Fail(); runtime.Goexit() }
func (t *tb) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}
func (t *tb) Fatal(args ...any)                 { t.Log(args...); t.FailNow() }
func (t *tb) Fatalf(format string, args ...any) { t.Logf(format, args...); t.FailNow() }
func (t *tb) Helper()                           {}
func (t *tb) Log(args ...any)                   { t.logf("%s: %s", t.name, fmt.Sprint(args...)) }
func (t *tb) Logf(format string, args ...any)   { t.logf("%s: %s", t.name, fmt.Sprintf(format, args...)) }
func (t *tb) Name() string                      { return t.name }
func (t *tb) Setenv(key, value string)          { os.Setenv(key, value) }
func (t *tb) Skip(args ...any)                  { t.Log(args...); t.SkipNow() }
func (t *tb) Skipf(format string, args ...any)  { t.Logf(format, args...); t.SkipNow() }
func (t *tb) SkipNow()                          { runtime.Goexit() }
func (t *tb) Skipped() bool                     { return false }
func (t *tb) TempDir() string {
	dir, err := os.MkdirTemp("", "kubeplug-"+t.name+"-")
	if err != nil {
		t.Fatalf("TempDir: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// cleanup runs the registered cleanups, newest first.
func (t *tb) cleanup() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
