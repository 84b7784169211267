package raw

import (
	"math"
	"testing"
)

// The pacer collects before a steady stream of calls would cross its
// budget, and never lets one reading's prediction skip past it.
func TestPacerCollectsBeforeTheBudget(t *testing.T) {
	var p pacer
	p.reset(0, 0, 1<<20, 5<<20) // 1 MiB live, 5 MiB goal: a budget of 6/10 of 4 MiB
	budget := uint64(4<<20) / 10 * budgetTenths
	if p.budget != budget {
		t.Fatalf("budget %d, want %d", p.budget, budget)
	}
	const perCall = 200 << 10 // over a sixteenth of the budget: not a small call
	allocs, readings := uint64(0), 0
	for call := 1; ; call++ {
		allocs += perCall
		if allocs > budget {
			t.Fatalf("call %d took the heap %d bytes past the last collection, over the budget of %d", call, allocs, budget)
		}
		if !p.due() {
			continue
		}
		readings++
		collect, restart := p.decide(allocs, 0)
		if restart {
			t.Fatal("restart without a collection by Go")
		}
		if collect {
			if allocs+2*perCall < budget {
				t.Fatalf("collected at call %d with %d of %d bytes used: too early", call, allocs, budget)
			}
			if readings >= call {
				t.Fatalf("%d readings in %d calls: the pacer did not skip any", readings, call)
			}
			return
		}
	}
}

// A collection Go ran inside a call (a call larger than predicted) starts a
// new period instead of a second collection.
func TestPacerRestartsAfterGoCollected(t *testing.T) {
	var p pacer
	p.reset(0, 3, 1<<20, 5<<20)
	p.due()
	if collect, restart := p.decide(8<<20, 4); collect || !restart {
		t.Fatalf("after Go's own cycle: collect %v, restart %v; want a restart only", collect, restart)
	}
}

// With GOGC off the runtime reports a heap goal of about 2^63: a module that
// turned the collector off is not collected behind its back.
func TestPacerLeavesGOGCOff(t *testing.T) {
	var p pacer
	p.reset(0, 0, 4<<20, math.MaxInt64)
	p.due()
	if collect, _ := p.decide(1<<30, 0); collect {
		t.Fatal("collected a guest whose collector is off")
	}
}

// Small calls are left to Go's own pacing, and read rarely.
func TestPacerLeavesSmallCallsToGo(t *testing.T) {
	var p pacer
	p.reset(0, 0, 1<<20, 5<<20)
	const perCall = 10 << 10
	allocs, readings := uint64(0), 0
	for call := 1; call <= 1000; call++ {
		allocs += perCall
		if !p.due() {
			continue
		}
		readings++
		if collect, _ := p.decide(allocs, 0); collect {
			t.Fatalf("collected at call %d after small calls", call)
		}
	}
	if readings > 100 {
		t.Fatalf("%d readings in 1,000 small calls: want them spread out", readings)
	}
}
