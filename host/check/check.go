package check

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/casetest"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/memcluster"
)

// MaxLag is how many writes behind a stale perturbation shows a kind, at
// most.
const MaxLag = 3

// MaxStaleRounds is how many rounds in a row a stale view lasts, at most.
// A view lasts one round more only when its last round changed the
// cluster: one that changed nothing would change nothing again on the
// same view.
const MaxStaleRounds = 3

// MaxCompound bounds the unobserved-stale perturbations run for one case
// (those skipped as views shown already are not counted): the class
// multiplies the unobserved phases by the stale rounds after each, and is
// explored last, smallest first, so that the cap leaves out the largest
// lags of the latest phases.
const MaxCompound = 48

// maxRounds bounds one phase of a perturbed run: casetest.MaxRounds, and
// the rounds a crash or stale rounds may add.
const maxRounds = casetest.MaxRounds + 1 + MaxStaleRounds

// ErrTooLarge ends a run whose versions of the cluster would take more
// memory than a run may keep (maxRunBytes, keep.go).
var ErrTooLarge = errors.New("the case is too large to explore")

// Budget bounds an exploration: executions (runs of a case, the
// unperturbed ones included), checked before each run, and time, checked
// wherever time passes (budget.go).
type Budget struct {
	Executions int
	Time       time.Duration
}

// DefaultBudget keeps `kubeplug check` on the reference modules' case files
// under a minute on a laptop.
var DefaultBudget = Budget{Executions: 5000, Time: 50 * time.Second}

// Options configure Explore.
type Options struct {
	// NewGuest returns a fresh instance of the module, and what releases
	// it, for each run and each host restarted within one (a crash, a
	// stale round on a restarted host): a run starts as a host process
	// does, and a crashed process loses the module's memory too, so that
	// what an instance learned in another run never carries over. nil
	// runs everything on mod's instance (tests whose fake has no memory).
	NewGuest NewGuestFunc
	// Log receives the host's records; nil discards them.
	Log *slog.Logger
	// Only, when set, runs the unperturbed run and this perturbation alone
	// (--replay).
	Only *Perturbation
	// Deadline and Executions are what is left of the budget; the caller
	// shares them between cases.
	Deadline   time.Time
	Executions *int
}

// Report is what exploring one case came to.
type Report struct {
	File, Case string
	// Violations are the distinct violations found, each with the first
	// (smallest) perturbation that showed it.
	Violations []Violation
	// Executions counts the runs made, the unperturbed one included;
	// Skipped the perturbations left out as leading to a state explored
	// already.
	Executions, Skipped int
	// Truncated is set when the budget ended the exploration.
	Truncated bool
	// Capped is set when the case had more unobserved-stale perturbations
	// with views of their own than MaxCompound, or the unobserved runs
	// they are planned from had more versions than an exploration holds
	// (maxHeldBytes), and the rest were left.
	Capped bool
	// Cut, when set, says why the exploration ended before the budget
	// did: a perturbed run outgrew the memory a run may keep, or a fresh
	// instance of the module could not be started. Neither is the
	// module's violation, and the runs after would meet them too.
	Cut string
	// Failure is set when the unperturbed run itself fails: the case or
	// the module is wrong before any perturbation (kubeplug test says how).
	Failure string
}

// ErrBudget ends an exploration that ran out of budget.
var ErrBudget = errors.New("budget exhausted")

