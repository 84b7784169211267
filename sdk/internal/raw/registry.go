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

// Handlers are a module's hook handlers, one field per hook of abi's
// table; a nil field is a hook the module does not implement.
type Handlers struct {
	Reconcile Handler
	Admit     AdmitHandler
}

// has reports whether hs implements hook h. It is the one place that pairs
// a field of Handlers with a hook of abi's table.
func (hs Handlers) has(h abi.Hook) bool {
	switch h {
	case abi.HookReconcile:
		return hs.Reconcile != nil
	case abi.HookAdmit:
		return hs.Admit != nil
	}
	return false
}

// Hooks returns the names of the hooks hs implements, in abi's table order:
// the manifest's hooks.
func (hs Handlers) Hooks() []string {
	var names []string
	for _, h := range abi.Hooks() {
		if hs.has(h.Name) {
			names = append(names, string(h.Name))
		}
	}
	return names
}

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
