package config

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime"
)

// Failure policies of an admitting module (admission.failurePolicy).
const (
	FailurePolicyFail   = "Fail"
	FailurePolicyIgnore = "Ignore"
)

// Mode says whether the host carries out a module's actions.
type Mode string

const (
	// ModeEnforce: the host validates and executes the module's actions.
	ModeEnforce Mode = "enforce"
	// ModeShadow: the host validates and records the module's actions, and
	// executes none.
	ModeShadow Mode = "shadow"
)

// Module is one module entry of a host configuration.
type Module struct {
	// Name identifies the module in logs, metrics and events: a DNS label,
	// unique in the file. Default: the file name without .wasm.
	Name string
	// Path is the module file, absolute; empty when the module comes from
	// Image.
	Path string
	// Image is the OCI reference the module is pulled from (tag, digest,
	// or both, and then the digest pins it), as written; empty when it
	// comes from Path.
	Image string
	// PlainHTTP talks HTTP to Image's registry instead of HTTPS.
	PlainHTTP bool
	// DockerConfig is the file (absolute) with the registry credentials:
	// a docker config or an image pull secret; see ReadDockerConfig.
	// Empty sends none.
	DockerConfig string
	// ResolveEvery is how often Image's tag is resolved again to look for
	// a new digest; 0 never.
	ResolveEvery time.Duration
	// PublicKey is the PEM public key file (absolute) the image must be
	// signed with; empty requires no signature.
	PublicKey string
	// SHA256 pins the module file's digest (64 lower-case hex characters);
	// empty when unpinned.
	SHA256 string
	// Subject is abi.SubjectStatefulSet or abi.SubjectPersistentVolume, or
	// empty when the configuration leaves it to the module's manifest. When
	// set, the host refuses a module whose manifest declares another.
	Subject string
	// Namespaces limits the module to subjects in these namespaces; empty
	// means all. Always empty for persistentvolume modules.
	Namespaces []string
	// LabelSelector chooses the subject objects the module reconciles;
	// labels.Everything() when unset.
	LabelSelector labels.Selector
	// Config is the module's configuration as JSON, handed to the guest as
	// is; nil when unset.
	Config []byte
	// Mode is ModeEnforce (the default) or ModeShadow.
	Mode Mode
	// Workers is how many subjects the module reconciles at once: 1 to 64,
	// default 2.
	Workers int
	// Limits bound the module's sandbox; zero fields take runtime's defaults.
	Limits runtime.Limits
	// Allow is what the operator allows the module to do, in the
	// manifest's capability syntax; Grant checks the manifest against it.
	// nil when the entry has no allow: (the module may then run only in
	// shadow mode); empty, and granting nothing, for allow: [].
	Allow []abi.Capability
	// FailurePolicy answers an admission request when the module's admit
	// hook fails: FailurePolicyFail (the default) or FailurePolicyIgnore.
	FailurePolicy string
	// WebhookTimeout is the webhook's timeoutSeconds, whole seconds from 1s
	// to 30s; zero means the API server's default (10s).
	WebhookTimeout time.Duration
	// CompareWith names the enforce-mode entry this shadow-mode entry is
	// compared with: it is called with that module's input on each of its
	// reconciles, and each disagreement is logged and counted. Empty for an
	// entry that runs on its own.
	CompareWith string

	// pinnedAt says where SHA256 was set (file:line), so that a digest
	// mismatch can say where to fix it.
	pinnedAt string
	// definedAt says where the entry is (file:line and field), so that a
	// refused capability can say where to allow it.
	definedAt string
}

// SameAs reports whether o configures the module as m does, wherever in
// its file each entry is: a reload loads again only the entries that
// changed, not those an edit above them moved.
func (m *Module) SameAs(o *Module) bool {
	a, b := *m, *o
	a.pinnedAt, a.definedAt, b.pinnedAt, b.definedAt = "", "", "", ""
	return reflect.DeepEqual(a, b)
}

// Accept checks the manifest of the module loaded from m.Source() against its
// entry, as the host does before it runs the module: the subject, the
// namespaces (which a cluster-scoped subject cannot have) and the
// capabilities (see Grant, whose result it returns).
func (m *Module) Accept(man abi.Manifest) ([]abi.Capability, error) {
	if m.Subject != "" && m.Subject != man.Subject {
		return nil, fmt.Errorf("module %q: the configuration says subject %q but %s declares %q: fix the subject or the path",
			m.Name, m.Subject, m.Source(), man.Subject)
	}
	if !abi.Subject(man.Subject).Namespaced() && len(m.Namespaces) > 0 {
		return nil, fmt.Errorf("module %q: namespaces are set but %s reconciles %s, which is cluster-scoped: remove namespaces",
			m.Name, m.Source(), man.Subject)
	}
	return m.Grant(man)
}

// Source names where the module comes from: its file, or its image.
func (m *Module) Source() string { return m.From().String() }

// Where says where the entry is in its file (file:line and field), for
// messages about it.
func (m *Module) Where() string { return m.definedAt }

// Read is ReadContext without a deadline, for a module file.
func (m *Module) Read() ([]byte, error) { return m.ReadContext(context.Background()) }

// ReadContext returns the bytes of the module's source (see Source.Read).
// When SHA256 is set and their digest differs, the error wraps ErrDigest.
// An image is read by host/oci.
func (m *Module) ReadContext(ctx context.Context) ([]byte, error) {
	wasm, err := m.From().Read(ctx)
	if err != nil {
		return nil, fmt.Errorf("read module %q: %w", m.Name, err)
	}
	if err := m.CheckPin(wasm); err != nil {
		return nil, err
	}
	return wasm, nil
}

// CheckPin checks wasm against the entry's sha256 pin, when it has one.
// The error wraps ErrDigest.
func (m *Module) CheckPin(wasm []byte) error {
	if m.SHA256 == "" {
		return nil
	}
	sum := sha256.Sum256(wasm)
	if got := hex.EncodeToString(sum[:]); !strings.EqualFold(got, m.SHA256) {
		where := m.pinnedAt
		if where == "" {
			where = "the host configuration"
		}
		what, fix := m.From().pinAdvice()
		return fmt.Errorf("module %q: %w: %s has sha256 %s but %s pins %s; "+
			"if this %s is the one to run, set sha256: %s there, otherwise %s",
			m.Name, ErrDigest, m.Source(), got, where, m.SHA256, what, got, fix)
	}
	return nil
}
