package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
)

func TestVersionJSON(t *testing.T) {
	out, _, code := kubeplug(t, "", "version", "-o", "json")
	require.Equal(t, exitOK, code)
	var v map[string]string
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	require.Equal(t, abi.Current.String(), v["abi"])
	require.Equal(t, runtime.GOOS+"/"+runtime.GOARCH, v["platform"])
	require.Regexp(t, `^go1\.`, v["go"])
	require.NotEmpty(t, v["version"])
	require.NotEmpty(t, v["commit"])

	_, errOut, code := kubeplug(t, "", "version", "-o", "yaml")
	require.Equal(t, exitInput, code)
	require.Contains(t, errOut, `-o "yaml": want text or json`)
}

func TestVersionOf(t *testing.T) {
	mod := func(v string) *debug.BuildInfo { return &debug.BuildInfo{Main: debug.Module{Version: v}} }
	for _, tt := range []struct {
		name, stamped string
		bi            *debug.BuildInfo
		want          string
	}{
		{"stamped by make", "v0.1.0-3-gabc1234-dirty", mod("v0.0.0-20251128004400-6de30dc5a1b2"), "v0.1.0-3-gabc1234-dirty"},
		{"go install at a tag", "", mod("v1.2.3"), "v1.2.3"},
		{"VCS-stamped pseudo-version", "", mod("v0.0.0-20251128004400-6de30dc5a1b2"), "devel"},
		{"VCS-stamped, uncommitted changes", "", mod("v0.0.0-20251128004400-6de30dc5a1b2+dirty"), "devel"},
		{"pseudo-version after a tag", "", mod("v1.2.4-0.20251128004400-6de30dc5a1b2"), "devel"},
		{"go build without VCS", "", mod("(devel)"), "devel"},
		{"no build info", "", nil, "devel"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, versionOf(tt.stamped, tt.bi))
		})
	}
}

// TestMakeBuildStampsGitDescribe builds kubeplug as `make build` does and
// requires the version git describe gives the checkout, which `make -s
// version` prints and make image tags the image with, and the commit.
func TestMakeBuildStampsGitDescribe(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	require.NoError(t, err)
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", root}, args...)...).Output()
		require.NoError(t, err, "git %v", args)
		return strings.TrimSpace(string(out))
	}
	build := t.TempDir()
	out, err := exec.Command("make", "-C", root, "--no-print-directory", "build", "BUILD="+build).CombinedOutput()
	require.NoError(t, err, "make build:\n%s", out)
	// After the build: it must not have changed what describe says.
	want := git("describe", "--tags", "--match", "v[0-9]*", "--always", "--dirty")
	out, err = exec.Command("make", "-C", root, "-s", "--no-print-directory", "version").Output()
	require.NoError(t, err)
	require.Equal(t, want, strings.TrimSpace(string(out)), "make -s version")

	out, err = exec.Command(filepath.Join(build, "kubeplug"), "version", "-o", "json").Output()
	require.NoError(t, err)
	var v versionInfo
	require.NoError(t, json.Unmarshal(out, &v), "%s", out)
	require.Equal(t, want, v.Version)
	require.Equal(t, git("rev-parse", "HEAD"), v.Commit)
}
