package abi

//msgp:tag json
//msgp:clearomitted

// Manifest describes a module. The host reads it once per load through
// ExportManifest and refuses modules whose manifest is incomplete or names
// anything this ABI version does not know.
type Manifest struct {
	// Name identifies the module in logs, metrics, events and errors.
	Name string `json:"name"`
	// Version is the module's own version, free-form (semver advised).
	Version string `json:"version"`
	// ABIVersion is "major.minor.patch" and must equal the version marker
	// export's.
	ABIVersion string `json:"abiVersion"`
	// Subject is one of Subjects(), or empty when Watches declares the
	// subject.
	Subject string `json:"subject"`
	// Watches declares the subject and its related objects (ABI 1.6), in
	// place of a built-in Subject.
	Watches *Watches `json:"watches,omitempty"`
	// Hooks lists the hooks the module implements (HookReconcile,
	// HookAdmit).
	Hooks []string `json:"hooks"`
	// Capabilities is everything the module may do; the host refuses any
	// returned action they do not cover.
	Capabilities []Capability `json:"capabilities,omitempty"`
	// Description says what the module is for, in a sentence.
	Description string `json:"description,omitempty"`
	// ConfigSchema is a JSON schema, or a plain description, of the
	// configuration the module accepts in ReconcileRequest.Config.
	ConfigSchema string `json:"configSchema,omitempty"`
	// Admission says what the admit hook admits; required with HookAdmit
	// (ABI 1.1).
	Admission *Admission `json:"admission,omitempty"`
	// Projection is what the module reads of each kind of object (ABI 1.3):
	// the host sends the reconcile hook objects of a listed kind with only
	// those fields and the identity fields (ObjectFields). Empty, every
	// object is sent whole.
	Projection []ObjectFields `json:"projection,omitempty"`
}

// Capability allows one action type on some resources. Resources are
// lower-case plural resource names ("persistentvolumeclaims"); they are
// required for actions on objects and ignored for ActionDeleteVolume.
//
// Paths is read for CapabilityMutate and ActionApply only: the JSON
// Pointer prefixes a patch or an applied object may touch, "*" for any
// (ABI 1.1; apply 1.6).
type Capability struct {
	Action    string   `json:"action"`
	Resources []string `json:"resources,omitempty"`
	Paths     []string `json:"paths,omitempty"`
	// Force lets ActionApply take fields another field manager owns
	// (ABI 1.6); without it such an apply fails with the conflict.
	Force bool `json:"force,omitempty"`
}

// Allows reports whether c covers action type a on resource r.
func (c Capability) Allows(a, r string) bool {
	if c.Action != a {
		return false
	}
	if a == ActionDeleteVolume {
		return true
	}
	for _, x := range c.Resources {
		if x == r || x == "*" {
			return true
		}
	}
	return false
}
