package abi_test

import (
	"strings"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
)

func TestParseFieldPath(t *testing.T) {
	// A qualified name as long as Kubernetes allows: a 253-byte DNS
	// prefix, "/", a 63-byte name.
	longKey := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61) + "/" + strings.Repeat("e", 63)
	for _, tc := range []struct {
		path string
		want []abi.FieldStep
		// err is in the error's text; empty when the path parses.
		err string
	}{
		{"status.phase", []abi.FieldStep{{Name: "status"}, {Name: "phase"}}, ""},
		{"metadata.labels[controller-revision-hash]", []abi.FieldStep{{Name: "metadata"}, {Name: "labels", Key: "controller-revision-hash"}}, ""},
		{"metadata.annotations[kubeplug.dev/held-partition]", []abi.FieldStep{{Name: "metadata"}, {Name: "annotations", Key: "kubeplug.dev/held-partition"}}, ""},
		{"status.conditions[type=Ready]", []abi.FieldStep{{Name: "status"}, {Name: "conditions", Match: "type", Value: "Ready"}}, ""},
		{"status.conditions[type=Ready].status", []abi.FieldStep{{Name: "status"}, {Name: "conditions", Match: "type", Value: "Ready"}, {Name: "status"}}, ""},
		{"status.volumeClaimTemplates[templateName=data].totalCapacity[storage]", []abi.FieldStep{{Name: "status"},
			{Name: "volumeClaimTemplates", Match: "templateName", Value: "data"}, {Name: "totalCapacity", Key: "storage"}}, ""},
		{"metadata.annotations[" + longKey + "]", []abi.FieldStep{{Name: "metadata"}, {Name: "annotations", Key: longKey}}, ""},
		{"parameters[ключ]", []abi.FieldStep{{Name: "parameters", Key: "ключ"}}, ""},
		{"parameters[a_b-c.d:e@f]", []abi.FieldStep{{Name: "parameters", Key: "a_b-c.d:e@f"}}, ""},
		// Names that are no field parse: the projection's check says so.
		{"", []abi.FieldStep{{}}, ""},
		{"a..b", []abi.FieldStep{{Name: "a"}, {}, {Name: "b"}}, ""},
		{"[app]", []abi.FieldStep{{Key: "app"}}, ""},

		{"metadata.labels[app", nil, `"[" at byte 15 is never closed`},
		{"metadata.labels[", nil, `"[" at byte 15 is never closed`},
		{"metadata.labels]", nil, `"]" at byte 15 closes no "["`},
		{"metadata.labels[a[b]]", nil, `"[" at byte 17 is inside brackets`},
		{"metadata.labels[a][b]", nil, `"[" at byte 18 follows "]": a step has one pair of brackets`},
		{"metadata.labels[a]b", nil, `"b" at byte 18 follows "]"`},
		{"metadata.labels[]", nil, `"[]" at byte 15 is empty`},
		{"status.conditions[=]", nil, `filter [=] at byte 17 has no field before "="`},
		{"status.conditions[=Ready]", nil, `filter [=Ready] at byte 17 has no field before "="`},
		{"status.conditions[type=]", nil, `filter [type=] at byte 17 has no value after "="`},
		{"status.conditions[type==Ready]", nil, `a second "=" at byte 23`},
		{"status.conditions[type=a=b]", nil, `a second "=" at byte 24`},
		{"metadata.labels['app']", nil, `quote at byte 16: brackets need no quotes, write "[app]"`},
		{`metadata.labels["app"]`, nil, `quote at byte 16: brackets need no quotes, write "[app]"`},
		{"metadata.labels['a\x01']", nil, `quote at byte 16: brackets need no quotes, write "[a\x01]"`},
		{`metadata.labels[a\.b]`, nil, `backslash at byte 17`},
		{"metadata.labels[a b]", nil, `' ' at byte 17: a key or value has no white space or control characters`},
		{"metadata.labels[a\tb]", nil, `'\t' at byte 17`},
		{"metadata.labels[a\u00a0b]", nil, `'\u00a0' at byte 17`},
		{"metadata.labels[a\x00]", nil, `'\x00' at byte 17`},
		{"metadata.labels[a\xffb]", nil, "byte 17 is not valid UTF-8"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			got, err := abi.ParseFieldPath(tc.path)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, %v; want an error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %+v, want %+v", got, tc.want)
				}
			}
			if back := abi.JoinFieldPath(got); back != tc.path {
				t.Errorf("JoinFieldPath gives %q back", back)
			}
		})
	}
}

// FuzzParseFieldPath: any string parses or fails, never panics; what
// parses is spelt back the same; and the manifest check of a projection
// that lists it never panics either.
func FuzzParseFieldPath(f *testing.F) {
	for _, seed := range []string{"metadata.labels[app]", "status.conditions[type=Ready].status", "metadata.labels[a[b]]",
		"status.conditions[=]", "status.volumeClaimTemplates[templateName=data].totalCapacity[storage]", "a..b[", "[x]]", "spec.volumes[name=data].claimName"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, path string) {
		steps, err := abi.ParseFieldPath(path)
		if err == nil {
			if back := abi.JoinFieldPath(steps); back != path {
				t.Fatalf("%q parses to %+v, which spells %q", path, steps, back)
			}
			for _, s := range steps {
				if s.Key != "" && s.Match != "" || s.Match == "" && s.Value != "" {
					t.Fatalf("%q: step %+v has a key and a filter", path, s)
				}
			}
		}
		for _, kind := range []string{abi.KindPod, abi.KindPersistentVolumeClaim} {
			m := projected(abi.ObjectFields{Kind: kind, Fields: []string{path, "status.conditions[type=Ready].status"}})
			_ = m.Validate(abi.Current)
		}
	})
}
