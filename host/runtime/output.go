package runtime

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/kubeplug/kubeplug/abi"
)

// maxStringBytes caps every string of a module's output and manifest (SPEC.md,
// "Output"): names, messages, label values. Kubernetes' own limits are
// smaller for most (a name 253 bytes, an event message 1 KiB); this is the
// host's bound on what one string may cost, whatever it ends up in.
const maxStringBytes = 64 << 10

// elementsPerAction bounds the array elements and map entries of an output
// (nested ones included) to this many per action Limits.MaxActions allows:
// an empty map is one byte on the wire and a whole struct decoded (a 1 MB
// output of empty owner references decoded into 68 MB). The reference
// modules use a few per action.
const elementsPerAction = 16

// decodeOutput decodes a hook's output as the host must: its shape checked
// before anything is allocated for it, then decoded, then every string
// checked and copied (ownResponse: ownStrings's checks and errors, written
// out for the wire types).
func decodeOutput(out []byte, l Limits) (*abi.Response, error) {
	if err := checkOutputShape(out, l); err != nil {
		return nil, err
	}
	resp, err := abi.DecodeResponse(out)
	if err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	return ownAnswer(resp)
}

// ownAnswer checks and copies the strings of a decoded answer, MessagePack
// or JSON (ownResponse), and skips the walk when it holds none.
func ownAnswer(resp *abi.Response) (*abi.Response, error) {
	if holdsNoString(resp) {
		return resp, nil
	}
	if err := ownResponse(resp); err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	return resp, nil
}

// holdsNoString reports whether resp is an answer with nothing to own: no
// message and no action, the steady state of most reconciles, which then
// skip the walk.
func holdsNoString(resp *abi.Response) bool {
	r := resp.Result
	return resp.Message == "" && resp.Admit == nil && (r == nil || r.Message == "" && len(r.Actions) == 0)
}

// checkOutputShape refuses, before it is decoded, an output with more
// actions than l.MaxActions or more array elements and map entries than
// elementsPerAction times that. Every element takes at least one byte, so a
// short output (the common case) skips the walks.
func checkOutputShape(out []byte, l Limits) error {
	if len(out) > l.MaxActions {
		n, err := abi.CountResponseActions(out)
		if err != nil {
			return fmt.Errorf("output: %w", err)
		}
		if n > l.MaxActions {
			return fmt.Errorf("output holds %d actions, more than the limit of %d: raise the module's limits.maxActions if it needs that many in one reconcile, or fix the module", n, l.MaxActions)
		}
	}
	if maxElements := elementsPerAction * l.MaxActions; len(out) > maxElements {
		n, err := abi.CountElements(out)
		if err != nil {
			return fmt.Errorf("output: %w", err)
		}
		if n > maxElements {
			return fmt.Errorf("output holds %d array elements and map entries, more than the limit of %d (%d per action of limits.maxActions): fix the module, or raise limits.maxActions", n, maxElements, elementsPerAction)
		}
	}
	return nil
}

// ownStrings checks every string reachable from v (a pointer to a decoded
// wire value) for valid UTF-8 and maxStringBytes, and replaces each with a
// copy. abi's decoders do not copy strings, for the guests' sake; in the
// host a decoded string must not keep the whole output buffer alive, and a
// string that is not UTF-8 must not reach a log, a metric label or the API
// server. The error names the field: `actions[3].type: invalid UTF-8`.
//
// The walk visits each value once: its work is proportional to what was
// decoded, which MaxOutputBytes and MaxActions bound. It serves manifests; a
// hook's answer, MessagePack or JSON, goes through ownResponse (own.go),
// which a test holds to this walk's errors.
func ownStrings(v any) error {
	if err := own(reflect.ValueOf(v)); err != nil {
		return err // not a nil *fieldError in a non-nil error
	}
	return nil
}

// fieldError is a bad string, with the path to it built as the walk unwinds
// (so that a good output costs no path at all).
type fieldError struct {
	path []string // innermost first
	msg  string
}

func (e *fieldError) Error() string {
	var b strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		s := e.path[i]
		if b.Len() > 0 && !strings.HasPrefix(s, "[") {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	if b.Len() == 0 {
		return e.msg
	}
	return b.String() + ": " + e.msg
}

func (e *fieldError) in(segment string) *fieldError {
	e.path = append(e.path, segment)
	return e
}

func own(v reflect.Value) *fieldError {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return own(v.Elem())
		}
	case reflect.Struct:
		for _, f := range structPlan(v.Type()) {
			if err := own(v.Field(f.index)); err != nil {
				return err.in(f.name)
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil // bytes, not text (a module's configuration)
		}
		for i := range v.Len() {
			if err := own(v.Index(i)); err != nil {
				return err.in("[" + strconv.Itoa(i) + "]")
			}
		}
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		t := v.Type()
		m := reflect.MakeMapWithSize(t, v.Len())
		for it := v.MapRange(); it.Next(); {
			k, e := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
			k.Set(it.Key())
			e.Set(it.Value())
			if err := own(k); err != nil {
				return err.in("[key]")
			}
			if err := own(e); err != nil {
				return err.in("[" + strconv.Quote(k.String()) + "]")
			}
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.String:
		s := v.String()
		if err := checkString(s); err != nil {
			return err
		}
		if s != "" {
			v.SetString(strings.Clone(s))
		}
	}
	return nil
}

// field is a struct field the walk visits: one that can hold a string.
type field struct {
	index int
	name  string // on the wire, for errors
}

// plans caches structPlan: the wire types are few, and looking their fields
// up on every visit was most of the walk's cost.
var plans sync.Map // reflect.Type -> []field

// structPlan returns the exported fields of struct type t that can hold a
// string, skipping numbers and booleans (a status, a partition).
func structPlan(t reflect.Type) []field {
	if p, ok := plans.Load(t); ok {
		return p.([]field)
	}
	var p []field
	for i := range t.NumField() {
		f := t.Field(i)
		if f.IsExported() && holdsStrings(f.Type, map[reflect.Type]bool{}) {
			p = append(p, field{index: i, name: jsonName(f)})
		}
	}
	plans.Store(t, p)
	return p
}

// holdsStrings reports whether a value of type t can contain a string.
func holdsStrings(t reflect.Type, seen map[reflect.Type]bool) bool {
	switch t.Kind() {
	case reflect.String, reflect.Interface:
		return true
	case reflect.Slice, reflect.Array:
		return t.Elem().Kind() != reflect.Uint8 && holdsStrings(t.Elem(), seen)
	case reflect.Pointer:
		return holdsStrings(t.Elem(), seen)
	case reflect.Map:
		return holdsStrings(t.Key(), seen) || holdsStrings(t.Elem(), seen)
	case reflect.Struct:
		if seen[t] {
			return false // the wire types are not recursive; this ends a loop
		}
		seen[t] = true
		for i := range t.NumField() {
			if t.Field(i).IsExported() && holdsStrings(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

// jsonName is a field's name on the wire.
func jsonName(f reflect.StructField) string {
	if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" {
		return name
	}
	return f.Name
}
