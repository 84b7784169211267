package raw

// Collection between calls. A guest is single-threaded and runs only while
// the host is inside one of its exports, so Go's background mark workers
// never get a turn: once a cycle starts, its marking is done by allocation
// assists stretched over many calls, with write barriers on for all of them.
// The SDK instead runs the whole collection (runtime.GC) at the end of a call,
// just before Go's own trigger would have started a cycle inside the next
// one. GOGC is left as it is, so the heap never grows past the goal Go would
// have kept: a call that allocates more than predicted still meets Go's own
// trigger inside it, as before. RATIONALE.md, "Why does the SDK collect
// between calls…?".

// pacer decides, from the heap bytes allocated since the last collection,
// when to collect. Reading the runtime's counters costs about as much as a
// small call, so the pacer skips readings while the allocation rate says the
// budget is far away.
type pacer struct {
	base   uint64 // cumulative heap allocation at the end of the last collection
	cycles uint64 // completed collections then
	budget uint64 // bytes allocated after base before collecting
	calls  uint64 // calls since base
	skip   uint64 // calls to let pass before the next reading
}

// budgetTenths is the share of Go's runway (heap goal minus live heap), in
// tenths, the pacer lets calls use: Go's trigger is never below 70% of it,
// and the counters it reads count objects, not the spans Go's pacer counts.
const budgetTenths = 6

// reset starts a new period after a collection that left live bytes and set
// the heap goal to goal, at cumulative allocation allocs.
func (p *pacer) reset(allocs, cycles, live, goal uint64) {
	p.base, p.cycles, p.calls, p.skip = allocs, cycles, 0, 0
	p.budget = 0
	if goal > live {
		p.budget = (goal - live) / 10 * budgetTenths
	}
}

// due counts a call and reports whether the counters are to be read now.
func (p *pacer) due() bool {
	p.calls++
	if p.skip > 0 {
		p.skip--
		return false
	}
	return true
}

// smallCall is the share of the budget below which a call counts as small:
// calls that allocate less than a sixteenth of it are left to Go's own
// pacing, as before. Measured on reclaim (about 10 KB a call), a collection
// forced between calls costs more than the incremental one it replaces, while
// on the 100-replica workloads (about 200 KB a call) it saves a fifth.
const smallCall = 16

// decide takes a reading (cumulative allocation and completed cycles) and
// reports whether to collect now: when calls are not small and the next two,
// at the mean rate since the last collection, would cross the budget.
// Otherwise it sets how many calls to skip before the next reading: a
// quarter of the calls the rest of the budget (or, past it, a quarter of the
// budget) lasts at that rate. A
// collection Go ran by itself (small calls, or a call larger than predicted)
// starts a new period at the reading.
func (p *pacer) decide(allocs, cycles uint64) (collect bool, restart bool) {
	if cycles != p.cycles {
		return false, true
	}
	used := allocs - p.base
	perCall := used / max(p.calls, 1)
	near := used+2*perCall >= p.budget
	if near && perCall >= p.budget/smallCall {
		return true, false
	}
	if perCall > 0 {
		left := p.budget / 4 // small calls past the budget: Go collects soon
		if !near {
			left = p.budget - used - 2*perCall
		}
		p.skip = left / perCall / 4
	}
	return false, false
}
