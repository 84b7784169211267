package raw

import (
	"errors"
	"fmt"

	"github.com/kubeplug/kubeplug/abi"
)

// Handler answers one reconcile. It may return an error or panic; Reconcile
// turns both into a Response status.
type Handler func(req *abi.ReconcileRequest) (*abi.Result, error)

// LogFunc receives the guest's log records in native runs (see Native).
type LogFunc func(level uint32, msg string)

// registration is the registered guest.
type registration struct {
	manifest abi.Manifest
	encoded  []byte
	handler  Handler
}

// module is the registered guest. A guest registers once, from init(), before
// any export can be called, so it needs no lock.
var module registration

// Register records the module's manifest and reconcile handler. It encodes
// the manifest once, so that the manifest export never allocates.
func Register(m abi.Manifest, h Handler) error {
	if module.handler != nil {
		return fmt.Errorf("register %q: %w (%q)", m.Name, ErrRegistered, module.manifest.Name)
	}
	if h == nil {
		return errors.New("register: nil handler")
	}
	enc, err := m.MarshalMsg(nil)
	if err != nil {
		return fmt.Errorf("register %q: encode manifest: %w", m.Name, err)
	}
	module = registration{manifest: m, encoded: enc, handler: h}
	return nil
}

// Registered reports whether a module is registered.
func Registered() bool { return module.handler != nil }

// Manifest returns the registered module's encoded manifest, nil when none
// is registered. The caller must not modify it.
func Manifest() []byte { return module.encoded }
