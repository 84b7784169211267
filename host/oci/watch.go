package oci

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/kubeplug/kubeplug/host/config"
)

// Watcher resolves the tags of image modules again on their entries'
// resolveEvery, and calls a function with the module's name when a tag has
// moved to a digest it has not seen, for the host to load the module again
// (a hot swap). It calls once per new digest: a digest the host then
// refuses (unsigned, say) is not reported again, and a registry that
// cannot be reached is logged and tried at the next tick.
type Watcher struct {
	ctx     context.Context
	fo      FetchOptions
	changed func(moduleName string)
	log     *slog.Logger

	mu      sync.Mutex
	watches map[string]context.CancelFunc
}

// NewWatcher returns a watcher that runs until ctx ends and calls changed
// from its own goroutines (one per module).
func NewWatcher(ctx context.Context, fo FetchOptions, changed func(moduleName string), log *slog.Logger) *Watcher {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Watcher{ctx: ctx, fo: fo, changed: changed, log: log, watches: map[string]context.CancelFunc{}}
}

// Watch starts watching m's tag, whose module was loaded from digest
// loaded, in place of any earlier watch of a module of that name. It does
// nothing for a file, an image pinned by digest, or resolveEvery 0.
func (w *Watcher) Watch(m config.Module, loaded digest.Digest) {
	w.Stop(m.Name)
	if _, image := m.From().(config.ImageSource); !image || m.ResolveEvery <= 0 {
		return
	}
	ctx, cancel := context.WithCancel(w.ctx)
	w.mu.Lock()
	w.watches[m.Name] = cancel
	w.mu.Unlock()
	go w.run(ctx, m, loaded)
}

// Stop stops watching the module name, if it is watched.
func (w *Watcher) Stop(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if cancel, ok := w.watches[name]; ok {
		cancel()
		delete(w.watches, name)
	}
}

func (w *Watcher) run(ctx context.Context, m config.Module, seen digest.Digest) {
	t := time.NewTicker(m.ResolveEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		o, err := EntryOptions(&m, w.fo)
		if err != nil {
			w.log.Warn("cannot look for a new version of the module", "module", m.Name, "image", m.Image, "err", err)
			continue
		}
		d, err := Resolve(ctx, m.Image, o)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			w.log.Warn("cannot resolve the module's tag; will try again", "module", m.Name, "image", m.Image, "err", err)
		case d != seen:
			w.log.Info("module's tag moved", "module", m.Name, "image", m.Image, "from", seen, "to", d)
			seen = d
			w.changed(m.Name)
		}
	}
}
