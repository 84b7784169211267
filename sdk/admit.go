package sdk

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk/internal/raw"
)

// AdmitFunc answers one admission request (ABI 1.1). It must be a pure
// function of req, like ReconcileFunc. The request and its objects belong to
// one call: do not keep them after the function returns.
type AdmitFunc func(req *abi.AdmitRequest) (Admission, error)

// Admission is an admit hook's answer. The zero value denies with no
// message: answer with Allow or Deny.
//
//	if strict && keeps { return sdk.Deny("claims of %s would be kept forever", req.Name), nil }
//	return sdk.Allow(), nil
type Admission struct {
	Allowed bool
	// Message tells the user why the request was denied.
	Message string
	// Reason and Code refine a denial (metav1.StatusReason and HTTP code;
	// the host's defaults are Forbidden and 403).
	Reason string
	Code   int32
	// Warnings are shown to the user whatever the answer.
	Warnings []string
	// Ops mutate the object of an allowed request (see Patch); the
	// manifest needs a mutate capability covering every path they touch.
	Ops []abi.PatchOperation
}

// Allow admits the request.
func Allow() Admission { return Admission{Allowed: true} }

// Deny refuses the request with a message for the user.
func Deny(format string, args ...any) Admission {
	return Admission{Message: fmt.Sprintf(format, args...)}
}

// Warn adds a warning shown to the user.
func (a Admission) Warn(format string, args ...any) Admission {
	a.Warnings = append(a.Warnings, fmt.Sprintf(format, args...))
	return a
}

// Patch adds an RFC 6902 operation on the object as the API server sent it
// (req.Object.JSON): op is abi.PatchAdd, abi.PatchReplace, ...; path a JSON
// Pointer (build it with Pointer); value is encoded as JSON and ignored by
// remove, move and copy (pass nil). It fails only when value does not encode.
//
//	err := a.Patch(abi.PatchReplace, sdk.Pointer("spec", "resources", "requests", "storage"), "20Gi")
func (a *Admission) Patch(op, path string, value any) error {
	o := abi.PatchOperation{Op: op, Path: path}
	if op == abi.PatchAdd || op == abi.PatchReplace || op == abi.PatchTest {
		b, err := json.Marshal(value)
		if err != nil {
			return fmt.Errorf("patch %s %s: encode value: %w", op, path, err)
		}
		o.Value = b
	}
	a.Ops = append(a.Ops, o)
	return nil
}

// pointerEscaper escapes a JSON Pointer reference token (RFC 6901).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// Pointer joins reference tokens into a JSON Pointer, escaping each:
// Pointer("metadata", "labels", "example.com/tier") is
// "/metadata/labels/example.com~1tier".
func Pointer(tokens ...string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(t))
	}
	return b.String()
}

// admitHandler adapts an AdmitFunc to the raw layer, reusing one answer
// across calls as handler does.
func admitHandler(f AdmitFunc) raw.AdmitHandler {
	if f == nil {
		return nil
	}
	var out abi.AdmitResponse
	return func(in *abi.AdmitRequest) (*abi.AdmitResponse, error) {
		if in.Now != "" && !plausibleNow(in.Now) {
			return nil, raw.BadInputError(badNow(in.Now).Error())
		}
		a, err := f(in)
		if err != nil {
			return nil, err
		}
		out = abi.AdmitResponse{
			Allowed: a.Allowed, Message: a.Message, Reason: a.Reason, Code: a.Code,
			Warnings: a.Warnings, Patch: a.Ops,
		}
		return &out, nil
	}
}