// Explore runs case c against mod unperturbed, then under every
// perturbation within bounds (or opts.Only), and reports what the oracles
// found.
func Explore(ctx context.Context, mod controller.Module, c casetest.Case, opts Options) Report {
	r := &runner{mod: mod, c: c, opts: opts, seen: map[string]bool{}, found: map[string]bool{}, hashes: map[kindOf]string{},
		unobserved: map[int]*result{}}
	rep := Report{File: c.File, Case: c.Name}
	base, err := r.run(ctx, Perturbation{Class: "none"})
	rep.Executions = r.executions
	if err != nil {
		switch {
		case errors.Is(err, ErrBudget):
			rep.Truncated = true
		case errors.Is(err, errNoInstance):
			rep.Cut = err.Error()
		default:
			rep.Failure = "the unperturbed run: " + err.Error()
		}
		return rep
	}
	if base.loop != "" {
		rep.Failure = "the unperturbed run: " + base.loop
		return rep
	}
	r.base = base
	for _, n := range base.sizes {
		r.held += n
	}
	perturbations := r.plan()
	if opts.Only != nil {
		perturbations = []Perturbation{*opts.Only}
	}
	// try runs p and records what it found; it reports whether the
	// exploration must end (the budget, or ctx).
	try := func(p Perturbation) (*result, bool) {
		res, err := r.run(ctx, p)
		rep.Executions = r.executions
		switch {
		case errors.Is(err, ErrBudget), ctx.Err() != nil:
			rep.Truncated = true
			return nil, true
		case errors.Is(err, ErrTooLarge), errors.Is(err, errNoInstance):
			rep.Cut = err.Error()
			return nil, true
		case errors.Is(err, errDuplicate):
			rep.Skipped++
			return nil, false
		case err != nil:
			rep.Violations = append(rep.Violations, Violation{File: c.File, Case: c.Name, Oracle: OracleError,
				Detail: err.Error(), Perturbation: p, Step: r.stepName(p.hitPhase())})
			return nil, false
		}
		for _, v := range r.compare(res) {
			key := v.Oracle + "\x00" + v.Object
			if r.found[key] && opts.Only == nil {
				continue
			}
			r.found[key] = true
			// Reported where it took effect, which --replay runs again.
			v.File, v.Case, v.Perturbation, v.Step = c.File, c.Name, res.fired, r.stepName(res.fired.hitPhase())
			rep.Violations = append(rep.Violations, v)
		}
		return res, false
	}
	// The unobserved runs are kept: the unobserved-stale perturbations
	// are planned from the states they reached.
	unobserved := r.unobserved
	for i := 0; i < len(perturbations); i++ {
		p := perturbations[i]
		if r.over(ctx) != nil {
			rep.Truncated = true // weighing views takes time too
			return rep
		}
		if p.Class == Stale && opts.Only == nil && p.span() == 1 && !r.staleDiffers(p, r.base) {
			rep.Skipped++
			continue
		}
		res, end := try(p)
		if end {
			return rep
		}
		if longer, ok := staleLonger(p, res); ok && opts.Only == nil {
			perturbations = append(perturbations, longer)
		}
		if res != nil && p.Class == Unobserved {
			if r.hold(res, p.Phase) {
				unobserved[p.Phase] = res
			} else {
				rep.Capped = true
			}
		}
	}
	if opts.Only != nil {
		return rep
	}
	ran := 0
	compound := r.planCompound(unobserved)
	for i := 0; i < len(compound); i++ {
		p := compound[i]
		if r.over(ctx) != nil {
			rep.Truncated = true
			return rep
		}
		if p.span() == 1 && !r.staleDiffers(p, unobserved[p.Phase]) {
			rep.Skipped++
			continue
		}
		if ran == MaxCompound {
			rep.Capped = true
			break
		}
		ran++
		res, end := try(p)
		if end {
			return rep
		}
		if longer, ok := staleLonger(p, res); ok {
			compound = append(compound, longer)
		}
	}
	return rep
}

// staleLonger returns p's stale view lasting one round more, when res (p's
// run) changed the cluster in the view's last round and MaxStaleRounds
// allows.
func staleLonger(p Perturbation, res *result) (Perturbation, bool) {
	if res == nil || (p.Class != Stale && p.Class != UnobservedStale) || res.staleWrites == 0 || p.span() >= MaxStaleRounds {
		return p, false
	}
	p.Rounds = p.span() + 1
	return p, true
}

