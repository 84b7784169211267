package casetest_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/casetest"
	"github.com/kubeplug/kubeplug/host/internal/input/inputtest"
)

// TestHostileCaseFiles: a case file is operator-supplied YAML like
// host.yaml, held to the same discipline: merge-key bombs, files that are
// not regular or too large, huge values and a mapping of as many entries as
// the bound allows are dealt with at once, and the error quotes at most a
// short excerpt.
func TestHostileCaseFiles(t *testing.T) {
	var bomb strings.Builder
	bomb.WriteString("name: bomb\nconfig:\n  chain:\n")
	for _, n := range inputtest.MergeChain(40, "k: v") {
		bomb.WriteString("  - " + n + "\n")
	}
	bomb.WriteString("  top: {<<: [*b40, *b40]}\n")

	for _, tt := range []struct {
		name string
		data []byte
		want string
	}{
		{"merge keys", []byte(bomb.String()), "c.yaml:4: config.chain expands to more than 1000000 values through aliases and merge keys"},
		{"alias in itself", []byte("name: loop\nconfig: &l [*l]\n"), "c.yaml:2: config[0] is nested more than 128 levels deep"},
		{"a 2 MB value", []byte("name: big\nconfig: {x: " + strings.Repeat("y", 2<<20) + "}\n"), `c.yaml:2: config.x: a value of 2MiB, more than the 1MiB one may have: "yyy`},
		{"a mapping at the bound, a key twice", wideMapping("config", 99_999, true), `c.yaml:100001: key "` + strings.Repeat("k", 64) + `00000000" is written twice in one mapping (first at line 3)`},
		{"an object's labels at the bound, a key twice", wideMapping("labels", 99_999, true), `c.yaml:100006: key "` + strings.Repeat("k", 64) + `00000000" is written twice in one mapping (first at line 8)`},
		{"200 MB", append([]byte("name: "), bytes.Repeat([]byte("x"), 200<<20)...), "c.yaml: has 200.0MiB, more than the 8MiB a case file may have"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			var err error
			inputtest.Within(t, "Parse", func() { _, err = casetest.Parse("c.yaml", tt.data) })
			require.ErrorContains(t, err, tt.want)
			require.Less(t, len(err.Error()), 1024)
			t.Logf("%d bytes refused in %v", len(tt.data), time.Since(start))
		})
	}

	for _, tt := range []struct {
		name, path, want string
	}{
		{"FIFO", inputtest.FIFO(t, "c.yaml"), "it is a named pipe (FIFO); name the case file itself"},
		{"symlink to /dev/zero", inputtest.ZeroLink(t, "c.yaml"), "it is a character device"},
		{"9 MB", inputtest.Sparse(t, "c.yaml", 9<<20), "it has 9MiB, more than 8MiB, the most a case file may have"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			inputtest.Within(t, "LoadPaths", func() { _, err = casetest.LoadPaths([]string{tt.path}) })
			require.ErrorContains(t, err, tt.path+": cannot read: ")
			require.ErrorContains(t, err, tt.want)
		})
	}
}
