package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubeplug/kubeplug/host/app"
	"github.com/kubeplug/kubeplug/host/casetest"
	"github.com/kubeplug/kubeplug/host/config"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/oci"
	"github.com/kubeplug/kubeplug/host/runtime"
)

func newTestCommand(opts *globalOptions, s streams) *cobra.Command {
	var (
		modulePath, configPath, moduleName string
		verbose                            bool
	)
	cmd := &cobra.Command{
		Use:   "test (--module MODULE.wasm | --config host.yaml [--module-name NAME]) FILE_OR_DIR...",
		Short: "Run case files against a module, without a cluster",
		Long: `Test runs case files (YAML, one case per document; directories are searched
for *.yaml and *.yml) against a module: each case's objects are loaded into an
in-memory cluster, every object of the module's subject kind is reconciled
through the real runtime, validator and executor until a round changes nothing
(at most 10 rounds), and the case's expectations are checked. Each subject is
reconciled by the same function as in "kubeplug run".

With --config, the module runs as the host configuration's entry for it says
(--module-name chooses the entry when there are several): its file or image
(unless --module names another; an image is pulled, its signature checked when
the entry requires one), limits, allow, config, labelSelector, namespaces and
mode. A module whose manifest asks for more than its allow: list grants is
refused, as "kubeplug run" refuses it. Without --config the module runs with the
default limits, in enforce mode, allowed what its manifest asks.

It prints one line per case, "PASS <file>: <case>" or "FAIL <file>: <case>:
<first difference>", then "N passed, M failed". Exit status: 0 when every case
passes, 1 when one fails, 2 for unusable input (a case file that does not parse,
an unknown kind or field, a missing or unloadable module, no case files, a bad
host configuration or a module it does not allow).`,
		Example: `  kubeplug test --module retention.wasm guests/retention/testdata
  kubeplug test -v --module reclaim.wasm cases/leak.yaml
  kubeplug test --config host.yaml --module-name retention guests/retention/testdata`,
		RunE: func(cmd *cobra.Command, args []string) error {
			entry, modulePath, wasm, err := caseModule(cmd.Context(), opts, configPath, moduleName, modulePath, "test")
			if err != nil {
				return err
			}
			if len(args) == 0 {
				return inputErrorf("no case files: give at least one case file or directory")
			}
			files, err := casetest.LoadPaths(args)
			if err != nil {
				return inputError(err)
			}
			limits := runtime.DefaultLimits()
			if entry != nil {
				limits = entry.Limits
			}
			l, err := loadInput(cmd.Context(), opts, s, modulePath, wasm, limits)
			if err != nil {
				return err
			}
			defer l.close(cmd.Context())
			mod := controller.Module{Runtime: l.module}
			if entry != nil {
				if mod, err = app.EntryModule(entry, l.module); err != nil {
					return inputError(fmt.Errorf("%s: %w", configPath, err))
				}
			}

			// The host's own records (refused actions, an ignored secret, a
			// clamped requeue) go where the live host's would: the log on
			// standard error, at --log-level (warn by default here).
			hostLog, err := opts.logger(s.err)
			if err != nil {
				return err
			}
			passed, failed := 0, 0
			for _, f := range files {
				for _, c := range f.Cases {
					o := casetest.Run(cmd.Context(), mod, c, hostLog)
					if o.Passed {
						passed++
						fmt.Fprintf(s.out, "PASS %s: %s\n", f.Path, c.Name)
					} else {
						failed++
						// The failure quotes what the module returned: escaped for
						// the terminal, as inspect's output is.
						fmt.Fprintf(s.out, "FAIL %s: %s: %s\n", f.Path, c.Name, termLines(o.Failure))
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
	cmd.Flags().StringVar(&configPath, "config", "", "run the module as this host configuration (host.yaml) runs it")
	cmd.Flags().StringVar(&moduleName, "module-name", "", "the module of --config to run, when it has several")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print the actions of every round and what became of them")
	return cmd
}

// caseModule resolves the module of a command that runs case files (test,
// check): the entry of --config named by --module-name, if any, and the
// module's path, with its bytes when they come from the entry (read as the
// host reads them: its pin and signature checked) rather than from --module.
func caseModule(ctx context.Context, opts *globalOptions, configPath, moduleName, modulePath, verb string) (entry *config.Module, path string, wasm []byte, err error) {
	if configPath != "" {
		f, err := config.Load(configPath)
		if err != nil {
			return nil, "", nil, inputError(err)
		}
		if entry, err = pickModule(f, moduleName); err != nil {
			return nil, "", nil, inputError(err)
		}
		if modulePath == "" {
			src, err := oci.Fetch(ctx, entry, opts.fetchOptions())
			if err != nil {
				return nil, "", nil, inputError(err)
			}
			modulePath, wasm = src.Name, src.Wasm
		}
	} else if moduleName != "" {
		return nil, "", nil, inputErrorf("--module-name %s chooses a module of --config: give the host configuration too", moduleName)
	}
	if modulePath == "" {
		return nil, "", nil, inputErrorf("--module is required without --config: name the module file (.wasm) to %s", verb)
	}
	return entry, modulePath, wasm, nil
}

// pickModule returns the entry of f named name, or its only entry when name
// is empty.
func pickModule(f *config.File, name string) (*config.Module, error) {
	names := make([]string, len(f.Modules))
	for i := range f.Modules {
		if f.Modules[i].Name == name {
			return &f.Modules[i], nil
		}
		names[i] = f.Modules[i].Name
	}
	switch {
	case name != "":
		return nil, fmt.Errorf("%s has no module named %q; its modules are %s", f.Path, name, strings.Join(names, ", "))
	case len(f.Modules) > 1:
		return nil, fmt.Errorf("%s has %d modules: choose one with --module-name (%s)", f.Path, len(f.Modules), strings.Join(names, ", "))
	}
	return &f.Modules[0], nil
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
				fmt.Fprintln(w, termLines(line)) // the module's targets and errors
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