// runner explores one case.
type runner struct {
	mod        controller.Module
	c          casetest.Case
	opts       Options
	base       *result
	seen       map[string]bool
	found      map[string]bool
	hashes     map[kindOf]string
	executions int
	// held is what the versions of ended runs take (keep.go).
	held int64
	// unobserved are the unobserved runs held, by phase, for the
	// unobserved-stale class.
	unobserved map[int]*result
	// replayAll makes every run replay from the start, none resume
	// (fork.go): the tests hold the two to the same results.
	replayAll bool
}

func (r *runner) stepName(phase int) string {
	if phase > len(r.c.Steps) {
		return "the controllers' resync after the last step"
	}
	if phase == 0 {
		return phaseName(phase)
	}
	s := r.c.Steps[phase-1]
	return fmt.Sprintf("step %d (line %d): %s", phase, s.Line, s)
}

// plan lists the perturbations of every class for the unperturbed run's
// rounds and steps, smallest first within each class.
func (r *runner) plan() []Perturbation {
	var out []Perturbation
	b := r.base
	for _, pr := range b.rounds {
		// A crash after each write; the last of a round's is a restart
		// between it and the next round. A round that wrote nothing (a
		// phase's last) is followed by a restart too: what the module
		// learned in it, and not in the cluster, is lost there.
		for k := min(pr.writes, 1); k <= pr.writes; k++ {
			if k == 0 && pr.phase == 0 && pr.round == 1 {
				continue // no different from the start of a run
			}
			out = append(out, Perturbation{Class: Crash, Phase: pr.phase, Round: pr.round, After: k})
		}
	}
	for _, pr := range b.rounds {
		out = appendStale(out, Perturbation{Class: Stale, Phase: pr.phase, Round: pr.round}, pr.version)
	}
	for phase := 0; phase < len(r.c.Steps); phase++ {
		out = append(out, Perturbation{Class: Unobserved, Phase: phase})
	}
	for i, n := range b.stepWrites {
		for j := 1; j < n; j++ {
			out = append(out, Perturbation{Class: Interleave, Phase: i + 1, After: j})
		}
	}
	return out
}

// planCompound lists the unobserved-stale perturbations, smallest first:
// for each phase the host skipped in an unobserved run (by), each round
// that run made after the next step, each lag, kind and host, as plan
// lists stale ones. The views are that run's, not the unperturbed run's:
// without the host's writes of the skipped phase, the same lag reaches
// further back, and the state shown beside it is one the unperturbed run
// never had.
func (r *runner) planCompound(by map[int]*result) []Perturbation {
	var out []Perturbation
	for phase := 0; phase < len(r.c.Steps); phase++ {
		res := by[phase]
		if res == nil {
			continue
		}
		for _, pr := range res.rounds {
			if pr.phase != phase+1 {
				continue
			}
			out = appendStale(out, Perturbation{Class: UnobservedStale, Phase: phase, Round: pr.round}, pr.version)
		}
	}
	return out
}

// staleDiffers reports whether p's stale round, in run res, shows the
// module anything but the current state, and a view with a current state
// that no other stale round of the same phase, round and host showed; it
// marks the view seen. res is the unperturbed run for a stale
// perturbation, the unobserved run it was planned from for an
// unobserved-stale one: the two classes share what they have shown.
func (r *runner) staleDiffers(p Perturbation, res *result) bool {
	if res == nil {
		return false
	}
	phase := p.hitPhase()
	var pr *roundInfo
	for i := range res.rounds {
		if res.rounds[i].phase == phase && res.rounds[i].round == p.Round {
			pr = &res.rounds[i]
		}
	}
	if pr == nil || p.Lag > pr.version {
		return false
	}
	now, then := res.versions[pr.version], res.versions[pr.version-p.Lag]
	view, cur := sha256.New(), sha256.New()
	differs := false
	for _, kind := range sortedKinds() {
		v := now
		if p.lags(kind) {
			v = then
			differs = differs || r.hashKind(then, kind) != r.hashKind(now, kind)
		}
		view.Write([]byte(r.hashKind(v, kind)))
		cur.Write([]byte(r.hashKind(now, kind)))
	}
	key := fmt.Sprintf("stale %d %d %v %x %x", phase, p.Round, p.Restart, cur.Sum(nil), view.Sum(nil))
	if !differs || r.seen[key] {
		return false
	}
	r.seen[key] = true
	return true
}

