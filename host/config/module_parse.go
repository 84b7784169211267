package config

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubeplug/kubeplug/abi"

	"github.com/kubeplug/kubeplug/host/internal/input"
)

var (
	// entryFields are the fields of a module entry other than its
	// source's (see sourceKind) and compareWith (see moduleFields).
	entryFields = []string{"name", "sha256", "subject", "namespaces", "labelSelector", "config", "mode", "workers", "limits", "allow", "admission"}
	limitFields = []string{"memory", "timeout", "instances", "maxOutput", "maxActions", "maxTableElements"}
)

// Bounds of a module's settings.
const (
	maxWorkers   = 64
	maxInstances = 256
	// maxActions and maxTableElements bound what an operator may allow: a
	// million actions is more than one reconcile can carry out, and
	// 100,000,000 table elements cost 800 MB per instance.
	maxActions       = 1_000_000
	maxTableElements = 100_000_000
	maxBytes         = 4 << 30 // what a wasm32 memory can address
)

// modules converts the entries under modules: and checks that their names
// are unique.
func (p *parser) modules(ns []*yaml.Node) []Module {
	out := make([]Module, 0, len(ns))
	first := map[string]int{} // name -> index of the first module with it
	for i, n := range ns {
		field := index("modules", i)
		m, nameAt := p.module(n, field)
		if m.Name != "" {
			if j, dup := first[m.Name]; dup {
				p.addf(nameAt, join(field, "name"), "%q is also the name of modules[%d]; give each module its own name", m.Name, j)
			} else {
				first[m.Name] = i
			}
		}
		if m.Name == CompareCluster {
			p.addf(nameAt, join(field, "name"), "%q is kept for a shadow module's comparison with the cluster (metrics label compare_with=%q); give the module another name, e.g. name: %s-policy",
				m.Name, CompareCluster, m.Name)
		}
		out = append(out, m)
	}
	for i, n := range ns {
		if out[i].CompareWith != "" {
			p.compareWith(out, i, valueOf(n, "compareWith"), index("modules", i))
		}
	}
	return out
}

// CompareCluster is what a shadow module without compareWith is compared
// with, and its compare_with label in the shadow metrics
// (controller.CompareCluster): no entry may have this name.
const CompareCluster = "cluster"

// compareWith checks the compareWith of mods[i]: a shadow entry naming
// another entry, one that enforces, of the same subject.
func (p *parser) compareWith(mods []Module, i int, n *yaml.Node, field string) {
	m, field := &mods[i], join(field, "compareWith")
	if m.Mode != ModeShadow {
		p.addf(n, field, "is only for mode: shadow entries, which are compared with the module they name; set mode: shadow or remove compareWith")
		return
	}
	if len(m.Namespaces) > 0 || !m.LabelSelector.Empty() {
		p.addf(n, field, "a compared module reconciles the subjects of the module it names, so namespaces and labelSelector do not apply; remove them")
	}
	j := slices.IndexFunc(mods, func(o Module) bool { return o.Name == m.CompareWith })
	switch {
	case m.CompareWith == CompareCluster:
		p.addf(n, field, "remove compareWith: a shadow module without it is compared with the cluster")
	case m.CompareWith == m.Name:
		p.addf(n, field, "names this module itself; name the enforcing module to compare with")
	case j < 0:
		p.addf(n, field, "%q names no module of this file; name the enforcing module to compare with", m.CompareWith)
	case mods[j].Mode != ModeEnforce:
		p.addf(n, field, "%q is in %s mode; compareWith must name a module in enforce mode, whose decisions this one is compared with", m.CompareWith, mods[j].Mode)
	case m.Subject != "" && mods[j].Subject != "" && m.Subject != mods[j].Subject:
		p.addf(n, field, "%q reconciles %s and this module %s; compareWith must name a module of the same subject", m.CompareWith, mods[j].Subject, m.Subject)
	}
}

// valueOf returns the value of key in the mapping n, or n when it has none.
func valueOf(n *yaml.Node, key string) *yaml.Node {
	n = deref(n)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return n
}

