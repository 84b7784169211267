package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/kubeplug/kubeplug/abi"
)

// Module is a loaded module as the harness needs it: its manifest, and
// its hooks through one call, so the harness serves every hook of abi's
// table without knowing any. The host's runtime.Module and runtime.Plugin
// satisfy it.
type Module interface {
	Manifest() abi.Manifest
	// Call calls hook h with req, a request of h's form, and returns the
	// module's answer when it is ok.
	Call(ctx context.Context, h abi.Hook, req abi.HookRequest) (*abi.Response, error)
}

// MaxFrame bounds a request frame's body; a longer one is a protocol error.
const MaxFrame = abi.MaxFrame

// Serve writes m's manifest to out, then reads request frames from in and
// answers each by calling m, until in ends at a frame boundary (nil), ctx is
// done (ctx.Err()), a frame is malformed (ErrFrame) or a write fails. A
// request that does not decode, and a call that fails, are answered with an
// error frame and serving goes on; a call the module answered with an error
// status is answered with that status (abi/frame.go).
//
//	err := harness.Serve(ctx, module, os.Stdin, os.Stdout)
func Serve(ctx context.Context, m Module, in io.Reader, out io.Writer) error {
	w := bufio.NewWriter(out)
	r := bufio.NewReader(in)

	man := m.Manifest()
	buf, err := man.MarshalMsg(nil)
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	if err := writeFrame(w, abi.FrameOK, buf); err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		body, err := abi.ReadRequestFrame(r)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		status, answer := call(ctx, m, body, buf[:0])
		if err := writeFrame(w, status, answer); err != nil {
			return err
		}
		buf = answer
	}
}

// call decodes one request, calls m and encodes the answer into buf.
func call(ctx context.Context, m Module, body, buf []byte) (byte, []byte) {
	resp, err := answer(ctx, m, body)
	if err != nil {
		return abi.ErrorFrameStatus(err), append(buf, err.Error()...)
	}
	enc, err := resp.MarshalMsg(buf)
	if err != nil {
		return abi.FrameError, append(buf[:0], fmt.Sprintf("encode response: %v", err)...)
	}
	return abi.FrameOK, enc
}

// answer calls the hook the frame names with the request decoded by its
// form (abi.HookInfo.Form).
func answer(ctx context.Context, m Module, body []byte) (*abi.Response, error) {
	hook, body, err := abi.SplitRequestFrame(body)
	if err != nil {
		return nil, err
	}
	info, ok := hook.Info()
	if !ok {
		return nil, fmt.Errorf("decode request: hook %q: the harness does not serve it", hook)
	}
	req, err := info.Form.DecodeRequest(body)
	if err != nil {
		return nil, fmt.Errorf("decode request: %w", err)
	}
	resp, err := m.Call(ctx, hook, req)
	if err != nil {
		return nil, err
	}
	return info.Form.OK(resp), nil
}

// writeFrame writes and flushes one response frame.
func writeFrame(w *bufio.Writer, status byte, body []byte) error {
	if err := abi.WriteResponseFrame(w, status, body); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write response frame: %w", err)
	}
	return nil
}
