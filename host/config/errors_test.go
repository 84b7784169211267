package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/config"
)

// TestLoadRefuses checks that each bad file is refused with a message that
// names the line, the field and what to write instead. DIR in a wanted
// string stands for the file's directory.
func TestLoadRefuses(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"empty file", "", []string{"host.yaml:1: names no modules; add at least one under modules:"}},
		{"only comments", "# nothing yet\n", []string{"host.yaml:1: names no modules; add at least one under modules:"}},
		{"no modules field", "resync: 1m\n", []string{"host.yaml:1: names no modules; add at least one under modules:"}},
		{"empty modules", "resync: 1m\nmodules: []\n", []string{"host.yaml:2: modules: names no modules; add at least one"}},
		{"null modules", "modules:\n", []string{"host.yaml:1: names no modules"}},
		{"unclosed list", "modules:\n- path: [guests/m.wasm\n", []string{"host.yaml:2: not valid YAML: did not find expected ',' or ']'"}},
		{"unclosed quote", "modules:\n- path: guests/m.wasm\n  name: 'x\n", []string{"host.yaml:3: not valid YAML: found unexpected end of stream"}},
		{"bad indentation", "modules:\n- path: guests/m.wasm\n  name: x\n bad: 1\n", []string{"host.yaml:4: not valid YAML: did not find expected key"}},
		{"not YAML on line 1", "modules: a: b\n", []string{"host.yaml:1: not valid YAML: mapping values are not allowed"}},
		{"unknown anchor", "modules:\n- path: guests/m.wasm\n  config: *defaults\n", []string{"host.yaml:3: not valid YAML: alias *defaults names no anchor; define &defaults"}},
		{"second document", "modules:\n- path: guests/m.wasm\n---\nresync: 1m\n", []string{"host.yaml:3: a second YAML document; put the whole configuration in one document"}},
		{"top level is a list", "- path: guests/m.wasm\n", []string{"host.yaml:1: must be a mapping with the fields modules, csiDrivers, resync, reconcileTimeout and requireSignature; got a list"}},
		{"unknown top-level field", "module:\n- path: guests/m.wasm\n", []string{"host.yaml:1: module: unknown field; did you mean modules?"}},
		{"modules is a string", "modules: guests/m.wasm\n", []string{"host.yaml:1: modules: must be a list of modules", `got the string "guests/m.wasm"`}},
		{"module is a string", "modules:\n- guests/m.wasm\n", []string{"host.yaml:2: modules[0]: must be a module: a mapping with at least path: FILE.wasm"}},
		{"unknown module field", "modules:\n- path: guests/m.wasm\n  nmae: m\n", []string{"host.yaml:3: modules[0].nmae: unknown field; did you mean name?"}},
		{"field case", "modules:\n- path: guests/m.wasm\n  labelselector: app=web\n", []string{"host.yaml:3: modules[0].labelselector: unknown field; did you mean labelSelector?"}},
		{"repeated field", "modules:\n- path: guests/m.wasm\n  name: a\n  name: b\n", []string{"host.yaml:4: modules[0].name: repeated (first at line 3); keep one"}},
		{"missing path", "modules:\n- name: m\n", []string{"host.yaml:2: modules[0]: path is missing; name the module's file"}},
		{"empty path", "modules:\n- path: ''\n  name: m\n", []string{"host.yaml:2: modules[0].path: is empty"}},
		{"path is a list", "modules:\n- path: [a.wasm]\n", []string{"host.yaml:2: modules[0].path: must be a single value, e.g. guests/retention.wasm; got a list"}},
		{"missing module file", "modules:\n- path: guests/m.wasm\n- path: guests/nope.wasm\n", []string{"host.yaml:3: modules[1].path: module file DIR/guests/nope.wasm does not exist (relative paths start from the configuration's directory DIR); build the module or fix the path"}},
		{"module path is a directory", "modules:\n- path: guests\n", []string{"host.yaml:2: modules[0].path: DIR/guests is a directory; name the module's .wasm file"}},
		{"bad name", "modules:\n- path: guests/m.wasm\n  name: My_Mod\n", []string{`host.yaml:3: modules[0].name: "My_Mod" is not a valid name (at most 63 lower-case letters`, "use e.g. my-mod"}},
		{"name too long", "modules:\n- path: guests/m.wasm\n  name: " + strings.Repeat("a", 64) + "\n", []string{"host.yaml:3: modules[0].name: ", "is not a valid name"}},
		{"bad default name", "modules:\n- path: guests/M_1.wasm\n", []string{"host.yaml:2: modules[0].name: the file name gives the name \"M_1\", which is not valid", "set one, e.g. name: m-1"}},
		{"duplicate names", "modules:\n- path: guests/m.wasm\n  name: x\n- path: guests/n.wasm\n  name: x\n", []string{`host.yaml:5: modules[1].name: "x" is also the name of modules[0]; give each module its own name`}},
		{"duplicate default names", "modules:\n- path: guests/m.wasm\n- path: ./guests/m.wasm\n", []string{`host.yaml:3: modules[1].name: "m" is also the name of modules[0]`}},
		{"short sha256", "modules:\n- path: guests/m.wasm\n  sha256: 3f1c\n", []string{`host.yaml:3: modules[0].sha256: "3f1c" is not a sha256 digest; use the 64 hex characters that sha256sum prints`}},
		{"sha256 not hex", "modules:\n- path: guests/m.wasm\n  sha256: " + strings.Repeat("g", 64) + "\n", []string{"host.yaml:3: modules[0].sha256: ", "is not a sha256 digest"}},
		{"sha256 prefix", "modules:\n- path: guests/m.wasm\n  sha256: sha256:" + strings.Repeat("a", 64) + "\n", []string{"host.yaml:3: modules[0].sha256: ", "drop the sha256: prefix"}},
		{"bad subject", "modules:\n- path: guests/m.wasm\n  subject: deployment\n", []string{`host.yaml:3: modules[0].subject: "deployment" is not a subject; use statefulset or persistentvolume`}},
		{"namespaces on persistentvolume", "modules:\n- path: guests/m.wasm\n  subject: persistentvolume\n  namespaces: [default]\n", []string{"host.yaml:4: modules[0].namespaces: persistentvolume is cluster-scoped, so namespaces do not apply; remove namespaces"}},
		{"namespaces is a string", "modules:\n- path: guests/m.wasm\n  namespaces: default\n", []string{"host.yaml:3: modules[0].namespaces: must be a list of namespace names, e.g. [default, prod]"}},
		{"bad namespace", "modules:\n- path: guests/m.wasm\n  namespaces:\n  - default\n  - Prod\n", []string{`host.yaml:5: modules[0].namespaces[1]: "Prod" is not a namespace name (at most 63 lower-case letters`}},
		{"repeated namespace", "modules:\n- path: guests/m.wasm\n  namespaces: [a, b, a]\n", []string{`host.yaml:3: modules[0].namespaces[2]: "a" is listed twice; keep one`}},
		{"bad selector", "modules:\n- path: guests/m.wasm\n  labelSelector: \"tier in (db\"\n", []string{`host.yaml:3: modules[0].labelSelector: "tier in (db" is not a label selector`, `use e.g. "app=web,tier in (db,cache)"`}},
		{"bad mode", "modules:\n- path: guests/m.wasm\n  mode: dryrun\n", []string{`host.yaml:3: modules[0].mode: "dryrun" is not a mode; use enforce (carry out the module's actions) or shadow (record them only)`}},
		{"compareWith on an enforce entry", "modules:\n- path: guests/m.wasm\n- path: guests/n.wasm\n  compareWith: m\n", []string{"host.yaml:4: modules[1].compareWith: is only for mode: shadow entries"}},
		{"compareWith names nothing", "modules:\n- path: guests/m.wasm\n- path: guests/n.wasm\n  mode: shadow\n  compareWith: retention\n", []string{`host.yaml:5: modules[1].compareWith: "retention" names no module of this file`}},
		{"compareWith names itself", "modules:\n- path: guests/m.wasm\n  mode: shadow\n  compareWith: m\n", []string{"host.yaml:4: modules[0].compareWith: names this module itself"}},
		{"compareWith names a shadow", "modules:\n- path: guests/m.wasm\n  mode: shadow\n- path: guests/n.wasm\n  mode: shadow\n  compareWith: m\n", []string{`host.yaml:6: modules[1].compareWith: "m" is in shadow mode; compareWith must name a module in enforce mode`}},
		{"compareWith another subject", "modules:\n- path: guests/m.wasm\n  subject: statefulset\n- path: guests/n.wasm\n  subject: persistentvolume\n  mode: shadow\n  compareWith: m\n", []string{`host.yaml:7: modules[1].compareWith: "m" reconciles statefulset and this module persistentvolume`}},
		{"compareWith the cluster", "modules:\n- path: guests/m.wasm\n  mode: shadow\n  compareWith: cluster\n", []string{"host.yaml:4: modules[0].compareWith: remove compareWith: a shadow module without it is compared with the cluster"}},
		{"the name cluster", "modules:\n- path: guests/m.wasm\n  name: cluster\n", []string{`host.yaml:3: modules[0].name: "cluster" is kept for a shadow module's comparison with the cluster`, "e.g. name: cluster-policy"}},
		{"compareWith with namespaces", "modules:\n- path: guests/m.wasm\n- path: guests/n.wasm\n  mode: shadow\n  namespaces: [a]\n  compareWith: m\n", []string{"host.yaml:6: modules[1].compareWith: a compared module reconciles the subjects of the module it names"}},
		{"workers zero", "modules:\n- path: guests/m.wasm\n  workers: 0\n", []string{"host.yaml:3: modules[0].workers: 0 is out of range; use a whole number from 1 to 64"}},
		{"workers too many", "modules:\n- path: guests/m.wasm\n  workers: 65\n", []string{"host.yaml:3: modules[0].workers: 65 is out of range; use a whole number from 1 to 64"}},
		{"workers quoted", "modules:\n- path: guests/m.wasm\n  workers: \"2\"\n", []string{`host.yaml:3: modules[0].workers: must be a whole number from 1 to 64; got the string "2"`}},
		{"workers fraction", "modules:\n- path: guests/m.wasm\n  workers: 1.5\n", []string{"host.yaml:3: modules[0].workers: must be a whole number from 1 to 64; got the number 1.5"}},
		{"limits is a list", "modules:\n- path: guests/m.wasm\n  limits: [64Mi]\n", []string{"host.yaml:3: modules[0].limits: must be a mapping with any of memory, timeout, instances, maxOutput, maxActions, maxTableElements; got a list"}},
		{"unknown limit", "modules:\n- path: guests/m.wasm\n  limits:\n    cpu: 1\n", []string{"host.yaml:4: modules[0].limits.cpu: unknown field; the fields here are memory, timeout, instances, maxOutput, maxActions, maxTableElements"}},
		{"memory not a quantity", "modules:\n- path: guests/m.wasm\n  limits:\n    memory: 64Q\n", []string{`host.yaml:4: modules[0].limits.memory: "64Q" is not a quantity; use e.g. 64Mi`}},
		{"memory too large", "modules:\n- path: guests/m.wasm\n  limits:\n    memory: 5Gi\n", []string{"host.yaml:4: modules[0].limits.memory: 5Gi is more than 4Gi; use e.g. 64Mi"}},
		{"memory zero", "modules:\n- path: guests/m.wasm\n  limits:\n    memory: 0\n", []string{"host.yaml:4: modules[0].limits.memory: 0 must be more than 0 bytes; use e.g. 64Mi"}},
		{"memory negative", "modules:\n- path: guests/m.wasm\n  limits:\n    memory: -1Mi\n", []string{"host.yaml:4: modules[0].limits.memory: -1Mi must be more than 0 bytes"}},
		{"memory fraction", "modules:\n- path: guests/m.wasm\n  limits:\n    memory: 500m\n", []string{"host.yaml:4: modules[0].limits.memory: 500m is not a whole number of bytes; use e.g. 64Mi"}},
		{"timeout without unit", "modules:\n- path: guests/m.wasm\n  limits:\n    timeout: 5\n", []string{`host.yaml:4: modules[0].limits.timeout: "5" is not a duration; use e.g. 500ms (units: ms, s, m, h)`}},
		{"timeout zero", "modules:\n- path: guests/m.wasm\n  limits:\n    timeout: 0s\n", []string{"host.yaml:4: modules[0].limits.timeout: 0s must be more than 0; use e.g. 500ms"}},
		{"instances too many", "modules:\n- path: guests/m.wasm\n  limits:\n    instances: 257\n", []string{"host.yaml:4: modules[0].limits.instances: 257 is out of range; use a whole number from 1 to 256"}},
		{"maxActions zero", "modules:\n- path: guests/m.wasm\n  limits:\n    maxActions: 0\n", []string{"host.yaml:4: modules[0].limits.maxActions: 0 is out of range; use a whole number from 1 to 1000000"}},
		{"maxTableElements not a number", "modules:\n- path: guests/m.wasm\n  limits:\n    maxTableElements: 1Mi\n", []string{"host.yaml:4: modules[0].limits.maxTableElements: must be a whole number from 1 to 100000000; got the string \"1Mi\""}},
		{"maxTableElements too many", "modules:\n- path: guests/m.wasm\n  limits:\n    maxTableElements: 100000001\n", []string{"host.yaml:4: modules[0].limits.maxTableElements: 100000001 is out of range; use a whole number from 1 to 100000000"}},
		{"maxOutput not a quantity", "modules:\n- path: guests/m.wasm\n  limits:\n    maxOutput: lots\n", []string{`host.yaml:4: modules[0].limits.maxOutput: "lots" is not a quantity; use e.g. 1Mi`}},
		{"config infinity", "modules:\n- path: guests/m.wasm\n  config:\n    ratio: .inf\n", []string{"host.yaml:4: modules[0].config.ratio: .inf has no JSON form; use a finite number or quote it"}},
		{"config null key", "modules:\n- path: guests/m.wasm\n  config:\n    ~: 1\n", []string{"host.yaml:4: modules[0].config: a null key has no JSON form"}},
		{"config repeated key", "modules:\n- path: guests/m.wasm\n  config:\n    a: 1\n    a: 2\n", []string{"host.yaml:5: modules[0].config.a: repeated (first at line 4); keep one"}},
		{"config alias to itself", "modules:\n- path: guests/m.wasm\n  config: &loop [*loop]\n", []string{"host.yaml:3: modules[0].config", "nested more than 64 levels deep"}},
		{"config billion laughs", laughs(), []string{"modules[0].config", "expands to more than 100000 values through aliases"}},
		{"csiDrivers is a mapping", "modules:\n- path: guests/m.wasm\ncsiDrivers:\n  name: x\n", []string{"host.yaml:4: csiDrivers: must be a list of drivers, each starting with - name: DRIVER; got a mapping"}},
		{"csi driver without name", "modules:\n- path: guests/m.wasm\ncsiDrivers:\n- endpoint: /run/csi.sock\n", []string{"host.yaml:4: csiDrivers[0]: name is missing; give the driver's name as PersistentVolumes show it in spec.csi.driver"}},
		{"csi driver bad name", "modules:\n- path: guests/m.wasm\ncsiDrivers:\n- name: -x\n  endpoint: /run/csi.sock\n", []string{`host.yaml:4: csiDrivers[0].name: "-x" is not a CSI driver name`}},
		{"csi driver without endpoint", "modules:\n- path: guests/m.wasm\ncsiDrivers:\n- name: x\n", []string{"host.yaml:4: csiDrivers[0]: endpoint is missing; give the driver's controller socket, e.g. endpoint: unix:///run/csi/hostpath.sock"}},
		{"csi endpoint tcp", "modules:\n- path: guests/m.wasm\ncsiDrivers:\n- name: x\n  endpoint: tcp://127.0.0.1:10000\n", []string{`host.yaml:5: csiDrivers[0].endpoint: "tcp://127.0.0.1:10000" is not a unix socket`}},
		{"csi endpoint two slashes", "modules:\n- path: guests/m.wasm\ncsiDrivers:\n- name: x\n  endpoint: unix://run/csi.sock\n", []string{`host.yaml:5: csiDrivers[0].endpoint: "unix://run/csi.sock" has no absolute socket path; write three slashes`}},
		{"csi endpoint relative", "modules:\n- path: guests/m.wasm\ncsiDrivers:\n- name: x\n  endpoint: csi.sock\n", []string{`host.yaml:5: csiDrivers[0].endpoint: "csi.sock" is neither a unix:// URL nor an absolute socket path`}},
		{"csi timeout", "modules:\n- path: guests/m.wasm\ncsiDrivers:\n- name: x\n  endpoint: /run/csi.sock\n  timeout: soon\n", []string{`host.yaml:6: csiDrivers[0].timeout: "soon" is not a duration; use e.g. 30s`}},
		{"duplicate csi drivers", "modules:\n- path: guests/m.wasm\ncsiDrivers:\n- {name: x, endpoint: /a.sock}\n- {name: x, endpoint: /b.sock}\n", []string{`host.yaml:5: csiDrivers[1].name: "x" is listed already as csiDrivers[0]; keep one`}},
		{"resync negative", "modules:\n- path: guests/m.wasm\nresync: -1m\n", []string{"host.yaml:3: resync: -1m is negative; use e.g. 10m, or 0 to disable"}},
		{"resync not a duration", "modules:\n- path: guests/m.wasm\nresync: daily\n", []string{`host.yaml:3: resync: "daily" is not a duration; use e.g. 10m, or 0 to disable`}},
		{"merge of a scalar", "modules:\n- path: guests/m.wasm\n  <<: 3\n", []string{"host.yaml:3: modules[0]: << merges a mapping or a list of mappings; got the number 3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, dir, err := load(t, tt.yaml)
			require.Error(t, err)
			require.ErrorIs(t, err, config.ErrInvalid)
			for _, want := range tt.want {
				require.Contains(t, err.Error(), strings.ReplaceAll(want, "DIR", dir))
			}
		})
	}
}

