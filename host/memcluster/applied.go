package memcluster

import (
	"reflect"
	"strings"
)

// Server-side apply's field ownership, as far as an applier can see it: a
// field an apply manager set and owns alone goes away when its next apply
// omits it, as on the API server; one it shares (it applied the value the
// object already had, which another manager set) or lost (another writer
// changed it since) stays.

// fieldPath is a leaf's path in an object, its keys joined by pathSep (keys
// such as label names hold dots and slashes).
type fieldPath = string

const pathSep = "\x00"

// ownership is, for one object (by uid), each apply manager's fields and
// whether it owns each alone.
type ownership map[string]map[fieldPath]bool

// appliedLeaves are the leaves an apply body sets: every non-map value, with
// a map's entries as fields of their own (labels, requests; an empty map
// sets none); the identity and preconditions in metadata are not fields.
func appliedLeaves(patch map[string]any) map[fieldPath]bool {
	out := map[fieldPath]bool{}
	var walk func(prefix []string, v any)
	walk = func(prefix []string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			out[strings.Join(prefix, pathSep)] = true
			return
		}
		for k, child := range m {
			if len(prefix) == 1 && prefix[0] == "metadata" && (k == "name" || k == "namespace" || k == "uid" || k == "resourceVersion") {
				continue
			}
			walk(append(append([]string(nil), prefix...), k), child)
		}
	}
	for k, v := range patch {
		if k != "apiVersion" && k != "kind" {
			walk([]string{k}, v)
		}
	}
	return out
}

// valueAt is the value at p in obj, and whether there is one.
func valueAt(obj map[string]any, p fieldPath) (any, bool) {
	var cur any = obj
	for _, k := range strings.Split(p, pathSep) {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// removeAt deletes the leaf at p from obj, and the maps it empties.
func removeAt(obj map[string]any, p fieldPath) {
	keys := strings.Split(p, pathSep)
	maps := []map[string]any{obj}
	for _, k := range keys[:len(keys)-1] {
		next, ok := maps[len(maps)-1][k].(map[string]any)
		if !ok {
			return
		}
		maps = append(maps, next)
	}
	delete(maps[len(maps)-1], keys[len(keys)-1])
	for i := len(maps) - 1; i > 0 && len(maps[i]) == 0; i-- {
		delete(maps[i-1], keys[i-1])
	}
}

// dropUnapplied removes from updated the fields manager owned alone by its
// last apply and this apply, leaves, no longer sets.
func (o ownership) dropUnapplied(manager string, leaves map[fieldPath]bool, updated map[string]any) {
	for p, alone := range o[manager] {
		if alone && !leaves[p] {
			removeAt(updated, p)
		}
	}
}

// recordApply records manager's apply of leaves, which made stored into
// updated: a field the apply changed is the manager's alone and no other
// manager's; one it found as it was stays as it was owned (shared, unless
// the manager had it alone).
func (o ownership) recordApply(manager string, leaves map[fieldPath]bool, stored, updated map[string]any) {
	prev := o[manager]
	next := map[fieldPath]bool{}
	for p := range leaves {
		if changed(stored, updated, p) {
			next[p] = true
			for m, fields := range o {
				if m != manager {
					delete(fields, p)
				}
			}
			continue
		}
		next[p] = prev[p]
	}
	o[manager] = next
}

// recordUpdate records a write other than an apply: whoever changes a field
// takes it from its apply managers.
func (o ownership) recordUpdate(stored, updated map[string]any) {
	for _, fields := range o {
		for p := range fields {
			if changed(stored, updated, p) {
				delete(fields, p)
			}
		}
	}
}

func changed(a, b map[string]any, p fieldPath) bool {
	av, aok := valueAt(a, p)
	bv, bok := valueAt(b, p)
	return aok != bok || !reflect.DeepEqual(av, bv)
}
