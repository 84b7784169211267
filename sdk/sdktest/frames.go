package sdktest

import (
	"encoding/binary"
	"fmt"
	"io"
)

// The harness protocol: how a test binary talks to "kubeplug harness --module
// M.wasm" over the child's stdin and stdout. The server side lives in the
// host's package harness; both follow this description.
//
//	server -> client, once, first:  response frame of kind 0 holding the encoded abi.Manifest
//	client -> server, per call:     request frame
//	server -> client, per call:     response frame
//
//	request frame:  | length u32 big-endian | hook u8 | encoded request (length-1 bytes) |
//	  hook 0: the request is an abi.ReconcileRequest, for the reconcile hook
//	  hook 1: the request is an abi.AdmitRequest, for the admit hook (ABI 1.1)
//	response frame: | kind u8 | length u32 big-endian | body (length bytes) |
//	  kind 0: body is an encoded abi.Response (or, for the first frame, abi.Manifest)
//	  kind 1: body is the host's error text (UTF-8): the call failed in the host
//	          (load, sandbox limit, trap, bad response) or the module's status was not ok
//
// The client closes the server's stdin to end the session; the server exits
// when it reads end-of-file at a frame boundary. Every message is encoded
// with package abi's MessagePack codec.

// Response frame kinds.
const (
	frameOK    byte = 0
	frameError byte = 1
)

// maxFrame bounds a frame body, so that a corrupt length fails instead of
// allocating gigabytes.
const maxFrame = 64 << 20

// Request frame hooks.
const (
	hookReconcile byte = 0
	hookAdmit     byte = 1
)

// message is a hook's request as a frame needs it.
type message interface {
	MarshalMsg([]byte) ([]byte, error)
}

// appendRequest appends the request frame of req, for hook, to dst.
func appendRequest(dst []byte, hook byte, req message) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, hook)
	dst, err := req.MarshalMsg(dst)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	n := len(dst) - start - 4
	if n > maxFrame {
		return nil, fmt.Errorf("request of %d bytes exceeds the frame limit of %d", n, maxFrame)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(n))
	return dst, nil
}

// readResponse reads one response frame.
func readResponse(r io.Reader) (kind byte, body []byte, err error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, fmt.Errorf("read response frame: %w", err)
	}
	kind = hdr[0]
	if kind != frameOK && kind != frameError {
		return 0, nil, fmt.Errorf("read response frame: unknown kind %d", kind)
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("read response frame: length %d exceeds %d", n, maxFrame)
	}
	body = make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, fmt.Errorf("read response frame body: %w", err)
	}
	return kind, body, nil
}
