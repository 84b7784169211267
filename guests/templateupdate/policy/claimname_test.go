package policy

import (
	"testing"

	"github.com/kubeplug/kubeplug/sdk"
)

// TestClaimOrdinal holds the plan's name matching to sdk.ClaimName: a name
// matches exactly when ClaimName builds it, so the plan finds the claims
// that sdk.Request.ClaimFor would.
func TestClaimOrdinal(t *testing.T) {
	for _, ord := range []int{0, 1, 9, 10, 99, 100, 12345, 2147483647, 4294967294} {
		for _, tc := range []struct{ template, set string }{{"data", "web"}, {"data-web", "web"}, {"d", "web-app"}, {"", "web"}} {
			name := sdk.ClaimName(tc.template, tc.set, ord)
			if got, ok := claimOrdinal(name, tc.template, tc.set); !ok || got != ord {
				t.Errorf("claimOrdinal(%q, %q, %q) = %d, %v; want %d, true", name, tc.template, tc.set, got, ok, ord)
			}
		}
	}
	for _, name := range []string{
		"data-web-01", "data-web-+1", "data-web--1", "data-web-", "data-web", "data-web-1a", "data-web-1 ",
		"data-webs-1", "datas-web-1", "data_web-1", "data-web_1", "data-web-web-1", "data-web-12345678901", "",
	} {
		if got, ok := claimOrdinal(name, "data", "web"); ok {
			t.Errorf("claimOrdinal(%q, data, web) = %d, true; ClaimName builds no such name", name, got)
		}
	}
}
