package check

import (
	"context"
	"slices"
)

// fork is where a run resumes from a state the run it was planned from
// reached, instead of replaying that run up to it. Only where a fresh
// host takes over: after a crash, and at a stale round on a restarted
// host. Nothing of the host before (its module instance's memory, its
// guard for its own last writes) reaches past that point, and runs are
// deterministic up to it, so the resumed run is the replayed one; it
// saves the prefix's rounds and a module instance (RATIONALE.md).
type fork struct {
	// from is the run whose versions it resumes from: the unperturbed
	// run, or for unobserved-stale the unobserved run it was planned from.
	from *result
	// version is the index in from.versions of the state it resumes.
	version int
	// at is the round of from it resumes in (for a crash, the round
	// after it).
	at roundInfo
}

// forkOf returns where p's run resumes, if it can resume.
func (r *runner) forkOf(p Perturbation) (fork, bool) {
	from := r.base
	switch {
	case r.replayAll:
		return fork{}, false
	case p.Class == Stale && p.Restart:
	case p.Class == UnobservedStale && p.Restart:
		from = r.unobserved[p.Phase]
	case p.Class == Crash:
	default:
		return fork{}, false
	}
	if from == nil {
		return fork{}, false // the unperturbed run itself
	}
	i := slices.IndexFunc(from.rounds, func(pr roundInfo) bool { return pr.phase == p.hitPhase() && pr.round == p.Round })
	if i < 0 {
		return fork{}, false
	}
	pr := from.rounds[i]
	if p.Class != Crash {
		return fork{from: from, version: pr.version, at: pr}, true
	}
	if p.After > pr.writes {
		return fork{}, false // past the round's writes: run, it never fires
	}
	f := fork{from: from, version: pr.version, at: roundInfo{phase: pr.phase, round: pr.round + 1, n: pr.n + 1}}
	if p.After > 0 {
		f.version = pr.after[p.After-1]
	}
	return f, true
}

// resume runs x from f: the versions before it are f.from's; a crash has
// happened there (a fresh host goes on), or the round run next is the
// stale round whose restart starts the host.
func (x *execution) resume(ctx context.Context, f fork) error {
	x.res.versions = slices.Clone(f.from.versions[:f.version+1])
	x.res.sizes = slices.Clone(f.from.sizes[:f.version+1])
	x.n = f.at.n - 1
	x.phase = f.at.phase
	if x.p.Class == Crash {
		x.fired = x.p
		if err := x.dedupe("crash"); err != nil {
			return err
		}
		if err := x.restart(ctx); err != nil {
			return err
		}
	}
	return x.runFrom(ctx, f.at.phase, f.at.round)
}
