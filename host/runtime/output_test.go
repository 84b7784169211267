package runtime_test

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime"
)

// Every string of an output is checked, wherever it is, and the error names
// the field by its wire path.
func TestOwnStrings(t *testing.T) {
	long := strings.Repeat("x", 64<<10+1)
	for _, tt := range []struct {
		name string
		resp *abi.Response
		want string // "" for valid
	}{
		{"valid", &abi.Response{Message: "ok", Result: &abi.Result{Actions: []abi.Action{{Type: abi.ActionEvent, Event: &abi.Event{Message: "héllo"}}}}}, ""},
		{"action type", &abi.Response{Result: &abi.Result{Actions: []abi.Action{{}, {}, {}, {Type: "a\xffb"}}}}, "result.actions[3].type: invalid UTF-8"},
		{"nested in a payload", &abi.Response{Result: &abi.Result{Actions: []abi.Action{{OwnerReferences: &abi.OwnerReferencesChange{Remove: []string{"ok", "\xc3"}}}}}}, "result.actions[0].ownerReferences.remove[1]: invalid UTF-8"},
		{"a map value", &abi.Response{Result: &abi.Result{Actions: []abi.Action{{Claim: &abi.ClaimApply{Labels: map[string]string{"app": "\xfe"}}}}}}, `result.actions[0].claim.labels["app"]: invalid UTF-8`},
		{"a map key", &abi.Response{Result: &abi.Result{Actions: []abi.Action{{Claim: &abi.ClaimApply{Annotations: map[string]string{"\xfe": "v"}}}}}}, "result.actions[0].claim.annotations[key]: invalid UTF-8"},
		{"too long", &abi.Response{Result: &abi.Result{Message: long}}, "result.message: a string of 65537 bytes, more than the limit of 65536"},
		{"the status message", &abi.Response{Status: abi.StatusFailed, Message: "\xff"}, "message: invalid UTF-8"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := runtime.OwnStringsForTest(tt.resp)
			if tt.want == "" {
				require.NoError(t, err)
				require.Equal(t, "héllo", tt.resp.Result.Actions[0].Event.Message, "values are kept")
				return
			}
			require.EqualError(t, err, tt.want)
		})
	}
}

// A 1 MiB answer nested a million levels deep is refused, whatever the action
// limit, without the host's decoder recursing once per level: by the element
// count when the limit is the default, by msgp's recursion limit when the
// operator raised it far enough to let the count through.
func TestDeeplyNestedOutputIsRefused(t *testing.T) {
	head := []byte("\x82\xa6status\x00\xa6result\x81\xa7actions\x91")
	for name, level := range map[string][]byte{"arrays": {0x91}, "maps": {0x81, 0xa1, 'x'}} {
		b := append(append(head, bytes.Repeat(level, (1<<20)/len(level))...), 0xc0)
		for _, maxActions := range []int{0, 1_000_000} {
			t.Run(fmt.Sprintf("%s/maxActions=%d", name, maxActions), func(t *testing.T) {
				_, err := runtime.DecodeOutputForTest(b, runtime.Limits{MaxActions: maxActions, MaxOutputBytes: 4 << 20})
				require.Error(t, err)
				require.Regexp(t, `more than the limit of|recursion limit`, err.Error())
			})
		}
	}
}

// The host's decode of an answer (ownResponse, a walk written out for the
// wire types) refuses exactly what ownStrings refuses, with its error, for
// every string field a Response can hold: the fields are found by
// reflection, so one added to the wire types and not to the walk fails here.
// An answer it accepts has every string copied out of the output buffer.
func TestOwnResponseIsOwnStrings(t *testing.T) {
	count := 0
	fillStrings(t, reflect.ValueOf(new(abi.Response)).Elem(), func() string { count++; return "" })
	require.Greater(t, count, 40, "the fill found the wire types' strings")

	for _, bad := range []string{"a\xffb", strings.Repeat("x", 64<<10+1)} {
		for i := range count {
			want, got := badResponse(t, i, bad), badResponse(t, i, bad)
			wantErr := runtime.OwnStringsForTest(want)
			require.Error(t, wantErr, "string %d", i)
			out, err := got.MarshalMsg(nil)
			require.NoError(t, err)
			_, err = runtime.DecodeOutputForTest(out, runtime.Limits{MaxOutputBytes: 4 << 20})
			require.EqualError(t, err, "output: "+wantErr.Error(), "string %d", i)
		}
	}

	// Strings long and short, and a second action equal to the first.
	want := badResponse(t, -1, "")
	b, err := want.Result.Actions[0].MarshalMsg(nil)
	require.NoError(t, err)
	_, err = want.Result.Actions[1].UnmarshalMsg(b)
	require.NoError(t, err)
	out, err := want.MarshalMsg(nil)
	require.NoError(t, err)
	got, err := runtime.DecodeOutputForTest(out, runtime.Limits{})
	require.NoError(t, err)
	require.Equal(t, want, got)
	strs := 0
	eachString(reflect.ValueOf(got), func(s string) {
		strs++
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		start := uintptr(unsafe.Pointer(&out[0]))
		require.False(t, p >= start && p < start+uintptr(len(out)), "%q still points into the output", s)
	})
	require.Equal(t, count, strs)
}

