package snapshot_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/snapshot"
)

func TestParseClaimName(t *testing.T) {
	tests := []struct {
		claim, set string
		templates  []string
		template   string
		ordinal    int32
		ok         bool
	}{
		{"data-web-0", "web", []string{"data"}, "data", 0, true},
		{"data-web-12", "web", []string{"log", "data"}, "data", 12, true},
		{"my-data-my-db-3", "my-db", []string{"my-data"}, "my-data", 3, true},
		{"data-web-2147483647", "web", []string{"data"}, "data", 2147483647, true},
		{"data-web-2147483648", "web", []string{"data"}, "", 0, false},
		{"data-web-01", "web", []string{"data"}, "", 0, false},
		{"data-web--1", "web", []string{"data"}, "", 0, false},
		{"data-web-+1", "web", []string{"data"}, "", 0, false},
		{"data-web-", "web", []string{"data"}, "", 0, false},
		{"data-web", "web", []string{"data"}, "", 0, false},
		{"-web-0", "web", []string{""}, "", 0, false},
		{"data-xweb-0", "web", []string{"data"}, "", 0, false},
		{"data-web-big-0", "web", []string{"data"}, "", 0, false},
		{"data-web-big-0", "web-big", []string{"data"}, "data", 0, true},
		{"data-web-big-0", "big", []string{"data-web"}, "data-web", 0, true},
		{"cache-web-0", "web", []string{"data"}, "", 0, false},
		{"data-web-0", "web", nil, "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.claim+" of "+tt.set, func(t *testing.T) {
			template, ordinal, ok := snapshot.ParseClaimName(tt.claim, tt.set, tt.templates)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.template, template)
			require.Equal(t, tt.ordinal, ordinal)
			if ok {
				require.Equal(t, tt.claim, snapshot.ClaimName(template, tt.set, ordinal), "round trip")
			}
		})
	}
}

func TestSetNamesInClaimName(t *testing.T) {
	for _, tc := range []struct {
		claim string
		want  []string
	}{
		{"data-web-0", []string{"web"}},
		{"data-a-web-12", []string{"a-web", "web"}},
		{"data-web", nil},
		{"data-web-01", nil},
		{"web-0", nil},
		{"-web-0", nil},
	} {
		t.Run(tc.claim, func(t *testing.T) {
			require.Equal(t, tc.want, snapshot.SetNamesInClaimName(tc.claim))
		})
	}
}