// module converts one entry under modules:. nameAt is the node the name came
// from (the name, or the path it defaults from), for messages about it.
func (p *parser) module(n *yaml.Node, field string) (m Module, nameAt *yaml.Node) {
	m = Module{Mode: ModeEnforce, Workers: DefaultWorkers, LabelSelector: labels.Everything()}
	vals, ok := p.fields(n, field, "a module: a mapping with at least path: FILE.wasm", moduleFields()...)
	if !ok {
		return m, n
	}
	nameAt = n
	given, at := p.source(n, vals, field, &m) // the path as written, or the image's repository
	if at != nil {
		nameAt = at
	}
	if v, ok := vals["name"]; ok {
		nameAt = v
		if s, ok := p.scalar(v, join(field, "name"), "retention"); ok {
			if !isLabel(s) {
				p.addf(v, join(field, "name"), "%s is not a valid name (%s); use e.g. %s", input.Quote(s), labelRule, labelLike(s))
			} else {
				m.Name = s
			}
		}
	} else if given != "" {
		s := strings.TrimSuffix(filepath.Base(given), ".wasm")
		if !isLabel(s) {
			p.addf(nameAt, join(field, "name"), "the file name gives the name %s, which is not valid (%s); set one, e.g. name: %s",
				input.Quote(s), labelRule, labelLike(s))
		} else {
			m.Name = s
		}
	}
	if v, ok := vals["sha256"]; ok {
		m.SHA256 = p.digest(v, join(field, "sha256"))
		m.pinnedAt = fmt.Sprintf("%s:%d (%s)", p.file, v.Line, join(field, "sha256"))
	}
	if v, ok := vals["subject"]; ok {
		if s, ok := p.scalar(v, join(field, "subject"), abi.SubjectStatefulSet); ok {
			if slices.Contains(abi.Subjects(), s) {
				m.Subject = s
			} else {
				p.addf(v, join(field, "subject"), "%s is not a subject; use %s", input.Quote(s), strings.Join(abi.Subjects(), " or "))
			}
		}
	}
	if v, ok := vals["namespaces"]; ok {
		m.Namespaces = p.namespaces(v, join(field, "namespaces"))
		if info, ok := abi.Subject(m.Subject).Info(); ok && len(m.Namespaces) > 0 && !info.Resource().Namespaced {
			p.addf(v, join(field, "namespaces"), "%s is cluster-scoped, so namespaces do not apply; remove namespaces (use labelSelector to choose %s)", m.Subject, info.Resource().Resource)
			m.Namespaces = nil
		}
	}
	if v, ok := vals["labelSelector"]; ok {
		if sel := p.selector(v, join(field, "labelSelector")); sel != nil {
			m.LabelSelector = sel
		}
	}
	if v, ok := vals["config"]; ok {
		m.Config = p.guestConfig(v, join(field, "config"))
	}
	if v, ok := vals["mode"]; ok {
		if s, ok := p.scalar(v, join(field, "mode"), string(ModeEnforce)); ok {
			switch Mode(s) {
			case ModeEnforce, ModeShadow:
				m.Mode = Mode(s)
			default:
				p.addf(v, join(field, "mode"), "%s is not a mode; use enforce (carry out the module's actions) or shadow (record them only)", input.Quote(s))
			}
		}
	}
	if v, ok := vals["workers"]; ok {
		if w, ok := p.integer(v, join(field, "workers"), 1, maxWorkers); ok {
			m.Workers = w
		}
	}
	if v, ok := vals["limits"]; ok {
		p.limits(v, join(field, "limits"), &m)
	}
	if v, ok := vals["allow"]; ok {
		m.Allow = p.allow(v, join(field, "allow"))
	}
	if v, ok := vals["admission"]; ok {
		p.admission(v, join(field, "admission"), &m)
	}
	if v, ok := vals["compareWith"]; ok {
		if s, ok := p.scalar(v, join(field, "compareWith"), "retention"); ok {
			if !isLabel(s) {
				p.addf(v, join(field, "compareWith"), "%s is not a module name (%s)", input.Quote(s), labelRule)
			} else {
				m.CompareWith = s
			}
		}
	}
	m.definedAt = fmt.Sprintf("%s:%d (%s)", p.file, n.Line, field)
	return m, nameAt
}

