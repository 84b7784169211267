package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/config"
	"github.com/kubeplug/kubeplug/host/oci"
	"github.com/kubeplug/kubeplug/host/rbac"
	"github.com/kubeplug/kubeplug/host/runtime"
)

func newInspectCommand(opts *globalOptions, s streams) *cobra.Command {
	var (
		output string
		rf     registryFlags
	)
	cmd := &cobra.Command{
		Use:   "inspect (MODULE.wasm | REF)",
		Short: "Describe a module: manifest, ABI version, exports and imports",
		Long: `Inspect loads a module file as the host would (compile, ABI and import checks,
manifest) and describes it. A file that is not a usable kubeplug module, or that
was built for an ABI this host does not speak, exits with status 1; a file that
cannot be read, with status 2.

Given an image reference (registry/repository:tag or @sha256:...) instead of a
file, it describes the module published there. For a module published with
"kubeplug push" it prints the manifest from the artifact's config blob,
without downloading or running the module (the host itself reads the manifest
from the module when it loads it). For a module in another layout (Kubewarden's,
the CNCF wasm layout) it pulls the module and inspects it as a file.`,
		Example: `  kubeplug inspect guests/retention.wasm
  kubeplug inspect --plain-http localhost:5000/policies/retention:1.2.0`,
		Args: exactArgs(1, "one module file or image reference"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return inputErrorf("-o %q: want text or json", output)
			}
			log, err := opts.logger(s.err)
			if err != nil {
				return err
			}
			path := args[0]
			var (
				l       *loadedModule
				loadErr error
			)
			if isReference(path) {
				o, err := rf.options(opts)
				if err != nil {
					return err
				}
				a, err := oci.Describe(cmd.Context(), path, o)
				if err != nil {
					return registryError(err)
				}
				if a.Config != nil {
					return writeImage(s.out, output, a)
				}
				if a, err = oci.Pull(cmd.Context(), path, o); err != nil {
					return registryError(err)
				}
				l, loadErr = loadWasm(cmd.Context(), opts, log, a.Pinned, a.Wasm, runtime.DefaultLimits())
				path = a.Pinned
			} else {
				l, loadErr = loadModule(cmd.Context(), opts, log, path, runtime.DefaultLimits())
			}
			if loadErr != nil {
				if exitCode(loadErr) == exitInput {
					return loadErr
				}
				return failure(describeLoadError(path, loadErr))
			}
			defer l.close(cmd.Context())
			d := describe(l.module.Manifest(), l.module.Info(), l.module.Limits())
			if output == "json" {
				enc := json.NewEncoder(s.out)
				enc.SetIndent("", "  ")
				return enc.Encode(d)
			}
			return d.writeText(s.out)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	rf.add(cmd, true)
	return cmd
}

// imageDescription is what inspect prints of a module published with
// kubeplug push, from the registry alone.
type imageDescription struct {
	Image      string       `json:"image"`
	Pinned     string       `json:"pinned"`
	Layout     string       `json:"layout"`
	Manifest   abi.Manifest `json:"manifest"`
	ABIVersion string       `json:"abiVersion"`
	Size       int64        `json:"size"`
	SHA256     string       `json:"sha256"`
	Allow      string       `json:"allow"`
	// RBAC is what the module's actions and webhook need of the API
	// server once granted what it asks (moduleRBAC).
	RBAC moduleRules `json:"rbac"`
}

// writeImage prints what the registry says of a module, as text or JSON.
func writeImage(w io.Writer, output string, a *oci.Artifact) error {
	d := imageDescription{
		Image: a.Ref, Pinned: a.Pinned, Layout: a.Layout.Name, Manifest: a.Config.Manifest, ABIVersion: a.Config.ABIVersion,
		Size: a.Size, SHA256: a.SHA256, Allow: config.AllowBlock(config.Asked(a.Config.Manifest)),
		RBAC: moduleRBAC(a.Config.Manifest),
	}
	if output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	field := fieldWriter(tw)
	field("Image", d.Image)
	field("Pinned", d.Pinned)
	manifestFields(field, d.Manifest, d.ABIVersion, d.RBAC)
	field("Size", fmt.Sprintf("%d bytes (%s)", d.Size, humanSize(int(d.Size))))
	field("SHA-256", d.SHA256)
	field("Source", "the manifest as published in the artifact's config; the host reads it from the module when it loads it")
	if err := tw.Flush(); err != nil {
		return err
	}
	writeAllow(w, d.Allow)
	return nil
}

// description is what inspect prints; its JSON form is `inspect -o json`.
type description struct {
	Manifest   abi.Manifest `json:"manifest"`
	ABIVersion string       `json:"abiVersion"`
	// Kind is the module's runtime profile: "kubeplug" for a native
	// module, "extism" for an Extism plugin, whose hook messages are in
	// Encoding ("json" or "msgpack").
	Kind     string     `json:"kind"`
	Encoding string     `json:"encoding,omitempty"`
	Source   string     `json:"source"`
	Size     int        `json:"size"`
	SHA256   string     `json:"sha256"`
	Exports  []function `json:"exports"`
	Imports  []function `json:"imports"`
	// Allow is the allow: block (YAML) that grants the module what its
	// manifest asks, to paste under its entry in host.yaml.
	Allow string `json:"allow"`
	// RBAC is what the module's actions and webhook need of the API
	// server once granted what it asks (moduleRBAC).
	RBAC moduleRules `json:"rbac"`
	// Limits are the limits the module was loaded with (the defaults), and
	// HostMemoryBound the most host memory the module can take under them
	// (runtime.Limits.HostMemoryBound).
	Limits          limits `json:"limits"`
	HostMemoryBound uint64 `json:"hostMemoryBound"`

	// profile is the runtime profile's description, for the text.
	profile runtime.Profile
}

type limits struct {
	MemoryBytes      uint64 `json:"memoryBytes"`
	Deadline         string `json:"deadline"`
	Instances        int    `json:"instances"`
	MaxOutputBytes   int    `json:"maxOutputBytes"`
	MaxActions       int    `json:"maxActions"`
	MaxTableElements uint32 `json:"maxTableElements"`
}

type function struct {
	Module  string   `json:"module,omitempty"`
	Name    string   `json:"name"`
	Params  []string `json:"params"`
	Results []string `json:"results"`
}

func (f function) signature() string {
	return "(" + strings.Join(f.Params, ", ") + ") -> (" + strings.Join(f.Results, ", ") + ")"
}

func (f function) qualifiedName() string {
	if f.Module == "" {
		return f.Name
	}
	return f.Module + "." + f.Name
}

func describe(m abi.Manifest, info runtime.Info, l runtime.Limits) description {
	d := description{
		Manifest:   m,
		ABIVersion: info.ABIVersion.String(),
		Source:     info.Source,
		Size:       info.Size,
		SHA256:     info.SHA256,
		Exports:    functions(info.Exports),
		Imports:    functions(info.Imports),
		Allow:      config.AllowBlock(config.Asked(m)),
		RBAC:       moduleRBAC(m),
		Limits: limits{
			MemoryBytes: l.MemoryBytes, Deadline: l.Deadline.String(), Instances: l.Instances,
			MaxOutputBytes: l.MaxOutputBytes, MaxActions: l.MaxActions, MaxTableElements: l.MaxTableElements,
		},
		// Each hook has a pool of its own (RATIONALE.md, "Why a pool per hook?").
		HostMemoryBound: info.Profile.HostMemoryBound(l) * uint64(max(len(m.Hooks), 1)),
		Kind:            info.Profile.Name,
		Encoding:        info.Encoding,
		profile:         info.Profile,
	}
	return d
}

func functions(fs []runtime.Func) []function {
	out := make([]function, len(fs))
	for i, f := range fs {
		out[i] = function{Module: f.Module, Name: f.Name, Params: orEmpty(f.Params), Results: orEmpty(f.Results)}
	}
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// writeText writes d as aligned "Label: value" lines, then the exports and
// imports with their signatures.
func (d description) writeText(w io.Writer) error {
	m := d.Manifest
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	field := fieldWriter(tw)
	manifestFields(field, m, d.ABIVersion, d.RBAC)
	if d.profile.Label != "" {
		field("Kind", d.profile.Label+", hook messages in "+d.Encoding)
	}
	field("File", d.Source)
	field("Size", fmt.Sprintf("%d bytes (%s)", d.Size, humanSize(d.Size)))
	field("SHA-256", d.SHA256)
	lim := d.Limits
	pools := ""
	if n := len(m.Hooks); n > 1 {
		pools = fmt.Sprintf("%d hooks x ", n)
	}
	memory := humanSize(int(lim.MemoryBytes)) + " memory"
	if d.profile.Memories > 1 {
		memory = fmt.Sprintf("%d x %s (%s)", d.profile.Memories, memory, d.profile.Memory)
	}
	field("Host memory", fmt.Sprintf("at most %s with the default limits: %s%d instances x (%s + %d table elements + %s output + call stack)",
		humanSize(int(d.HostMemoryBound)), pools, lim.Instances, memory, lim.MaxTableElements, humanSize(lim.MaxOutputBytes)))
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, group := range []struct {
		title string
		fs    []function
	}{{"Exports", d.Exports}, {"Imports", d.Imports}} {
		fmt.Fprintf(w, "\n%s (%d):\n", group.title, len(group.fs))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, f := range group.fs {
			fmt.Fprintf(tw, "  %s\t%s\n", termSafe(f.qualifiedName()), f.signature())
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	writeAllow(w, d.Allow)
	return nil
}

// fieldWriter returns a function that writes "Label: value" lines to tw,
// a value of several lines indented under its first. Values are escaped
// for the terminal (termSafe): most come from the module.
func fieldWriter(tw io.Writer) func(label, value string) {
	return func(label, value string) {
		lines := strings.Split(termLines(value), "\n")
		fmt.Fprintf(tw, "%s:\t%s\n", label, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(tw, "\t%s\n", l)
		}
	}
}

// manifestFields writes the fields of a manifest, and rules, the RBAC the
// module needs (moduleRBAC of the manifest).
func manifestFields(field func(label, value string), m abi.Manifest, abiVersion string, rules moduleRules) {
	var caps []string
	for _, c := range m.Capabilities {
		if c.Action == abi.ActionDeleteVolume || len(c.Resources) == 0 {
			caps = append(caps, c.Action)
			continue
		}
		line := c.Action + " on " + strings.Join(c.Resources, ", ")
		if len(c.Paths) > 0 {
			line += " at " + strings.Join(c.Paths, ", ")
		}
		if c.Force {
			line += ", forcing conflicts"
		}
		caps = append(caps, line)
	}
	field("Name", m.Name)
	field("Version", m.Version)
	field("ABI version", abiVersion)
	if w := m.Watches; w != nil {
		field("Subject", resourceText(w.Subject))
		field("Related", orNone(relationsText(w.Relations)))
	} else {
		field("Subject", m.Subject)
	}
	field("Hooks", strings.Join(m.Hooks, ", "))
	field("Capabilities", orNone(strings.Join(caps, "\n")))
	if a := m.Admission; a != nil {
		field("Admission", admissionText(a))
	}
	field("RBAC", orNone(rules.text())+"\n(once granted what it asks, where its entry's namespaces say; with the host's own: kubeplug rbac)")
	if len(m.Projection) > 0 {
		var lines []string
		for _, o := range m.Projection {
			fields := strings.Join(o.Fields, ", ")
			switch {
			case o.Omit:
				fields = "none sent"
			case fields == "":
				fields = "identity only"
			}
			lines = append(lines, o.Kind+": "+fields)
		}
		field("Reads", strings.Join(lines, "\n")+"\n(identity: name, namespace, uid, resourceVersion; kinds not listed: whole)")
	}
	field("Description", orNone(m.Description))
	field("Configuration", orNone(prettyJSON(m.ConfigSchema)))
}

// moduleRules are the rules a module adds to its host's: Cluster in every
// namespace its entry allows (all, unless the entry names some), Namespaced
// in one namespace whatever the entry says (a cluster-scoped object's
// events, in "default").
type moduleRules struct {
	Cluster    []rbacv1.PolicyRule            `json:"cluster"`
	Namespaced map[string][]rbacv1.PolicyRule `json:"namespaced,omitempty"`
	// Error says why the rules cannot be derived (a declared resource
	// whose scope is neither declared nor known).
	Error string `json:"error,omitempty"`
}

// moduleRBAC returns the rules a module granted what its manifest asks
// adds to its host's (rbac.ModuleRules); none for a manifest rbac cannot
// read (an unknown subject, which loading refuses first).
func moduleRBAC(m abi.Manifest) moduleRules {
	r, err := rbac.ModuleRules(rbac.Module{Name: m.Name, Subject: m.Subject, Watches: m.Watches, Hooks: m.Hooks, Granted: config.Asked(m)})
	if err != nil {
		return moduleRules{Error: err.Error()}
	}
	return moduleRules{Cluster: r.Cluster, Namespaced: r.Namespaced}
}

// text describes the rules a line each: the verbs, then the resources as
// kubectl names them (resource.group/subresource), then the namespace of a
// namespaced rule.
func (r moduleRules) text() string {
	if r.Error != "" {
		return "cannot be derived: " + r.Error
	}
	var lines []string
	line := func(rule rbacv1.PolicyRule, where string) {
		var res []string
		for _, g := range rule.APIGroups {
			for _, name := range rule.Resources {
				resource, sub, _ := strings.Cut(name, "/")
				if g != "" {
					resource += "." + g
				}
				if sub != "" {
					resource += "/" + sub
				}
				res = append(res, resource)
			}
		}
		lines = append(lines, strings.Join(rule.Verbs, ", ")+" "+strings.Join(res, ", ")+where)
	}
	for _, rule := range r.Cluster {
		line(rule, "")
	}
	for _, ns := range slices.Sorted(maps.Keys(r.Namespaced)) {
		for _, rule := range r.Namespaced[ns] {
			line(rule, " in namespace "+ns)
		}
	}
	return strings.Join(lines, "\n")
}

// writeAllow prints the allow: block to paste into host.yaml.
func writeAllow(w io.Writer, allow string) {
	fmt.Fprintf(w, "\nTo allow what the manifest asks, add under the module's entry in host.yaml:\n")
	for _, l := range strings.SplitAfter(termLines(strings.TrimSuffix(allow, "\n")), "\n") {
		fmt.Fprintf(w, "  %s", l)
	}
	fmt.Fprintln(w)
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(none)"
	}
	return s
}

// prettyJSON indents s when it is JSON (a configuration schema) and returns
// it unchanged otherwise (a plain description).
func prettyJSON(s string) string {
	if !json.Valid([]byte(s)) {
		return strings.TrimSpace(s)
	}
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(s), "", "  "); err != nil {
		return s
	}
	return b.String()
}

func humanSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// resourceText names a declared resource as kubectl would
// ("deployments.apps/v1"), with its kind and scope when declared.
func resourceText(r abi.Resource) string {
	s := r.String()
	if r.Kind != "" {
		s += " (" + r.Kind + ")"
	}
	if r.Namespaced != nil && !*r.Namespaced {
		s += ", cluster-scoped"
	}
	return s
}

// relationsText describes a declaration's relations, one a line: the
// name, what the objects are and how they relate to the subject.
func relationsText(rels []abi.Relation) string {
	lines := make([]string, len(rels))
	for i, r := range rels {
		how := r.Type
		switch r.Type {
		case abi.RelationOwned:
			how = "controlled by the subject"
		case abi.RelationSelected:
			how = "in its namespace, selected by its " + r.Path
		case abi.RelationNamed:
			how = "named by its " + r.Path
		case abi.RelationAll:
			how = "all"
			if r.InNamespace {
				how += " in its namespace"
			}
			if r.LabelSelector != "" {
				how += " matching " + r.LabelSelector
			}
		}
		lines[i] = fmt.Sprintf("%s: %s, %s", r.Name, resourceText(r.Resource), how)
	}
	return strings.Join(lines, "\n")
}

// admissionText describes what an admit hook admits, one rule a line.
func admissionText(a *abi.Admission) string {
	kind := "validating"
	if a.Mutates {
		kind = "mutating"
	}
	lines := []string{kind + " webhook"}
	for _, r := range a.Rules {
		groups := make([]string, len(r.APIGroups))
		for i, g := range r.APIGroups {
			groups[i] = cmp.Or(g, "core")
		}
		lines = append(lines, fmt.Sprintf("%s %s (%s/%s)", strings.Join(r.Operations, ","), strings.Join(r.Resources, ","),
			strings.Join(groups, ","), strings.Join(r.APIVersions, ",")))
	}
	for _, c := range a.MatchConditions {
		lines = append(lines, fmt.Sprintf("when %s: %s", c.Name, c.Expression))
	}
	return strings.Join(lines, "\n")
}
