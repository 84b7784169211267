package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
	"golang.org/x/mod/module"

	"github.com/kubeplug/kubeplug/abi"
)

// version and commit are set at link time, as `make build` and `make image`
// do with the same git describe:
//
//	-ldflags "-X main.version=v1.2.3 -X main.commit=0123abc..."
//
// Unset, version is the module version Go recorded for `go install
// ...@host/v1.2.3`, else "devel", and commit the VCS revision Go recorded,
// else "unknown".
var (
	version = ""
	commit  = ""
)

// versionInfo is what `kubeplug version` prints; its JSON form is
// `kubeplug version -o json`.
type versionInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	ABI      string `json:"abi"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

func currentVersion() versionInfo {
	bi, _ := debug.ReadBuildInfo()
	v := versionInfo{
		Version: versionOf(version, bi), Commit: commitOf(commit, bi),
		ABI: abi.Current.String(), Go: "unknown", Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi != nil {
		v.Go = bi.GoVersion
	}
	return v
}

// versionOf is the stamped version, else the module version of a `go
// install` at a tag. A pseudo-version (v0.0.0-20250101000000-abcdef,
// what Go's VCS stamping gives a checkout's main module) names no release
// and is not git describe's answer either, so it is reported as devel with
// the commit beside it.
func versionOf(stamped string, bi *debug.BuildInfo) string {
	if stamped != "" {
		return stamped
	}
	if bi != nil {
		if v := bi.Main.Version; v != "" && v != "(devel)" && !module.IsPseudoVersion(v) {
			return v
		}
	}
	return "devel"
}

func commitOf(stamped string, bi *debug.BuildInfo) string {
	if stamped != "" {
		return stamped
	}
	if bi != nil {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				return s.Value
			}
		}
	}
	return "unknown"
}

func newVersionCommand(s streams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the versions of kubeplug, its commit, its module ABI and Go",
		Long: `Version prints kubeplug's version (git describe of the commit it was built
from, as make build and make image stamp it; the image's tag is the same),
the commit, the module ABI version it speaks, and the Go version and
platform it was built with.`,
		Example: `  kubeplug version
  kubeplug version -o json`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return inputErrorf("-o %q: want text or json", output)
			}
			v := currentVersion()
			if output == "json" {
				enc := json.NewEncoder(s.out)
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			}
			_, err := fmt.Fprintf(s.out, "kubeplug %s\ncommit %s\nABI %s\nGo %s %s\n", v.Version, v.Commit, v.ABI, v.Go, v.Platform)
			return err
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}
