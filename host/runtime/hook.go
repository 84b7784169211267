package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/kubeplug/kubeplug/abi"
)

// hookID indexes the hook table.
type hookID int

const (
	hookReconcile hookID = iota
	hookAdmit
	numHooks
)

// hookSpec is one row of the hook table: everything that differs between
// hooks is data here, and every hook goes through the one call path
// (Module.invoke, instance.call). A new hook is a new row, an encoder for its
// request and a reader of its answer in the Response.
type hookSpec struct {
	name   string // in Manifest.Hooks
	export string
	// check refuses an ok response that does not carry this hook's answer
	// (a module answering another hook's question is confused or hostile)
	// or whose answer is larger than the limits allow.
	check func(resp *abi.Response, l Limits) error
}

var hookTable = [numHooks]hookSpec{
	hookReconcile: {abi.HookReconcile, abi.ExportReconcile, checkReconcile},
	hookAdmit:     {abi.HookAdmit, abi.ExportAdmit, checkAdmit},
}

func checkReconcile(r *abi.Response, _ Limits) error {
	if r.Admit != nil {
		return errors.New("output: no answer to the reconcile hook in it, but an admit answer: fix the module")
	}
	return nil
}

// checkAdmit bounds a patch by Limits.MaxActions operations: each is
// applied to the object by the host, as an action is carried out.
func checkAdmit(r *abi.Response, l Limits) error {
	switch {
	case r.Admit == nil || r.Result != nil:
		return errors.New("output: status ok but no answer to the admit hook in it (admit must be set, result unset): fix the module")
	case len(r.Admit.Patch) > l.MaxActions:
		return fmt.Errorf("output: admit.patch holds %d operations, more than the limit of %d: raise the module's limits.maxActions, or fix the module", len(r.Admit.Patch), l.MaxActions)
	}
	return nil
}

// message is a hook's request as the call path needs it.
type message interface {
	MarshalMsg([]byte) ([]byte, error)
}

// invoke calls hook h with req on an idle instance of the hook's own pool,
// creating one if none is idle and fewer than Limits.Instances exist, or
// waiting (until ctx is done) for one to be free. Each hook has its own pool
// so that a call of one hook never waits behind calls of another (an
// admission request, which the API server times out, behind a burst of
// reconciles): RATIONALE.md, "Why a pool per hook?".
//
// key names the call in errors (a subject's key, an admission's object).
func (m *Module) invoke(ctx context.Context, h hookID, key string, req message) (*abi.Response, error) {
	spec := hookTable[h]
	p := m.pools[h]
	if p == nil {
		return nil, fmt.Errorf("module %q %s %q: %w", m.name, spec.name, key, abi.ErrNoHook)
	}
	if err := ctx.Err(); err != nil {
		// Calling would only interrupt the guest at once and cost an instance.
		return nil, fmt.Errorf("module %q %s %q: %w", m.name, spec.name, key, err)
	}
	inst, err := p.acquire(ctx)
	if err != nil {
		if errors.Is(err, ErrClosed) {
			return nil, fmt.Errorf("module %q %s %q: module %w", m.name, spec.name, key, ErrClosed)
		}
		return nil, fmt.Errorf("module %q %s %q: waiting for a free instance: %w", m.name, spec.name, key, err)
	}
	if inst == nil {
		var kind ErrorKind
		inst, kind, err = m.newInstance(ctx)
		if err != nil {
			p.release(nil, false)
			return nil, &CallError{Module: m.name, Hook: spec.name, Key: key, Kind: kind, Err: err}
		}
		p.added()
	}
	resp, kind, keep, err := inst.call(ctx, m.limits, h, req)
	p.release(inst, keep)
	if err != nil {
		if m.interrupted.Load() {
			return nil, fmt.Errorf("module %q %s %q: module %w during the call: %v", m.name, spec.name, key, ErrClosed, err)
		}
		return nil, &CallError{Module: m.name, Hook: spec.name, Key: key, Kind: kind, Err: err}
	}
	return resp, nil
}

// Reconcile calls the module's reconcile hook with req (see invoke).
//
// A failure of the guest is a *CallError; the instance is discarded unless
// the guest itself reported a status other than abi.StatusPanic. Calls
// after Close fail with ErrClosed.
func (m *Module) Reconcile(ctx context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
	if req == nil {
		return nil, &CallError{Module: m.name, Kind: KindInput, Err: errors.New("nil request")}
	}
	resp, err := m.invoke(ctx, hookReconcile, req.Key, req)
	if err != nil {
		return nil, err
	}
	if resp.Result == nil {
		return &abi.Result{}, nil
	}
	return resp.Result, nil
}

// Admit calls the module's admit hook (ABI 1.1) with req, under the same
// rules as Reconcile, on instances of its own. The answer's patch is not
// checked here beyond its size: applying it to the object and holding it to
// the operator's allow: list is the admission package's business, which
// knows the object.
func (m *Module) Admit(ctx context.Context, req *abi.AdmitRequest) (*abi.AdmitResponse, error) {
	if req == nil {
		return nil, &CallError{Module: m.name, Hook: abi.HookAdmit, Kind: KindInput, Err: errors.New("nil request")}
	}
	key := admitKey(req)
	resp, err := m.invoke(ctx, hookAdmit, key, req)
	if err != nil {
		return nil, err
	}
	return resp.Admit, nil
}

// HasHook reports whether the module implements hook (abi.HookReconcile,
// abi.HookAdmit).
func (m *Module) HasHook(hook string) bool {
	for h, spec := range hookTable {
		if spec.name == hook {
			return m.pools[h] != nil
		}
	}
	return false
}

// admitKey names an admission request in errors and logs, as a subject's
// key names a reconcile: "CREATE persistentvolumeclaims ns/name".
func admitKey(req *abi.AdmitRequest) string {
	return req.Operation + " " + req.Resource.Resource + " " + req.Namespace + "/" + req.Name
}
