package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/kubeplug/kubeplug/abi"
)

// version is kubeplug's version, set at link time with
// -ldflags "-X main.version=v1.2.3"; otherwise the module version Go
// recorded, or "devel".
var version = ""

func kubeplugVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

func newVersionCommand(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the versions of kubeplug, its module ABI and Go",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			goVersion := "unknown"
			if bi, ok := debug.ReadBuildInfo(); ok {
				goVersion = bi.GoVersion
			}
			_, err := fmt.Fprintf(s.out, "kubeplug %s\nABI %s\nGo %s\n", kubeplugVersion(), abi.Current, goVersion)
			return err
		},
	}
}