// errDuplicate ends a run whose perturbation led to a state explored
// already.
var errDuplicate = errors.New("state explored already")

// errNoInstance ends a run that needed a fresh module instance and could
// not start one (a machine so loaded that the module's start ran out its
// deadline): not the module's violation under the perturbation.
var errNoInstance = errors.New("a fresh instance of the module could not be started")

// roundInfo is one round of a run.
type roundInfo struct {
	phase, round int
	// n is the round's number in the run.
	n int
	// writes the host made in it; version is the index of the cluster's
	// version the round started from, after that after each write (a
	// write that changed nothing adds no version).
	writes, version int
	after           []int
}

// result is what one run came to.
type result struct {
	rounds     []roundInfo
	stepWrites []int
	// versions are the cluster after each write (the loaded state first):
	// the unperturbed run's are the views of stale perturbations. An
	// unobserved run held for the unobserved-stale class keeps only those
	// its views show; the others are nil. sizes are their heap bytes.
	versions []*memcluster.Cluster
	sizes    []int64
	end      map[string]map[string]any
	// alive are the objects of any version by uid; deleted those removed
	// or marked for deletion, with the write that did it.
	alive   map[string]string
	deleted map[string]string
	// volumes deleted through CSI, by "driver/handle", with the write.
	volumes map[string]string
	// leaks are backing volumes whose PersistentVolume (reclaim policy
	// Delete) is gone while the volume was never deleted.
	leaks map[string]string
	// shrinks are the lowerings of a claim's storage request the run's
	// writes made, by claim and values.
	shrinks map[string]lowering
	// loop says how the run failed to settle, if it did.
	loop string
	// fired is the perturbation as it took effect: where a crash actually
	// happened, with the writes made before it.
	fired Perturbation
	// staleWrites are the writes that changed the cluster in a stale
	// view's last round: when there are any, the view is explored a round
	// longer.
	staleWrites int
}

// execution is one run of the case.
type execution struct {
	r       *runner
	p       Perturbation
	sess    *casetest.Session
	h       *host
	l       *lister
	res     *result
	prev    map[string]map[string]any // the objects of the last version, by key
	by      string
	phase   int
	round   int
	n       int // rounds so far, for round numbers
	closers []func()
	// counts is the cluster's write and volume-deletion counts at the
	// last version.
	counts [2]int
	// kept is the heap bytes of the versions kept, sizes those of each
	// object by uid and resourceVersion (keep.go); stop, once set, ends
	// the run at its next round or write (the budget, ctx, or
	// maxRunBytes).
	kept  int64
	sizes map[string]int64
	stop  error
	// fired is the perturbation once it has taken effect (result.fired).
	fired Perturbation
}

