package abi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The harness protocol: how a test binary (sdk/sdktest) talks to "kubeplug
// harness --module M.wasm" (the host's package harness) over the child's
// stdin and stdout. Both sides use the functions of this file.
//
//	server -> client, once, first:  response frame of status 0 holding the encoded Manifest
//	client -> server, per call:     request frame
//	server -> client, per call:     response frame
//
//	request frame:  | length u32 big-endian | hook u8 | encoded request (length-1 bytes) |
//	  hook: the hook's index in Hooks() (0 reconcile: a ReconcileRequest;
//	  1 admit: an AdmitRequest, ABI 1.1)
//	response frame: | status u8 | length u32 big-endian | body (length bytes) |
//	  status FrameOK: body is an encoded Response (or, for the first frame, Manifest)
//	  status FrameError: body is the host's error text (UTF-8): the call failed in the
//	    host (load, sandbox limit, trap, bad response, undecodable request)
//	  status FrameStatus(s): body is the host's error text: the module answered
//	    status s (StatusFailed, StatusPanic, ...), so that the client's error
//	    matches the same sentinel (ErrFailed, ErrPanic, ...) as a native call's
//
// The client closes the server's stdin to end the session; the server exits
// when it reads end-of-file at a frame boundary. Every message is encoded
// with this package's MessagePack codec.

//msgp:ignore RemoteError

// MaxFrame bounds a frame's body; a longer one is a protocol error.
const MaxFrame = 64 << 20

// ErrFrame reports a malformed or truncated frame.
var ErrFrame = errors.New("malformed harness frame")

// Status bytes of a response frame.
const (
	FrameOK    byte = 0
	FrameError byte = 1
	// frameStatus marks an error frame of a module's status (FrameStatus).
	frameStatus byte = 0x80
)

// FrameStatus is the status byte of an error frame for a call the module
// answered with status s.
func FrameStatus(s Status) byte { return frameStatus | byte(s) }

// ErrorFrameStatus is the status byte of the error frame for err: the
// module's status when err carries one (StatusOf), else FrameError.
func ErrorFrameStatus(err error) byte {
	if s, ok := StatusOf(err); ok {
		return FrameStatus(s)
	}
	return FrameError
}

// RemoteError is a failed call as a client reads it from an error frame: the
// host's text, and the module's status when the module answered one.
// errors.Is matches it against that status's sentinel (ErrFailed, ...).
type RemoteError struct {
	// Status is the module's status; StatusOK when the call failed in the
	// host.
	Status Status
	Text   string
}

func (e *RemoteError) Error() string { return e.Text }

// Unwrap returns the sentinel of e.Status, nil when the host failed.
func (e *RemoteError) Unwrap() error { return statusSentinel(e.Status) }

// marshaler is a message as a frame needs it.
type marshaler interface {
	MarshalMsg([]byte) ([]byte, error)
}

// AppendRequestFrame appends the request frame of req, for hook h, to dst.
func AppendRequestFrame(dst []byte, h Hook, req marshaler) ([]byte, error) {
	i := h.Index()
	if i < 0 {
		return nil, fmt.Errorf("encode request: %q is not a hook of ABI %v", h, Current)
	}
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, byte(i))
	dst, err := req.MarshalMsg(dst)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	n := len(dst) - start - 4
	if n > MaxFrame {
		return nil, fmt.Errorf("request of %d bytes exceeds the frame limit of %d", n, MaxFrame)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(n))
	return dst, nil
}

// ReadRequestFrame reads one request frame's body (its hook byte and
// request) into a buffer of its own: decoded requests share memory with it.
// It returns io.EOF only when r ends exactly at a frame boundary, and errors
// wrapping ErrFrame for a truncated or oversized frame.
func ReadRequestFrame(r io.Reader) ([]byte, error) {
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
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("%w: read request body of %d bytes: %v", ErrFrame, n, err)
	}
	return buf, nil
}

// SplitRequestFrame returns the hook a request frame's body names and its
// encoded request.
func SplitRequestFrame(body []byte) (Hook, []byte, error) {
	if len(body) == 0 {
		return "", nil, errors.New("decode request: empty frame, want a hook byte and a request")
	}
	if int(body[0]) >= len(hooks) {
		known := make([]string, len(hooks))
		for i, h := range hooks {
			known[i] = fmt.Sprintf("%d %s", i, h.Name)
		}
		return "", nil, fmt.Errorf("decode request: unknown hook %d (%s)", body[0], strings.Join(known, ", "))
	}
	return hooks[body[0]].Name, body[1:], nil
}

// WriteResponseFrame writes one response frame of status byte status.
func WriteResponseFrame(w io.Writer, status byte, body []byte) error {
	var hdr [5]byte
	hdr[0] = status
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(body)))
	if _, err := w.Write(hdr[:]); err != nil {
		return fmt.Errorf("write response frame: %w", err)
	}
	if _, err := w.Write(body); err != nil {
		return fmt.Errorf("write response frame: %w", err)
	}
	return nil
}

// ReadResponseFrame reads one response frame. err is a *RemoteError for an
// error frame, which carries its text; body is set only for FrameOK.
func ReadResponseFrame(r io.Reader) (body []byte, err error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("read response frame: %w", err)
	}
	status := hdr[0]
	failure := &RemoteError{}
	switch {
	case status == FrameOK, status == FrameError:
	case status&frameStatus != 0 && statusSentinel(Status(status&^frameStatus)) != nil:
		failure.Status = Status(status &^ frameStatus)
	default:
		return nil, fmt.Errorf("read response frame: unknown status byte %d", status)
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > MaxFrame {
		return nil, fmt.Errorf("read response frame: length %d exceeds %d", n, MaxFrame)
	}
	body = make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("read response frame body: %w", err)
	}
	if status != FrameOK {
		failure.Text = string(body)
		return nil, failure
	}
	return body, nil
}
