package raw

import (
	"errors"
	"fmt"

	"github.com/kubeplug/kubeplug/abi"
)

// LogFunc receives the guest's log records in native runs (see Native).
type LogFunc func(level uint32, msg string)

// registration is the registered guest.
type registration struct {
	manifest abi.Manifest
	encoded  []byte
	Handlers
}

// module is the registered guest. A guest registers once, from init(), before
// any export can be called, so it needs no lock.
var module registration

// Register records the module's manifest and its hook handlers, at least
// one of which must be set. It encodes the manifest once, so that the
// manifest export never allocates.
func Register(m abi.Manifest, hs Handlers) error {
	if Registered() {
		return fmt.Errorf("register %q: %w (%q)", m.Name, ErrRegistered, module.manifest.Name)
	}
	if len(hs.Hooks()) == 0 {
		return errors.New("register: nil handler")
	}
	enc, err := m.MarshalMsg(nil)
	if err != nil {
		return fmt.Errorf("register %q: encode manifest: %w", m.Name, err)
	}
	module = registration{manifest: m, encoded: enc, Handlers: hs}
	return nil
}

// Registered reports whether a module is registered.
func Registered() bool { return module.encoded != nil }

// Manifest returns the registered module's encoded manifest, nil when none
// is registered. The caller must not modify it.
func Manifest() []byte { return module.encoded }
