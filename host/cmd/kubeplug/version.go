package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/kubeplug/kubeplug/abi"
)

// version and commit are set at link time, as `make image` does:
//
//	-ldflags "-X main.version=v1.2.3 -X main.commit=0123abc..."
//
// Unset, version is the module version Go recorded, or "devel", and commit
// the VCS revision Go recorded, or "unknown".
var (
	version = ""
	commit  = ""
)

func kubeplugVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

func kubeplugCommit() string {
	if commit != "" {
		return commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				return s.Value
			}
		}
	}
	return "unknown"
}

func newVersionCommand(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the versions of kubeplug, its commit, its module ABI and Go",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			goVersion := "unknown"
			if bi, ok := debug.ReadBuildInfo(); ok {
				goVersion = bi.GoVersion
			}
			_, err := fmt.Fprintf(s.out, "kubeplug %s\ncommit %s\nABI %s\nGo %s\n", kubeplugVersion(), kubeplugCommit(), abi.Current, goVersion)
			return err
		},
	}
}
