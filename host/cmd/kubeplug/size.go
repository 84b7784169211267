package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/admission"
	"github.com/kubeplug/kubeplug/host/config"
	"github.com/kubeplug/kubeplug/host/controller"
)

// sizeOptions are `kubeplug size`'s flags.
type sizeOptions struct {
	configPath, modulesDir, output string
	webhook                        bool
}

func newSizeCommand(opts *globalOptions, s streams) *cobra.Command {
	var o sizeOptions
	cmd := &cobra.Command{
		Use:   "size --config host.yaml [--modules-dir DIR] [--webhook] [-o text|json]",
		Short: "Print the most memory the host's modules can make it hold, to size its container",
		Long: `Size loads every module of the host configuration as kubeplug run would, with
its entry's limits, and prints the most host memory each can make the host hold
(what kubeplug inspect prints per module, for the entry's limits), counting the
hooks the host calls: reconcile, and admit for a module in enforce mode when the
host serves webhooks (--webhook: kubeplug run --webhook-addr), with the webhook
server's reviews in flight. Whatever the modules do, they cannot make the host
hold more than the total; the host's own memory (its caches, growing with the
objects it watches) comes on top: README.md, "Sizing", says how to size the
container from both.

"linear memory" is the part of each bound that the modules' memories take: it is
mapped outside Go's heap, so GOMEMLIMIT must leave room for it under the
container's memory limit.

--modules-dir reads the modules a configuration written for the image names
under /modules/ from a directory of built modules, as kubeplug rbac does.`,
		Example: `  kubeplug size --config host.yaml
  kubeplug size --config deploy/base/host.yaml --modules-dir build/guests -o json`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := sizeHost(cmd.Context(), opts, s, o)
			if err != nil {
				return err
			}
			if o.output == "json" {
				enc := json.NewEncoder(s.out)
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			return r.writeText(s.out)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.configPath, "config", "", "host configuration file (required)")
	f.StringVar(&o.modulesDir, "modules-dir", "", "read the modules the configuration names under /modules/ (the image's) from this directory, e.g. build/guests")
	f.BoolVar(&o.webhook, "webhook", false, "the host serves the admit hooks (kubeplug run --webhook-addr)")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	return cmd
}

// sizeReport is what size prints; its JSON form is `size -o json`.
type sizeReport struct {
	Modules []moduleSize `json:"modules"`
	// WebhookReviews is the webhook server's bound of what reviews in
	// flight hold, when the host serves webhooks.
	WebhookReviews uint64 `json:"webhookReviews"`
	// Total is every module's bound and WebhookReviews; LinearMemory is
	// the part of it outside Go's heap.
	Total        uint64 `json:"total"`
	LinearMemory uint64 `json:"linearMemory"`
}

// moduleSize is one entry's part.
type moduleSize struct {
	Name      string   `json:"name"`
	Mode      string   `json:"mode"`
	Hooks     []string `json:"hooks"`
	Instances int      `json:"instances"`
	Memory    uint64   `json:"memory"`
	// Bound is the most host memory the module can make the host hold
	// through the hooks the host calls; LinearMemory its memories' part.
	Bound        uint64 `json:"bound"`
	LinearMemory uint64 `json:"linearMemory"`
}

// sizeHost loads o's configuration and adds up its modules' bounds.
func sizeHost(ctx context.Context, opts *globalOptions, s streams, o sizeOptions) (sizeReport, error) {
	var r sizeReport
	if o.configPath == "" {
		return r, inputErrorf("--config is required: the host configuration whose modules to size")
	}
	if o.output != "text" && o.output != "json" {
		return r, inputErrorf("-o %q: want text or json", o.output)
	}
	file, err := config.LoadWith(o.configPath, config.Options{ModulesDir: o.modulesDir})
	if err != nil {
		return r, inputError(err)
	}
	for i := range file.Modules {
		entry := &file.Modules[i]
		err := withEntry(ctx, opts, s, file, entry, func(l *loadedModule, mod controller.Module) error {
			m := moduleSize{Name: entry.Name, Mode: string(entry.Mode), Instances: l.module.Limits().Instances, Memory: l.module.Limits().MemoryBytes}
			profile := l.module.Info().Profile
			for _, h := range l.module.Manifest().Hooks {
				// The host calls an admit hook only as a webhook, and
				// serves no shadow module's (an answer cannot be
				// recorded without taking effect).
				if h == abi.HookReconcile || h == abi.HookAdmit && o.webhook && !mod.Shadow {
					m.Hooks = append(m.Hooks, h)
					m.Bound += profile.HostMemoryBound(entry.Limits)
					m.LinearMemory += profile.LinearMemoryBound(entry.Limits)
				}
			}
			r.Modules = append(r.Modules, m)
			r.Total += m.Bound
			r.LinearMemory += m.LinearMemory
			return nil
		})
		if err != nil {
			return r, err
		}
	}
	if o.webhook && slices.ContainsFunc(r.Modules, func(m moduleSize) bool { return slices.Contains(m.Hooks, abi.HookAdmit) }) {
		r.WebhookReviews = uint64(admission.DefaultServerLimits().MaxInFlightBytes)
		r.Total += r.WebhookReviews
	}
	return r, nil
}

func (r sizeReport) writeText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODULE\tMODE\tHOOKS CALLED\tINSTANCES\tMEMORY\tBOUND\tLINEAR MEMORY")
	for _, m := range r.Modules {
		hooks := strings.Join(m.Hooks, ", ")
		if hooks == "" {
			hooks = "none"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", m.Name, m.Mode, hooks, m.Instances,
			humanSize(int(m.Memory)), humanSize(int(m.Bound)), humanSize(int(m.LinearMemory)))
	}
	if r.WebhookReviews > 0 {
		fmt.Fprintf(tw, "webhook reviews in flight\t\t\t\t\t%s\t\n", humanSize(int(r.WebhookReviews)))
	}
	fmt.Fprintf(tw, "total\t\t\t\t\t%s\t%s\n", humanSize(int(r.Total)), humanSize(int(r.LinearMemory)))
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nThe modules cannot make the host hold more than %s; add the host's own memory (README.md, \"Sizing\"), "+
		"and keep GOMEMLIMIT at least %s under the container's memory limit.\n", humanSize(int(r.Total)), humanSize(int(r.LinearMemory)))
	return err
}
