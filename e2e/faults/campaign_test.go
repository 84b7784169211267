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
// runs FAULTS_SEED names (2417, or 2417,2417,2417), to replay them. Without FAULTS_N it is the short
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
		// One seed, or several separated by commas; a seed named again
		// replays its run again (a race may need a few tries).
		var seeds []uint64
		for _, f := range strings.Split(s, ",") {
			seed, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("FAULTS_SEED=%q: want a run's seed, a decimal number as a failed run prints it, or several separated by commas", s)
			}
			seeds = append(seeds, seed)
		}
		if len(seeds) > 10000 {
			return nil, fmt.Errorf("FAULTS_SEED names %d runs: at most 10000", len(seeds))
		}
		return seeds, nil
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
	violations, writes, othersWrote := 0, 0, 0
	var judged, calls, made, deleted int
	var seen, labelled, owned, stranded, orphans, unserved int
	admits := map[string]float64{}
	var conv, restarts []time.Duration
	notConverged := 0
	for _, r := range results {
		for k, n := range r.faults {
			faults[k] += n
		}
		violations += len(r.violations)
		writes += r.writes
		othersWrote += r.othersWrote
		restarts = append(restarts, r.restarts...)
		judged, calls, made, deleted = judged+r.claimsDeleted, calls+r.deleteCalls, made+r.volumesMade, deleted+r.volumesDeleted
		seen, labelled, owned = seen+r.claimsSeen, labelled+r.claimsLabelled, owned+r.claimsOwned
		stranded, orphans, unserved = stranded+r.stranded, orphans+r.orphans, unserved+r.unserved
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
	fmt.Fprintf(&b, "| pods kube-controller-manager created on a claim the workload had deleted, deleted by the workload (kubernetes/kubernetes#74374) | %d |\n", stranded)
	fmt.Fprintf(&b, "| claims kube-controller-manager created after their set (whenDeleted=Delete) was deleted, deleted by the workload (KEP-1847) | %d |\n", orphans)
	fmt.Fprintf(&b, "| claims created while no host served admission, of a set (whenDeleted=Delete) deleted before one did, deleted by the workload (KEP-1847) | %d |\n", unserved)
	fmt.Fprintf(&b, "| quiet windows tried again, every write in them by others than kubeplug (kube-controller-manager catching up) | %d |\n", othersWrote)
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

// TestCampaignSeeds: the seeds each setting of the environment plays, and
// a clear error for a bad one.
func TestCampaignSeeds(t *testing.T) {
	for _, c := range []struct {
		seed, n, base string
		want          []uint64
		err           string
	}{
		{want: []uint64{2400, 2401}},
		{seed: "2417", want: []uint64{2417}},
		{seed: "2400, 2400,2401", want: []uint64{2400, 2400, 2401}},
		{n: "3", base: "7", want: []uint64{7, 8, 9}},
		{seed: "24x", err: `FAULTS_SEED="24x"`},
		{seed: "2400,", err: `FAULTS_SEED="2400,"`},
		{n: "0", err: `FAULTS_N="0"`},
	} {
		t.Setenv("FAULTS_SEED", c.seed)
		t.Setenv("FAULTS_N", c.n)
		t.Setenv("FAULTS_BASE", c.base)
		got, err := campaignSeeds()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("seed %q n %q: error %v, want one naming %s", c.seed, c.n, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("seed %q n %q base %q: %v, %v; want %v", c.seed, c.n, c.base, got, err, c.want)
		}
	}
}
