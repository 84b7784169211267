package actions_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
)

// An event's message is cut to MaxEventMessage bytes at a rune boundary,
// and the event is still recorded.
func TestExecuteTruncatesEventMessages(t *testing.T) {
	tests := []struct {
		name    string
		message string
		want    int // length recorded
	}{
		{"short", "done", 4},
		{"exactly the limit", strings.Repeat("a", actions.MaxEventMessage), actions.MaxEventMessage},
		{"ascii over the limit", strings.Repeat("a", 64<<10), actions.MaxEventMessage},
		// "é" is two bytes: one byte of text then é's would straddle the
		// limit, so the cut falls before it.
		{"multi-byte rune on the limit", "x" + strings.Repeat("é", actions.MaxEventMessage), actions.MaxEventMessage - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &fakeCluster{}
			res := &abi.Result{Actions: []abi.Action{{Type: abi.ActionEvent, Target: setRef(), Event: &abi.Event{Type: abi.EventNormal, Reason: "Long", Message: tt.message}}}}
			rep, err := executor(c, nil).Execute(context.Background(), everything(), setRequest(), res)
			require.NoError(t, err)
			require.Equal(t, []actions.Outcome{actions.Executed}, outcomes(rep))
			msg := c.calls[0].Event[2]
			require.Len(t, msg, tt.want)
			require.True(t, utf8.ValidString(msg))
			require.True(t, strings.HasPrefix(tt.message, msg))
			require.LessOrEqual(t, len(rep.Actions[0].Write), actions.MaxEventMessage+64, "the report is bounded too")
		})
	}
}

// The refusal event quotes what the module sent, so it is bounded as well.
func TestExecuteTruncatesRefusalEvents(t *testing.T) {
	c := &fakeCluster{}
	res := &abi.Result{Actions: []abi.Action{{Type: abi.ActionAddFinalizer, Target: claimRef(0), Finalizer: strings.Repeat("x", 1<<20)}}}
	_, err := executor(c, nil).Execute(context.Background(), everything(), setRequest(), res)
	require.ErrorIs(t, err, actions.ErrRefused)
	require.Len(t, c.calls, 1)
	require.LessOrEqual(t, len(c.calls[0].Event[2]), actions.MaxEventMessage)
}

func TestValidateRefusesBadEventStrings(t *testing.T) {
	tests := []struct {
		name  string
		event abi.Event
		why   string
	}{
		{"reason too long", abi.Event{Type: abi.EventNormal, Reason: strings.Repeat("R", 129)}, "longer than 128 bytes"},
		{"reason not UTF-8", abi.Event{Type: abi.EventNormal, Reason: "R\xff"}, "not valid UTF-8"},
		{"message not UTF-8", abi.Event{Type: abi.EventNormal, Reason: "R", Message: "\xc3"}, "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := tt.event
			_, err := actions.Validate(everything(), setRequest(), abi.Action{Type: abi.ActionEvent, Target: setRef(), Event: &ev})
			require.ErrorIs(t, err, actions.ErrRefused)
			require.ErrorContains(t, err, tt.why)
		})
	}
}
