package config

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kubeplug/kubeplug/host/internal/input"
)

// Defaults of fields a configuration may leave out.
const (
	DefaultResync     = 10 * time.Minute
	DefaultWorkers    = 2
	DefaultCSITimeout = 60 * time.Second
	// DefaultReconcileTimeout is far above a reconcile's usual
	// milliseconds, and below the 60s a pod's default termination grace
	// period leaves a drain.
	DefaultReconcileTimeout = 30 * time.Second
	// DefaultAPIQPS is client-go's request rate limit of the host's
	// writes (with a burst of twice as many): a scale-down of many sets
	// at once needs a GET and a PATCH per condemned claim.
	DefaultAPIQPS = 50
)

// File is a host configuration, validated.
type File struct {
	// Modules lists the modules to run, in the file's order. There is at
	// least one; names are unique.
	Modules []Module
	// CSIDrivers lists the CSI drivers the host may delete volumes for;
	// names are unique.
	CSIDrivers []CSIDriver
	// Resync is the informers' resync period; 0 disables resyncs. Default
	// 10m.
	Resync time.Duration
	// ReconcileTimeout bounds one reconcile of any module, every API and
	// CSI call it makes included, so that a drain ends within it however
	// slow the API server or a driver is. Default 30s.
	ReconcileTimeout time.Duration
	// APIQPS is the rate, per second, at which the host sends requests to
	// the API server outside its watches, with bursts of twice as many.
	// Default 50.
	APIQPS int
	// Shard restricts what the host watches, for one of several hosts
	// that split a cluster between them; the zero Shard watches
	// everything.
	Shard Shard
	// Path is the file read, made absolute; empty when Parse was given no
	// path.
	Path string
	// RequireSignature is the public key file (absolute) that every
	// module must be signed with, each module's PublicKey unless it names
	// its own; empty when the file does not require signatures.
	RequireSignature string
}

// Load reads and validates the host configuration at path. See Parse.
func Load(path string) (*File, error) { return LoadWith(path, Options{}) }

// ImageModulesDir is where the kubeplug image keeps its modules
// (host/cmd/kubeplug-image's ModulesDir): the shipped host.yaml files name
// them there.
const ImageModulesDir = "/modules"

// Options change how a configuration is read.
type Options struct {
	// ModulesDir, when set, stands for ImageModulesDir: a module path
	// under /modules/ names the file of the same name in ModulesDir, so
	// that a configuration written for the image can be read where the
	// modules were built (make guests writes build/guests), e.g. by
	// `kubeplug rbac --modules-dir`. Other paths are read as written.
	ModulesDir string
}

// LoadWith is Load with options.
func LoadWith(path string, o Options) (*File, error) {
	data, err := input.ReadFile(path, input.MaxConfigBytes, "host configuration")
	if err != nil {
		return nil, fmt.Errorf("read host configuration: %w", err)
	}
	if o.ModulesDir != "" {
		// From the working directory, as a command-line path is read.
		if o.ModulesDir, err = filepath.Abs(o.ModulesDir); err != nil {
			return nil, fmt.Errorf("resolve the modules directory: %w", err)
		}
	}
	return parse(data, path, o)
}

// budget bounds a host configuration once its aliases and merge keys are
// expanded (see input.Budget): the whole file to maxConfigNodes values, a
// guest configuration's own bound, and its nesting to maxNesting.
var budget = input.Budget{Bytes: input.MaxConfigBytes, Nodes: maxConfigNodes, Depth: maxNesting, ScalarBytes: maxScalarBytes, Entries: maxEntries}

// Bounds of one value and one list or mapping of a host configuration.
const (
	// maxScalarBytes is the 64 KiB a module's own strings may have.
	maxScalarBytes = 64 << 10
	// maxEntries is far above any list a host needs (namespaces,
	// modules, capabilities) and keeps a guest configuration's lists to
	// what a reconcile input can carry.
	maxEntries = 10_000
)

// Parse validates a host configuration read from path. Relative module paths
// are resolved against path's directory (the working directory when path is
// empty), and each module file must exist.
// The error, when there is one, lists every problem, one per line, each
// wrapping ErrInvalid.
func Parse(data []byte, path string) (*File, error) { return parse(data, path, Options{}) }

func parse(data []byte, path string, o Options) (*File, error) {
	name := path
	if name == "" {
		name = "host configuration"
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", name, err)
	}
	p := &parser{file: name, dir: filepath.Dir(abs), dirIs: "the configuration's directory", modulesDir: o.ModulesDir}
	if path == "" {
		p.dir, p.dirIs = abs, "the working directory"
	}
	f := p.parseFile(data)
	if err := p.err(); err != nil {
		return nil, err
	}
	if path != "" {
		f.Path = abs
	}
	return f, nil
}

