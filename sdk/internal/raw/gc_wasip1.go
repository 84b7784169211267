//go:build wasip1 && !tinygo

package raw

import (
	"runtime"
	"runtime/metrics"
)

// gc paces the collections between calls (gcpace.go).
var gc = func() *pacer {
	p := &pacer{}
	p.reset(readPeriod())
	return p
}()

// The counters the pacer reads: one metrics.Read per reading (a few µs in a
// guest, against about 20 µs for runtime.ReadMemStats, which stops the world).
var (
	reading = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	period  = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/goal:bytes"}}
)

func readPeriod() (allocs, cycles, live, goal uint64) {
	metrics.Read(period)
	return period[0].Value.Uint64(), period[1].Value.Uint64(), period[2].Value.Uint64(), period[3].Value.Uint64()
}

// afterCall runs at the end of every hook call, its response already encoded
// into memory the collector keeps.
func afterCall() {
	if !gc.due() {
		return
	}
	metrics.Read(reading)
	collect, restart := gc.decide(reading[0].Value.Uint64(), reading[1].Value.Uint64())
	if collect {
		runtime.GC()
	}
	if collect || restart {
		gc.reset(readPeriod())
	}
}
