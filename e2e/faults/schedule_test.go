package faults

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// kind is a workload operation or a fault.
type kind string

// Workload operations.
const (
	opScaleUp       kind = "scale-up"
	opScaleDown     kind = "scale-down"
	opDeleteSet     kind = "delete-set"
	opCreateSet     kind = "create-set"
	opDeleteClaim   kind = "delete-claim"
	opDeletePV      kind = "delete-pv"
	opGrowTemplate  kind = "grow-claim-template"
	opRollTemplate  kind = "change-pod-template"
	opRacerStart    kind = "racer-start"
	opRacerStop     kind = "racer-stop"
	opHealPartition kind = "heal-partition"
	opHealAPI       kind = "heal-apiserver"
	opHealCSI       kind = "heal-csi"
)

// Faults, as the figures count them.
const (
	faultKill      kind = "host SIGKILL"
	faultLeader    kind = "leader SIGKILL"
	faultPartition kind = "leader partitioned"
	faultAPI       kind = "apiserver outage"
	faultRestart   kind = "apiserver restart"
	faultWatch     kind = "watches broken"
	faultCSIFail   kind = "csi failing"
	faultCSIHang   kind = "csi timing out"
	faultCSISlow   kind = "csi slow"
	faultRacer     kind = "second writer"
)

// faultKinds in the order the figures print them.
var faultKinds = []kind{faultKill, faultLeader, faultPartition, faultAPI, faultRestart, faultWatch, faultCSIFail, faultCSIHang, faultCSISlow, faultRacer}

// event is one entry of a schedule: what, when after the load starts, and
// the random numbers that pick its target and size. Targets are picked
// when the event runs, among the objects then present, sorted by name:
// pick mod their count. The same seed gives the same events; the same
// cluster state then gives the same targets.
type event struct {
	at   time.Duration
	what kind
	pick int
	arg  int // milliseconds of a fault's length, or a size
}

func (e event) String() string {
	return fmt.Sprintf("%6.1fs %s pick=%d arg=%d", e.at.Seconds(), e.what, e.pick, e.arg)
}

// setSpec is a StatefulSet a schedule starts with or creates.
type setSpec struct {
	name                    string
	replicas                int
	whenDeleted, whenScaled string // Retain or Delete
}

// schedule is everything a run does, derived from its seed alone.
type schedule struct {
	seed     uint64
	twoHosts bool // two hosts with leader election, else one
	sets     []setSpec
	// created are the sets create-set events make, in order.
	created []setSpec
	events  []event
}

// load is how long a run's workload and faults last.
const load = 15 * time.Second

func policyOf(r *rand.Rand) string {
	if r.IntN(2) == 0 {
		return "Retain"
	}
	return "Delete"
}

// newSchedule derives a run's schedule from seed: the sets, whether two
// hosts elect a leader, and about twenty workload operations and faults
// spread over the load period, each fault healed within it, and zero to
// two restarts of kube-apiserver.
func newSchedule(seed uint64) schedule {
	r := rand.New(rand.NewPCG(seed, 0x6b756265706c7567)) // "kubeplug"
	s := schedule{seed: seed, twoHosts: r.IntN(2) == 0}
	n := 0
	newSet := func() setSpec {
		n++
		return setSpec{name: fmt.Sprintf("s%d", n-1), replicas: 1 + r.IntN(3), whenDeleted: policyOf(r), whenScaled: policyOf(r)}
	}
	for range 2 {
		s.sets = append(s.sets, newSet())
	}
	at := func() time.Duration { return time.Duration(r.Int64N(int64(load - 3*time.Second))) }
	add := func(e event) { s.events = append(s.events, e) }

	ops := []kind{opScaleUp, opScaleUp, opScaleDown, opScaleDown, opDeleteSet, opCreateSet, opDeleteClaim, opDeletePV, opGrowTemplate, opRollTemplate}
	for range 8 + r.IntN(5) {
		op := ops[r.IntN(len(ops))]
		if op == opCreateSet {
			s.created = append(s.created, newSet())
		}
		add(event{at: at(), what: op, pick: r.IntN(1 << 20), arg: 1 + r.IntN(2)})
	}
	faults := []kind{faultKill, faultAPI, faultWatch, faultCSIFail, faultCSIHang, faultCSISlow, faultRacer}
	if s.twoHosts {
		faults = append(faults, faultLeader, faultPartition, faultPartition)
	}
	for range 4 + r.IntN(4) {
		f := faults[r.IntN(len(faults))]
		start := at()
		e := event{at: start, what: f, pick: r.IntN(1 << 20)}
		switch f {
		case faultKill, faultLeader:
			e.arg = r.IntN(2000) // down for this long before the restart
		case faultPartition:
			e.arg = 5000 + r.IntN(4000) // beyond the 4s lease
			add(event{at: start + time.Duration(e.arg)*time.Millisecond, what: opHealPartition, pick: e.pick})
		case faultAPI:
			e.arg = 1000 + r.IntN(4000)
			add(event{at: start + time.Duration(e.arg)*time.Millisecond, what: opHealAPI})
		case faultWatch:
			e.arg = r.IntN(3000) // connections at least this old
		case faultCSIFail, faultCSIHang, faultCSISlow:
			e.arg = 2000 + r.IntN(5000)
			add(event{at: start + time.Duration(e.arg)*time.Millisecond, what: opHealCSI})
		case faultRacer:
			e.arg = 2000 + r.IntN(6000)
			add(event{at: start + time.Duration(e.arg)*time.Millisecond, what: opRacerStop})
		}
		add(e)
	}
	// Restarts are drawn last, so that every other event of a seed is the
	// one it was before restarts existed: the seeds the campaign passed
	// without them replay with them added. A restart ends when the new
	// server answers.
	for range r.IntN(3) {
		add(event{at: at(), what: faultRestart})
	}
	slices.SortStableFunc(s.events, func(a, b event) int { return int(a.at - b.at) })
	return s
}

func (s schedule) String() string {
	var b strings.Builder
	hosts := "one host"
	if s.twoHosts {
		hosts = "two hosts, leader election"
	}
	fmt.Fprintf(&b, "seed %d: %s; sets", s.seed, hosts)
	for _, set := range append(slices.Clone(s.sets), s.created...) {
		fmt.Fprintf(&b, " %s(%d, whenDeleted=%s, whenScaled=%s)", set.name, set.replicas, set.whenDeleted, set.whenScaled)
	}
	for _, e := range s.events {
		fmt.Fprintf(&b, "\n  %s", e)
	}
	return b.String()
}

// TestScheduleReplays: a seed gives the same schedule every time, and
// different seeds different ones; every timed fault is healed within the
// load period's bound; some seeds restart the API server.
func TestScheduleReplays(t *testing.T) {
	restarts := 0
	for seed := range uint64(20) {
		a, b := newSchedule(seed), newSchedule(seed)
		if a.String() != b.String() {
			t.Fatalf("seed %d gave two schedules:\n%s\n%s", seed, a, b)
		}
		if c := newSchedule(seed + 1000); c.String() == a.String() {
			t.Errorf("seeds %d and %d gave the same schedule", seed, seed+1000)
		}
		for _, e := range a.events {
			if e.at > load+10*time.Second {
				t.Errorf("seed %d: %s after the load period", seed, e)
			}
			if e.what == faultRestart {
				restarts++
			}
		}
	}
	if restarts == 0 {
		t.Error("no seed of 20 restarts the API server")
	}
}
