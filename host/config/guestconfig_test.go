package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGuestConfigJSON checks that a module's config: reaches the guest as the
// JSON it means, with YAML's types kept.
func TestGuestConfigJSON(t *testing.T) {
	tests := []struct {
		name string
		yaml string // the lines after config:, indented by four
		want string // exact: encoding/json sorts keys
	}{
		{"nested maps", "    a: {b: {c: d}}\n", `{"a":{"b":{"c":"d"}}}`},
		{"lists", "    a: [1, [2, 3], {b: []}]\n", `{"a":[1,[2,3],{"b":[]}]}`},
		{"numbers", "    int: 42\n    neg: -7\n    float: 1.5\n    exp: 1e3\n    hex: 0x1F\n    big: 12345678901234567890\n",
			`{"big":12345678901234567890,"exp":1000,"float":1.5,"hex":31,"int":42,"neg":-7}`},
		{"booleans and null", "    yes: true\n    no: false\n    none: null\n", `{"no":false,"none":null,"yes":true}`},
		{"strings stay strings", "    a: \"1\"\n    b: 'true'\n    c: yes\n    d: 2001-12-14\n    e: \"\"\n",
			`{"a":"1","b":"true","c":"yes","d":"2001-12-14","e":""}`},
		{"block styles", "    text: |\n      line one\n      line two\n", `{"text":"line one\nline two\n"}`},
		{"number keys become strings", "    1: one\n    true: yes\n", `{"1":"one","true":"yes"}`},
		{"aliases and merge keys", "    base: &b {x: 1, y: 2}\n    copy: *b\n    over: {<<: *b, y: 3}\n",
			`{"base":{"x":1,"y":2},"copy":{"x":1,"y":2},"over":{"x":1,"y":3}}`},
		{"empty map", "    {}\n", `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustLoad(t, "modules:\n- path: guests/m.wasm\n  config:\n"+tt.yaml).Modules[0]
			require.Equal(t, tt.want, string(m.Config))
		})
	}
}

// TestGuestConfigNotAMap checks that a configuration need not be a mapping.
func TestGuestConfigNotAMap(t *testing.T) {
	for yaml, want := range map[string]string{
		"[a, 1]": `["a",1]`,
		"7":      `7`,
		"hello":  `"hello"`,
	} {
		m := mustLoad(t, "modules:\n- path: guests/m.wasm\n  config: "+yaml+"\n").Modules[0]
		require.Equal(t, want, string(m.Config), yaml)
	}
}