var topFields = []string{"modules", "csiDrivers", "resync", "reconcileTimeout", "requireSignature", "shard", "apiQPS"}

// parseFile converts the whole document into a File.
func (p *parser) parseFile(data []byte) *File {
	f := &File{Resync: DefaultResync, ReconcileTimeout: DefaultReconcileTimeout, APIQPS: DefaultAPIQPS}
	root, ok := p.document(data)
	if !ok {
		return f
	}
	if root == nil {
		p.addf(nil, "", "names no modules; add at least one under modules:, e.g. - path: guests/retention.wasm")
		return f
	}
	vals, ok := p.fields(root, "", "a mapping with the fields modules, csiDrivers, resync, reconcileTimeout and requireSignature", topFields...)
	if !ok {
		return f
	}
	if n, ok := vals["requireSignature"]; ok {
		p.requireSignature(n)
		f.RequireSignature = p.requireKey
	}
	if n, ok := vals["modules"]; !ok {
		p.addf(root, "", "names no modules; add at least one under modules:, e.g. - path: guests/retention.wasm")
	} else if ns, ok := p.list(n, "modules", "a list of modules, each starting with - path: FILE.wasm"); ok {
		if len(ns) == 0 {
			p.addf(n, "modules", "names no modules; add at least one, e.g. - path: guests/retention.wasm")
		}
		f.Modules = p.modules(ns)
	}
	if n, ok := vals["csiDrivers"]; ok {
		if ns, ok := p.list(n, "csiDrivers", "a list of drivers, each starting with - name: DRIVER"); ok {
			f.CSIDrivers = p.csiDrivers(ns)
		}
	}
	if n, ok := vals["resync"]; ok {
		if d, ok := p.duration(n, "resync", true, "10m, or 0 to disable"); ok {
			f.Resync = d
		}
	}
	if n, ok := vals["apiQPS"]; ok {
		if v, ok := p.integer(n, "apiQPS", 1, 10000); ok {
			f.APIQPS = v
		}
	}
	if n, ok := vals["shard"]; ok {
		f.Shard = p.shard(n, "shard")
	}
	if n, ok := vals["reconcileTimeout"]; ok {
		if d, ok := p.duration(n, "reconcileTimeout", false, "30s"); ok {
			f.ReconcileTimeout = d
		}
	}
	return f
}

// document decodes data into its root node: nil for an empty file. It
// refuses a second document, which would otherwise be silently ignored.
func (p *parser) document(data []byte) (*yaml.Node, bool) {
	dec := input.NewYAMLDecoder(data, budget)
	doc, err := dec.Next()
	if errors.Is(err, io.EOF) {
		return nil, true
	}
	if doc == nil {
		p.decodeError(err)
		return nil, false
	}
	switch next, err2 := dec.Next(); {
	case next != nil:
		p.addf(next, "", "a second YAML document; put the whole configuration in one document (remove ---)")
		return nil, false
	case !errors.Is(err2, io.EOF):
		p.decodeError(err2)
		return nil, false
	}
	if err != nil {
		p.decodeError(err)
		return nil, false
	}
	return input.YAMLRoot(doc), true
}

// decodeError records what the decoder refused: text that is not YAML, or
// a document over budget, before any of it is read.
func (p *parser) decodeError(err error) {
	var se *input.YAMLSyntaxError
	if errors.As(err, &se) {
		p.problems = append(p.problems, &problem{file: p.file, line: max(se.Line, 1), msg: "not valid YAML: " + se.Msg})
		return
	}
	var ex *input.Exceeded
	if !errors.As(err, &ex) {
		p.addf(nil, "", "cannot be read: %v", err)
		return
	}
	switch ex.Limit {
	case input.LimitBytes:
		p.addf(nil, "", "has %s, more than the %s a host configuration may have; check that this is the right file, and move large guest configurations out of it",
			input.Bytes(int64(ex.Size)), input.Bytes(int64(ex.Max)))
	case input.LimitNodes:
		p.addf(ex.Node, ex.Path, "expands to more than %d values through aliases and merge keys; write the configuration out, or reuse less of it", ex.Max)
	case input.LimitDepth:
		p.addf(ex.Node, ex.Path, "nested more than %d levels deep; does an alias refer to the node that contains it?", ex.Max)
	case input.LimitScalar:
		p.addf(ex.Node, ex.Path, "a value of %s, more than the %s one may have: %s",
			input.Bytes(int64(len(ex.Node.Value))), input.Bytes(int64(ex.Max)), input.Quote(ex.Node.Value))
	case input.LimitEntries:
		p.addf(ex.Node, ex.Path, "has more than %d entries; a host configuration needs far fewer (leave namespaces out to watch them all)", ex.Max)
	}
}
