package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"

	"github.com/kubeplug/kubeplug/abi"
)

// configCache keeps the last decoded configuration. The host sends the same
// configuration bytes on every call until an operator changes them, so one
// entry saves a reflective JSON decode per reconcile.
var configCache struct {
	sync.Mutex
	raw []byte
	typ reflect.Type
	val reflect.Value
}

// Config decodes the module's JSON configuration into v, a non-nil pointer.
// Fields of v that the configuration does not set keep their values, so set
// defaults before calling; an absent configuration leaves v unchanged. Unknown
// fields are an error, so a misspelt option is reported rather than ignored.
//
// The decoded value is cached and copied (shallowly) into v on later calls
// with the same configuration bytes and the same type of v: treat slices and
// maps in it as read-only.
//
//	cfg := config{Label: "example.com/skip"}
//	if err := req.Config(&cfg); err != nil { return sdk.Result{}, err }
func (r *Request) Config(v any) error { return decodeConfig(r.in.Config, v) }

// AdmitConfig decodes an admit request's configuration into v, as
// Request.Config does for a reconcile (same rules, same cache).
//
//	cfg := config{}
//	if err := sdk.AdmitConfig(req, &cfg); err != nil { return sdk.Admission{}, err }
func AdmitConfig(req *abi.AdmitRequest, v any) error { return decodeConfig(req.Config, v) }

func decodeConfig(raw []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("%w: Config needs a non-nil pointer, got %T", ErrConfig, v)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}

	configCache.Lock()
	defer configCache.Unlock()
	if configCache.typ == rv.Type() && bytes.Equal(configCache.raw, raw) {
		rv.Elem().Set(configCache.val)
		return nil
	}

	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v; fix the module's config (in the host configuration, or the case file of kubeplug test)", ErrConfig, err)
	}
	if err := dec.Decode(new(json.RawMessage)); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: data after the JSON value; fix the module's config (in the host configuration, or the case file of kubeplug test)", ErrConfig)
	}

	val := reflect.New(rv.Type().Elem()).Elem()
	val.Set(rv.Elem())
	configCache.raw = bytes.Clone(raw)
	configCache.typ = rv.Type()
	configCache.val = val
	return nil
}
