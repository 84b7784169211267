package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubeplug/kubeplug/host/casetest"
)

func newTestCommand(opts *globalOptions, s streams) *cobra.Command {
	var (
		modulePath string
		verbose    bool
	)
	cmd := &cobra.Command{
		Use:   "test --module MODULE.wasm FILE_OR_DIR...",
		Short: "Run case files against a module, without a cluster",
		Long: `Test runs case files (YAML, one case per document; directories are searched
for *.yaml and *.yml) against a module: each case's objects are loaded into an
in-memory cluster, every object of the module's subject kind is reconciled
through the real runtime, validator and executor until a round changes nothing
(at most 10 rounds), and the case's expectations are checked.

It prints one line per case, "PASS <file>: <case>" or "FAIL <file>: <case>:
<first difference>", then "N passed, M failed". Exit status: 0 when every case
passes, 1 when one fails, 2 for unusable input (a case file that does not parse,
an unknown kind or field, a missing or unloadable module, no case files).`,
		Example: `  kubeplug test --module retention.wasm guests/retention/testdata
  kubeplug test -v --module reclaim.wasm cases/leak.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if modulePath == "" {
				return inputErrorf("--module is required: name the module file (.wasm) to test")
			}
			if len(args) == 0 {
				return inputErrorf("no case files: give at least one case file or directory")
			}
			files, err := casetest.LoadPaths(args)
			if err != nil {
				return inputError(err)
			}
			l, err := loadInputModule(cmd.Context(), opts, s, modulePath)
			if err != nil {
				return err
			}
			defer l.close(cmd.Context())

			passed, failed := 0, 0
			for _, f := range files {
				for _, c := range f.Cases {
					o := casetest.Run(cmd.Context(), l.module, c)
					if o.Passed {
						passed++
						fmt.Fprintf(s.out, "PASS %s: %s\n", f.Path, c.Name)
					} else {
						failed++
						fmt.Fprintf(s.out, "FAIL %s: %s: %s\n", f.Path, c.Name, o.Failure)
					}
					if verbose {
						writeRounds(s.out, o)
					}
				}
			}
			fmt.Fprintf(s.out, "%d passed, %d failed\n", passed, failed)
			if failed > 0 {
				return &exitError{code: exitFailure, silent: true}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&modulePath, "module", "", "the module file (.wasm) to test")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print the actions of every round and what became of them")
	return cmd
}

// writeRounds prints what each round of a case did, one line per action.
func writeRounds(w io.Writer, o casetest.Outcome) {
	for _, r := range o.Rounds {
		acted := false
		for _, rec := range r.Reconciles {
			for i, a := range rec.Actions {
				acted = true
				line := fmt.Sprintf("    round %d %s: %s %s", r.Number, rec.Key, a.Type, refString(a.Target.Kind, a.Target.Namespace, a.Target.Name))
				if i < len(rec.Report.Actions) {
					ar := rec.Report.Actions[i]
					line += ": " + string(ar.Outcome)
					if ar.Write != "" {
						line += " (" + ar.Write + ")"
					}
					if ar.Err != nil {
						line += ": " + ar.Err.Error()
					}
				}
				fmt.Fprintln(w, line)
			}
		}
		if !acted {
			fmt.Fprintf(w, "    round %d: no actions\n", r.Number)
		}
	}
}

func refString(kind, namespace, name string) string {
	return strings.TrimSpace(kind + " " + strings.TrimPrefix(namespace+"/"+name, "/"))
}