func (r *runner) run(ctx context.Context, p Perturbation) (*result, error) {
	if err := r.over(ctx); err != nil {
		return nil, err
	}
	if r.opts.Executions != nil {
		if *r.opts.Executions <= 0 {
			return nil, ErrBudget
		}
		*r.opts.Executions--
	}
	if d := r.opts.Deadline; !d.IsZero() {
		// A guest call in flight at the deadline ends there, as one does
		// on SIGTERM, rather than run its own deadline out.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	r.executions++
	f, forked := r.forkOf(p)
	var (
		sess *casetest.Session
		err  error
	)
	if forked {
		sess, err = casetest.Resume(r.mod, r.c, f.from.versions[f.version].Clone(), r.opts.Log)
	} else {
		sess, err = casetest.NewSession(r.mod, r.c, r.opts.Log)
	}
	if err != nil {
		return nil, err
	}
	x := &execution{r: r, p: p, sess: sess, sizes: map[string]int64{}, res: &result{
		alive: map[string]string{}, deleted: map[string]string{}, volumes: map[string]string{},
		leaks: map[string]string{}, shrinks: map[string]lowering{},
	}}
	defer func() {
		for _, c := range x.closers {
			c()
		}
	}()
	x.h = &host{c: sess.Cluster, x: x, crashAfter: -1}
	x.l = &lister{now: sess.Cluster}
	x.prev = objects(sess.Cluster)
	x.counts = [2]int{sess.Cluster.WriteCount(), len(sess.Cluster.VolumeDeletes())}
	for _, o := range x.prev {
		x.res.alive[uidOf(o)] = keyOf(o)
	}
	if forked {
		err = x.resume(ctx, f)
	} else if x.keep(sess.Cluster, x.prev) {
		// A run starts on a fresh host and module instance, as a host
		// process does: the unperturbed run saw states a perturbed one
		// must not have remembered (RATIONALE.md).
		if err = x.restart(ctx); err == nil {
			err = x.runFrom(ctx, 0, 1)
		}
	}
	// The budget or ctx ending a run is the run's end whatever it made
	// fail on the way (a guest call cut short is an error of its own).
	if stop := x.over(ctx); stop != nil {
		return nil, stop
	}
	if err != nil {
		return nil, err
	}
	if p.Class != "none" && x.fired.Class == "" {
		// The perturbation never took effect (a crash point past the
		// round's writes): the run is the unperturbed one again.
		return nil, errDuplicate
	}
	x.res.fired = x.fired
	x.finish()
	return x.res, nil
}

// runFrom runs the case from round first of phase from (its step made
// already) to the end: a whole run is runFrom(ctx, 0, 1).
func (x *execution) runFrom(ctx context.Context, from, first int) error {
	steps := x.r.c.Steps
	if from > len(steps) {
		x.phase = from
		return x.settle(ctx, first) // the resync's rounds
	}
	for phase := from; phase <= len(steps); phase++ {
		x.phase = phase
		if phase > from {
			if err := x.step(ctx, phase); err != nil {
				return err
			}
			first = 1
		}
		if x.p.skips(phase) && phase < len(steps) {
			if x.p.Class == Unobserved {
				x.fired = x.p
			}
			continue
		}
		if err := x.settle(ctx, first); err != nil || x.res.loop != "" {
			return err
		}
	}
	return x.resync(ctx)
}

// resync applies the case's controller steps once more after the last
// step, and settles: controllers keep running, so every run, perturbed or
// not, is judged once they have caught up with what the host did (a
// resizer grows a volume whatever round the host grew its claim in).
func (x *execution) resync(ctx context.Context) error {
	steps := x.r.c.Steps
	any := false
	x.phase = len(steps) + 1
	for i, s := range steps {
		if !s.Controller() {
			continue
		}
		if err := x.over(ctx); err != nil {
			return err
		}
		any = true
		ws, err := s.Writes(i, x.sess.Cluster)
		if err != nil {
			continue
		}
		for _, w := range ws {
			if w.Apply(ctx, x.sess.Cluster) == nil {
				x.wrote(fmt.Sprintf("resync of step %d: %s", i+1, w))
			}
		}
	}
	if !any {
		return nil
	}
	return x.settle(ctx, 1)
}

// step makes the writes of step phase (from 1), settling after the first
// After of them for an interleaving.
func (x *execution) step(ctx context.Context, phase int) error {
	s := x.r.c.Steps[phase-1]
	ws, err := s.Writes(phase-1, x.sess.Cluster)
	if err != nil {
		if x.p.Class == "none" {
			return err
		}
		ws = nil // the perturbed run left the step nothing to do
	}
	x.res.stepWrites = append(x.res.stepWrites, len(ws))
	for j, w := range ws {
		if x.p.Class == Interleave && x.p.Phase == phase && x.p.After == j {
			x.fired = x.p
			if err := x.dedupe("interleave"); err != nil {
				return err
			}
			if err := x.settle(ctx, 1); err != nil || x.res.loop != "" {
				return err
			}
		}
		if err := x.over(ctx); err != nil {
			return err
		}
		writes := x.sess.Cluster.WriteCount()
		err := w.Apply(ctx, x.sess.Cluster)
		if err != nil && x.p.Class == "none" {
			return fmt.Errorf("step %d (line %d): %s: %w", phase, s.Line, w, err)
		}
		if x.sess.Cluster.WriteCount() != writes {
			x.wrote(fmt.Sprintf("step %d: %s", phase, w))
		}
	}
	return nil
}

// dedupe ends the run when the state it reached at this point was reached
// by another run already.
func (x *execution) dedupe(what string) error {
	key := fmt.Sprintf("%s %d %s", what, x.phase, stateHash(x.sess.Cluster))
	if x.r.seen[key] {
		return errDuplicate
	}
	x.r.seen[key] = true
	return nil
}

// settle runs rounds, from round first, until one changes nothing,
// applying the perturbation at its round.
func (x *execution) settle(ctx context.Context, first int) error {
	limit := casetest.MaxRounds
	if x.p.Class != "none" {
		limit = maxRounds
	}
	for round := first; ; round++ {
		if err := x.over(ctx); err != nil {
			return err
		}
		x.round = round
		x.n++
		crash := x.p.Class == Crash && x.p.Phase == x.phase && x.p.Round == round
		stale := x.p.staleRound(x.phase, round)
		if crash {
			x.h.crashAfter = x.p.After
		}
		opens, closes := stale && round == x.p.Round, stale && round == x.p.Round+x.p.span()-1
		if opens {
			x.fired = x.p
			x.lag()
			if x.p.Restart {
				if err := x.restart(ctx); err != nil {
					return err
				}
			}
		}
		info := roundInfo{phase: x.phase, round: round, n: x.n, version: len(x.res.versions) - 1}
		x.h.writes, x.h.after = 0, nil
		out, err := x.sess.Round(ctx, x.n)
		info.writes, info.after = x.h.writes, x.h.after
		x.res.rounds = append(x.res.rounds, info)
		changed := out.Changed
		if crash && x.h.writes == x.p.After {
			// A crash after the round's last write falls between this
			// round and the next (or the next step): the host restarts
			// there. Planned for this round, it is disarmed at its end
			// either way, so that it never fires in a later round under
			// this one's name.
			x.h.crashed = true
		}
		x.h.crashAfter = -1
		switch {
		case x.h.crashed:
			x.h.crashed = false
			x.fired = Perturbation{Class: Crash, Phase: x.phase, Round: round, After: x.h.writes}
			if err := x.dedupe("crash"); err != nil {
				return err
			}
			if err := x.restart(ctx); err != nil {
				return err
			}
			changed = true
		case err != nil && x.p.Class == "none":
			return fmt.Errorf("%s, round %d: %w", phaseName(x.phase), round, err)
		case err != nil:
			// The live host would retry; a state that keeps failing ends
			// as a run that does not settle.
			changed = true
		}
		if stale {
			changed = true
		}
		if closes {
			x.l.lags = nil // the informers catch up
			// Writes that changed the cluster: one refused by a
			// precondition would be refused again on the same view.
			x.res.staleWrites = len(x.res.versions) - 1 - info.version
		}
		if !changed {
			return nil
		}
		if round >= limit {
			x.res.loop = fmt.Sprintf("%s did not settle in %d rounds: round %d still changed the cluster", phaseName(x.phase), limit, round)
			if err != nil {
				x.res.loop += ": " + err.Error()
			}
			return nil
		}
	}
}

// lag points the lagging informers at the cluster some writes ago.
func (x *execution) lag() {
	vs := x.res.versions
	i := len(vs) - 1 - x.p.Lag
	if i < 0 {
		i = 0
	}
	x.l.lags = map[string]*memcluster.Cluster{}
	for _, kind := range sortedKinds() {
		if x.p.lags(kind) {
			x.l.lags[kind] = vs[i]
		}
	}
}

// restart starts a fresh host on the cluster: no memory of its last
// writes, and a fresh module instance when Options.NewGuest is set. A
// module that cannot be loaded again fails the run: going on with the
// instance at hand would keep what the restart must take away.
func (x *execution) restart(ctx context.Context) error {
	var guest controller.Guest
	if x.r.opts.NewGuest != nil {
		g, release, err := x.r.opts.NewGuest(ctx)
		if err != nil {
			if stop := x.over(ctx); stop != nil {
				return stop
			}
			return fmt.Errorf("%w: %w", errNoInstance, err)
		}
		guest = g
		x.closers = append(x.closers, release)
	}
	deps := x.sess.Deps()
	deps.Lister, deps.Cluster, deps.Volumes = x.l, x.h, x.h
	x.sess.Restart(guest, &deps)
	return nil
}

// wrote records a write that changed the cluster: a new version, and any
// object it removed or marked for deletion.
func (x *execution) wrote(by string) {
	c := x.sess.Cluster
	counts := [2]int{c.WriteCount(), len(c.VolumeDeletes())}
	if counts == x.counts {
		return // the write changed nothing
	}
	x.counts = counts
	if x.stop != nil {
		return
	}
	if d := x.r.opts.Deadline; !d.IsZero() && !time.Now().Before(d) {
		x.stop = ErrBudget
		return
	}
	now := objects(c)
	if !x.keep(c, now) {
		return
	}
	for k, o := range x.prev {
		n, ok := now[k]
		gone := !ok || uidOf(n) != uidOf(o)
		if (gone || deleting(n)) && !deleting(o) {
			if _, done := x.res.deleted[uidOf(o)]; !done {
				x.res.deleted[uidOf(o)] = by
			}
		}
	}
	for _, o := range now {
		x.res.alive[uidOf(o)] = keyOf(o)
	}
	for _, d := range c.VolumeDeletes() {
		v := d.Driver + "/" + d.VolumeHandle
		if _, ok := x.res.volumes[v]; !ok {
			x.res.volumes[v] = by
		}
	}
	x.prev = now
	x.by = by
}

// lowering is a write that lowered a claim's storage request.
type lowering struct {
	claim, from, to string
	// capacity is the claim's status.capacity.storage, "" if none.
	capacity string
	by       string
}

// checkShrink records a write (by) that lowered a claim's storage request,
// whatever the capacity: kube-apiserver takes a lower request while it
// stays above the capacity, and that cancels the expansion in flight to
// the higher one. (The executor refuses one at or below the capacity.)
func (x *execution) checkShrink(before, after map[string]any, by string) {
	oldReq, _ := storage(before)
	newReq, capacity := storage(after)
	if oldReq == nil || newReq == nil || newReq.Cmp(*oldReq) >= 0 {
		return
	}
	l := lowering{claim: keyOf(after), from: oldReq.String(), to: newReq.String(), by: by}
	if capacity != nil {
		l.capacity = capacity.String()
	}
	x.res.shrinks[l.claim+" from "+l.from+" to "+l.to] = l
}

// finish computes the end state and the volumes left behind.
func (x *execution) finish() {
	c := x.sess.Cluster
	x.res.end = map[string]map[string]any{}
	for k, o := range objects(c) {
		x.res.end[k] = normalize(o)
	}
	deleted := map[string]bool{}
	for _, d := range c.VolumeDeletes() {
		deleted[d.Driver+"/"+d.VolumeHandle] = true
	}
	for _, v := range x.res.versions {
		if v == nil {
			continue // a version a held run let go
		}
		for _, pv := range v.List(abi.KindPersistentVolume) {
			spec, _ := pv["spec"].(map[string]any)
			csi, _ := spec["csi"].(map[string]any)
			driver, _ := csi["driver"].(string)
			handle, _ := csi["volumeHandle"].(string)
			if handle == "" || spec["persistentVolumeReclaimPolicy"] != "Delete" || deleted[driver+"/"+handle] {
				continue
			}
			if cur, ok := c.Get(abi.KindPersistentVolume, "", keyName(pv)); ok && uidOf(cur) == uidOf(pv) {
				continue
			}
			x.res.leaks[driver+"/"+handle] = keyOf(pv)
		}
	}
}

// objects returns every object of c by "Kind namespace/name".
func objects(c *memcluster.Cluster) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, kind := range sortedKinds() {
		for _, o := range c.List(kind) {
			out[keyOf(o)] = o
		}
	}
	return out
}

