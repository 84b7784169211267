package config_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/config"
	"github.com/kubeplug/kubeplug/host/internal/input"
	"github.com/kubeplug/kubeplug/host/internal/input/inputtest"
)

// mergeBomb returns lines, each with prefix, of a 40-level merge-key chain
// whose first mapping holds first.
func mergeBomb(prefix, first string) string {
	var b strings.Builder
	for _, n := range inputtest.MergeChain(40, first) {
		b.WriteString(prefix + n + "\n")
	}
	return b.String()
}

// TestHostileConfigs: host configurations that hung or exhausted the host
// (a few KB of merge keys naming 2^40 mappings, in three places; more
// entries or bytes than any configuration needs) are refused at once, and
// the error quotes at most a short excerpt of what it refuses.
func TestHostileConfigs(t *testing.T) {
	topChain := strings.ReplaceAll(mergeBomb("", "k: v"), "&b", "\n&b")
	var top strings.Builder
	for i, line := range strings.Split(strings.TrimSpace(topChain), "\n") {
		if line != "" {
			fmt.Fprintf(&top, "x%d: %s\n", i, line)
		}
	}
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"merge keys at the top level", top.String() + "<<: [*b40, *b40]\nmodules:\n- path: guests/m.wasm\n",
			[]string{"expands to more than 100000 values through aliases and merge keys"}},
		{"merge keys in config", "modules:\n- path: guests/m.wasm\n  config:\n    chain:\n" + mergeBomb("    - ", "k: v") + "    top: {<<: [*b40, *b40]}\n",
			[]string{"modules[0].config.chain", "expands to more than 100000 values"}},
		{"merge keys in allow", "modules:\n- path: guests/m.wasm\n  allow:\n" + mergeBomb("  - ", "action: event, resources: [pods]"),
			[]string{"modules[0].allow", "expands to more than 100000 values"}},
		{"ten thousand and one namespaces", "modules:\n- path: guests/m.wasm\n  namespaces: [" + names(10_001) + "]\n",
			[]string{"host.yaml:3: modules[0].namespaces: has more than 10000 entries"}},
		{"a 100 KB value", "modules:\n- path: guests/m.wasm\n  config:\n    big: " + strings.Repeat("x", 100<<10) + "\n",
			[]string{"host.yaml:4: modules[0].config.big: a value of 100KiB, more than the 64KiB one may have: \"xxx", "... (102400 bytes)"}},
		{"a 100 KB key", "modules:\n- path: guests/m.wasm\n  ? " + strings.Repeat("k", 100<<10) + "\n  : 1\n",
			[]string{"host.yaml:3: modules[0]: a value of 100KiB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			var err error
			inputtest.Within(t, "loading "+tt.name, func() { _, _, err = load(t, tt.yaml) })
			require.ErrorIs(t, err, config.ErrInvalid)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
			require.Less(t, len(err.Error()), 1024, "the error repeats the input: %s", input.Excerpt(err.Error(), 2048))
			t.Logf("%d bytes refused in %v: %s", len(tt.yaml), time.Since(start), err)
		})
	}
}

// names returns n distinct namespace names, comma-separated.
func names(n int) string {
	var b bytes.Buffer
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "n%x", i)
	}
	return b.String()
}

// TestHostileConfigParse: Parse, which is given bytes, bounds them as Load
// does: a 200 MB scalar and a million namespaces are refused without being
// parsed or echoed.
func TestHostileConfigParse(t *testing.T) {
	for _, tt := range []struct {
		name string
		data []byte
		want string
	}{
		{"a 200 MB scalar", append([]byte("modules:\n- path: guests/m.wasm\n  name: "), bytes.Repeat([]byte("x"), 200<<20)...),
			"host.yaml:1: has 200.0MiB, more than the 256KiB a host configuration may have"},
		{"a million namespaces", []byte("modules:\n- path: guests/m.wasm\n  namespaces: [" + names(1_000_000) + "]\n"),
			"host.yaml:1: has 6.6MiB, more than the 256KiB a host configuration may have"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			var err error
			inputtest.Within(t, "Parse", func() { _, err = config.Parse(tt.data, "host.yaml") })
			require.ErrorIs(t, err, config.ErrInvalid)
			require.ErrorContains(t, err, tt.want)
			require.Less(t, len(err.Error()), 1024)
			t.Logf("%d bytes refused in %v", len(tt.data), time.Since(start))
		})
	}
}