// badResponse is a Response with every field set, two elements in every
// slice and map, strings of 1 to 300 bytes, and string i (in fillStrings's
// order) set to bad.
func badResponse(t *testing.T, i int, bad string) *abi.Response {
	r, n := new(abi.Response), 0
	fillStrings(t, reflect.ValueOf(r).Elem(), func() string {
		n++
		if n-1 == i {
			return bad
		}
		return strconv.Itoa(n) + strings.Repeat("x", n*37%300)
	})
	return r
}

// fillStrings sets every field of v, calling next for each string.
func fillStrings(t *testing.T, v reflect.Value, next func() string) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillStrings(t, v.Elem(), next)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillStrings(t, v.Field(i), next)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte("{}"))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fillStrings(t, v.Index(0), next)
		fillStrings(t, v.Index(1), next)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fillStrings(t, k, next)
			fillStrings(t, e, next)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.String:
		v.SetString(next())
	case reflect.Interface, reflect.Array, reflect.Chan, reflect.Func:
		t.Fatalf("fillStrings does not know %s", v.Type())
	}
}

// eachString calls f with every string reachable from v.
func eachString(v reflect.Value, f func(string)) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			eachString(v.Elem(), f)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				eachString(v.Field(i), f)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			eachString(v.Index(i), f)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			eachString(it.Key(), f)
			eachString(it.Value(), f)
		}
	case reflect.String:
		f(v.String())
	}
}

// A JSON plugin's answer has its strings checked after its form's conversion
// to the wire type, with the errors a MessagePack answer gets.
func TestJSONAnswerStrings(t *testing.T) {
	long := strings.Repeat("x", 64<<10+1)
	for _, tt := range []struct {
		form abi.HookForm
		json string
		want string // "" for valid
	}{
		{abi.FormReconcile, `{"result":{"actions":[{"type":"event","event":{"message":"héllo"}}]}}`, ""},
		{abi.FormReconcile, `{"result":{"actions":[{},{"event":{"message":"` + long + `"}}]}}`, "output: result.actions[1].event.message: a string of 65537 bytes, more than the limit of 65536"},
		{abi.FormAdmit, `{"admit":{"allowed":true,"warnings":["ok","héllo"],"patch":[{"op":"add","path":"/x","value":{"a":1}}]}}`, ""},
		{abi.FormAdmit, `{"admit":{"warnings":["ok","` + long + `"]}}`, "output: admit.warnings[1]: a string of 65537 bytes, more than the limit of 65536"},
		{abi.FormAdmit, `{"admit":{"patch":[{"op":"add","path":"/x"},{"op":"add","path":"/y","from":"` + long + `"}]}}`, "output: admit.patch[1].from: a string of 65537 bytes, more than the limit of 65536"},
	} {
		resp, err := runtime.DecodeJSONAnswerForTest(tt.form, []byte(tt.json), runtime.Limits{MaxOutputBytes: 4 << 20})
		if tt.want != "" {
			require.EqualError(t, err, tt.want)
			continue
		}
		require.NoError(t, err)
		if tt.form == abi.FormAdmit {
			require.Equal(t, []string{"ok", "héllo"}, resp.Admit.Warnings)
			require.JSONEq(t, `{"a":1}`, string(resp.Admit.Patch[0].Value))
		} else {
			require.Equal(t, "héllo", resp.Result.Actions[0].Event.Message)
		}
	}
}
