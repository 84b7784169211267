package faults

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFaultCampaign runs the campaign: FAULTS_N seeded runs, their seeds
// FAULTS_BASE, FAULTS_BASE+1, ... (default: from the clock, printed), or the
// one run FAULTS_SEED names, to replay it. Without FAULTS_N it is the short
// form make test runs: seeds 2400 and 2401. It prints the figures as
// a table.
func TestFaultCampaign(t *testing.T) {
	seeds, err := campaignSeeds()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seeds %v", seeds)
	w := startWorld(t)
	var results []result
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			results = append(results, runSeed(t, w, seed))
		})
	}
	table := figures(results)
	fmt.Print(table)
	t.Logf("\n%s", table)
}

func campaignSeeds() ([]uint64, error) {
	if s := os.Getenv("FAULTS_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("FAULTS_SEED=%q: want a run's seed, a decimal number as a failed run prints it", s)
		}
		return []uint64{seed}, nil
	}
	// The short form plays fixed seeds, so that make test plays the same
	// schedules every time; the long form new ones unless told.
	n, base := 2, uint64(2400)
	if s := os.Getenv("FAULTS_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > 10000 {
			return nil, fmt.Errorf("FAULTS_N=%q: want a number of runs from 1 to 10000", s)
		}
		n = v
		base = uint64(time.Now().UnixNano()) % 1_000_000_000
	}
	if s := os.Getenv("FAULTS_BASE"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("FAULTS_BASE=%q: want the first seed, a decimal number", s)
		}
		base = v
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = base + uint64(i)
	}
	return seeds, nil
}

// figures is the campaign's table: runs, faults injected per kind,
// invariant violations, time to converge after the last fault.
func figures(results []result) string {
	var b strings.Builder
	faults := map[kind]int{}
	violations, writes := 0, 0
	var judged, calls, made, deleted int
	var seen, labelled, owned int
	admits := map[string]float64{}
	var conv, restarts []time.Duration
	notConverged := 0
	for _, r := range results {
		for k, n := range r.faults {
			faults[k] += n
		}
		violations += len(r.violations)
		writes += r.writes
		restarts = append(restarts, r.restarts...)
		judged, calls, made, deleted = judged+r.claimsDeleted, calls+r.deleteCalls, made+r.volumesMade, deleted+r.volumesDeleted
		seen, labelled, owned = seen+r.claimsSeen, labelled+r.claimsLabelled, owned+r.claimsOwned
		for k, n := range r.admits {
			admits[k] += n
		}
		if r.converged >= 0 {
			conv = append(conv, r.converged)
		} else {
			notConverged++
		}
	}
	total := 0
	for _, n := range faults {
		total += n
	}
	fmt.Fprintf(&b, "| fault campaign | |\n|---|---|\n")
	fmt.Fprintf(&b, "| runs | %d |\n", len(results))
	for _, k := range faultKinds {
		fmt.Fprintf(&b, "| faults: %s | %d |\n", k, faults[k])
	}
	fmt.Fprintf(&b, "| faults: all | %d |\n", total)
	fmt.Fprintf(&b, "| claim deletions judged | %d |\n", judged)
	fmt.Fprintf(&b, "| backing volumes made / deleted / DeleteVolume calls reaching the driver | %d / %d / %d |\n", made, deleted, calls)
	fmt.Fprintf(&b, "| admission reviews the hosts answered, by result | %s |\n", admitSummary(admits))
	fmt.Fprintf(&b, "| claims created / with the template's label at creation / owned by their set at creation | %d / %d / %d |\n", seen, labelled, owned)
	fmt.Fprintf(&b, "| invariant violations | %d |\n", violations)
	fmt.Fprintf(&b, "| runs not converged within %v | %d |\n", converge, notConverged)
	fmt.Fprintf(&b, "| writes in the %v quiet window, all runs | %d |\n", quiet, writes)
	if len(conv) > 0 {
		slices.Sort(conv)
		fmt.Fprintf(&b, "| converged after the last fault, p50 / max | %.1fs / %.1fs |\n",
			conv[len(conv)/2].Seconds(), conv[len(conv)-1].Seconds())
	}
	if len(restarts) > 0 {
		slices.Sort(restarts)
		fmt.Fprintf(&b, "| apiserver restart until the new server answered, p50 / max | %.1fs / %.1fs |\n",
			restarts[len(restarts)/2].Seconds(), restarts[len(restarts)-1].Seconds())
	}
	return b.String()
}
