package admission

import (
	"encoding/json"
	"fmt"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/internal/ownerref"
)

// checkOwners holds a patch to the host's owner-reference rule, the one the
// executor holds updateOwnerReferences actions to (ownerref.Check): every
// reference the patched object has that the request's object has not, in
// that exact form, must name the StatefulSet of the module's input or one of
// its pods, in the object's namespace; and the object may name at most one
// controller, or the API server would refuse it and fail the request
// whatever the module's failure policy. A reference makes the garbage
// collector delete the object once its owners are gone, so a patch is the
// same hazard as an action, whatever the mutate capability lets the module
// touch. References removed are not held, as the executor does not hold
// them.
//
// It reads the references of both versions whatever paths the patch names:
// a patch may replace /metadata or the whole object.
func checkOwners(set *abi.StatefulSetSubject, req *admissionv1.AdmissionRequest, patched []byte) error {
	before, err := ownerReferences(req.Object.Raw)
	if err != nil {
		return fmt.Errorf("the %s %s/%s's metadata.ownerReferences: %w", req.Kind.Kind, req.Namespace, req.Name, err)
	}
	after, err := ownerReferences(patched)
	if err != nil {
		return fmt.Errorf("the patched %s %s/%s's metadata.ownerReferences: %w", req.Kind.Kind, req.Namespace, req.Name, err)
	}
	gained := false
	for i, r := range after {
		if slices.Contains(before, r) {
			continue
		}
		gained = true
		if why := ownerref.Check(set, r, req.Namespace); why != "" {
			return fmt.Errorf("the patch gives the %s %s/%s metadata.ownerReferences[%d]: %s", req.Kind.Kind, req.Namespace, req.Name, i, why)
		}
	}
	if gained && ownerref.Controllers(after) > 1 {
		return fmt.Errorf("the patch leaves the %s %s/%s with %d controller references; the API server accepts at most one",
			req.Kind.Kind, req.Namespace, req.Name, ownerref.Controllers(after))
	}
	return nil
}

// ownerReferences decodes an object's metadata.ownerReferences.
func ownerReferences(object []byte) ([]abi.OwnerReference, error) {
	var o struct {
		Metadata struct {
			OwnerReferences []abi.OwnerReference `json:"ownerReferences"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(object, &o); err != nil {
		return nil, err
	}
	return o.Metadata.OwnerReferences, nil
}
