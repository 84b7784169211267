package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime/internal/projection"
)

// base is what every kind of loaded module shares, whatever its runtime
// profile: the manifest, the limits, a pool of instances per hook, the
// logger, the typed hook methods and Close. A profile (Module, Plugin)
// embeds it and supplies three functions: how to start an instance, how to
// call a hook on one, and what to free once the pools are closed.
//
// T is the profile's instance type (see pool).
type base[T poolable] struct {
	engine   *Engine
	source   string
	limits   Limits
	info     Info
	manifest abi.Manifest
	// projection is the manifest's, compiled: what Reconcile sends of
	// each object (nil: everything).
	projection *projection.Projection
	// name is Name's; set by load and SetName before the first call.
	name string

	// pools holds one pool per hook of hookTable the manifest declares (nil
	// for the others), so that one hook's calls never queue behind
	// another's.
	pools []*pool[T]
	log   atomic.Pointer[slog.Logger]

	// newInstance starts an instance; call calls hook h with req on one,
	// returning the checked answer (instance.call's contract); free releases
	// the profile's resources after the pools are closed.
	newInstance func(context.Context) (T, ErrorKind, error)
	call        func(ctx context.Context, inst T, h hookID, req abi.HookRequest) (*abi.Response, ErrorKind, bool, error)
	free        func(context.Context) error

	closeOnce sync.Once
	closeErr  error
	// interrupted is set when Close gave up waiting for calls in flight.
	interrupted atomic.Bool
}

// newBase returns the base of a module loaded from source, before load.
func newBase[T poolable](e *Engine, source string, limits Limits, info Info) base[T] {
	return base[T]{engine: e, source: source, limits: limits, info: info, name: source}
}

// started records the checked manifest and its compiled projection (both
// from checkManifest), makes a pool per declared hook and leaves inst, the
// instance that read the manifest, idle in the first.
func (b *base[T]) started(man abi.Manifest, proj *projection.Projection, inst T) {
	b.manifest = man
	b.projection = proj
	b.pools = make([]*pool[T], len(hookTable))
	var first *pool[T]
	for h, spec := range hookTable {
		if slices.Contains(man.Hooks, string(spec.Name)) {
			b.pools[h] = newPool[T](b.limits.Instances)
			if first == nil {
				first = b.pools[h]
			}
		}
	}
	b.info.Name, b.info.Version = man.Name, man.Version
	b.SetName(man.Name)
	first.seed(inst) // checkManifest refuses a manifest without hooks
}

// invoke calls hook h with req on an idle instance of the hook's own pool,
// creating one if none is idle and fewer than Limits.Instances exist, or
// waiting (until ctx is done) for one to be free. Each hook has its own pool
// so that a call of one hook never waits behind calls of another (an
// admission request, which the API server times out, behind a burst of
// reconciles): RATIONALE.md, "Why a pool per hook?".
//
// key names the call in errors (a subject's key, an admission's object).
func (b *base[T]) invoke(ctx context.Context, h hookID, key string, req abi.HookRequest) (*abi.Response, error) {
	var resp *abi.Response
	err := invokeOn(ctx, b.pools[h], b.engine.gate, hookTable[h].class, b.name, string(hookTable[h].Name), key, &b.interrupted, b.newInstance,
		func(inst T) (kind ErrorKind, keep bool, err error) {
			resp, kind, keep, err = b.call(ctx, inst, h, req)
			return kind, keep, err
		})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// Manifest returns the manifest the module declared.
func (b *base[T]) Manifest() abi.Manifest { return b.manifest }

// Info describes the module.
func (b *base[T]) Info() Info { return b.info }

// Name names the module in its errors and log records: the manifest's name
// unless SetName gave another.
func (b *base[T]) Name() string { return b.name }

// SetName names the module as its operator does (the entry's name in
// host.yaml), so that its errors and its guest's log records say which
// entry they come from, even when several entries run modules whose
// manifests share a name. Call it before the module's first call.
func (b *base[T]) SetName(name string) {
	b.name = name
	b.setLogger(b.engine.logger.With("module", name))
}

// Limits returns the module's limits, defaults filled in.
func (b *base[T]) Limits() Limits { return b.limits }

// Stats counts the module's instances, of all its hooks together.
func (b *base[T]) Stats() Stats {
	var s Stats
	for _, p := range b.pools {
		if p != nil {
			s = s.plus(p.stats())
		}
	}
	return s
}

func (b *base[T]) logger() *slog.Logger     { return b.log.Load() }
func (b *base[T]) setLogger(l *slog.Logger) { b.log.Store(l) }

// Close stops new calls, waits until ctx is done for calls in flight to
// finish, and then releases the module's instances and what its profile
// holds, interrupting any call still running. Close is idempotent.
func (b *base[T]) Close(ctx context.Context) error {
	b.closeOnce.Do(func() {
		// Pools close one after the other, each under ctx: a module's
		// hooks share its deadline for draining.
		for _, p := range b.pools {
			if p != nil && !p.close(ctx) {
				b.interrupted.Store(true)
			}
		}
		if err := b.free(context.WithoutCancel(ctx)); err != nil {
			b.closeErr = fmt.Errorf("close module %q: %w", b.name, err)
		}
		b.engine.forget(b)
	})
	return b.closeErr
}
