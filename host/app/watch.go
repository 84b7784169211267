package app

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// ReloadDebounce is how long the host waits after the last change to a
// watched file before it reloads: an editor or `cp` writes a file in several
// steps, a deployment replaces the configuration and a module together, and
// each should cause one reload of the finished files, not one per step.
const ReloadDebounce = 250 * time.Millisecond

// watch reloads the host when the configuration or a module file changes,
// debounced, and at once on every receive from signals (SIGHUP), until ctx
// ends.
//
// It watches the files' directories, not the files: a file replaced by a
// rename (how editors, `install`, and Kubernetes' ConfigMap and Secret
// volumes update files, the last through a `..data` symlink swapped in the
// same directory) is a new inode that a watch on the old one would miss.
func (r *Reloader) watch(ctx context.Context, signals <-chan struct{}) error {
	// Ending while the host runs fails /healthz: the host would no longer
	// follow its configuration, and a restart makes a new watch.
	defer func() { r.health.ended.Store(ctx.Err() == nil) }()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	var files, dirs []string
	rewatch := func() {
		files = r.watchedFiles()
		var want []string
		for _, f := range files {
			if d := filepath.Dir(f); !slices.Contains(want, d) {
				want = append(want, d)
			}
		}
		for _, d := range dirs {
			if !slices.Contains(want, d) {
				_ = w.Remove(d)
			}
		}
		dirs = dirs[:0]
		for _, d := range want {
			if err := w.Add(d); err != nil {
				r.log.Warn("cannot watch directory: changes in it reload the host only on SIGHUP", "dir", d, "err", err)
				continue
			}
			dirs = append(dirs, d)
		}
	}
	rewatch()
	relevant := func(name string) bool {
		name = filepath.Clean(name)
		return slices.Contains(files, name) || strings.HasPrefix(filepath.Base(name), "..")
	}

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var changed []string
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Op == fsnotify.Chmod || !relevant(ev.Name) {
				continue
			}
			if !slices.Contains(changed, ev.Name) {
				changed = append(changed, ev.Name)
			}
			timer.Reset(ReloadDebounce)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			r.log.Warn("watching module files", "err", err)
		case <-timer.C:
			if !reload(ctx, r, "changed: "+strings.Join(changed, ", ")) {
				return nil
			}
			changed = changed[:0]
			rewatch()
		case <-signals:
			if !reload(ctx, r, "SIGHUP") {
				return nil
			}
			rewatch()
		}
	}
}

// reload runs r.Reload(reason) and returns true when it ends, or false as
// soon as ctx ends: a reload that is still reading or compiling then must
// not keep the host from stopping (it ends with the host's context, which
// its pulls and loads take, or with the process).
func reload(ctx context.Context, r *Reloader, reason string) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Reload(reason)
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}
