package casetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/controller"
)

// ErrProjection is the error of a reconcile whose answer depends on a field
// the module's projection leaves out (ABI 1.3, Manifest.Projection).
var ErrProjection = errors.New("the module reads a field its projection leaves out")

// projected is a module that declared a projection: the runtime's Module
// and Plugin.
type projected interface {
	Projected() bool
	ReconcileWhole(ctx context.Context, req *abi.ReconcileRequest) (*abi.Result, error)
}

// projectionCheck runs every reconcile of a module that declared a
// projection twice: as the live host does (the objects narrowed to it), and
// with the whole request. Answers that differ fail the reconcile, so that a
// field the module reads but did not declare fails its case instead of
// going unnoticed until a cluster has the field set.
type projectionCheck struct {
	controller.Guest
	whole projected
}

// checkProjection wraps g in a projectionCheck when it declared a
// projection, and returns it as it is otherwise.
func checkProjection(g controller.Guest) controller.Guest {
	if p, ok := g.(projected); ok && p.Projected() {
		return projectionCheck{g, p}
	}
	return g
}

func (g projectionCheck) Reconcile(ctx context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
	got, err := g.Guest.Reconcile(ctx, req)
	want, wantErr := g.whole.ReconcileWhole(ctx, req)
	switch {
	case err != nil && wantErr != nil && err.Error() == wantErr.Error():
		return nil, err
	case err != nil || wantErr != nil:
		return nil, fmt.Errorf("%w: reconciling %s it answered %s with its projection, and %s with the whole request: add what it reads to the module's projection",
			ErrProjection, req.Key, answer(got, err), answer(want, wantErr))
	case !reflect.DeepEqual(got, want):
		return nil, fmt.Errorf("%w: reconciling %s it answered %s with its projection, and %s with the whole request: add what it reads to the module's projection",
			ErrProjection, req.Key, answer(got, nil), answer(want, nil))
	}
	return got, nil
}

// answer describes a module's answer for an error message.
func answer(res *abi.Result, err error) string {
	if err != nil {
		return fmt.Sprintf("the error %q", err)
	}
	b, jerr := json.Marshal(res)
	if jerr != nil {
		return fmt.Sprintf("%+v", res)
	}
	if len(b) > maxAnswer {
		return fmt.Sprintf("%s... (%d bytes)", b[:maxAnswer], len(b))
	}
	return string(b)
}

// maxAnswer is how much of an answer's JSON an error quotes.
const maxAnswer = 600
