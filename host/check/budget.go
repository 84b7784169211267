package check

import (
	"context"
	"time"
)

// over returns why the exploration must end now, if it must: the budget's
// time is spent (ErrBudget) or ctx ended (SIGTERM). It is asked wherever
// time passes, not only between runs: before each run, each round, each
// write of a step or of the host, and each perturbation weighed; a guest
// call in flight ends at the deadline too (run's context carries it).
func (r *runner) over(ctx context.Context) error {
	if d := r.opts.Deadline; !d.IsZero() && !time.Now().Before(d) {
		return ErrBudget
	}
	return ctx.Err()
}

// over is runner.over for a run: once it returns an error, the run ends
// at its next round or write with that error (x.stop), whatever else
// failed in between because of it.
func (x *execution) over(ctx context.Context) error {
	if x.stop == nil {
		x.stop = x.r.over(ctx)
	}
	return x.stop
}
