package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/kubeplug/kubeplug/host/oci"
)

// streams are a command's standard input and outputs.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

// globalOptions are the flags every command takes.
type globalOptions struct {
	cacheDir      cacheFlag
	imageCacheDir cacheFlag
	imageTimeout  time.Duration
	logLevel      string
	logFormat     string
}

// fetchOptions are the settings every command reads module entries with.
func (o *globalOptions) fetchOptions() oci.FetchOptions {
	return oci.FetchOptions{CacheDir: o.imageCacheDir.dir(), Timeout: o.imageTimeout}
}

// logger returns the logger commands hand to the host packages: text or
// JSON on the error stream, at --log-level, warn by default: what an offline
// command prints is its answer, and the host's records of its work would
// bury it.
func (o *globalOptions) logger(w io.Writer) (*slog.Logger, error) {
	return o.loggerAt(w, slog.LevelWarn)
}

// loggerAt is logger with level def where --log-level is not given.
func (o *globalOptions) loggerAt(w io.Writer, def slog.Level) (*slog.Logger, error) {
	level := def
	if o.logLevel != "" {
		if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
			return nil, inputErrorf("--log-level %q: want debug, info, warn or error", o.logLevel)
		}
	}
	ho := &slog.HandlerOptions{Level: level}
	switch o.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, ho)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, ho)), nil
	}
	return nil, inputErrorf("--log-format %q: want text or json", o.logFormat)
}

// clientLogger is loggerAt for the commands that talk to a cluster: it also
// routes client-go's log (klog) into the same handler, so that its lines are
// as structured as the host's own and obey --log-level. klog is global to
// the process: the last command to call this wins, which in the kubeplug
// binary is the one command it runs.
func (o *globalOptions) clientLogger(w io.Writer, def slog.Level) (*slog.Logger, error) {
	log, err := o.loggerAt(w, def)
	if err != nil {
		return nil, err
	}
	klog.SetSlogLogger(log)
	return log, nil
}

// newRootCommand builds the kubeplug command with every subcommand.
func newRootCommand(s streams) *cobra.Command {
	opts := &globalOptions{}
	root := &cobra.Command{
		Use:   "kubeplug",
		Short: "Kubernetes controller host whose decisions are made by WebAssembly modules",
		Long: `kubeplug runs policy modules, sandboxed WebAssembly binaries, that decide what
happens to StatefulSets' claims and to PersistentVolumes.

Exit status: 0 success, 1 a failing case or an unusable module, 2 unusable input.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		// Without Args, cobra reports an unknown subcommand as a plain
		// error; this makes it a usage error like any other.
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				return inputErrorf("unknown command %q: did you mean %q?", args[0], s[0])
			}
			return inputErrorf("unknown command %q: run 'kubeplug --help' for the commands", args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	root.SuggestionsMinimumDistance = 2
	root.SetIn(s.in)
	root.SetOut(s.out)
	root.SetErr(s.err)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return inputErrorf("%v: run '%s --help' for usage", err, cmd.CommandPath())
	})
	opts.cacheDir = newCacheFlag("cache-dir", "wazero")
	opts.imageCacheDir = newCacheFlag("image-cache-dir", "oci")
	root.PersistentFlags().Var(&opts.cacheDir, "cache-dir",
		"directory for compiled modules, kept between runs; empty keeps them in memory only "+
			"(default: $XDG_CACHE_HOME/kubeplug/wazero or ~/.cache/kubeplug/wazero when writable, else $TMPDIR/kubeplug-$UID/wazero, else memory)")
	root.PersistentFlags().Var(&opts.imageCacheDir, "image-cache-dir",
		"directory for modules pulled from registries, kept by digest; empty keeps none "+
			"(default: as --cache-dir, under kubeplug/oci)")
	root.PersistentFlags().DurationVar(&opts.imageTimeout, "image-timeout", oci.DefaultTimeout,
		"bound of each pull from (or push to) a registry, all its requests and transfers together")
	root.PersistentFlags().StringVar(&opts.logLevel, "log-level", "", "log level on standard error: debug, info, warn or error (default: info for run, whose info lines are its start, modules, leadership and swaps; warn for the other commands)")
	root.PersistentFlags().StringVar(&opts.logFormat, "log-format", "text", "log format on standard error: text or json (log/slog's handlers; client-go's log goes through the same)")

	root.AddCommand(
		newInspectCommand(opts, s),
		newTestCommand(opts, s),
		newCheckCommand(opts, s),
		newRunCommand(opts, s),
		newHarnessCommand(opts, s),
		newWebhookConfigCommand(opts, s),
		newRBACCommand(opts, s),
		newSizeCommand(opts, s),
		newPushCommand(opts, s),
		newPullCommand(opts, s),
		newSignCommand(opts, s),
		newRecordCommand(opts, s),
		newVersionCommand(s),
		newNewCommand(s),
	)
	completionCommand(root)
	return root
}

// completionCommand adds cobra's completion command (bash, zsh, fish,
// powershell) to root now rather than when it runs, so that a missing or
// unknown shell is a usage error like an unknown command, not its help and
// exit status 0.
func completionCommand(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	cmd, _, err := root.Find([]string{"completion"})
	if err != nil || cmd == root {
		return
	}
	var shells []string
	for _, c := range cmd.Commands() {
		shells = append(shells, c.Name())
	}
	want := strings.Join(shells, ", ")
	cmd.Example = "  source <(kubeplug completion bash)    # this shell; see kubeplug completion bash --help to keep it"
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return inputErrorf("unknown shell %q: want one of %s", args[0], want)
		}
		return nil
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return inputErrorf("want a shell, one of %s: run '%s --help' for usage", want, cmd.CommandPath())
	}
}

// execute runs the kubeplug command line args and returns the exit code.
func execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCommand(streams{in: stdin, out: stdout, err: stderr})
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil && !silent(err) {
		name := "kubeplug"
		if cmd != nil {
			name = cmd.CommandPath()
		}
		fmt.Fprintf(stderr, "%s: %s\n", name, strings.TrimSpace(err.Error()))
	}
	return exitCode(err)
}

// exactArgs is cobra.ExactArgs as a usage error.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return inputErrorf("want %s, got %d arguments: run '%s --help' for usage", what, len(args), cmd.CommandPath())
		}
		return nil
	}
}
