package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime/internal/projection"
)

// hookID indexes the hook table: a hook's position in abi.Hooks().
type hookID int

// hookSpec is one row of the hook table: abi's descriptor of the hook and
// what the runtime adds to its form. Nothing here is per hook: every hook
// goes through the one call path (Call, base.invoke, a profile's call), and
// what differs between hooks is their form's row of forms. A new hook of an
// existing form is a row of abi's table and nothing here.
type hookSpec struct {
	abi.HookInfo
	formSpec
}

// formSpec is what the runtime adds to a form of abi's (abi.HookForm).
type formSpec struct {
	// check refuses an ok response that does not carry this form's answer
	// (a module answering another hook's question is confused or hostile)
	// or whose answer is larger than the limits allow.
	check func(resp *abi.Response, l Limits) error
	// key names a request in errors and logs; ok is false when req is not
	// a non-nil request of the form.
	key func(req abi.HookRequest) (key string, ok bool)
	// extism is the form's messages in the Extism profile's JSON encoding.
	extism extismForm
	// narrow returns what a module with projection p is sent of req (ABI
	// 1.3), and the scratch to give back once it is sent; nil for a form
	// whose requests are sent whole.
	narrow func(p *projection.Projection, req abi.HookRequest) (abi.HookRequest, *projection.Scratch)
	// class is the queue a call of the form waits in for a guest call
	// slot (gate.go).
	class callClass
}

// forms holds the runtime's part of each hook form, by form.
var forms = map[abi.HookForm]formSpec{
	abi.FormReconcile: {
		check: checkReconcile,
		key:   keyOf(func(req *abi.ReconcileRequest) string { return req.Key }),
		extism: extismForm{
			request: func(r abi.HookRequest) any {
				req := r.(*abi.ReconcileRequest)
				return jsonReconcileRequest{req, json.RawMessage(req.Config)}
			},
			answer: jsonAnswer(func(r *abi.Response) *abi.Response { return r }),
		},
		narrow: func(p *projection.Projection, r abi.HookRequest) (abi.HookRequest, *projection.Scratch) {
			return p.Narrow(r.(*abi.ReconcileRequest))
		},
		class: classReconcile,
	},
	abi.FormAdmit: {
		check: checkAdmit,
		key:   keyOf(admitKey),
		extism: extismForm{
			request: func(r abi.HookRequest) any {
				req := r.(*abi.AdmitRequest)
				return jsonAdmitRequest{req, asJSONAdmitObject(req.Object), asJSONAdmitObject(req.OldObject), json.RawMessage(req.Config)}
			},
			answer: jsonAnswer((*jsonAdmitAnswer).response),
		},
		// The API server waits on an admission review under its webhook
		// timeout.
		class: classAdmit,
	},
}

// keyOf is a form's key function for requests of type P (*R).
func keyOf[R any, P interface {
	*R
	abi.HookRequest
}](key func(P) string) func(abi.HookRequest) (string, bool) {
	return func(r abi.HookRequest) (string, bool) {
		req, ok := r.(P)
		if !ok || req == nil {
			return "", false
		}
		return key(req), true
	}
}

// hookTable is abi.Hooks() with the runtime's part of their forms, in
// abi's order.
var hookTable = func() []hookSpec {
	var t []hookSpec
	for _, h := range abi.Hooks() {
		form, ok := forms[h.Form]
		if !ok {
			panic(fmt.Sprintf("runtime: hook %s of package abi has form %d, which has no row in forms", h.Name, h.Form))
		}
		t = append(t, hookSpec{h, form})
	}
	return t
}()

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

// invokeOn is the call path of every kind of module (base.invoke): it
// takes an idle instance of p (nil when the module lacks the hook), waits
// for one of the Engine's guest call seats (g, in class), makes an
// instance with newInstance when none was idle, runs call on it, and puts
// it back unless call says it may not serve another call. interrupted is
// the module's flag that Close gave up waiting for calls in flight.
func invokeOn[T poolable](ctx context.Context, p *pool[T], g *gate, class callClass, module, hook, key string, interrupted *atomic.Bool,
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
	// A panic below, which the caller recovers, must not cost the module its
	// pool slot (the instance, in a state nobody knows, is discarded), nor
	// the host a guest call seat, which is every module's.
	var none T
	released := false
	defer func() {
		if !released {
			p.release(inst, false)
		}
	}()
	if err := g.acquire(ctx, class); err != nil {
		released = true
		p.release(inst, inst != none)
		return fmt.Errorf("module %q %s %q: waiting for a guest call seat: %w", module, hook, key, err)
	}
	defer g.release(class)
	if inst == none {
		var kind ErrorKind
		inst, kind, err = newInstance(ctx)
		if err != nil {
			released = true
			p.release(none, false)
			return &CallError{Module: module, Hook: hook, Key: key, Kind: kind, Err: err}
		}
		p.added()
	}
	kind, keep, err := call(inst)
	released = true
	p.release(inst, keep)
	if err != nil {
		if interrupted.Load() {
			return fmt.Errorf("module %q %s %q: module %w during the call: %v", module, hook, key, ErrClosed, err)
		}
		return &CallError{Module: module, Hook: hook, Key: key, Kind: kind, Err: err}
	}
	return nil
}

