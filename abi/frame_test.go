package abi_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
)

// A module's status crosses the harness frames: the client's error matches
// the status's sentinel, and a host failure matches none.
func TestFrameKeepsTheModuleStatus(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want error
	}{
		{fmt.Errorf("call module %q: %w", "m", abi.StatusError(abi.StatusPanic, "boom")), abi.ErrPanic},
		{fmt.Errorf("call module %q: %w", "m", abi.StatusError(abi.StatusFailed, "no")), abi.ErrFailed},
		{fmt.Errorf("call module %q: %w", "m", abi.StatusError(abi.StatusBadInput, "bad")), abi.ErrBadInput},
		{errors.New("guest trapped: unreachable"), nil},
	} {
		var b bytes.Buffer
		if err := abi.WriteResponseFrame(&b, abi.ErrorFrameStatus(tt.err), []byte(tt.err.Error())); err != nil {
			t.Fatal(err)
		}
		_, err := abi.ReadResponseFrame(&b)
		var remote *abi.RemoteError
		if !errors.As(err, &remote) || remote.Text != tt.err.Error() {
			t.Fatalf("read %v, want a RemoteError with the text %q", err, tt.err)
		}
		for _, s := range []error{abi.ErrPanic, abi.ErrFailed, abi.ErrBadInput, abi.ErrNoHook} {
			if got := errors.Is(err, s); got != (s == tt.want) {
				t.Errorf("%q: errors.Is(%v) = %v", tt.err, s, got)
			}
		}
	}
}

// A request frame names its hook by the hook's index in abi.Hooks().
func TestRequestFrameHook(t *testing.T) {
	for _, h := range abi.Hooks() {
		frame, err := abi.AppendRequestFrame(nil, h.Name, &abi.ReconcileRequest{Key: "k"})
		if err != nil {
			t.Fatal(err)
		}
		body, err := abi.ReadRequestFrame(bytes.NewReader(frame))
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := abi.SplitRequestFrame(body)
		if err != nil || got != h.Name {
			t.Errorf("hook %s came back as %q, %v", h.Name, got, err)
		}
	}
	if _, err := abi.ReadRequestFrame(bytes.NewReader(nil)); err != io.EOF {
		t.Errorf("an empty stream: %v, want io.EOF", err)
	}
	if _, _, err := abi.SplitRequestFrame([]byte{9}); err == nil {
		t.Error("hook byte 9 was accepted")
	}
}
