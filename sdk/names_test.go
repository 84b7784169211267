package sdk_test

import (
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

func TestPodName(t *testing.T) {
	tests := []struct {
		name    string
		set     string
		ordinal int
		ok      bool
	}{
		{"web-0", "web", 0, true},
		{"web-app-12", "web-app", 12, true},
		{"a-2147483647", "a", 2147483647, true},
		{"a-2147483648", "", 0, false}, // beyond int32, the type of ordinals
		{"web-02", "", 0, false},       // not canonical: web-2 is the pod
		{"web", "", 0, false},
		{"web-", "", 0, false},
		{"-1", "", 0, false},
		{"web-1a", "", 0, false},
		{"web--1", "web-", 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, ordinal, ok := sdk.ParsePodName(tt.name)
			if set != tt.set || ordinal != tt.ordinal || ok != tt.ok {
				t.Fatalf("ParsePodName(%q) = %q, %d, %v; want %q, %d, %v", tt.name, set, ordinal, ok, tt.set, tt.ordinal, tt.ok)
			}
			if ok && sdk.PodName(set, ordinal) != tt.name {
				t.Errorf("PodName(%q, %d) = %q, want %q", set, ordinal, sdk.PodName(set, ordinal), tt.name)
			}
		})
	}
}

func TestClaimName(t *testing.T) {
	tests := []struct {
		claim, set string
		template   string
		ordinal    int
		ok         bool
	}{
		{"data-web-0", "web", "data", 0, true},
		{"data-web-app-3", "web-app", "data", 3, true},
		{"data-web-app-3", "app", "data-web", 3, true}, // the set name decides where the template ends
		{"my-data-web-7", "web", "my-data", 7, true},
		{"data-web-web-1", "web", "data-web", 1, true},
		{"data-web-0", "web-app", "", 0, false},
		{"web-0", "web", "", 0, false}, // empty template
		{"-web-0", "web", "", 0, false},
		{"data-web-00", "web", "", 0, false},
		{"data-web", "web", "", 0, false},
		{"data-xweb-0", "web", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.claim+"/"+tt.set, func(t *testing.T) {
			template, ordinal, ok := sdk.ParseClaimName(tt.claim, tt.set)
			if template != tt.template || ordinal != tt.ordinal || ok != tt.ok {
				t.Fatalf("ParseClaimName = %q, %d, %v; want %q, %d, %v", template, ordinal, ok, tt.template, tt.ordinal, tt.ok)
			}
			if ok && sdk.ClaimName(template, tt.set, ordinal) != tt.claim {
				t.Errorf("ClaimName(%q, %q, %d) = %q", template, tt.set, ordinal, sdk.ClaimName(template, tt.set, ordinal))
			}
		})
	}
}

func TestMatchClaim(t *testing.T) {
	set := sdktest.StatefulSet("web", 2, sdktest.Templates("data", "data-web"))
	tests := []struct {
		claim    string
		template string
		ordinal  int
		ok       bool
	}{
		{"data-web-1", "data", 1, true},
		{"data-web-web-5", "data-web", 5, true},
		{"logs-web-1", "", 0, false}, // not a template of the set
		{"data-db-1", "", 0, false},
	}
	for _, tt := range tests {
		template, ordinal, ok := sdk.MatchClaim(set, tt.claim)
		if template != tt.template || ordinal != tt.ordinal || ok != tt.ok {
			t.Errorf("MatchClaim(%q) = %q, %d, %v; want %q, %d, %v", tt.claim, template, ordinal, ok, tt.template, tt.ordinal, tt.ok)
		}
	}
}

func TestOrdinalRange(t *testing.T) {
	tests := []struct {
		name       string
		set        *abi.StatefulSet
		start, end int
	}{
		{"from zero", sdktest.StatefulSet("web", 3), 0, 3},
		{"ordinals.start", sdktest.StatefulSet("web", 3, sdktest.OrdinalStart(5)), 5, 8},
		{"scaled to zero", sdktest.StatefulSet("web", 0, sdktest.OrdinalStart(2)), 2, 2},
		{"negative replicas", sdktest.StatefulSet("web", -1), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start, end := sdk.OrdinalRange(tt.set)
			if start != tt.start || end != tt.end {
				t.Errorf("OrdinalRange = [%d, %d), want [%d, %d)", start, end, tt.start, tt.end)
			}
		})
	}
}

// TestClaimOrdinal holds ClaimOrdinal to ClaimName: a name matches exactly
// when ClaimName builds it, so a module that matches names finds the claims
// that Request.ClaimFor would.
func TestClaimOrdinal(t *testing.T) {
	for _, ord := range []int{0, 1, 9, 10, 99, 100, 12345, 2147483647, 4294967294} {
		for _, tc := range []struct{ template, set string }{{"data", "web"}, {"data-web", "web"}, {"d", "web-app"}, {"", "web"}} {
			name := sdk.ClaimName(tc.template, tc.set, ord)
			if got, ok := sdk.ClaimOrdinal(name, tc.template, tc.set); !ok || got != ord {
				t.Errorf("ClaimOrdinal(%q, %q, %q) = %d, %v; want %d, true", name, tc.template, tc.set, got, ok, ord)
			}
		}
	}
	for _, name := range []string{
		"data-web-01", "data-web-+1", "data-web--1", "data-web-", "data-web", "data-web-1a", "data-web-1 ",
		"data-webs-1", "datas-web-1", "data_web-1", "data-web_1", "data-web-web-1", "data-web-12345678901", "",
	} {
		if got, ok := sdk.ClaimOrdinal(name, "data", "web"); ok {
			t.Errorf("ClaimOrdinal(%q, data, web) = %d, true; ClaimName builds no such name", name, got)
		}
	}
}
