package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/kubeplug/kubeplug/abi"
)

// Reconciler is a loaded module as the harness needs it. The host's
// runtime.Module satisfies it.
type Reconciler interface {
	Manifest() abi.Manifest
	Reconcile(ctx context.Context, req *abi.ReconcileRequest) (*abi.Result, error)
	Admit(ctx context.Context, req *abi.AdmitRequest) (*abi.AdmitResponse, error)
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
func Serve(ctx context.Context, m Reconciler, in io.Reader, out io.Writer) error {
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
func call(ctx context.Context, m Reconciler, body, buf []byte) (byte, []byte) {
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

// answer calls the hook the frame names.
func answer(ctx context.Context, m Reconciler, body []byte) (*abi.Response, error) {
	hook, body, err := abi.SplitRequestFrame(body)
	if err != nil {
		return nil, err
	}
	switch hook {
	case abi.HookReconcile:
		req, err := abi.DecodeReconcileRequest(body)
		if err != nil {
			return nil, fmt.Errorf("decode request: %w", err)
		}
		res, err := m.Reconcile(ctx, req)
		if err != nil {
			return nil, err
		}
		if res == nil {
			res = &abi.Result{}
		}
		return &abi.Response{Status: abi.StatusOK, Result: res}, nil
	case abi.HookAdmit:
		req, err := abi.DecodeAdmitRequest(body)
		if err != nil {
			return nil, fmt.Errorf("decode request: %w", err)
		}
		res, err := m.Admit(ctx, req)
		if err != nil {
			return nil, err
		}
		return &abi.Response{Status: abi.StatusOK, Admit: res}, nil
	}
	return nil, fmt.Errorf("decode request: hook %q: the harness does not serve it", hook)
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
