package raw

import (
	"errors"
	"fmt"

	"github.com/kubeplug/kubeplug/abi"
)

// Handler answers one reconcile. It may return an error or panic; Reconcile
// turns both into a Response status.
type Handler func(req *abi.ReconcileRequest) (*abi.Result, error)

// AdmitHandler answers one admission request (ABI 1.1). It may return an
// error or panic; Admit turns both into a Response status.
type AdmitHandler func(req *abi.AdmitRequest) (*abi.AdmitResponse, error)

// LogFunc receives the guest's log records in native runs (see Native).
type LogFunc func(level uint32, msg string)

// registration is the registered guest.
type registration struct {
	manifest abi.Manifest
	encoded  []byte
	handler  Handler
	admit    AdmitHandler
}

// module is the registered guest. A guest registers once, from init(), before
// any export can be called, so it needs no lock.
var module registration

// Register records the module's manifest and its hook handlers, either of
// which may be nil but not both. It encodes the manifest once, so that the
// manifest export never allocates.
func Register(m abi.Manifest, h Handler, a AdmitHandler) error {
	if Registered() {
		return fmt.Errorf("register %q: %w (%q)", m.Name, ErrRegistered, module.manifest.Name)
	}
	if h == nil && a == nil {
		return errors.New("register: nil handler")
	}
	enc, err := m.MarshalMsg(nil)
	if err != nil {
		return fmt.Errorf("register %q: encode manifest: %w", m.Name, err)
	}
	module = registration{manifest: m, encoded: enc, handler: h, admit: a}
	return nil
}

// Registered reports whether a module is registered.
func Registered() bool { return module.encoded != nil }

// Manifest returns the registered module's encoded manifest, nil when none
// is registered. The caller must not modify it.
func Manifest() []byte { return module.encoded }
