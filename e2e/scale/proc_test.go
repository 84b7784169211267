package scale

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// peakRSS is the peak resident set size of process pid in bytes: VmHWM in
// /proc/PID/status.
func peakRSS(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), "VmHWM:")
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