// TestHostileDockerConfig: a pull secret with as many keys as the bound
// allows is read in time linear in them (yaml's Decode compared every pair),
// and a key written twice is reported by line, without quoting the file.
func TestHostileDockerConfig(t *testing.T) {
	var b strings.Builder
	b.WriteString("kind: Secret\n")
	key := strings.Repeat("k", 88)
	for i := range 9_998 {
		fmt.Fprintf(&b, "%s%08d: x\n", key, i)
	}
	fmt.Fprintf(&b, "%s%08d: x\n", key, 0)
	path := filepath.Join(t.TempDir(), "secret.yaml")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	var err error
	inputtest.Within(t, "ReadDockerConfig", func() { _, err = config.ReadDockerConfig(path) })
	require.EqualError(t, err, path+" is neither a docker config file nor an image pull secret: line 10000: a key is written twice (first at line 2)")
}

// TestHostileConfigFiles: a host.yaml or module path that is a FIFO, a
// symlink to /dev/zero or a file over its bound is refused before it is
// read, with what it is.
func TestHostileConfigFiles(t *testing.T) {
	for _, tt := range []struct {
		name, path, want string
	}{
		{"host.yaml is a FIFO", inputtest.FIFO(t, "host.yaml"), "it is a named pipe (FIFO); name the host configuration itself"},
		{"host.yaml is /dev/zero", inputtest.ZeroLink(t, "host.yaml"), "it is a character device"},
		{"host.yaml of 300 KB", inputtest.Sparse(t, "host.yaml", 300<<10), "it has 300KiB, more than 256KiB, the most a host configuration may have"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			inputtest.Within(t, "Load", func() { _, err = config.Load(tt.path) })
			require.ErrorContains(t, err, "read host configuration: ")
			require.ErrorContains(t, err, tt.want)
		})
	}

	for _, tt := range []struct {
		name, path, want string
	}{
		{"module is a FIFO", inputtest.FIFO(t, "m.wasm"), "is a named pipe (FIFO), which the host does not read; name the module's .wasm file"},
		{"module is /dev/zero", inputtest.ZeroLink(t, "m.wasm"), "is a character device (as /dev/zero), which the host does not read"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			inputtest.Within(t, "Load", func() { _, _, err = load(t, "modules:\n- path: "+tt.path+"\n") })
			require.ErrorContains(t, err, "host.yaml:2: modules[0].path: "+tt.path+" "+tt.want)
		})
	}

	// A module file swapped after the configuration was read is checked
	// again when it is read.
	dir := t.TempDir()
	mod := filepath.Join(dir, "m.wasm")
	require.NoError(t, os.WriteFile(mod, []byte("\x00asm"), 0o644))
	f, err := config.Parse([]byte("modules:\n- path: m.wasm\n  mode: shadow\n"), filepath.Join(dir, "host.yaml"))
	require.NoError(t, err)
	for _, swap := range []func(){
		func() { require.NoError(t, os.Remove(mod)); require.NoError(t, os.Symlink("/dev/zero", mod)) },
		func() {
			require.NoError(t, os.Remove(mod))
			require.NoError(t, os.Symlink(inputtest.FIFO(t, "fifo"), mod))
		},
		func() {
			require.NoError(t, os.Remove(mod))
			require.NoError(t, os.Symlink(inputtest.Sparse(t, "big", 100<<20), mod))
		},
	} {
		swap()
		inputtest.Within(t, "Module.Read", func() { _, err = f.Modules[0].Read() })
		require.ErrorContains(t, err, `read module "m": read `+mod+": ")
		require.ErrorIs(t, err, map[bool]error{true: input.ErrTooLarge, false: input.ErrNotRegular}[strings.Contains(err.Error(), "100MiB")])
	}
}
