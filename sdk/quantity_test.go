package sdk_test

import (
	"errors"
	"testing"

	"github.com/kubeplug/kubeplug/sdk"
)

func TestParseQuantity(t *testing.T) {
	tests := []struct {
		in     string
		units  int64 // rounded away from zero
		fits   bool
		canon  string
		equals string // another spelling of the same value, optional
	}{
		{"1Gi", 1 << 30, true, "1Gi", "1073741824"},
		{"1.5Gi", 1610612736, true, "1536Mi", "1536Mi"},
		{"1.5Ti", 1649267441664, true, "1536Gi", ""},
		{"10Gi", 10737418240, true, "10Gi", "10240Mi"},
		{"500M", 500000000, true, "500M", "0.5G"},
		{"1G", 1000000000, true, "1G", "1000M"},
		// Kubernetes' documentation: these all mean about 129 MB; 123Mi is exactly 128974848.
		{"123Mi", 128974848, true, "123Mi", "128974848000m"},
		{"129e6", 129000000, true, "129M", "129M"},
		{"100m", 1, true, "100m", "0.1"},
		{"0.1", 1, true, "100m", ".1"},
		{"1e3", 1000, true, "1k", "1E3"},
		{"1E", 1000000000000000000, true, "1E", "1e18"},
		{"2000", 2000, true, "2k", "2k"},
		{"1500", 1500, true, "1500", "1.5k"},
		{"512", 512, true, "512", "0.5Ki"},
		{"1024Ki", 1 << 20, true, "1Mi", "1Mi"},
		{"1025Ki", 1025 << 10, true, "1025Ki", ""},
		{"1Ei", 1 << 60, true, "1Ei", ""},
		{"7Ei", 7 << 60, true, "7Ei", ""},
		{"9223372036854775807", 9223372036854775807, true, "9223372036854775807", ""},
		{"9223372036854775806500m", 9223372036854775807, true, "9223372036854775806500m", ""},
		{"9223372036854775807500m", 0, false, "9223372036854775807500m", ""},
		{"1234567890123456789012345678n", 1234567890123456790, true, "1234567890123456789012345678n", ""},
		{"-0.5", -1, true, "-500m", "-.5"},
		{"-1.5Gi", -1610612736, true, "-1536Mi", ""},
		{"1.000000000000000000", 1, true, "1", "1"},
		{"0001.5", 2, true, "1500m", "1.5"},
		{"1e-20", 1, true, "1n", "1n"},
		{"123456789e-17", 1, true, "2n", "2n"}, // 1.23456789 nanos, rounded up
		{"1.5e-9", 1, true, "2n", "2n"},
		{"1e-64", 1, true, "1n", ""},
		{"0e64", 0, true, "0", "0"},
		{"0.000Ki", 0, true, "0", "0"},
		{"000000000000000000001.5000000000000000000Ki", 1536, true, "1536", "1.5Ki"},
		{"0.0000000001Ki", 1, true, "103n", ""}, // 102.4 nanos, rounded up
		{"9223372036854775806.5", 9223372036854775807, true, "9223372036854775806500m", ""},
		{"-1Gi", -(1 << 30), true, "-1Gi", ""},
		{"+5", 5, true, "5", "5"},
		{"1.", 1, true, "1", "1"},
		{"1n", 1, true, "1n", "0.000000001"},
		{"0.0000000001", 1, true, "1n", "1n"}, // finer than a nano rounds up
		{"1.0001Ki", 1025, true, "1024102400u", ""},
		{"0", 0, true, "0", "0Gi"},
		{"12e-1", 2, true, "1200m", "1.2"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			q, err := sdk.ParseQuantity(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			units, fits := q.Int64()
			if fits != tt.fits || (fits && units != tt.units) {
				t.Errorf("Int64() = %d, %v; want %d, %v", units, fits, tt.units, tt.fits)
			}
			if got := q.String(); got != tt.canon {
				t.Errorf("String() = %q, want %q", got, tt.canon)
			}
			again, err := sdk.ParseQuantity(q.String())
			if err != nil || again.Cmp(q) != 0 {
				t.Errorf("String() %q does not parse back to the same value: %v", q, err)
			}
			if tt.equals != "" {
				if c := q.Cmp(sdk.MustParseQuantity(tt.equals)); c != 0 {
					t.Errorf("Cmp(%q) = %d, want 0", tt.equals, c)
				}
			}
		})
	}
}

func TestParseQuantityErrors(t *testing.T) {
	for _, in := range []string{"", "Gi", "-", ".", "10Gb", "10 Gi", " 1", "1.2.3", "--1", "1e", "1e1.5", "1e99", "abc", "1Kii", "1i", "8Ei", "9223372036854775808", "1e19", "12345678901234567890", "1e65", ".00000000000000000001Ki", "12345678901234567890Ki"} {
		t.Run(in, func(t *testing.T) {
			q, err := sdk.ParseQuantity(in)
			if !errors.Is(err, sdk.ErrQuantity) {
				t.Errorf("ParseQuantity(%q) = %v, %v; want ErrQuantity", in, q, err)
			}
		})
	}
}

func TestQuantityArithmetic(t *testing.T) {
	q := sdk.MustParseQuantity
	tests := []struct {
		name string
		got  sdk.Quantity
		want string
	}{
		{"binary sum", q("10Gi").Add(q("512Mi")), "10752Mi"},
		{"sum from zero takes the operand's format", sdk.Quantity{}.Add(q("1Gi")).Add(q("1Gi")), "2Gi"},
		{"a zero receiver takes the operand's format", q("0").Add(q("1Gi")), "1Gi"},
		{"receiver's format wins", q("1G").Add(q("1Gi")), "2073741824"},
		{"decimal sum", q("1.5k").Add(q("500")), "2k"},
		{"to zero", q("1Gi").Add(q("-1Gi")), "0"},
		{"fractions", q("100m").Add(q("0.9")), "1"},
		{"negative fraction", q("-100m").Add(q("1")), "900m"},
		{"below zero", q("100m").Add(q("-1")), "-900m"},
		{"saturates up", q("7Ei").Add(q("7Ei")), "9223372036854775807999999999n"},
		{"saturates down", q("-7Ei").Add(q("-7Ei")), "-8Ei"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.got.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestQuantityCompare(t *testing.T) {
	q := sdk.MustParseQuantity
	tests := []struct {
		a, b string
		want int
	}{
		{"1Gi", "1G", 1},
		{"1G", "1Gi", -1},
		{"1000M", "1G", 0},
		{"129M", "123Mi", 1},
		{"100m", "1", -1},
		{"-1", "0", -1},
	}
	for _, tt := range tests {
		if got := q(tt.a).Cmp(q(tt.b)); got != tt.want {
			t.Errorf("%s.Cmp(%s) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
	var zero sdk.Quantity
	if !zero.IsZero() || zero.Sign() != 0 || zero.String() != "0" || zero.Cmp(q("0Mi")) != 0 {
		t.Error("the zero Quantity is not 0")
	}
	if q("-1m").Sign() != -1 || q("1m").Sign() != 1 {
		t.Error("Sign is wrong")
	}
}

func TestMustParseQuantityPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustParseQuantity(\"1Gb\") did not panic")
		}
	}()
	sdk.MustParseQuantity("1Gb")
}
