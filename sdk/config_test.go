package sdk_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

type testConfig struct {
	Namespaces []string `json:"namespaces"`
	Label      string   `json:"label"`
	Limit      int      `json:"limit"`
}

func configOf(t *testing.T, raw string, v any) error {
	t.Helper()
	req, err := sdk.NewRequest(&abi.ReconcileRequest{Config: []byte(raw)})
	if err != nil {
		t.Fatal(err)
	}
	return req.Config(v)
}

func TestConfig(t *testing.T) {
	defaults := testConfig{Label: "default-label", Limit: 3}
	tests := []struct {
		name string
		raw  string
		want testConfig
		err  bool
	}{
		{"absent keeps defaults", "", defaults, false},
		{"blank keeps defaults", " \n", defaults, false},
		{"null keeps defaults", "null", defaults, false},
		{"partial", `{"namespaces": ["a", "b"]}`, testConfig{Namespaces: []string{"a", "b"}, Label: "default-label", Limit: 3}, false},
		{"full", `{"namespaces": [], "label": "x", "limit": 1}`, testConfig{Namespaces: []string{}, Label: "x", Limit: 1}, false},
		{"unknown field", `{"namespace": ["a"]}`, testConfig{}, true},
		{"wrong type", `{"limit": "many"}`, testConfig{}, true},
		{"trailing data", `{"limit": 1} {}`, testConfig{}, true},
		{"not JSON", `limit: 1`, testConfig{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Twice: the second call is served from the cache.
			for i := range 2 {
				got := defaults
				err := configOf(t, tt.raw, &got)
				if tt.err {
					if !errors.Is(err, sdk.ErrConfig) {
						t.Fatalf("call %d: err = %v, want ErrConfig", i, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				if got.Label != tt.want.Label || got.Limit != tt.want.Limit || !slices.Equal(got.Namespaces, tt.want.Namespaces) {
					t.Errorf("call %d: got %+v, want %+v", i, got, tt.want)
				}
			}
		})
	}
}

func TestConfigCacheKeys(t *testing.T) {
	var a testConfig
	if err := configOf(t, `{"limit": 1}`, &a); err != nil || a.Limit != 1 {
		t.Fatalf("%+v, %v", a, err)
	}
	// Other bytes decode anew.
	var b testConfig
	if err := configOf(t, `{"limit": 2}`, &b); err != nil || b.Limit != 2 {
		t.Fatalf("%+v, %v", b, err)
	}
	// The same bytes into another type decode anew, with that type's rules.
	var other struct {
		Limit int `json:"limit"`
	}
	if err := configOf(t, `{"limit": 2}`, &other); err != nil || other.Limit != 2 {
		t.Fatalf("%+v, %v", other, err)
	}
	var narrow struct{}
	if err := configOf(t, `{"limit": 2}`, &narrow); !errors.Is(err, sdk.ErrConfig) {
		t.Errorf("an unknown field for this type was accepted from the cache: %v", err)
	}
	// A cached value is copied: changing one result leaves the next alone.
	var c testConfig
	if err := configOf(t, `{"limit": 2}`, &c); err != nil {
		t.Fatal(err)
	}
	c.Limit = 99
	var d testConfig
	if err := configOf(t, `{"limit": 2}`, &d); err != nil || d.Limit != 2 {
		t.Errorf("cache was changed through a result: %+v, %v", d, err)
	}
}

func TestConfigNeedsPointer(t *testing.T) {
	var cfg testConfig
	for _, v := range []any{cfg, (*testConfig)(nil), nil} {
		if err := configOf(t, `{}`, v); !errors.Is(err, sdk.ErrConfig) {
			t.Errorf("Config(%T) = %v, want ErrConfig", v, err)
		}
	}
}
