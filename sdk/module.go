package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk/internal/raw"
)

// ReconcileFunc decides what to do about one subject. It must be a pure
// function of req: take the time from req.Now, never from the system.
type ReconcileFunc func(req *Request) (Result, error)

// Module describes a guest module. Name, Version, Subject and at least one
// hook (Reconcile, Admit) are required; everything else is optional.
type Module struct {
	// Name identifies the module in the host's logs, metrics and events.
	Name string
	// Version is the module's own version (semver advised).
	Version string
	// Subject is abi.SubjectStatefulSet or abi.SubjectPersistentVolume.
	Subject string
	// Description says what the module is for, in a sentence.
	Description string
	// ConfigSchema is a JSON schema (checked to be valid JSON when it starts
	// with "{") or a plain description of the configuration.
	ConfigSchema string
	// Capabilities lists every action the module may return; the host
	// refuses the others.
	Capabilities []abi.Capability
	// Reconcile is the reconcile hook.
	Reconcile ReconcileFunc
	// Admit is the admit hook (ABI 1.1), served by the host as an admission
	// webhook; Admission is then required and says what it admits.
	Admit     AdmitFunc
	Admission *abi.Admission
	// Projection is what Reconcile reads of each kind of object (ABI 1.3):
	// the host then sends objects of a listed kind with only those fields
	// and their identity (name, namespace, uid, resourceVersion), which
	// makes each call cheaper. The module's code is the same either way: a
	// field left out reads as empty. Leave it nil to get every object whole.
	// `kubeplug test` runs every reconcile with and without it and fails a
	// case whose answers differ, so a field read but not listed is caught.
	// Since ABI 1.5 a path may keep one key of a map or the elements of a
	// list whose field has a value (abi.ObjectFields): a module that reads
	// one label and the Ready condition need not be sent the others.
	//
	//	Projection: []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"status.conditions"}}}
	//	Projection: []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"metadata.labels[app]", "status.conditions[type=Ready].status"}}}
	Projection []abi.ObjectFields
}

// Register registers the guest's module. Call it once, from an init function
// of package main. It panics, naming the problem, when the module is
// incomplete or when a module is already registered: both are bugs a guest's
// first test finds.
//
//	func init() { sdk.Register(sdk.Module{Name: "m", Version: "0.1.0", Subject: abi.SubjectStatefulSet, Reconcile: reconcile}) }
func Register(m Module) {
	man, err := m.Manifest()
	if err != nil {
		panic("sdk.Register: " + err.Error())
	}
	if err := raw.Register(man, m.handlers()); err != nil {
		panic("sdk.Register: " + err.Error() + ": call sdk.Register once per guest")
	}
}

// Manifest validates m and returns the manifest the host will read. The
// rules are the host's own (abi's Manifest.Validate), so a module the SDK
// registers is never one the host refuses; the errors name Module's fields.
func (m Module) Manifest() (abi.Manifest, error) {
	man := abi.Manifest{
		Name:         m.Name,
		Version:      m.Version,
		ABIVersion:   abi.Current.String(),
		Subject:      m.Subject,
		Hooks:        m.handlers().Hooks(),
		Capabilities: m.Capabilities,
		Description:  m.Description,
		ConfigSchema: m.ConfigSchema,
		Admission:    m.Admission,
		Projection:   m.Projection,
	}
	var errs []error
	if err := man.Validate(abi.Current); err != nil {
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			errs = append(errs, goError(e.(*abi.ManifestError)))
		}
	}
	if s := strings.TrimSpace(m.ConfigSchema); strings.HasPrefix(s, "{") && !json.Valid([]byte(s)) {
		errs = append(errs, errors.New("ConfigSchema starts with \"{\" but is not valid JSON"))
	}
	if len(errs) > 0 {
		return abi.Manifest{}, fmt.Errorf("module %q: %w", m.Name, errors.Join(errs...))
	}
	return man, nil
}

// goError says what e says in the words of Module's fields; a rule the
// SDK has no words for keeps the manifest's.
func goError(e *abi.ManifestError) error {
	switch {
	case e.Field == "name" || e.Field == "version":
		return fmt.Errorf("%s%s is empty", strings.ToUpper(e.Field[:1]), e.Field[1:])
	case e.Field == "subject" && e.Rule == abi.RuleUnknown:
		return fmt.Errorf("Subject %q is not one of %s", e.Value, strings.Join(abi.Subjects(), ", "))
	case e.Field == "hooks" && e.Rule == abi.RuleEmpty:
		return errors.New("Reconcile and Admit are nil: set at least one")
	case e.Field == "admission" && e.Rule == abi.RuleUnexpected:
		return errors.New("Admission is set but Admit is nil")
	case e.Field == "admission.rules" && e.Rule == abi.RuleEmpty:
		return errors.New("Admit is set but Admission has no Rules: say which operations on which resources it admits")
	case e.Field == "capabilities.action" && e.Rule == abi.RuleUnknown:
		return fmt.Errorf("Capabilities[%d]: unknown action %q (known: %s)", e.Index, e.Value, strings.Join(abi.CapabilityNames(), ", "))
	case e.Field == "capabilities.resources" && e.Rule == abi.RuleEmpty:
		return fmt.Errorf("Capabilities[%d]: action %q names no Resources (e.g. \"persistentvolumeclaims\")", e.Index, e.Value)
	case e.Field == "capabilities.paths" && e.Rule == abi.RuleEmpty:
		return fmt.Errorf("Capabilities[%d]: %s names no Paths (e.g. \"/metadata/labels\")", e.Index, e.Value)
	}
	return e
}

// handlers are m's hooks as the raw layer registers them: the one place that
// pairs a field of Module with a hook.
func (m Module) handlers() raw.Handlers {
	return raw.Handlers{Reconcile: handler(m.Reconcile), Admit: admitHandler(m.Admit)}
}

// handler adapts a ReconcileFunc to the raw layer. It reuses one Request and
// one abi.Result across calls, which the raw layer makes one at a time: a
// Request is documented to belong to one call, and the raw layer encodes the
// result before it returns. In a guest each allocation saved is a few calls
// into the allocator, and each call is costly there.
func handler(f ReconcileFunc) raw.Handler {
	if f == nil {
		return nil
	}
	var (
		req Request
		out abi.Result
	)
	return func(in *abi.ReconcileRequest) (*abi.Result, error) {
		if !plausibleNow(in.Now) {
			return nil, raw.BadInputError(badNow(in.Now).Error())
		}
		req.reset(in)
		res, err := f(&req)
		if req.nowErr != nil {
			// The module asked for a time the request does not have: its
			// answer rests on the zero time, so it does not count.
			return nil, raw.BadInputError(req.nowErr.Error())
		}
		if err != nil {
			return nil, err
		}
		if err := res.abiInto(&out); err != nil {
			return nil, err
		}
		return &out, nil
	}
}
