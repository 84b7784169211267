// Package inputtest builds hostile inputs for the tests of the packages that
// read files and YAML through package input.
package inputtest

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// MergeChain returns the nodes of a merge-key bomb in flow style, one per
// line to write: the first a mapping anchored &b0 with the entries first,
// each next one merging the one before it twice (`&bN {<<: [*bN-1,
// *bN-1]}`), so that the last one names 2^levels mappings in a few KB.
func MergeChain(levels int, first string) []string {
	out := []string{"&b0 {" + first + "}"}
	for i := 1; i <= levels; i++ {
		out = append(out, fmt.Sprintf("&b%d {<<: [*b%d, *b%d]}", i, i-1, i-1))
	}
	return out
}

// FIFO creates a named pipe in a new directory, with no writer, and returns
// its path: reading it blocks for ever.
func FIFO(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	return path
}

// ZeroLink creates a symlink to /dev/zero, which reads without end, in a
// new directory and returns its path.
func ZeroLink(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.Symlink("/dev/zero", path); err != nil {
		t.Fatalf("symlink: %v", err)
	}
	return path
}

// Sparse creates a file of size bytes that takes no disk space (a hole),
// and returns its path.
func Sparse(t testing.TB, name string, size int64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	return path
}

// Within runs f and fails the test if it has not returned after a minute:
// what it guards would otherwise hang until the whole run's timeout.
func Within(t testing.TB, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s did not return within a minute: it hangs", what)
	}
}
