package raw

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/kubeplug/kubeplug/abi"
)

// Handler answers one reconcile. It may return an error or panic; Reconcile
// turns both into a Response status.
type Handler func(req *abi.ReconcileRequest) (*abi.Result, error)

// AdmitHandler answers one admission request (ABI 1.1). It may return an
// error or panic; Admit turns both into a Response status.
type AdmitHandler func(req *abi.AdmitRequest) (*abi.AdmitResponse, error)

// Handlers are a module's hook handlers, one field per hook of abi's
// table; a nil field is a hook the module does not implement.
type Handlers struct {
	Reconcile Handler
	Admit     AdmitHandler
}

// has reports whether hs implements hook h. It is the one place that pairs
// a field of Handlers with a hook of abi's table.
func (hs Handlers) has(h abi.Hook) bool {
	switch h {
	case abi.HookReconcile:
		return hs.Reconcile != nil
	case abi.HookAdmit:
		return hs.Admit != nil
	}
	return false
}

// Hooks returns the names of the hooks hs implements, in abi's table order:
// the manifest's hooks.
func (hs Handlers) Hooks() []string {
	var names []string
	for _, h := range abi.Hooks() {
		if hs.has(h.Name) {
			names = append(names, string(h.Name))
		}
	}
	return names
}

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
	if module.Reconcile == nil {
		return noHook(abi.HookReconcile)
	}
	req, err := abi.DecodeTrustedReconcileRequest(in, &last)
	if err != nil {
		return abi.Response{Status: abi.StatusBadInput, Message: err.Error()}
	}
	if req.Subject != "" && req.Subject != module.manifest.Subject {
		return abi.Response{Status: abi.StatusBadInput, Message: fmt.Sprintf("request for subject %q, but module %q handles %q", req.Subject, module.manifest.Name, module.manifest.Subject)}
	}
	res, resp := call(module.Reconcile, req)
	if resp.Status == abi.StatusOK {
		if res == nil {
			res = &abi.Result{}
		}
		resp.Result = res
	}
	return resp
}

// lastAdmit is last's twin for the admit hook.
var lastAdmit abi.AdmitRequest

// Admit is the admit hook (ABI 1.1): it decodes in as an abi.AdmitRequest,
// calls the registered admit handler, and returns the encoded abi.Response
// whose Admit holds the answer. It never panics. The returned bytes are
// valid until the next call.
func Admit(in []byte) []byte {
	return encode(admit(in))
}

func admit(in []byte) abi.Response {
	if module.Admit == nil {
		return noHook(abi.HookAdmit)
	}
	req, err := abi.DecodeTrustedAdmitRequest(in, &lastAdmit)
	if err != nil {
		return abi.Response{Status: abi.StatusBadInput, Message: err.Error()}
	}
	res, resp := call(module.Admit, req)
	if resp.Status == abi.StatusOK {
		if res == nil {
			// A handler that says nothing denies nothing it was not asked
			// about; it is the SDK's answer to a nil response, as for
			// reconcile's empty result.
			res = &abi.AdmitResponse{Allowed: true}
		}
		resp.Admit = res
	}
	return resp
}

func noHook(hook string) abi.Response {
	if !Registered() {
		return abi.Response{Status: abi.StatusNoHook, Message: "no module registered: call sdk.Register from an init function of package main"}
	}
	return abi.Response{Status: abi.StatusNoHook, Message: fmt.Sprintf("module %q registered no %s hook", module.manifest.Name, hook)}
}

// call runs h and turns how it ended into a response status: a panic is
// recovered into its message, and its stack logged at error level so the
// author can find the line. resp carries no answer; the caller adds it when
// resp.Status is StatusOK.
func call[Req, Res any](h func(*Req) (*Res, error), req *Req) (res *Res, resp abi.Response) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		panicked := fmt.Sprint(r)
		if panicked == "" {
			panicked = "panic with an empty value"
		}
		res, resp = nil, abi.Response{Status: abi.StatusPanic, Message: panicked}
		WriteLog(abi.LogError, "panic: "+panicked+"\n"+string(debug.Stack()))
	}()
	res, err := h(req)
	switch {
	case err == nil:
		return res, abi.Response{Status: abi.StatusOK}
	case errors.As(err, new(*badInput)):
		return nil, abi.Response{Status: abi.StatusBadInput, Message: err.Error()}
	}
	return nil, abi.Response{Status: abi.StatusFailed, Message: err.Error()}
}
