package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/kubeplug/kubeplug/host/app"
	"github.com/kubeplug/kubeplug/host/casetest"
	"github.com/kubeplug/kubeplug/host/check"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/internal/input"
	"github.com/kubeplug/kubeplug/host/runtime"
)

// replayHeader starts the line of a saved reproduction that holds its
// perturbation.
const replayHeader = "# kubeplug check --replay: "

func newCheckCommand(opts *globalOptions, s streams) *cobra.Command {
	var (
		modulePath, configPath, moduleName, replay, saveDir string
		verbose                                             bool
		budget                                              time.Duration
		executions                                          int
	)
	cmd := &cobra.Command{
		Use:   "check (--module MODULE.wasm | --config host.yaml [--module-name NAME]) (FILE_OR_DIR... | --replay REPRO)",
		Short: "Explore crashes, stale caches and missed states of case files against a module",
		Long: `Check takes the case files of "kubeplug test" (expect: is optional; steps: are
applied between rounds) and runs each case once as "kubeplug test" does, then
again under every perturbation within bounds, through the same reconcile:

  crash       the host stops after each prefix of a round's writes, and
              between rounds; a fresh host (no memory of its writes, a new
              module instance) goes on
  stale       for one round, one kind, every kind, or every kind but one is
              shown as it was up to 3 writes ago, on the live host and on a
              restarted one; for up to 3 rounds in a row while each changes
              the cluster
  unobserved  the host does not run between two steps
  interleave  the host settles between a prefix of a step's writes and the rest
  unobserved-stale
              both at once: the host does not run between two steps, and
              then one round after the next step runs stale as above (at
              most 48 such runs per case, smallest first)

Each perturbed run must delete no object and no backing volume the unperturbed
run keeps, leave no backing volume behind a deleted PersistentVolume, lower no
storage request the unperturbed run does not lower (which cancels an expansion
in flight), end in the unperturbed run's state, and stop writing. Each violation is printed once, with the smallest perturbation
that shows it and a --replay argument that runs it again; --save writes each as
a case file that --replay takes.

Exit status: 0 when nothing is violated, 1 when something is (or a case fails
unperturbed), 2 for unusable input.`,
		Example: `  kubeplug check --module retention.wasm guests/retention/testdata
  kubeplug check -v --budget 20s --module reclaim.wasm guests/reclaim/testdata
  kubeplug check --module fixture.wasm --replay 'crash:phase=1,round=1,after=1@cases.yaml#scale down'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if budget <= 0 || executions <= 0 {
				return inputErrorf("--budget and --executions must be positive")
			}
			entry, modulePath, wasm, err := caseModule(ctx, opts, configPath, moduleName, modulePath, "check")
			if err != nil {
				return err
			}
			if wasm == nil {
				if wasm, err = input.ReadFile(modulePath, input.MaxModuleBytes, "module file"); err != nil {
					return inputErrorf("cannot read module: %w", err)
				}
			}
			var (
				only  *check.Perturbation
				files []casetest.File
			)
			switch {
			case replay != "" && len(args) > 0:
				return inputErrorf("--replay runs one reproduction: give no case files with it")
			case replay != "":
				var p check.Perturbation
				if files, p, err = loadReplay(replay); err != nil {
					return inputError(err)
				}
				only = &p
			case len(args) == 0:
				return inputErrorf("no case files: give at least one case file or directory, or --replay")
			default:
				if files, err = casetest.LoadPaths(args); err != nil {
					return inputError(err)
				}
			}
			limits := runtime.DefaultLimits()
			if entry != nil {
				limits = entry.Limits
			}
			l, err := loadInput(ctx, opts, s, modulePath, wasm, limits)
			if err != nil {
				return err
			}
			defer l.close(ctx)
			mod := controller.Module{Runtime: l.module}
			if entry != nil {
				if mod, err = app.EntryModule(entry, l.module); err != nil {
					return inputError(fmt.Errorf("%s: %w", configPath, err))
				}
			}
			// The host's records stay out of the report: perturbed runs
			// make it warn of conflicts and crashes by design. --log-level
			// debug shows them.
			var hostLog *slog.Logger
			if strings.EqualFold(opts.logLevel, "debug") {
				if hostLog, err = opts.logger(s.err); err != nil {
					return err
				}
			}
			newGuest := func(ctx context.Context) (controller.Guest, func(), error) {
				g, err := l.engine.LoadAny(ctx, modulePath, wasm, limits)
				if err != nil {
					return nil, nil, err
				}
				return g, func() { _ = g.Close(context.WithoutCancel(ctx)) }, nil
			}
			fresh, stopFresh := check.Prefetch(ctx, newGuest)
			defer stopFresh()

			start := time.Now()
			left := executions
			var cases []casetest.Case
			admission := 0
			for _, f := range files {
				for _, c := range f.Cases {
					if c.Admit == nil {
						cases = append(cases, c)
						continue
					}
					// Said, not passed over: a file of admission cases
					// alone would otherwise read as proved.
					admission++
					fmt.Fprintf(s.out, "SKIP %s: %s: an admission case (admit:), not checked\n", c.File, termLines(c.Name))
				}
			}
			violations, failed, explored, truncated, cut := 0, 0, 0, false, false
			for i, c := range cases {
				// Each case may take half the time left (most take far
				// less, and what they leave goes to the cases after
				// them), so that one large case cannot starve the rest.
				end := start.Add(budget)
				deadline := time.Now().Add(time.Until(end) / 2)
				if len(cases)-i == 1 {
					deadline = end
				}
				rep := check.Explore(ctx, mod, c, check.Options{NewGuest: fresh, Log: hostLog, Only: only,
					Deadline: deadline, Executions: &left})
				explored += rep.Executions
				truncated = truncated || rep.Truncated
				switch {
				case rep.Failure != "":
					failed++
					fmt.Fprintf(s.out, "FAIL %s: %s: %s\n", c.File, c.Name, termLines(rep.Failure))
				case len(rep.Violations) == 0:
					fmt.Fprintf(s.out, "PASS %s: %s\n", c.File, c.Name)
				}
				for _, v := range rep.Violations {
					violations++
					writeViolation(s.out, modulePath, v)
					if saveDir != "" {
						path, err := saveRepro(saveDir, c, v)
						if err != nil {
							return err
						}
						fmt.Fprintf(s.out, "    saved: %s\n", path)
					}
				}
				if rep.Cut != "" {
					cut = true
					fmt.Fprintf(s.out, "    cut short: %s\n", termLines(rep.Cut))
				}
				if verbose {
					capped := ""
					if rep.Capped {
						capped = fmt.Sprintf(", unobserved-stale cut short (at most %d runs, and the versions of the runs they are planned from within a bound)", check.MaxCompound)
					}
					fmt.Fprintf(s.out, "    %d executions, %d skipped as explored states%s%s\n", rep.Executions, rep.Skipped, capped, map[bool]string{true: ", budget exhausted"}[rep.Truncated])
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
			fmt.Fprintf(s.out, "%d cases, %d violations, %d failed unperturbed", len(cases), violations, failed)
			if admission > 0 {
				fmt.Fprintf(s.out, ", %d admission cases not checked: %s", admission, admissionNotChecked)
			}
			fmt.Fprintln(s.out)
			if verbose || truncated || cut {
				note := ""
				switch {
				case truncated:
					note = " (the budget ended the exploration: raise --budget or --executions to explore the rest)"
				case cut:
					note = " (some cases' exploration was cut short, as they say)"
				}
				fmt.Fprintf(s.out, "%d executions explored in %s%s\n", explored, time.Since(start).Round(time.Millisecond), note)
			}
			if violations > 0 || failed > 0 {
				return &exitError{code: exitFailure, silent: true}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&modulePath, "module", "", "the module file (.wasm) to check")
	cmd.Flags().StringVar(&configPath, "config", "", "run the module as this host configuration (host.yaml) runs it")
	cmd.Flags().StringVar(&moduleName, "module-name", "", "the module of --config to run, when it has several")
	cmd.Flags().StringVar(&replay, "replay", "", "run one reproduction: a file --save wrote, or PERTURBATION@FILE#CASE as a violation prints it")
	cmd.Flags().StringVar(&saveDir, "save", "", "write each violation to this directory as a case file --replay takes")
	cmd.Flags().DurationVar(&budget, "budget", check.DefaultBudget.Time, "time the whole exploration may take")
	cmd.Flags().IntVar(&executions, "executions", check.DefaultBudget.Executions, "runs of cases the whole exploration may make")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print how many executions each case took, and the time")
	return cmd
}

// admissionNotChecked says why kubeplug check leaves an admission case
// alone: its perturbations are of reconcile rounds.
const admissionNotChecked = "kubeplug check perturbs the rounds of reconcile cases (crashes, stale caches, missed states), " +
	"and an admission case is one review with no rounds; kubeplug test checks their answers"

// writeViolation prints v as a reproduction.
func writeViolation(w interface{ Write([]byte) (int, error) }, module string, v check.Violation) {
	fmt.Fprintf(w, "VIOLATION %s: %s: %s: %s\n", v.File, v.Case, v.Oracle, termLines(v.Detail))
	fmt.Fprintf(w, "    perturbation: %s\n", v.Perturbation.Describe())
	fmt.Fprintf(w, "    step: %s\n", termLines(v.Step))
	if v.Action != "" {
		fmt.Fprintf(w, "    action: %s\n", termLines(v.Action))
	}
	fmt.Fprintf(w, "    replay: kubeplug check --module %s --replay %s\n", module, shellQuote(replayArg(v)))
}

func replayArg(v check.Violation) string {
	return v.Perturbation.String() + "@" + v.File + "#" + v.Case
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// loadReplay reads a reproduction: a file --save wrote (its header names
// the perturbation, its one case the case), or PERTURBATION@FILE#CASE.
func loadReplay(arg string) ([]casetest.File, check.Perturbation, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		data, err := input.ReadFile(arg, input.MaxCaseBytes, "reproduction")
		if err != nil {
			return nil, check.Perturbation{}, err
		}
		var spec string
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, replayHeader); ok {
				spec = strings.TrimSpace(rest)
				break
			}
		}
		if spec == "" {
			return nil, check.Perturbation{}, fmt.Errorf("%s: no %q line: is it a reproduction kubeplug check --save wrote?", arg, strings.TrimSpace(replayHeader))
		}
		p, err := check.Parse(spec)
		if err != nil {
			return nil, p, fmt.Errorf("%s: %w", arg, err)
		}
		f, err := casetest.Parse(arg, data)
		if err != nil {
			return nil, p, err
		}
		if len(f.Cases) != 1 {
			return nil, p, fmt.Errorf("%s: a reproduction has one case, this file %d", arg, len(f.Cases))
		}
		return []casetest.File{f}, p, nil
	}
	spec, rest, ok := strings.Cut(arg, "@")
	file, name, ok2 := strings.Cut(rest, "#")
	if !ok || !ok2 {
		return nil, check.Perturbation{}, fmt.Errorf("--replay %s: want a saved reproduction file, or PERTURBATION@FILE#CASE", input.Quote(arg))
	}
	p, err := check.Parse(spec)
	if err != nil {
		return nil, p, err
	}
	files, err := casetest.LoadPaths([]string{file})
	if err != nil {
		return nil, p, err
	}
	for _, c := range files[0].Cases {
		if c.Name == name {
			return []casetest.File{{Path: file, Cases: []casetest.Case{c}}}, p, nil
		}
	}
	return nil, p, fmt.Errorf("%s has no case named %s", file, input.Quote(name))
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// saveRepro writes v's case as a plain case file (the case as parsed,
// without its expectations) whose header holds the perturbation.
func saveRepro(dir string, c casetest.Case, v check.Violation) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("--save: %w", err)
	}
	doc := map[string]any{"name": c.Name + " (" + v.Perturbation.String() + ")", "now": c.Now.UTC().Format(time.RFC3339Nano), "objects": c.Objects}
	if c.Config != nil {
		var cfg any
		if err := yaml.Unmarshal(c.Config, &cfg); err == nil {
			doc["config"] = cfg
		}
	}
	var steps []any
	for _, st := range c.Steps {
		steps = append(steps, st.Raw)
	}
	if steps != nil {
		doc["steps"] = steps
	}
	body, err := yaml.Marshal(doc)
	if err != nil {
		return "", err
	}
	var head strings.Builder
	fmt.Fprintf(&head, "# A reproduction kubeplug check found in %s, case %s:\n", v.File, strings.ReplaceAll(v.Case, "\n", " "))
	fmt.Fprintf(&head, "# %s: %s\n", v.Oracle, strings.ReplaceAll(v.Detail, "\n", " "))
	fmt.Fprintf(&head, "# when %s\n", v.Perturbation.Describe())
	if v.Action != "" {
		fmt.Fprintf(&head, "# action: %s\n", v.Action)
	}
	head.WriteString(replayHeader + v.Perturbation.String() + "\n")
	name := strings.Trim(unsafeName.ReplaceAllString(c.Name+"-"+v.Perturbation.String(), "-"), "-")
	if len(name) > 120 {
		name = name[:120]
	}
	path := filepath.Join(dir, name+".yaml")
	// As the image cache writes: a temporary file, then a rename, so that a
	// FIFO planted at path is replaced and never opened (an open would wait
	// for a reader, past SIGTERM), and a symlink is replaced and never
	// written through to a file outside dir.
	if err := writeFileAtomic(path, append([]byte(head.String()), body...)); err != nil {
		return "", fmt.Errorf("--save: %w", err)
	}
	return path, nil
}
