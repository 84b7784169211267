package main

import (
	"github.com/spf13/cobra"

	"github.com/kubeplug/kubeplug/host/harness"
	"github.com/kubeplug/kubeplug/host/runtime"
)

func newHarnessCommand(opts *globalOptions, s streams) *cobra.Command {
	var modulePath string
	cmd := &cobra.Command{
		Use:   "harness --module MODULE.wasm",
		Short: "Serve a module to the sdk's test harness over standard input and output",
		Long: `Harness loads a module and answers the frames of the sdk's test harness
(sdk/sdktest) on standard input and output until end of input, so that a guest's
own tests run against the compiled module in the real runtime. Logs go to
standard error.`,
		Hidden: true,
		Args:   exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if modulePath == "" {
				return inputErrorf("--module is required")
			}
			l, err := loadInputModule(cmd.Context(), opts, s, modulePath, runtime.DefaultLimits())
			if err != nil {
				return err
			}
			defer l.close(cmd.Context())
			if err := harness.Serve(cmd.Context(), l.module, s.in, s.out); err != nil {
				return failure(err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&modulePath, "module", "", "the module file (.wasm) to serve")
	return cmd
}