// Call calls the module's hook h with req, a request of h's form
// (abi.HookInfo.Form), and returns its checked answer, an ok one (see
// invoke). It is the one call path of every hook; Reconcile and Admit are
// typed forms of it. A reconcile request's objects are narrowed to the
// module's projection when it declared one (ABI 1.3; internal/projection):
// req itself is not changed, and the caller checks the module's actions
// against the whole request.
//
// A failure of the guest is a *CallError; the instance is discarded unless
// the guest itself reported a status other than abi.StatusPanic. Calls
// after Close fail with ErrClosed.
func (b *base[T]) Call(ctx context.Context, h abi.Hook, req abi.HookRequest) (*abi.Response, error) {
	return b.callAs(ctx, h, req, b.projection)
}

// callAs is Call with projection p: a request of a form that narrows
// (formSpec.narrow) is sent narrowed to p, whole when p is nil.
func (b *base[T]) callAs(ctx context.Context, h abi.Hook, req abi.HookRequest, p *projection.Projection) (*abi.Response, error) {
	id, ok := hookNamed(string(h))
	if !ok {
		return nil, &CallError{Module: b.name, Hook: string(h), Kind: KindInput, Err: fmt.Errorf("%q is not a hook of ABI %v", h, abi.Current)}
	}
	spec := hookTable[id]
	key, ok := spec.key(req)
	if !ok {
		return nil, &CallError{Module: b.name, Hook: string(h), Kind: KindInput, Err: fmt.Errorf("request %T is not one of the %s hook's", req, h)}
	}
	if spec.narrow != nil && p != nil {
		// The narrowed request lives until the call is over: the response
		// shares nothing with it (decodeOutput copies out every string).
		var s *projection.Scratch
		req, s = spec.narrow(p, req)
		defer s.Done()
	}
	resp, err := b.invoke(ctx, id, key, req)
	if err != nil {
		return nil, err
	}
	return spec.Form.OK(resp), nil
}

// Reconcile calls the module's reconcile hook with req (see Call).
func (b *base[T]) Reconcile(ctx context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
	if req == nil {
		return nil, &CallError{Module: b.name, Kind: KindInput, Err: errors.New("nil request")}
	}
	resp, err := b.Call(ctx, abi.HookReconcile, req)
	if err != nil {
		return nil, err
	}
	return resp.Result, nil
}

// ReconcileWhole is Reconcile with the whole request, whatever projection
// the module declared: what a module that declares none is sent. `kubeplug
// test` compares its answers with Reconcile's to catch a module that reads
// a field its projection leaves out.
func (b *base[T]) ReconcileWhole(ctx context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
	if req == nil {
		return nil, &CallError{Module: b.name, Kind: KindInput, Err: errors.New("nil request")}
	}
	resp, err := b.callAs(ctx, abi.HookReconcile, req, nil)
	if err != nil {
		return nil, err
	}
	return resp.Result, nil
}

// Projected reports whether the module declared a projection (ABI 1.3):
// whether Reconcile sends less than ReconcileWhole.
func (b *base[T]) Projected() bool { return b.projection != nil }

// Admit calls the module's admit hook (ABI 1.1) with req, under the same
// rules as Reconcile, on instances of its own. The answer's patch is not
// checked here beyond its size: applying it to the object and holding it to
// the operator's allow: list is the admission package's business, which
// knows the object.
func (b *base[T]) Admit(ctx context.Context, req *abi.AdmitRequest) (*abi.AdmitResponse, error) {
	if req == nil {
		return nil, &CallError{Module: b.name, Hook: abi.HookAdmit, Kind: KindInput, Err: errors.New("nil request")}
	}
	resp, err := b.Call(ctx, abi.HookAdmit, req)
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
