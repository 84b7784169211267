package runtime

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxStringBytes caps every string of a module's output and manifest (SPEC.md,
// "Output"): names, messages, label values. Kubernetes' own limits are
// smaller for most (a name 253 bytes, an event message 1 KiB); this is the
// host's bound on what one string may cost, whatever it ends up in.
const maxStringBytes = 64 << 10

// ownStrings checks every string reachable from v (a pointer to a decoded
// wire value) for valid UTF-8 and maxStringBytes, and replaces each with a
// copy. abi's decoders do not copy strings, for the guests' sake; in the
// host a decoded string must not keep the whole output buffer alive, and a
// string that is not UTF-8 must not reach a log, a metric label or the API
// server. The error names the field: `actions[3].type: invalid UTF-8`.
//
// The walk visits each value once: its work is proportional to what was
// decoded, which MaxOutputBytes and MaxActions bound.
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
		t := v.Type()
		for i := range v.NumField() {
			if !t.Field(i).IsExported() {
				continue
			}
			if err := own(v.Field(i)); err != nil {
				return err.in(jsonName(t.Field(i)))
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
		switch {
		case len(s) > maxStringBytes:
			return &fieldError{msg: fmt.Sprintf("a string of %d bytes, more than the limit of %d", len(s), maxStringBytes)}
		case !utf8.ValidString(s):
			return &fieldError{msg: "invalid UTF-8"}
		case s != "":
			v.SetString(strings.Clone(s))
		}
	}
	return nil
}

// jsonName is a field's name on the wire.
func jsonName(f reflect.StructField) string {
	if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" {
		return name
	}
	return f.Name
}