// modulePath resolves a module path against the configuration's directory
// and checks that it names a file.
func (p *parser) modulePath(n *yaml.Node, field, given string) string {
	k := fileKind{
		empty: "the module's file, e.g. guests/retention.wasm", noun: "module file ", fix: "build the module or fix the path",
		what: "module file", dir: "the module's .wasm file",
	}
	if rel, ok := strings.CutPrefix(filepath.Clean(given), ImageModulesDir+"/"); ok && p.modulesDir != "" {
		given = filepath.Join(p.modulesDir, rel)
		k.noun = fmt.Sprintf("the image's %s/%s, read from the modules directory as ", ImageModulesDir, rel)
		k.fix = "build the modules (make guests) or name the directory they are in"
	}
	path, _ := p.checkFile(n, field, given, k)
	return path
}

// fileKind completes the messages of parser.checkFile.
type fileKind struct {
	empty string // what to name instead of nothing
	noun  string // before the path in "... does not exist"
	fix   string // what to do when it does not exist
	what  string // the file, after "cannot use"
	dir   string // what to name instead of a directory
}

// checkFile resolves a path against the configuration's directory and checks
// that it names a file. It returns the resolved path, and whether it is
// usable.
func (p *parser) checkFile(n *yaml.Node, field, given string, k fileKind) (string, bool) {
	if given == "" {
		p.addf(n, field, "is empty; name %s", k.empty)
		return "", false
	}
	path := filepath.Clean(given)
	resolved := ""
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.dir, path)
		resolved = fmt.Sprintf(" (relative paths start from %s %s)", p.dirIs, p.dir)
	}
	switch info, err := os.Stat(path); {
	case errors.Is(err, os.ErrNotExist):
		p.addf(n, field, "%s%s does not exist%s; %s", k.noun, path, resolved, k.fix)
	case err != nil:
		p.addf(n, field, "cannot use %s: %v", k.what, err)
	case info.IsDir():
		p.addf(n, field, "%s is a directory; name %s", path, k.dir)
	case !info.Mode().IsRegular():
		p.addf(n, field, "%s is %s, which the host does not read; name %s", path, input.Kind(info.Mode()), k.dir)
	default:
		return path, true
	}
	return path, false
}

// digest returns a sha256 pin in lower case.
func (p *parser) digest(n *yaml.Node, field string) string {
	s, ok := p.scalar(n, field, "the 64 hex characters sha256sum prints")
	if !ok {
		return ""
	}
	if b, err := hex.DecodeString(s); err != nil || len(b) != 32 {
		hint := "use the 64 hex characters that sha256sum prints for the file"
		if strings.HasPrefix(s, "sha256:") {
			hint = "drop the sha256: prefix"
		}
		p.addf(n, field, "%s is not a sha256 digest; %s", input.Quote(s), hint)
		return ""
	}
	return strings.ToLower(s)
}

// selector parses a label selector; nil when it is empty or invalid.
func (p *parser) selector(n *yaml.Node, field string) labels.Selector {
	s, ok := p.scalar(n, field, `"app=web"`)
	if !ok || strings.TrimSpace(s) == "" {
		return nil
	}
	sel, err := labels.Parse(s)
	if err != nil {
		p.addf(n, field, "%s is not a label selector (%v); use e.g. \"app=web,tier in (db,cache)\"", input.Quote(s), err)
		return nil
	}
	return sel
}

