package runtime_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

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
