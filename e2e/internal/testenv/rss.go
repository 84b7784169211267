package testenv

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// PeakRSS is the peak resident set size of process pid so far, in bytes:
// the high-water mark Linux keeps (VmHWM in /proc/PID/status), so one read
// before the process ends covers its whole life.
func PeakRSS(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		rest, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/status: VmHWM %q: %w", pid, rest, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmHWM", pid)
}

// PeakRSSMiB is PeakRSS in MiB, failing t if it cannot be read: what the
// hostile tests log beside each class's wall time.
func PeakRSSMiB(t testing.TB, pid int) float64 {
	t.Helper()
	n, err := PeakRSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	return float64(n) / (1 << 20)
}
