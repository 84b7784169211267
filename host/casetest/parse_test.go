package casetest_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/casetest"
)

const goodFile = `# two cases
name: first
config: {whenScaled: Delete, n: 3}
objects:
- apiVersion: apps/v1
  kind: StatefulSet
  metadata: {name: web}
  spec: {replicas: 2}
- {apiVersion: v1, kind: PersistentVolume, metadata: {name: pv-1}}
expect:
  present:
  - {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data-web-0}}
  absent:
  - {kind: PersistentVolumeClaim, name: data-web-1}
  - {apiVersion: v1, kind: PersistentVolume, name: pv-2}
  volumeDeletes:
  - {driver: csi.example.com, volumeHandle: vol-1}
  events:
  - {type: Warning, involvedObject: {kind: StatefulSet, name: web}}
  noActions: true
---
---
name: second
now: 2026-03-04T05:06:07Z
`

func TestParse(t *testing.T) {
	f, err := casetest.Parse("cases.yaml", []byte(goodFile))
	require.NoError(t, err)
	require.Equal(t, "cases.yaml", f.Path)
	require.Len(t, f.Cases, 2, "empty documents are skipped")

	first := f.Cases[0]
	require.Equal(t, "first", first.Name)
	require.Equal(t, "cases.yaml", first.File)
	require.Equal(t, 2, first.Line)
	require.Equal(t, casetest.DefaultNow, first.Now)
	require.JSONEq(t, `{"whenScaled":"Delete","n":3}`, string(first.Config))
	require.Len(t, first.Objects, 2)
	require.Equal(t, map[string]any{"name": "web", "namespace": "default"}, first.Objects[0]["metadata"], "namespaced objects default to the default namespace")
	require.Equal(t, map[string]any{"replicas": int64(2)}, first.Objects[0]["spec"])
	require.Equal(t, map[string]any{"name": "pv-1"}, first.Objects[1]["metadata"])

	e := first.Expect
	require.Equal(t, "default", e.Present[0]["metadata"].(map[string]any)["namespace"])
	require.Equal(t, []casetest.ObjectKey{
		{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: "default", Name: "data-web-1"},
		{APIVersion: "v1", Kind: "PersistentVolume", Name: "pv-2"},
	}, e.Absent)
	require.Equal(t, []map[string]any{{"driver": "csi.example.com", "volumeHandle": "vol-1"}}, e.VolumeDeletes)
	require.Equal(t, []map[string]any{{"type": "Warning", "involvedObject": map[string]any{"kind": "StatefulSet", "name": "web"}}}, e.Events)
	require.True(t, e.NoActions)

	second := f.Cases[1]
	require.Equal(t, time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), second.Now)
	require.Nil(t, second.Config, "no config is no configuration, not {}")
	require.Equal(t, 23, second.Line)
}