func meta(o map[string]any) map[string]any {
	m, _ := o["metadata"].(map[string]any)
	return m
}

func uidOf(o map[string]any) string { s, _ := meta(o)["uid"].(string); return s }

func keyName(o map[string]any) string { s, _ := meta(o)["name"].(string); return s }

func keyOf(o map[string]any) string {
	kind, _ := o["kind"].(string)
	ns, _ := meta(o)["namespace"].(string)
	return casetest.ObjectKey{Kind: kind, Namespace: ns, Name: keyName(o)}.String()
}

func deleting(o map[string]any) bool { return o != nil && meta(o)["deletionTimestamp"] != nil }

// normalize drops what differs between two runs that reach the same state
// by different paths: uids, resourceVersions, generations, timestamps.
func normalize(o map[string]any) map[string]any {
	o = runtime.DeepCopyJSON(o)
	m := meta(o)
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"} {
		delete(m, f)
	}
	if m["deletionTimestamp"] != nil {
		m["deletionTimestamp"] = "set"
	}
	if refs, ok := m["ownerReferences"].([]any); ok {
		for _, r := range refs {
			if rm, ok := r.(map[string]any); ok {
				delete(rm, "uid")
			}
		}
	}
	if spec, ok := o["spec"].(map[string]any); ok {
		if ref, ok := spec["claimRef"].(map[string]any); ok {
			delete(ref, "uid")
			delete(ref, "resourceVersion")
		}
	}
	return o
}

