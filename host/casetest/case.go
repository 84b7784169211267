package casetest

import (
	"time"
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
	// Admit, when set, makes this an admission case: the request is
	// reviewed once, with Objects as the host's caches, and Expect's
	// admission fields are checked instead of the cluster.
	Admit *AdmitRequest
	// Steps are applied one after another once the rounds before each
	// have settled (steps.go); nil for a case of one state.
	Steps  []Step
	Expect Expect
}

// AdmitRequest is the admission request of an admission case.
type AdmitRequest struct {
	// Operation is CREATE, UPDATE, DELETE or CONNECT.
	Operation string
	// Object and OldObject are the request's objects as the API server
	// sends them; either may be nil (CREATE has no old object, DELETE no
	// object). The request's kind, resource, namespace and name are theirs.
	Object, OldObject map[string]any
	// User is the request's author: username and groups.
	Username string
	Groups   []string
	DryRun   bool
	// NamespaceLabels are the labels of the request's namespace.
	NamespaceLabels map[string]string
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

	// Allowed, Message, Warnings and Object are an admission case's: the
	// answer (nil: not checked), a substring of a denial's message, the
	// warnings by substring one-to-one, and the object after the patch by
	// subset.
	Allowed  *bool
	Message  string
	Warnings []string
	Object   map[string]any
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