func TestParseErrors(t *testing.T) {
	const obj = "objects:\n- {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: a}}\n"
	tests := []struct {
		name string
		file string
		line int
		msg  string
	}{
		{"bad YAML", "name: x\nobjects:\n- {a: b\n", 3, "invalid YAML: did not find expected ',' or '}'"},
		{"bad list", "name: x\nobjects:\n  - a\n - b\n", 4, "invalid YAML: did not find expected key"},
		{"tab", "name: x\n\tobjects: []\n", 2, "invalid YAML: found a tab character"},
		{"bad indentation", "name: x\n  objects: []\n", 2, "invalid YAML: mapping values are not allowed in this context"},
		{"not a mapping", "- a\n", 1, "a case must be a mapping with fields name, now, config, objects, admit, expect"},
		{"unknown field", "name: x\nobject: []\n", 2, `unknown field "object" in a case: known fields are name, now, config, objects, admit, expect`},
		{"no name", "objects: []\n", 1, "case has no name"},
		{"duplicate field", "name: x\nname: y\n", 2, `field "name" appears twice`},
		{"duplicate case", "name: x\n---\nname: x\n", 3, `case name "x" is used twice (first at line 1)`},
		{"bad now", "name: x\nnow: yesterday\n", 2, `now: "yesterday" is not an RFC 3339 time`},
		{"objects not a list", "name: x\nobjects: {a: b}\n", 2, "objects must be a list"},
		{"unknown kind", "name: x\nobjects:\n- apiVersion: v1\n  kind: Service\n  metadata: {name: a}\n", 4,
			`unknown kind "Service": known kinds are PersistentVolume (v1), PersistentVolumeClaim (v1), Pod (v1), StatefulSet (apps/v1), StorageClass (storage.k8s.io/v1), VolumeClaimUpdate (kubeplug.dev/v1alpha1)`},
		{"wrong apiVersion", "name: x\nobjects:\n- {apiVersion: v1, kind: StatefulSet, metadata: {name: a}}\n", 3, `StatefulSet has apiVersion apps/v1, not "v1"`},
		{"no kind", "name: x\nobjects:\n- {apiVersion: v1, metadata: {name: a}}\n", 3, "objects: object has no kind"},
		{"missing metadata.name", "name: x\nobjects:\n- {apiVersion: v1, kind: Pod, metadata: {namespace: a}}\n", 3, "objects: Pod has no metadata.name"},
		{"namespaced PV", "name: x\nobjects:\n- {apiVersion: v1, kind: PersistentVolume, metadata: {name: a, namespace: b}}\n", 3, `PersistentVolume a is cluster-scoped: remove its namespace "b"`},
		{"duplicate object", "name: x\n" + obj + "- {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: a, namespace: default}}\n", 4,
			"PersistentVolumeClaim default/a is listed twice (first at line 3)"},
		{"schema", "name: x\nobjects:\n- {apiVersion: apps/v1, kind: StatefulSet, metadata: {name: a}, spec: {replicas: three}}\n", 3,
			"StatefulSet default/a does not fit the StatefulSet schema"},
		{"unknown expect field", "name: x\nexpect:\n  presnt: []\n", 3, `unknown field "presnt" in expect: known fields are present, absent, volumeDeletes, events, noActions`},
		{"unknown kind in present", "name: x\nexpect:\n  present:\n  - {apiVersion: v1, kind: Node, metadata: {name: a}}\n", 4, `unknown kind "Node"`},
		{"unknown absent field", "name: x\nexpect:\n  absent:\n  - {kind: Pod, name: a, uid: x}\n", 4, `unknown field "uid" in an absent entry`},
		{"absent without name", "name: x\nexpect:\n  absent:\n  - {kind: Pod}\n", 4, "an absent entry needs kind and name"},
		{"unknown volumeDeletes field", "name: x\nexpect:\n  volumeDeletes:\n  - {handle: a}\n", 4, `unknown field "handle" in an item of volumeDeletes: known fields are driver, volumeHandle`},
		{"unknown involvedObject field", "name: x\nexpect:\n  events:\n  - involvedObject:\n      uid: a\n", 5, `unknown field "uid" in involvedObject: known fields are kind, namespace, name`},
		{"noActions not a bool", "name: x\nexpect:\n  noActions: yes please\n", 3, "noActions must be true or false"},
		{"empty file", "# nothing\n", 0, "no cases: the file has no YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := casetest.Parse("c.yaml", []byte(tt.file))
			var ie *casetest.InputError
			require.True(t, errors.As(err, &ie), "want an *InputError, got %v", err)
			require.Equal(t, "c.yaml", ie.File)
			require.Contains(t, ie.Msg, tt.msg)
			require.Equal(t, tt.line, ie.Line, "error: %v", err)
		})
	}
}

func TestInputErrorFormat(t *testing.T) {
	require.Equal(t, "a.yaml:3: bad", (&casetest.InputError{File: "a.yaml", Line: 3, Msg: "bad"}).Error())
	require.Equal(t, "a.yaml: bad", (&casetest.InputError{File: "a.yaml", Msg: "bad"}).Error())
}

func TestLoadPaths(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) string {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	b := write("cases/b.yaml", "name: b\n")
	a := write("cases/sub/a.yml", "name: a\n")
	write("cases/README.md", "not a case")
	other := write("other.txt", "name: other\n")

	files, err := casetest.LoadPaths([]string{filepath.Join(dir, "cases"), other, b})
	require.NoError(t, err)
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path)
	}
	require.Equal(t, []string{b, a, other}, paths, "directories in lexical order, explicit files whatever their name, each once")

	t.Run("missing path", func(t *testing.T) {
		_, err := casetest.LoadPaths([]string{filepath.Join(dir, "nope")})
		var ie *casetest.InputError
		require.ErrorAs(t, err, &ie)
		require.Contains(t, ie.Msg, "no such file or directory")
	})
	t.Run("no case files", func(t *testing.T) {
		empty := filepath.Join(dir, "empty")
		require.NoError(t, os.Mkdir(empty, 0o755))
		_, err := casetest.LoadPaths([]string{empty})
		require.EqualError(t, err, empty+": no case files (*.yaml, *.yml) in this directory")
	})
	t.Run("parse error names the file", func(t *testing.T) {
		bad := write("bad/x.yaml", "name: x\nfoo: 1\n")
		_, err := casetest.LoadPaths([]string{filepath.Dir(bad)})
		require.ErrorContains(t, err, bad+":2: unknown field \"foo\"")
	})
}
