package sdktest

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk/internal/raw"
)

// native calls the module registered in this process through the same
// dispatch and codec as the wasm exports.
type native struct{ m abi.Manifest }

func newNative() (*native, error) {
	if !raw.Registered() {
		return nil, errors.New("no module registered: the test must be in the guest's package main, whose init() calls sdk.Register")
	}
	m, err := abi.DecodeManifest(raw.Manifest())
	if err != nil {
		return nil, fmt.Errorf("decode the registered module's manifest: %w", err)
	}
	return &native{m: *m}, nil
}

func (n *native) manifest() abi.Manifest { return n.m }

func (n *native) reconcile(req *abi.ReconcileRequest, log func(uint32, string)) (*abi.Result, error) {
	in, err := req.MarshalMsg(nil)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	var resp *abi.Response
	raw.Native(log, func() {
		// The guest reuses its response buffer and decoded strings share
		// memory with what they were decoded from: decode a copy.
		resp, err = abi.DecodeResponse(bytes.Clone(raw.Reconcile(in)))
	})
	if err != nil {
		return nil, err
	}
	return result(resp)
}

func (n *native) admit(req *abi.AdmitRequest, log func(uint32, string)) (*abi.AdmitResponse, error) {
	in, err := req.MarshalMsg(nil)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	var resp *abi.Response
	raw.Native(log, func() {
		resp, err = abi.DecodeResponse(bytes.Clone(raw.Admit(in)))
	})
	if err != nil {
		return nil, err
	}
	return admitResult(resp)
}

// admitResult turns a decoded admit response into the harness's answer.
func admitResult(resp *abi.Response) (*abi.AdmitResponse, error) {
	if err := abi.StatusError(resp.Status, resp.Message); err != nil {
		return nil, err
	}
	if resp.Admit == nil {
		return nil, errors.New("the module answered the admit hook without an answer")
	}
	return resp.Admit, nil
}

// result turns a decoded response into the harness's answer.
func result(resp *abi.Response) (*abi.Result, error) {
	if err := abi.StatusError(resp.Status, resp.Message); err != nil {
		return nil, err
	}
	if resp.Result == nil {
		return &abi.Result{}, nil
	}
	return resp.Result, nil
}
