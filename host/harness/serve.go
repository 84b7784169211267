package harness

import (
	"bufio"
	"context"
	"encoding/binary"
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

// Request frame hooks (sdk/sdktest/frames.go).
const (
	hookReconcile byte = 0
	hookAdmit     byte = 1
)

// Response frame kinds (sdk/sdktest/frames.go).
const (
	frameOK    byte = 0
	frameError byte = 1
)

// MaxFrame bounds a request frame's body; a longer one is a protocol error.
const MaxFrame = 64 << 20

// Serve writes m's manifest to out, then reads request frames from in and
// answers each by calling m, until in ends at a frame boundary (nil), ctx is
// done (ctx.Err()), a frame is malformed (ErrFrame) or a write fails. A
// request that does not decode, and a call that fails, are answered with an
// error frame and serving goes on.
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
	if err := writeFrame(w, frameOK, buf); err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		body, err := readRequest(r)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		kind, answer := call(ctx, m, body, buf[:0])
		if err := writeFrame(w, kind, answer); err != nil {
			return err
		}
		buf = answer
	}
}

// call decodes one request, calls m and encodes the answer into buf.
func call(ctx context.Context, m Reconciler, body, buf []byte) (byte, []byte) {
	resp, err := answer(ctx, m, body)
	if err != nil {
		return frameError, append(buf, err.Error()...)
	}
	enc, err := resp.MarshalMsg(buf)
	if err != nil {
		return frameError, append(buf[:0], fmt.Sprintf("encode response: %v", err)...)
	}
	return frameOK, enc
}

// answer calls the hook the frame's first byte names.
func answer(ctx context.Context, m Reconciler, body []byte) (*abi.Response, error) {
	if len(body) == 0 {
		return nil, errors.New("decode request: empty frame, want a hook byte and a request")
	}
	switch hook, body := body[0], body[1:]; hook {
	case hookReconcile:
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
	case hookAdmit:
		req, err := abi.DecodeAdmitRequest(body)
		if err != nil {
			return nil, fmt.Errorf("decode request: %w", err)
		}
		res, err := m.Admit(ctx, req)
		if err != nil {
			return nil, err
		}
		return &abi.Response{Status: abi.StatusOK, Admit: res}, nil
	default:
		return nil, fmt.Errorf("decode request: unknown hook %d (0 reconcile, 1 admit)", hook)
	}
}

// readRequest reads one request frame into a buffer of its own. It returns io.EOF
// only when in ends exactly at a frame boundary.
func readRequest(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("%w: read request header: %v", ErrFrame, err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrame {
		return nil, fmt.Errorf("%w: request of %d bytes exceeds %d", ErrFrame, n, MaxFrame)
	}
	// A fresh buffer per frame: decoded requests share memory with it.
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("%w: read request body of %d bytes: %v", ErrFrame, n, err)
	}
	return buf, nil
}

// writeFrame writes and flushes one response frame.
func writeFrame(w *bufio.Writer, kind byte, body []byte) error {
	var hdr [5]byte
	hdr[0] = kind
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(body)))
	if _, err := w.Write(hdr[:]); err != nil {
		return fmt.Errorf("write response frame: %w", err)
	}
	if _, err := w.Write(body); err != nil {
		return fmt.Errorf("write response frame: %w", err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write response frame: %w", err)
	}
	return nil
}