// stateHash hashes the cluster's normalised objects and deleted volumes.
func stateHash(c *memcluster.Cluster) string {
	objs := objects(c)
	keys := make([]string, 0, len(objs))
	for k := range objs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		b, _ := json.Marshal(normalize(objs[k]))
		h.Write([]byte(k))
		h.Write(b)
	}
	for _, d := range c.VolumeDeletes() {
		h.Write([]byte(d.Driver + "/" + d.VolumeHandle))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// hashKind hashes the objects of one kind as stored, resourceVersions
// included: what an informer of the kind holds. A version is never written
// after it is kept, so its hashes are kept with it.
func (r *runner) hashKind(c *memcluster.Cluster, kind string) string {
	k := kindOf{c, kind}
	if h, ok := r.hashes[k]; ok {
		return h
	}
	b, _ := json.Marshal(c.List(kind))
	sum := sha256.Sum256(b)
	h := hex.EncodeToString(sum[:])
	r.hashes[k] = h
	return h
}

// kindOf names the objects of one kind in one kept version.
type kindOf struct {
	c    *memcluster.Cluster
	kind string
}

func sortedKinds() []string { return casetest.SortedKinds() }

// appendStale appends to out the stale rounds of at (its class, phase
// and round), smallest first: each lag up to MaxLag and the round's
// version, each view (each kind alone, every kind, every kind but one),
// on the live host and on a restarted one.
func appendStale(out []Perturbation, at Perturbation, version int) []Perturbation {
	var views []Perturbation
	for _, kind := range sortedKinds() {
		views = append(views, Perturbation{Kind: kind})
	}
	views = append(views, Perturbation{Kind: AllKinds})
	for _, kind := range sortedKinds() {
		views = append(views, Perturbation{Kind: AllKinds, Except: kind})
	}
	for lag := 1; lag <= MaxLag && lag <= version; lag++ {
		for _, v := range views {
			for _, restart := range []bool{false, true} {
				p := at
				p.Kind, p.Except, p.Lag, p.Restart = v.Kind, v.Except, lag, restart
				out = append(out, p)
			}
		}
	}
	return out
}
