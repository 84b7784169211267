package check

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kubeplug/kubeplug/abi"
)

// The classes of perturbation.
const (
	Crash      = "crash"
	Stale      = "stale"
	Unobserved = "unobserved"
	Interleave = "interleave"
	// UnobservedStale combines two: the host does not run between step
	// Phase and step Phase+1, and then one round after step Phase+1 runs
	// on a stale view, as informers show after a missed state.
	UnobservedStale = "unobserved-stale"
)

// Classes are the perturbation classes, in the order they are explored.
var Classes = []string{Crash, Stale, Unobserved, Interleave, UnobservedStale}

// AllKinds is the Kind of a stale perturbation that holds every kind back.
const AllKinds = "*"

// Perturbation is one change to a case's unperturbed run. Phase 0 is the
// rounds before the first step; phase i the rounds after step i. An
// unobserved-stale perturbation's Phase is its unobserved phase; its stale
// round is in the phase after it.
type Perturbation struct {
	Class string
	Phase int
	// Round is the round of the phase (from 1) it applies to: crash and
	// stale; for unobserved-stale, the round of phase Phase+1.
	Round int
	// After is, for a crash, how many writes of the round the host made
	// before it stopped: all of the round's puts the crash between it and
	// the next round (or step), and 0 is the end of a round that wrote
	// nothing. For an interleaving, how many writes of step Phase were
	// made before the host settled.
	After int
	// Kind and Lag are a stale round's: the kind shown behind (or
	// AllKinds) and by how many writes to the cluster.
	Kind string
	Lag  int
	// Except, with Kind AllKinds, is a kind shown as it is now: every
	// informer but that one is behind, as a host's informers are when the
	// one that caught up first is not the one its decision hangs on.
	Except string
	// Restart makes a stale round run on a fresh host, as a host restarted
	// on a lagging cache.
	Restart bool
	// Rounds is how many rounds in a row, from Round, show the stale view
	// (0 or 1: one): the lagging informers deliver nothing between them,
	// so the later rounds do not show the host's own writes of the
	// earlier ones either. At most MaxStaleRounds.
	Rounds int
}

// span is how many rounds p's stale view lasts.
func (p Perturbation) span() int { return max(p.Rounds, 1) }

// lags reports whether p shows kind behind.
func (p Perturbation) lags(kind string) bool {
	return kind == p.Kind || (p.Kind == AllKinds && kind != p.Except)
}

// skips reports whether p keeps the host from running after step phase.
func (p Perturbation) skips(phase int) bool {
	return (p.Class == Unobserved || p.Class == UnobservedStale) && p.Phase == phase
}

// staleRound reports whether p shows round round of phase a stale view.
func (p Perturbation) staleRound(phase, round int) bool {
	switch {
	case p.Class == Stale && p.Phase != phase, p.Class == UnobservedStale && p.Phase+1 != phase:
		return false
	case p.Class == Stale, p.Class == UnobservedStale:
		return p.Round <= round && round < p.Round+p.span()
	}
	return false
}

// String renders p in the form Parse reads: "crash:phase=1,round=2,after=1".
func (p Perturbation) String() string {
	parts := []string{"phase=" + strconv.Itoa(p.Phase)}
	switch p.Class {
	case Crash:
		parts = append(parts, "round="+strconv.Itoa(p.Round), "after="+strconv.Itoa(p.After))
	case Stale, UnobservedStale:
		parts = append(parts, "round="+strconv.Itoa(p.Round), "kind="+p.Kind, "lag="+strconv.Itoa(p.Lag))
		if p.Except != "" {
			parts = append(parts, "except="+p.Except)
		}
		if p.Restart {
			parts = append(parts, "restart=true")
		}
		if p.span() > 1 {
			parts = append(parts, "rounds="+strconv.Itoa(p.Rounds))
		}
	case Interleave:
		parts = append(parts, "after="+strconv.Itoa(p.After))
	}
	return p.Class + ":" + strings.Join(parts, ",")
}

