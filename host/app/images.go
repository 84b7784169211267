package app

import (
	"context"
	"log/slog"

	"github.com/kubeplug/kubeplug/host/config"
	"github.com/kubeplug/kubeplug/host/oci"
)

// imageWatch follows the tags of the image entries that ask for it
// (resolveEvery), each from the digest it was loaded from.
type imageWatch struct {
	w   *oci.Watcher
	log *slog.Logger
}

func newImageWatch(ctx context.Context, fo oci.FetchOptions, log *slog.Logger) *imageWatch {
	iw := &imageWatch{log: log}
	iw.w = oci.NewWatcher(ctx, fo, iw.moved, log)
	return iw
}

// loaded starts following c's tag from the digest src was pulled from.
func (iw *imageWatch) loaded(c *config.Module, src *oci.Source) {
	iw.w.Watch(*c, src.Digest)
}

// moved is told that a module's tag names a new digest. Loading it is a
// hot swap, which this host does not make: it says so, and keeps running
// the digest it loaded.
func (iw *imageWatch) moved(name string) {
	iw.log.Warn("the module's image tag moved to a new digest; this host keeps running the digest it loaded until it is restarted", "module", name)
}
