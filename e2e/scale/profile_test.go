package scale

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// fetchProfile saves the host's profile at path (a /debug/pprof/ URL path
// with its query) to file.
func fetchProfile(addr, path, file string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", path, resp.StatusCode)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}

// top returns `go tool pprof -top` of profile, first lines lines, with
// extra flags.
func top(profile string, lines int, flags ...string) (string, error) {
	args := append([]string{"tool", "pprof", "-top"}, flags...)
	out, err := exec.Command("go", append(args, profile)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go tool pprof %s: %v\n%s", profile, err, out)
	}
	s := strings.Split(string(out), "\n")
	return strings.Join(s[:min(lines, len(s))], "\n"), nil
}

var showing = regexp.MustCompile(`Showing nodes accounting for [^,]+, ([0-9.]+)% of`)

var external = regexp.MustCompile(`(?m)^\s*\S+\s+([0-9.]+)%.*runtime\._ExternalCode$`)

// guestShare is the share of the CPU profile's samples spent in calls into
// guests: those under runtime.(*Module).Reconcile (encode, the Go side of
// wazero, decode), from pprof's summary of the samples focused on it, plus
// runtime._ExternalCode, the samples the profiler took in machine code that
// is not Go's: the host has no cgo, so that is the guests' code as wazero
// compiled it.
func guestShare(profile string) (float64, error) {
	out, err := top(profile, 8, `-focus=runtime\.\(\*Module\)\.Reconcile`)
	if err != nil {
		return 0, err
	}
	var share float64
	if m := showing.FindStringSubmatch(out); m != nil {
		if share, err = strconv.ParseFloat(m[1], 64); err != nil {
			return 0, err
		}
	}
	all, err := top(profile, 1000)
	if err != nil {
		return 0, err
	}
	if m := external.FindStringSubmatch(all); m != nil {
		x, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return 0, err
		}
		share += x
	}
	return share, nil
}

// profileDir is where BenchmarkScale keeps the host's profiles.
func profileDir(n int) (string, error) {
	dir := os.Getenv("SCALE_PROFILES")
	if dir == "" {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, fmt.Sprintf("scale-%d", n))
	return dir, os.MkdirAll(dir, 0o755)
}