// Describe says what p does in words, for reports.
func (p Perturbation) Describe() string {
	switch p.Class {
	case Crash:
		if p.After == 0 {
			return fmt.Sprintf("the host crashes at the end of round %d of %s, which wrote nothing; a fresh host goes on", p.Round, phaseName(p.Phase))
		}
		return fmt.Sprintf("the host crashes after %d write(s) of round %d of %s, before any other; a fresh host goes on", p.After, p.Round, phaseName(p.Phase))
	case Stale:
		return p.describeStale(p.Phase)
	case Unobserved:
		return fmt.Sprintf("the host does not run %s: it never sees that state", phaseName(p.Phase))
	case UnobservedStale:
		return fmt.Sprintf("the host does not run %s, so it never sees that state; then %s", phaseName(p.Phase), p.describeStale(p.Phase+1))
	case Interleave:
		return fmt.Sprintf("the host settles after %d write(s) of step %d, before the rest", p.After, p.Phase)
	}
	return p.String()
}

// describeStale says what p's stale round, in phase, shows.
func (p Perturbation) describeStale(phase int) string {
	what := "its " + p.Kind + " objects"
	switch {
	case p.Kind == AllKinds && p.Except != "":
		what = "every object but its " + p.Except + " objects"
	case p.Kind == AllKinds:
		what = "every object"
	}
	host := "the live host"
	if p.Restart {
		host = "a restarted host"
	}
	if p.span() > 1 {
		return fmt.Sprintf("rounds %d to %d of %s run on %s with %s as they were %d write(s) before the first of them", p.Round, p.Round+p.span()-1, phaseName(phase), host, what, p.Lag)
	}
	return fmt.Sprintf("round %d of %s runs on %s with %s as they were %d write(s) ago", p.Round, phaseName(phase), host, what, p.Lag)
}

func phaseName(phase int) string {
	if phase == 0 {
		return "the rounds before the first step"
	}
	return fmt.Sprintf("the rounds after step %d", phase)
}

// Parse reads a perturbation as String renders it.
func Parse(s string) (Perturbation, error) {
	class, rest, ok := strings.Cut(s, ":")
	if !ok || !slices.Contains(Classes, class) {
		return Perturbation{}, fmt.Errorf("perturbation %q: want CLASS:key=value,... with CLASS one of %s", s, strings.Join(Classes, ", "))
	}
	p := Perturbation{Class: class}
	for _, kv := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return p, fmt.Errorf("perturbation %q: %q is not key=value", s, kv)
		}
		var err error
		switch k {
		case "phase":
			p.Phase, err = atoi(v)
		case "round":
			p.Round, err = atoi(v)
		case "after":
			p.After, err = atoi(v)
		case "lag":
			p.Lag, err = atoi(v)
		case "kind":
			if _, known := abi.LookupKind(v); !known && v != AllKinds {
				err = fmt.Errorf("unknown kind %q", v)
			}
			p.Kind = v
		case "except":
			if _, known := abi.LookupKind(v); !known {
				err = fmt.Errorf("unknown kind %q", v)
			}
			p.Except = v
		case "restart":
			p.Restart, err = strconv.ParseBool(v)
		case "rounds":
			if p.Rounds, err = atoi(v); err == nil && (p.Rounds < 1 || p.Rounds > MaxStaleRounds) {
				err = fmt.Errorf("rounds=%d: from 1 to %d", p.Rounds, MaxStaleRounds)
			}
		default:
			err = fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return p, fmt.Errorf("perturbation %q: %w", s, err)
		}
	}
	switch {
	case (class == Crash || class == Stale || class == UnobservedStale) && p.Round < 1:
		return p, fmt.Errorf("perturbation %q: a %s needs round=N (from 1)", s, class)
	case (class == Stale || class == UnobservedStale) && (p.Kind == "" || p.Lag < 1):
		return p, fmt.Errorf("perturbation %q: %s needs kind=KIND (or *) and lag=N (from 1)", s, class)
	case p.Rounds != 0 && class != Stale && class != UnobservedStale:
		return p, fmt.Errorf("perturbation %q: rounds=N goes with a stale view", s)
	case p.Except != "" && p.Kind != AllKinds:
		return p, fmt.Errorf("perturbation %q: except=KIND goes with kind=* (every kind but that one behind)", s)
	case class == Interleave && (p.Phase < 1 || p.After < 1):
		return p, fmt.Errorf("perturbation %q: interleave needs phase=STEP and after=N, both from 1", s)
	}
	return p, nil
}

func atoi(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err == nil && (n < 0 || n > 1<<20) {
		err = fmt.Errorf("%d is out of range", n)
	}
	return n, err
}

// hitPhase is the phase whose rounds p changes: the stale round's for an
// unobserved-stale perturbation, p.Phase for the others.
func (p Perturbation) hitPhase() int {
	if p.Class == UnobservedStale {
		return p.Phase + 1
	}
	return p.Phase
}
