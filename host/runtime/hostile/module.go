package hostile

import "strings"

// Stage says where the host stops a hostile module.
type Stage int

const (
	// StageLoad: the host refuses the module when it loads it.
	StageLoad Stage = iota + 1
	// StageCall: the module loads, and the call into it fails (deadline,
	// memory, trap, bad output) without harming the host.
	StageCall
	// StageAction: the call returns, and the host refuses or bounds what the
	// module asked for.
	StageAction
)

func (s Stage) String() string {
	switch s {
	case StageLoad:
		return "load"
	case StageCall:
		return "call"
	case StageAction:
		return "action"
	}
	return "unknown"
}

// Module is one module of the corpus.
type Module struct {
	// Class names the attack: "countdown-write", "bulk-fill", "table-bomb", ...
	Class string
	// Wasm is the module's binary.
	Wasm []byte
	// Stage is where the host stops it.
	Stage Stage
	// Want is a substring of the error (or refusal) the host reports: it
	// names what the module did.
	Want string
	// OrWant, when set, is the other report the host may make instead:
	// two budgets race (the call's deadline and its host-work budget), and
	// which of them ends the call first depends on the machine's speed.
	// Either stops the module; neither depends on the module's cooperation.
	OrWant string
}

// Reported says whether text (an error, or the host's output) carries the
// report the host makes about m: Want, or OrWant.
func (m Module) Reported(text string) bool {
	return strings.Contains(text, m.Want) || (m.OrWant != "" && strings.Contains(text, m.OrWant))
}
