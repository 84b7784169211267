package raw

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/kubeplug/kubeplug/abi"
)

// out holds the last encoded response. It is reused across calls because
// SPEC.md lets a response live only until the next call into the instance,
// and growing it once avoids garbage on the hot path.
var out []byte

// last is the previous call's decoded request, whose memory the next call
// decodes into: reusing its slices and maps saves most of the allocations of a
// large input, which in a guest cost more than the decoding itself. sdk.Request
// documents the consequence: a module must not keep a request's objects after
// Reconcile returns.
var last abi.ReconcileRequest

// Reconcile is the reconcile hook: it decodes in as an abi.ReconcileRequest,
// calls the registered handler, and returns the encoded abi.Response. It never
// panics. The returned bytes are valid until the next call of Reconcile.
func Reconcile(in []byte) []byte {
	return encode(reconcile(in))
}

// BadInput returns an encoded StatusBadInput response with msg, for inputs the
// exports reject before decoding. Valid until the next call, like Reconcile's.
func BadInput(msg string) []byte {
	return encode(abi.Response{Status: abi.StatusBadInput, Message: msg})
}

func encode(resp abi.Response) []byte {
	b, err := resp.MarshalMsg(out[:0])
	if err != nil {
		// Only a type the codec does not know fails to encode, and results
		// hold none; still, the host must get a well-formed response.
		resp = abi.Response{Status: abi.StatusFailed, Message: "encode response: " + err.Error()}
		b, _ = resp.MarshalMsg(out[:0])
	}
	out = b
	return out
}

func reconcile(in []byte) abi.Response {
	if module.handler == nil {
		return abi.Response{Status: abi.StatusNoHook, Message: "no module registered: call sdk.Register from an init function of package main"}
	}
	req, err := abi.DecodeTrustedReconcileRequest(in, &last)
	if err != nil {
		return abi.Response{Status: abi.StatusBadInput, Message: err.Error()}
	}
	if req.Subject != "" && req.Subject != module.manifest.Subject {
		return abi.Response{Status: abi.StatusBadInput, Message: fmt.Sprintf("request for subject %q, but module %q handles %q", req.Subject, module.manifest.Name, module.manifest.Subject)}
	}
	res, panicked, err := call(module.handler, req)
	switch {
	case panicked != "":
		return abi.Response{Status: abi.StatusPanic, Message: panicked}
	case err != nil:
		if errors.As(err, new(*badInput)) {
			return abi.Response{Status: abi.StatusBadInput, Message: err.Error()}
		}
		return abi.Response{Status: abi.StatusFailed, Message: err.Error()}
	case res == nil:
		return abi.Response{Status: abi.StatusOK, Result: &abi.Result{}}
	}
	return abi.Response{Status: abi.StatusOK, Result: res}
}

// call runs h and recovers a panic into its message, logging the stack at
// error level so the author can find the line.
func call(h Handler, req *abi.ReconcileRequest) (res *abi.Result, panicked string, err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		panicked = fmt.Sprint(r)
		if panicked == "" {
			panicked = "panic with an empty value"
		}
		res, err = nil, nil
		WriteLog(abi.LogError, "panic: "+panicked+"\n"+string(debug.Stack()))
	}()
	res, err = h(req)
	return res, "", err
}