// laughs is a configuration whose few lines of aliases expand to 10^9 values.
func laughs() string {
	var b strings.Builder
	b.WriteString("modules:\n- path: guests/m.wasm\n  config:\n    l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 8; i++ {
		b.WriteString("    l" + string(rune('0'+i)) + ": &l" + string(rune('0'+i)) + " [")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*l" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// TestLoadReportsEveryProblem checks that one run reports all problems, in
// line order, each on its own line and each matching ErrInvalid.
func TestLoadReportsEveryProblem(t *testing.T) {
	_, _, err := load(t, `modules:
- path: guests/m.wasm
  mode: loud
  workers: 100
- path: guests/m.wasm
  limits: {memory: 64Q}
resync: never
`)
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 5, err.Error())
	for i, want := range []string{
		"host.yaml:3: modules[0].mode: ",
		"host.yaml:4: modules[0].workers: ",
		`host.yaml:5: modules[1].name: "m" is also the name of modules[0]`,
		"host.yaml:6: modules[1].limits.memory: ",
		"host.yaml:7: resync: ",
	} {
		require.Contains(t, lines[i], want)
	}

	var joined interface{ Unwrap() []error }
	require.ErrorAs(t, err, &joined)
	for _, e := range joined.Unwrap() {
		require.True(t, errors.Is(e, config.ErrInvalid), "%v does not wrap ErrInvalid", e)
	}
}

// TestLoadMissingFile checks that a configuration that cannot be read says
// which.
func TestLoadMissingFile(t *testing.T) {
	_, err := config.Load("/nonexistent/host.yaml")
	require.ErrorContains(t, err, "/nonexistent/host.yaml")
}
