package casetest

import (
	"time"

	"github.com/kubeplug/kubeplug/abi"
)

// DefaultNow is the clock modules see when a case sets no `now`: fixed, so
// that runs are reproducible.
var DefaultNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// MaxRounds is how many reconcile rounds a case may take to settle.
const MaxRounds = 10

// File is a parsed case file.
type File struct {
	Path  string
	Cases []Case
}

// Case is one document of a case file. Values are JSON-shaped: maps are
// map[string]any, lists []any, integers int64, other numbers float64.
type Case struct {
	// File and Line say where the case starts.
	File string
	Line int
	Name string
	// Now is the clock of the run: DefaultNow unless the case sets `now`.
	Now time.Time
	// Config is the module configuration as JSON; nil when the case has
	// none.
	Config []byte
	// Objects are the cluster's objects, with namespaces defaulted.
	Objects []map[string]any
	Expect  Expect
}

// Expect is what the cluster must look like after the run.
type Expect struct {
	// Present are objects that must exist and match by subset. Each has
	// apiVersion, kind and metadata.name (and namespace, defaulted).
	Present []map[string]any
	// Absent are objects that must not exist.
	Absent []ObjectKey
	// VolumeDeletes match the volumes deleted through CSI, one-to-one, by
	// subset of {driver, volumeHandle}.
	VolumeDeletes []map[string]any
	// Events match the distinct events recorded, one-to-one, by subset of
	// {type, reason, message, involvedObject: {kind, namespace, name}}.
	Events []map[string]any
	// NoActions requires that the module returned no action in any round.
	NoActions bool
}

// ObjectKey names an object of an `absent` expectation.
type ObjectKey struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
}

// String renders k as "Kind namespace/name" ("Kind name" when
// cluster-scoped).
func (k ObjectKey) String() string {
	if k.Namespace == "" {
		return k.Kind + " " + k.Name
	}
	return k.Kind + " " + k.Namespace + "/" + k.Name
}

// subjectKinds maps a manifest's subject to the kind of its objects.
var subjectKinds = map[string]string{
	abi.SubjectStatefulSet:      abi.KindStatefulSet,
	abi.SubjectPersistentVolume: abi.KindPersistentVolume,
}
