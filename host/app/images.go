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

// newImageWatch calls moved with a module's name when its tag names a new
// digest.
func newImageWatch(ctx context.Context, fo oci.FetchOptions, log *slog.Logger, moved func(name string)) *imageWatch {
	iw := &imageWatch{log: log}
	iw.w = oci.NewWatcher(ctx, fo, func(name string) {
		log.Info("the module's image tag moved to a new digest: reloading", "module", name)
		moved(name)
	}, log)
	return iw
}

// loaded starts following c's tag from the digest src was pulled from.
func (iw *imageWatch) loaded(c *config.Module, src *oci.Source) {
	iw.w.Watch(*c, src.Digest)
}
