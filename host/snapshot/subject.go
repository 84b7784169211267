package snapshot

import (
	"fmt"

	"github.com/kubeplug/kubeplug/abi"
)

// Subject is what a module reconciles, as the host's controller, its event
// wiring and `kubeplug test` read it: one of abi's built-in subjects
// (BuiltIn) or a module's declaration (*Declaration). Everything that
// depends on the kind of subject goes through it, so that a new subject is
// a declaration, not a change of each of them.
type Subject interface {
	// Name names it in messages and in a swap's check: a built-in
	// subject's name ("statefulset"), or the declared resource
	// ("deployments.apps/v1").
	Name() string
	// Kind is the kind of its objects, as a Lister knows them.
	Kind() string
	// Namespaced reports whether its objects live in namespaces.
	Namespaced() bool
	// Build builds the input of the subject key names, from b's Lister;
	// (nil, nil) when it is gone.
	Build(b *Builder, key string, config []byte) (*abi.ReconcileRequest, error)
	// RelatedKeys returns, by kind, what a change of a related object
	// queues.
	RelatedKeys() map[string]KeysFunc
}

// builtIn is a subject of abi's table.
type builtIn struct {
	info abi.SubjectInfo
	part subjectPart
}

// BuiltIn returns the built-in subject called name (abi.Subjects()).
func BuiltIn(name string) (Subject, bool) {
	info, ok := abi.Subject(name).Info()
	part, has := subjects[name]
	if !ok || !has {
		return nil, false
	}
	return builtIn{info: info, part: part}, true
}

func (s builtIn) Name() string     { return string(s.info.Name) }
func (s builtIn) Kind() string     { return s.info.Kind }
func (s builtIn) Namespaced() bool { return abi.KindOf(s.info.Kind).Namespaced }
func (s builtIn) Build(b *Builder, key string, config []byte) (*abi.ReconcileRequest, error) {
	return s.part.build(b, key, config)
}
func (s builtIn) RelatedKeys() map[string]KeysFunc { return RelatedKeys(string(s.info.Name)) }

// SubjectOf returns the subject of a module with manifest m: its built-in
// subject, or its declaration, whose resources must be resolved
// (kube.ResolveWatches).
func SubjectOf(m abi.Manifest) (Subject, error) {
	if m.Watches != nil {
		return CompileDeclaration(m.Watches)
	}
	if s, ok := BuiltIn(m.Subject); ok {
		return s, nil
	}
	return nil, fmt.Errorf("module %q has subject %q, which is not one of %v, and declares no watches", m.Name, m.Subject, abi.Subjects())
}

var _ Subject = (*Declaration)(nil)

// Name is the subject's resource, "deployments.apps/v1".
func (d *Declaration) Name() string { return d.subject.String() }

// Kind is the subject's kind.
func (d *Declaration) Kind() string { return d.subject.Kind }

// Build is Builder.Declared.
func (d *Declaration) Build(b *Builder, key string, config []byte) (*abi.ReconcileRequest, error) {
	return b.Declared(d, key, config)
}

// Watches returns the resolved declaration d was compiled from: what the
// executor checks a declared module's actions against.
func (d *Declaration) Watches() *abi.Watches {
	w := &abi.Watches{Subject: d.subject}
	for _, r := range d.relations {
		w.Relations = append(w.Relations, r.decl)
	}
	return w
}
