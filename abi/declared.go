package abi

import "errors"

//msgp:tag json
//msgp:clearomitted

// DeclaredSubject is the input of a module that declares Watches (ABI 1.6):
// its subject and each relation's objects, every object whole, as the API
// server has it (metadata.managedFields left out), as JSON the guest decodes
// as it likes.
type DeclaredSubject struct {
	// Object is the subject. It is always set: the host does not reconcile
	// an object that no longer exists.
	Object *GenericObject `json:"object,omitempty"`
	// Related holds each relation's objects, in the order of
	// Watches.Relations, every relation listed, sorted by namespace and
	// name.
	Related []RelatedObjects `json:"related,omitempty"`
}

// RelatedObjects are the objects of one declared relation.
type RelatedObjects struct {
	// Relation is the relation's name (Relation.Name).
	Relation string          `json:"relation"`
	Objects  []GenericObject `json:"objects,omitempty"`
}

// GenericObject is an object of any kind: its kind and metadata decoded,
// which is what the host checks an action against and what most modules
// read first, and the whole object as JSON, metadata included.
type GenericObject struct {
	// APIVersion and Kind are the object's ("apps/v1", "Deployment").
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   ObjectMeta `json:"metadata"`
	// Object is the object as JSON.
	Object RawJSON `json:"object"`
}

// RawJSON is a JSON value carried as it is: bytes on the MessagePack wire,
// the value itself in a JSON request (an Extism plugin's).
type RawJSON []byte

// MarshalJSON returns r, or null when r is empty.
func (r RawJSON) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}

// UnmarshalJSON keeps a copy of data.
func (r *RawJSON) UnmarshalJSON(data []byte) error {
	if r == nil {
		return errors.New("abi.RawJSON: UnmarshalJSON on a nil pointer")
	}
	*r = append((*r)[:0], data...)
	return nil
}

// Relation returns the objects of the relation named name, nil when s has
// none or no such relation.
func (s *DeclaredSubject) Relation(name string) []GenericObject {
	if s == nil {
		return nil
	}
	for i := range s.Related {
		if s.Related[i].Relation == name {
			return s.Related[i].Objects
		}
	}
	return nil
}
