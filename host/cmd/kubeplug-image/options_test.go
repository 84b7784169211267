package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDefaultsAreMakes: run without -version and -commit (as the install
// test runs it), the image gets the version and commit make image passes,
// make -s version's.
func TestDefaultsAreMakes(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	o := Options{HostDir: filepath.Join(wd, "..", ".."), Epoch: -1}
	require.NoError(t, o.resolve(context.Background()))
	root := filepath.Dir(o.HostDir)
	out, err := exec.Command("make", "-C", root, "-s", "--no-print-directory", "version").Output()
	require.NoError(t, err)
	require.Equal(t, strings.TrimSpace(string(out)), o.Version)
	commit, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	require.NoError(t, err)
	require.Equal(t, strings.TrimSpace(string(commit)), o.Commit)
}

func TestParsePlatforms(t *testing.T) {
	as, err := parsePlatforms("linux/amd64, linux/arm64")
	require.NoError(t, err)
	require.Equal(t, []string{"amd64", "arm64"}, as)
	for _, bad := range []string{"", "amd64", "windows/amd64", "linux/"} {
		_, err := parsePlatforms(bad)
		require.ErrorContains(t, err, "is not linux/ARCH", bad)
	}
}

// TestHelp: -h prints the flags, where it printed none and said to run it
// with -h.
func TestHelp(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(context.Background(), []string{"-h"}, &out))
	require.Contains(t, out.String(), "-platforms")
	require.Contains(t, out.String(), "-sign-key")
}
