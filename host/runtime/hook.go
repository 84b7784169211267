package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/kubeplug/kubeplug/abi"
)

// hookID indexes the hook table: a hook's position in abi.Hooks().
type hookID int

// The hooks the runtime has typed methods for (Module.Reconcile, .Admit).
var (
	hookReconcile = hookIndex(abi.HookReconcile)
	hookAdmit     = hookIndex(abi.HookAdmit)
)

// hookSpec is one row of the hook table: abi's descriptor of the hook and
// the one thing the runtime adds to it. Everything that differs between
// hooks is data here or a typed method below, and every hook goes through
// the one call path (base.invoke, a profile's call). A new hook is a row of
// abi's table, and here a check and a typed method over invoke.
type hookSpec struct {
	abi.HookInfo
	// check refuses an ok response that does not carry this hook's answer
	// (a module answering another hook's question is confused or hostile)
	// or whose answer is larger than the limits allow.
	check func(resp *abi.Response, l Limits) error
}

// hookChecks holds each hook's answer check, by name.
var hookChecks = map[abi.Hook]func(*abi.Response, Limits) error{
	abi.HookReconcile: checkReconcile,
	abi.HookAdmit:     checkAdmit,
}

// hookTable is abi.Hooks() with the runtime's checks, in abi's order.
var hookTable = func() []hookSpec {
	var t []hookSpec
	for _, h := range abi.Hooks() {
		check, ok := hookChecks[h.Name]
		if !ok {
			panic("runtime: hook " + string(h.Name) + " of package abi has no answer check in hookChecks")
		}
		t = append(t, hookSpec{h, check})
	}
	return t
}()

// hookIndex is the hookID of a hook of abi's table.
func hookIndex(name abi.Hook) hookID {
	i := name.Index()
	if i < 0 {
		panic("runtime: " + string(name) + " is not a hook of package abi")
	}
	return hookID(i)
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

// invokeOn is the call path of every kind of module (base.invoke): it
// takes an idle instance of p (nil when the module lacks the hook), or
// makes one with newInstance, runs call on it, and puts it
// back unless call says it may not serve another call. interrupted is the
// module's flag that Close gave up waiting for calls in flight.
func invokeOn[T poolable](ctx context.Context, p *pool[T], module, hook, key string, interrupted *atomic.Bool,
	newInstance func(context.Context) (T, ErrorKind, error), call func(T) (kind ErrorKind, keep bool, err error),
) error {
	if p == nil {
		return fmt.Errorf("module %q %s %q: %w", module, hook, key, abi.ErrNoHook)
	}
	if err := ctx.Err(); err != nil {
		// Calling would only interrupt the guest at once and cost an instance.
		return fmt.Errorf("module %q %s %q: %w", module, hook, key, err)
	}
	inst, err := p.acquire(ctx)
	if err != nil {
		if errors.Is(err, ErrClosed) {
			return fmt.Errorf("module %q %s %q: module %w", module, hook, key, ErrClosed)
		}
		return fmt.Errorf("module %q %s %q: waiting for a free instance: %w", module, hook, key, err)
	}
	var none T
	if inst == none {
		var kind ErrorKind
		inst, kind, err = newInstance(ctx)
		if err != nil {
			p.release(none, false)
			return &CallError{Module: module, Hook: hook, Key: key, Kind: kind, Err: err}
		}
		p.added()
	}
	kind, keep, err := call(inst)
	p.release(inst, keep)
	if err != nil {
		if interrupted.Load() {
			return fmt.Errorf("module %q %s %q: module %w during the call: %v", module, hook, key, ErrClosed, err)
		}
		return &CallError{Module: module, Hook: hook, Key: key, Kind: kind, Err: err}
	}
	return nil
}

// Reconcile calls the module's reconcile hook with req (see invoke).
//
// A failure of the guest is a *CallError; the instance is discarded unless
// the guest itself reported a status other than abi.StatusPanic. Calls
// after Close fail with ErrClosed.
func (b *base[T]) Reconcile(ctx context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
	if req == nil {
		return nil, &CallError{Module: b.name, Kind: KindInput, Err: errors.New("nil request")}
	}
	resp, err := b.invoke(ctx, hookReconcile, req.Key, req)
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
func (b *base[T]) Admit(ctx context.Context, req *abi.AdmitRequest) (*abi.AdmitResponse, error) {
	if req == nil {
		return nil, &CallError{Module: b.name, Hook: abi.HookAdmit, Kind: KindInput, Err: errors.New("nil request")}
	}
	resp, err := b.invoke(ctx, hookAdmit, admitKey(req), req)
	if err != nil {
		return nil, err
	}
	return resp.Admit, nil
}

// HasHook reports whether the module implements hook (abi.HookReconcile,
// abi.HookAdmit).
func (b *base[T]) HasHook(hook string) bool {
	h, ok := hookNamed(hook)
	return ok && b.pools[h] != nil
}

// hookNamed returns the hook of the table named name (in Manifest.Hooks).
func hookNamed(name string) (hookID, bool) {
	i := abi.Hook(name).Index()
	return hookID(i), i >= 0
}

// admitKey names an admission request in errors and logs, as a subject's
// key names a reconcile: "CREATE persistentvolumeclaims ns/name".
func admitKey(req *abi.AdmitRequest) string {
	return req.Operation + " " + req.Resource.Resource + " " + req.Namespace + "/" + req.Name
}
