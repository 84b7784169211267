package admission

import (
	"encoding/json"
	"fmt"
	"slices"

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

// applyPatch checks the module's patch against what it may touch, applies
// it to the request's object, and returns the patch as JSON for the API
// server and the patched object. The API server would apply a patch that
// does not apply by failing the request with an error of its own; applying
// it here first turns that into the module's failure policy, with the
// module named. The library is the one the API server applies webhook
// patches with (json-patch v4), so that what applies here applies there.
func (m *Module) applyPatch(req *admissionv1.AdmissionRequest, ops []abi.PatchOperation) (patch, patched []byte, err error) {
	if man := m.Admitter.Manifest(); man.Admission == nil || !man.Admission.Mutates {
		return nil, nil, fmt.Errorf("the module patched the object but its manifest does not say admission.mutates: it is registered as a validating webhook, whose patches the API server refuses")
	}
	if len(req.Object.Raw) == 0 {
		return nil, nil, fmt.Errorf("the module patched a %s request, which has no object to patch", req.Operation)
	}
	resource := req.Resource.Resource
	out := make([]jsonOp, len(ops))
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
	}
	patch, err = json.Marshal(out)
	if err != nil {
		return nil, nil, fmt.Errorf("encode patch: %w", err)
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, nil, fmt.Errorf("decode patch: %w", err)
	}
	patched, err = p.Apply(req.Object.Raw)
	if err != nil {
		return nil, nil, fmt.Errorf("the patch does not apply to the %s %s/%s: %w", req.Kind.Kind, req.Namespace, req.Name, err)
	}
	return patch, patched, nil
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
