package admission

import (
	"context"
	"fmt"
	"time"

	"github.com/kubeplug/kubeplug/abi"
)

// Admitter is a loaded module as admission needs it; the host's
// runtime.Module satisfies it.
type Admitter interface {
	Manifest() abi.Manifest
	Admit(ctx context.Context, req *abi.AdmitRequest) (*abi.AdmitResponse, error)
}

// Failure policies, as admissionregistration.k8s.io/v1 names them.
const (
	// Fail denies a request whose module failed.
	Fail = "Fail"
	// Ignore allows it.
	Ignore = "Ignore"
)

// DefaultTimeout is the webhook timeout when a module entry sets none: the
// API server's own default.
const DefaultTimeout = 10 * time.Second

// Module is one admitting module as the webhook serves it.
type Module struct {
	// Name is the module's entry name; the webhook path is /admit/<Name>.
	Name     string
	Admitter Admitter
	// Granted are the capabilities the operator's allow: grants the
	// module (config.Module.Grant); a patch may touch only the paths of
	// their mutate capabilities.
	Granted []abi.Capability
	// Config is the module's configuration as JSON.
	Config []byte
	// FailurePolicy is Fail (the default when empty) or Ignore.
	FailurePolicy string
	// Timeout is the webhook's timeoutSeconds in the generated
	// configuration, and the bound of a call when the API server does not
	// send one; zero means DefaultTimeout.
	Timeout time.Duration
}

func (m *Module) failurePolicy() string {
	if m.FailurePolicy == Ignore {
		return Ignore
	}
	return Fail
}

func (m *Module) timeout() time.Duration {
	if m.Timeout <= 0 {
		return DefaultTimeout
	}
	return m.Timeout
}

// callBudget is how long a review may take when the API server gives up
// after apiTimeout: the answer has to be encoded, travel back and be read
// before then, and on a loaded node each of these waits for a CPU. The
// review ends a margin earlier: a quarter of the timeout, at least half a
// second and at most two (0.5 s of 1 s and 2 s, 2 s of 10 s; RATIONALE.md
// says how it was measured).
func callBudget(apiTimeout time.Duration) time.Duration {
	margin := min(max(apiTimeout/4, answerMargin), 4*answerMargin)
	return max(apiTimeout-margin, 0)
}

// answerMargin is the least time kept for the answer to reach the API server.
const answerMargin = 500 * time.Millisecond

func (m *Module) String() string { return fmt.Sprintf("module %q", m.Name) }
