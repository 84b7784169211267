package admission

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/kubeplug/kubeplug/abi"
)

// jsonOp is one RFC 6902 operation as JSON.
type jsonOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	From  string          `json:"from,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
}

// applyPatch checks the module's patch against what it may touch and against
// the patch budget (limits.go), applies it to the request's object, and
// returns the patch as JSON for the API server and the patched object. The
// API server would apply a patch that does not apply by failing the request
// with an error of its own; applying it here first turns that into the
// module's failure policy, with the module named. The library is the one
// the API server applies webhook patches with (json-patch v4), so that what
// applies here applies there.
//
// The budget is checked before the patch is applied (its operations, its
// bytes, and the work it may cause: operations times the largest document
// it can build), while it is applied (the bytes its copy operations copy,
// json-patch's own AccumulatedCopySizeLimit) and after (the patched
// object's size).
func (m *Module) applyPatch(req *admissionv1.AdmissionRequest, ops []abi.PatchOperation) (patch, patched []byte, err error) {
	if man := m.Admitter.Manifest(); man.Admission == nil || !man.Admission.Mutates {
		return nil, nil, fmt.Errorf("the module patched the object but its manifest does not say admission.mutates: it is registered as a validating webhook, whose patches the API server refuses")
	}
	if len(req.Object.Raw) == 0 {
		return nil, nil, fmt.Errorf("the module patched a %s request, which has no object to patch", req.Operation)
	}
	if len(ops) > MaxPatchOperations {
		return nil, nil, fmt.Errorf("%s's patch holds %d operations, more than the limit of %d (kube-apiserver's own for a JSON patch)", m, len(ops), MaxPatchOperations)
	}
	resource := req.Resource.Resource
	out := make([]jsonOp, len(ops))
	copies := 0
	for i, op := range ops {
		if err := m.mayTouch(resource, op); err != nil {
			return nil, nil, fmt.Errorf("patch[%d]: %w", i, err)
		}
		out[i] = jsonOp{Op: op.Op, Path: op.Path, From: op.From}
		if op.Op == abi.PatchAdd || op.Op == abi.PatchReplace || op.Op == abi.PatchTest {
			if !json.Valid(op.Value) {
				return nil, nil, fmt.Errorf("patch[%d]: %s %s: value is not JSON", i, op.Op, op.Path)
			}
			out[i].Value = op.Value
		}
		if op.Op == abi.PatchCopy {
			copies++
		}
	}
	patch, err = json.Marshal(out)
	if err != nil {
		return nil, nil, fmt.Errorf("encode patch: %w", err)
	}
	if len(patch) > MaxPatchBytes {
		return nil, nil, fmt.Errorf("%s's patch encodes to %d bytes, more than the limit of %d", m, len(patch), MaxPatchBytes)
	}
	doc := largestDocument(int64(len(req.Object.Raw)), int64(len(patch)), copies)
	if work := int64(len(ops)) * doc; work > MaxPatchWork {
		hint := "send fewer operations"
		if copies > 0 {
			hint += ", or fewer copy operations (each may double the document, up to the limit of bytes copied)"
		}
		return nil, nil, fmt.Errorf("%s's patch of %d operations on a document of up to %d bytes exceeds the work limit of %d (operations × document bytes): %s",
			m, len(ops), doc, int64(MaxPatchWork), hint)
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, nil, fmt.Errorf("decode patch: %w", err)
	}
	boundCopies()
	patched, err = p.Apply(req.Object.Raw)
	if sizeErr := (*jsonpatch.AccumulatedCopySizeError)(nil); errors.As(err, &sizeErr) {
		return nil, nil, fmt.Errorf("%s's patch copies more than the limit of %d bytes (the sum of every copy operation's value): %w", m, MaxPatchCopyBytes, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("the patch does not apply to the %s %s/%s: %w", req.Kind.Kind, req.Namespace, req.Name, err)
	}
	if len(patched) > MaxPatchedObjectBytes {
		return nil, nil, fmt.Errorf("%s's patch makes the %s %s/%s %d bytes, more than the limit of %d for a patched object", m, req.Kind.Kind, req.Namespace, req.Name, len(patched), MaxPatchedObjectBytes)
	}
	return patch, patched, nil
}

// largestDocument bounds the document a patch can build at any step from an
// object of obj bytes with a patch of patch bytes and copies copy
// operations: no operation makes it larger than the patch's own values do
// (add, replace), except a copy, which at most doubles it and, all copies
// together, adds at most MaxPatchCopyBytes (bounded while applying). This
// bounds each operation's work (a path walked, an array shifted, a value
// compared) and what applying the patch holds (patchCost).
func largestDocument(obj, patch int64, copies int) int64 {
	doc := obj + patch
	if copies == 0 {
		return doc
	}
	grown := int64(MaxPatchCopyBytes)
	if copies < 32 {
		grown = min(grown, doc*(int64(1)<<copies-1))
	}
	return doc + grown
}

var boundCopiesOnce sync.Once

// boundCopies sets json-patch v4's AccumulatedCopySizeLimit, a variable of
// the package (v4 has no per-call options), to MaxPatchCopyBytes unless it is
// already lower, as kube-apiserver sets it (k8s.io/apiserver/pkg/server).
func boundCopies() {
	boundCopiesOnce.Do(func() {
		for {
			cur := atomic.LoadInt64(&jsonpatch.AccumulatedCopySizeLimit)
			if cur > 0 && cur <= MaxPatchCopyBytes {
				return
			}
			if atomic.CompareAndSwapInt64(&jsonpatch.AccumulatedCopySizeLimit, cur, MaxPatchCopyBytes) {
				return
			}
		}
	})
}

// mayTouch checks one operation against the module's granted mutate
// capabilities: the paths it writes (path; from too for move, which removes
// it) must lie under a granted path.
func (m *Module) mayTouch(resource string, op abi.PatchOperation) error {
	switch op.Op {
	case abi.PatchTest:
		return nil // reads only
	case abi.PatchAdd, abi.PatchRemove, abi.PatchReplace, abi.PatchCopy, abi.PatchMove:
	default:
		return fmt.Errorf("op %q is not an RFC 6902 operation", op.Op)
	}
	writes := []string{op.Path}
	if op.Op == abi.PatchMove {
		writes = append(writes, op.From)
	}
	for _, path := range writes {
		if !slices.ContainsFunc(m.Granted, func(c abi.Capability) bool { return c.AllowsPatch(resource, path) }) {
			return fmt.Errorf("%s %q on %s is not allowed: no granted mutate capability covers the path (add {action: mutate, resources: [%s], paths: [...]} to the module's manifest and allow: list)",
				op.Op, path, resource, resource)
		}
	}
	return nil
}
