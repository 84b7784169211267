//go:build !wasip1

package raw

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// The fake host: natively, guest code runs in the test binary, and the host
// imports go to whatever the harness installed for the current call.

var (
	// hostMu serialises native calls as a wasm instance would: one call at
	// a time, which also keeps the shared response buffer safe.
	hostMu sync.Mutex
	logTo  atomic.Pointer[LogFunc]
)

// WriteLog sends msg to the log function of the native call in progress, or
// to stderr outside of one (a module's helper called directly from a test).
func WriteLog(level uint32, msg string) {
	if f := logTo.Load(); f != nil {
		(*f)(level, msg)
		return
	}
	fmt.Fprintf(os.Stderr, "kubeplug guest log (level %d): %s\n", level, msg)
}

// Native runs f as one call into the fake host: calls are serialised, and
// WriteLog goes to log (which may be nil to discard) until f returns.
func Native(log LogFunc, f func()) {
	hostMu.Lock()
	defer hostMu.Unlock()
	if log == nil {
		log = func(uint32, string) {}
	}
	logTo.Store(&log)
	defer logTo.Store(nil)
	f()
}
