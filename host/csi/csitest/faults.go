package csitest

import (
	"context"
	"sync"

	"google.golang.org/grpc/codes"
)

// FailDeletes makes every DeleteVolume from now on fail with code and msg,
// deleting nothing, as a driver whose backend is down does. The calls are
// still counted. FailDeletes with codes.OK is HealDeletes.
func (d *Driver) FailDeletes(code codes.Code, msg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.failCode, d.failMsg = code, msg
}

// HealDeletes undoes FailDeletes: DeleteVolume works again.
func (d *Driver) HealDeletes() {
	d.FailDeletes(codes.OK, "")
}

// HoldDeletes holds the answers of successful DeleteVolume calls (also those
// of volumes already gone): each call, once the volume is deleted, sends the
// volume id on deleted and then waits for release before it answers, so that
// a test can stop the caller after the deletion and before the caller hears
// of it. A held call also stops waiting when its caller gives up or the
// server stops, but not before its id is sent.
//
// release lets held and later calls answer at once, without sending; it may
// be called more than once, and must be called if deleted is not drained.
// A later HoldDeletes replaces this hold for later calls.
func (d *Driver) HoldDeletes() (deleted <-chan string, release func()) {
	h := &hold{deleted: make(chan string), released: make(chan struct{})}
	d.mu.Lock()
	d.hold = h
	d.mu.Unlock()
	return h.deleted, sync.OnceFunc(func() {
		d.mu.Lock()
		if d.hold == h {
			d.hold = nil
		}
		d.mu.Unlock()
		close(h.released)
	})
}

// hold is one HoldDeletes.
type hold struct {
	deleted  chan string
	released chan struct{}
}

// wait reports the deletion of volumeID and waits for the release, or for
// the call's end.
func (h *hold) wait(ctx context.Context, volumeID string) {
	// The report does not give up with the call: a test waiting for it
	// would otherwise miss a deletion that did happen.
	select {
	case h.deleted <- volumeID:
	case <-h.released:
		return
	}
	select {
	case <-h.released:
	case <-ctx.Done():
	}
}
