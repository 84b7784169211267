package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// memcg is a memory cgroup of the host's own, v1 or v2, as a container
// runtime makes one for a pod's resources.limits.memory: the kernel
// reclaims, then kills the process, when it would go beyond the limit.
type memcg struct {
	dir string
	v2  bool
}

var memcgs atomic.Int64

// newMemcg makes a memory cgroup of limit bytes below the test process's
// own; an error when the machine gives it none to make (no write access,
// no memory controller).
func newMemcg(limit int64) (*memcg, error) {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("kubeplug-e2e-%d-%d", os.Getpid(), memcgs.Add(1))
	var v1Path, v2Path string
	for _, line := range strings.Split(strings.TrimSpace(string(self)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" {
				v1Path = parts[2]
			}
		}
		if parts[0] == "0" && parts[1] == "" {
			v2Path = parts[2]
		}
	}
	if v1Path != "" {
		m := &memcg{dir: filepath.Join("/sys/fs/cgroup/memory", v1Path, name)}
		if err := m.make("memory.limit_in_bytes", limit); err == nil {
			return m, nil
		}
	}
	if mount := cgroup2Mount(); mount != "" && v2Path != "" {
		parent := filepath.Join(mount, v2Path)
		// The memory controller must be on for the parent's children.
		_ = os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+memory"), 0o644)
		m := &memcg{dir: filepath.Join(parent, name), v2: true}
		if err := m.make("memory.max", limit); err == nil {
			_ = os.WriteFile(filepath.Join(m.dir, "memory.swap.max"), []byte("0"), 0o644)
			return m, nil
		}
	}
	return nil, errors.New("no memory cgroup can be made here (not root, or no memory controller)")
}

func (m *memcg) make(limitFile string, limit int64) error {
	if err := os.Mkdir(m.dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(m.dir, limitFile), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		_ = os.Remove(m.dir)
		return err
	}
	return nil
}

// cgroup2Mount is where the cgroup2 hierarchy is mounted, "" when it is not.
func cgroup2Mount() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		pre, post, ok := strings.Cut(s.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		if fields := strings.Fields(pre); len(fields) > 4 {
			return fields[4]
		}
	}
	return ""
}

// procs is the file a process writes its pid to, to join the cgroup.
func (m *memcg) procs() string { return filepath.Join(m.dir, "cgroup.procs") }

// oomKills counts the processes the kernel killed for the limit.
func (m *memcg) oomKills() int {
	file := "memory.oom_control"
	if m.v2 {
		file = "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(m.dir, file))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// peak is the most memory the cgroup has been charged, in bytes.
func (m *memcg) peak() uint64 {
	file := "memory.max_usage_in_bytes"
	if m.v2 {
		file = "memory.peak"
	}
	b, err := os.ReadFile(filepath.Join(m.dir, file))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// remove removes the cgroup once its processes have gone.
func (m *memcg) remove() {
	for range 50 {
		if err := os.Remove(m.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// inMemcg wraps the command line argv so that it runs in m: a shell writes
// its own pid to m's cgroup.procs and then becomes the command.
func inMemcg(m *memcg, argv []string) []string {
	return append([]string{"sh", "-c", `echo $$ > "$0" && exec "$@"`, m.procs()}, argv...)
}