// namespaces returns a list of namespace names, each valid and listed once.
func (p *parser) namespaces(n *yaml.Node, field string) []string {
	ns, ok := p.list(n, field, "a list of namespace names, e.g. [default, prod]")
	if !ok {
		return nil
	}
	var out []string
	seen := make(map[string]bool, len(ns)) // a million names are checked in one pass
	for i, e := range ns {
		f := index(field, i)
		s, ok := p.scalar(e, f, "default")
		if !ok {
			continue
		}
		switch {
		case !isLabel(s):
			p.addf(e, f, "%s is not a namespace name (%s)", input.Quote(s), labelRule)
		case seen[s]:
			p.addf(e, f, "%s is listed twice; keep one", input.Quote(s))
		default:
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// limits converts a module's limits: into m.Limits.
func (p *parser) limits(n *yaml.Node, field string, m *Module) {
	vals, ok := p.fields(n, field, "a mapping with any of "+strings.Join(limitFields, ", "), limitFields...)
	if !ok {
		return
	}
	if v, ok := vals["memory"]; ok {
		if b, ok := p.byteSize(v, join(field, "memory"), maxBytes, "64Mi"); ok {
			m.Limits.MemoryBytes = uint64(b)
		}
	}
	if v, ok := vals["timeout"]; ok {
		if d, ok := p.duration(v, join(field, "timeout"), false, "500ms"); ok {
			m.Limits.Deadline = d
		}
	}
	if v, ok := vals["instances"]; ok {
		if i, ok := p.integer(v, join(field, "instances"), 1, maxInstances); ok {
			m.Limits.Instances = i
		}
	}
	if v, ok := vals["maxOutput"]; ok {
		if b, ok := p.byteSize(v, join(field, "maxOutput"), maxBytes, "1Mi"); ok {
			m.Limits.MaxOutputBytes = int(b)
		}
	}
	if v, ok := vals["maxActions"]; ok {
		if i, ok := p.integer(v, join(field, "maxActions"), 1, maxActions); ok {
			m.Limits.MaxActions = i
		}
	}
	if v, ok := vals["maxTableElements"]; ok {
		if i, ok := p.integer(v, join(field, "maxTableElements"), 1, maxTableElements); ok {
			m.Limits.MaxTableElements = uint32(i)
		}
	}
}

// labelRule says what isLabel accepts.
const labelRule = "at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit"

// isLabel reports whether s is a DNS label (RFC 1123), the syntax of
// namespace names and so of module names, which appear in metrics and events.
func isLabel(s string) bool { return len(validation.IsDNS1123Label(s)) == 0 }

// labelLike turns s into a similar DNS label, to suggest in messages.
func labelLike(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			b[i] = '-'
		}
	}
	out := strings.Trim(string(b), "-")
	if len(out) > validation.DNS1123LabelMaxLength {
		out = strings.Trim(out[:validation.DNS1123LabelMaxLength], "-")
	}
	if out == "" {
		return "my-module"
	}
	return out
}

var admissionFields = []string{"failurePolicy", "timeout"}

// admission converts a module's admission: block, the webhook settings of
// a module with an admit hook.
func (p *parser) admission(n *yaml.Node, field string, m *Module) {
	vals, ok := p.fields(n, field, "the module's webhook settings: {failurePolicy: Fail, timeout: 5s}", admissionFields...)
	if !ok {
		return
	}
	if v, ok := vals["failurePolicy"]; ok {
		if s, ok := p.scalar(v, join(field, "failurePolicy"), FailurePolicyFail); ok {
			switch s {
			case FailurePolicyFail, FailurePolicyIgnore:
				m.FailurePolicy = s
			default:
				p.addf(v, join(field, "failurePolicy"), "%q is not a failure policy; use Fail (deny a request when the module fails) or Ignore (allow it)", s)
			}
		}
	}
	if v, ok := vals["timeout"]; ok {
		if d, ok := p.duration(v, join(field, "timeout"), false, "5s"); ok {
			if d%time.Second != 0 || d < time.Second || d > 30*time.Second {
				p.addf(v, join(field, "timeout"), "%s is not a webhook timeout; the API server takes whole seconds from 1s to 30s", d)
			} else {
				m.WebhookTimeout = d
			}
		}
	}
}
