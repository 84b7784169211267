package sdk

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Quantity is a Kubernetes resource quantity ("10Gi", "500M", "1.5Ti",
// "100m", "1e3"), exact to a nano unit like Kubernetes' own: finer digits are
// rounded away from zero. It covers about ±8Ei (int64 whole units), which is
// far beyond any storage size; it is immutable, and the zero Quantity is 0.
//
//	req, _ := sdk.ParseQuantity(pvc.Spec.Resources.Requests["storage"])
//	if req.Cmp(sdk.MustParseQuantity("10Gi")) > 0 { ... }
type Quantity struct {
	// The value is units + nanos/1e9 with 0 <= nanos < 1e9 (so -0.5 is
	// units -1, nanos 5e8). Fixed-size integers keep parsing and arithmetic
	// free of allocations, which matters on a guest's hot path.
	units  int64
	nanos  int32
	format quantityFormat
}

// quantityFormat is the suffix family String uses.
type quantityFormat uint8

const (
	formatUnset   quantityFormat = iota // the zero Quantity
	formatDecimal                       // "", m, k, M, ... and e<exponent>
	formatBinary                        // Ki, Mi, Gi, ...
)

const nano = 1_000_000_000

// maxExponent bounds "e<exponent>"; anything beyond is out of range anyway.
const maxExponent = 64

// maxDigits is the most significant digits a number with a binary suffix may
// have: they must fit a uint64.
const maxDigits = 19

// ParseQuantity parses a Kubernetes quantity: an optionally signed decimal
// number ("1", "1.5", ".5", "1.") followed by a binary suffix (Ki, Mi, Gi, Ti,
// Pi, Ei), a decimal suffix (n, u, m, k, M, G, T, P, E) or a decimal exponent
// ("e3", "E-2"). With a binary suffix the number may have at most 19 digits,
// leading and trailing zeros aside.
func ParseQuantity(s string) (Quantity, error) {
	fail := func(why string) (Quantity, error) {
		return Quantity{}, fmt.Errorf("%w %q: %s", ErrQuantity, s, why)
	}
	rest := s
	neg := false
	if rest != "" && (rest[0] == '+' || rest[0] == '-') {
		neg = rest[0] == '-'
		rest = rest[1:]
	}
	// Split the number from the suffix.
	end, dot := 0, -1
	for ; end < len(rest); end++ {
		c := rest[end]
		if c == '.' && dot < 0 {
			dot = end
			continue
		}
		if c < '0' || c > '9' {
			break
		}
	}
	number, suffix := rest[:end], rest[end:]
	intPart, fracPart := number, ""
	if dot >= 0 {
		intPart, fracPart = number[:dot], number[dot+1:]
	}
	if intPart == "" && fracPart == "" {
		return fail("no digits; want a number like 10Gi, 500M or 1.5")
	}

	// The value is mantissa * 2^shift * 10^exp10.
	exp10, shift := 0, uint(0)
	format := formatDecimal
	switch {
	case decimalExponent(suffix) != noSuffix:
		exp10 = decimalExponent(suffix)
	case binaryShift(suffix) != 0:
		shift, format = binaryShift(suffix), formatBinary
	case suffix[0] == 'e' || suffix[0] == 'E':
		e, err := strconv.Atoi(suffix[1:])
		if err != nil || e < -maxExponent || e > maxExponent {
			return fail(fmt.Sprintf("exponent %q is not an integer between %d and %d", suffix[1:], -maxExponent, maxExponent))
		}
		exp10 = e
	default:
		return fail(fmt.Sprintf("unknown suffix %q; use Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or e<exponent>", suffix))
	}

	var units, nanos uint64
	var ok bool
	if format == formatBinary {
		units, nanos, ok = parseBinary(intPart, fracPart, shift)
	} else {
		units, nanos, ok = parseDecimal(intPart+fracPart, len(intPart)+exp10)
	}
	if !ok {
		return fail(fmt.Sprintf("out of range (beyond about 8Ei, or more than %d digits with a binary suffix)", maxDigits))
	}
	q := Quantity{units: int64(units), nanos: int32(nanos), format: format}
	if neg {
		q = q.neg()
	}
	return q, nil
}

// noSuffix marks a string that is not a decimal SI suffix.
const noSuffix = math.MinInt

func decimalExponent(suffix string) int {
	switch suffix {
	case "n":
		return -9
	case "u":
		return -6
	case "m":
		return -3
	case "":
		return 0
	case "k":
		return 3
	case "M":
		return 6
	case "G":
		return 9
	case "T":
		return 12
	case "P":
		return 15
	case "E":
		return 18
	}
	return noSuffix
}

func binaryShift(suffix string) uint {
	switch suffix {
	case "Ki":
		return 10
	case "Mi":
		return 20
	case "Gi":
		return 30
	case "Ti":
		return 40
	case "Pi":
		return 50
	case "Ei":
		return 60
	}
	return 0
}

// parseDecimal reads the decimal digits with the decimal point before
// digits[point] (point may lie outside digits): the units are the digits before
// it, the nanos the nine after it, rounded up when any later digit is not 0.
// No arithmetic, so any number of digits is exact.
func parseDecimal(digits string, point int) (units, nanos uint64, ok bool) {
	for digits != "" && digits[0] == '0' {
		digits, point = digits[1:], point-1
	}
	if digits == "" {
		return 0, 0, true
	}
	if point > maxDigits {
		return 0, 0, false // the first digit is not 0, so the value is at least 1e19
	}
	var whole, frac string
	switch {
	case point <= 0:
		if -point >= 9 {
			return 0, 1, true // below a nano, and not 0: rounds up to 1n
		}
		frac = strings.Repeat("0", -point) + digits
	case point >= len(digits):
		whole = digits + strings.Repeat("0", point-len(digits))
	default:
		whole, frac = digits[:point], digits[point:]
	}
	if whole != "" {
		u, err := strconv.ParseUint(whole, 10, 64)
		if err != nil || u > math.MaxInt64 {
			return 0, 0, false
		}
		units = u
	}
	if len(frac) > 9 {
		if strings.Trim(frac[9:], "0") != "" {
			nanos = 1
		}
		frac = frac[:9]
	}
	if frac != "" {
		n, _ := strconv.ParseUint(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
		nanos += n
	}
	if nanos == nano {
		units, nanos = units+1, 0
	}
	return units, nanos, units <= math.MaxInt64
}

// parseBinary computes (intPart.fracPart) * 2^shift as units and nanos,
// rounding finer digits up. The number must have at most maxDigits digits
// (leading and trailing zeros aside), so that it fits a uint64 as an integer.
func parseBinary(intPart, fracPart string, shift uint) (units, nanos uint64, ok bool) {
	// Plain loops rather than strings.Trim* and strconv.ParseUint: claims'
	// capacities are parsed on every reconcile, and in a guest each call
	// costs more than these few digits.
	for intPart != "" && intPart[0] == '0' {
		intPart = intPart[1:]
	}
	for fracPart != "" && fracPart[len(fracPart)-1] == '0' {
		fracPart = fracPart[:len(fracPart)-1]
	}
	if len(intPart)+len(fracPart) > maxDigits {
		return 0, 0, false
	}
	var mantissa uint64 // the caller checked that both parts are digits
	for i := 0; i < len(intPart); i++ {
		mantissa = mantissa*10 + uint64(intPart[i]-'0')
	}
	for i := 0; i < len(fracPart); i++ {
		mantissa = mantissa*10 + uint64(fracPart[i]-'0')
	}
	// mantissa * 2^shift / 10^len(fracPart), with a 128-bit product.
	hi, lo := bits.Mul64(mantissa, 1<<shift)
	p := pow10[len(fracPart)]
	if hi >= p {
		return 0, 0, false
	}
	if p == 1 {
		// A whole number ("10Gi"), the usual case: no division.
		return lo, 0, lo <= math.MaxInt64
	}
	units, rem := bits.Div64(hi, lo, p)
	h, l := bits.Mul64(rem, nano)
	nanos, rem = bits.Div64(h, l, p)
	if rem != 0 {
		nanos++
	}
	if nanos == nano {
		units, nanos = units+1, 0
	}
	return units, nanos, units <= math.MaxInt64
}

var pow10 = [maxDigits + 1]uint64{
	1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
}

// MustParseQuantity is ParseQuantity for constants; it panics on error.
func MustParseQuantity(s string) Quantity {
	q, err := ParseQuantity(s)
	if err != nil {
		panic(err)
	}
	return q
}

// neg returns -q.
func (q Quantity) neg() Quantity {
	if q.nanos == 0 {
		if q.units == math.MinInt64 {
			return Quantity{units: math.MaxInt64, nanos: nano - 1, format: q.format}
		}
		return Quantity{units: -q.units, format: q.format}
	}
	return Quantity{units: -q.units - 1, nanos: nano - q.nanos, format: q.format}
}

// Cmp returns -1, 0 or +1 as q is less than, equal to or greater than o.
func (q Quantity) Cmp(o Quantity) int {
	switch {
	case q.units < o.units:
		return -1
	case q.units > o.units:
		return 1
	case q.nanos < o.nanos:
		return -1
	case q.nanos > o.nanos:
		return 1
	}
	return 0
}

// Sign returns -1, 0 or +1 as q is negative, zero or positive.
func (q Quantity) Sign() int {
	switch {
	case q.units < 0:
		return -1
	case q.units == 0 && q.nanos == 0:
		return 0
	}
	return 1
}

// IsZero reports whether q is 0.
func (q Quantity) IsZero() bool { return q.units == 0 && q.nanos == 0 }

// Add returns q + o, printed in q's format, or o's when q is 0 (so that a sum
// can start from the zero Quantity), as Kubernetes does. A sum beyond the
// range saturates.
//
//	var total sdk.Quantity; for ... { total = total.Add(c) }
func (q Quantity) Add(o Quantity) Quantity {
	format := q.format
	if q.IsZero() {
		format = o.format
	}
	nanos := q.nanos + o.nanos
	carry := int64(0)
	if nanos >= nano {
		nanos, carry = nanos-nano, 1
	}
	units := q.units + o.units
	switch {
	case q.units > 0 && o.units > 0 && units < 0, units == math.MaxInt64 && carry == 1:
		return Quantity{units: math.MaxInt64, nanos: nano - 1, format: format}
	case q.units < 0 && o.units < 0 && units >= 0:
		return Quantity{units: math.MinInt64, format: format}
	}
	return Quantity{units: units + carry, nanos: nanos, format: format}
}

// Int64 returns q in whole units, rounded away from zero ("100m" gives 1), and
// whether that fits an int64.
func (q Quantity) Int64() (int64, bool) {
	if q.nanos == 0 || q.units < 0 {
		// For a negative q, units is already the value rounded away from zero.
		return q.units, true
	}
	return q.units + 1, q.units < math.MaxInt64
}

// String returns q in Kubernetes' canonical form: a binary quantity of at
// least 1Ki in whole units uses the largest binary suffix that keeps the
// number whole ("1536Mi" for "1.5Gi"); anything else uses the largest decimal
// suffix that does ("1500" for "1.5k", "2k" for "2000", "100m" for "0.1").
// A decimal exponent is printed with a decimal suffix ("1e3" gives "1k").
func (q Quantity) String() string {
	if q.IsZero() {
		return "0"
	}
	sign, units, nanos := "", uint64(q.units), uint64(q.nanos)
	if q.units < 0 {
		sign = "-"
		a := q.neg()
		units, nanos = uint64(a.units), uint64(a.nanos)
		if q.units == math.MinInt64 && q.nanos == 0 {
			units, nanos = 1<<63, 0
		}
	}
	if nanos == 0 {
		if q.format == formatBinary && units >= 1024 {
			k := 0
			for k < 6 && units%1024 == 0 {
				units /= 1024
				k++
			}
			return sign + strconv.FormatUint(units, 10) + [...]string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}[k]
		}
		k := 0
		for k < 6 && units%1000 == 0 {
			units /= 1000
			k++
		}
		return sign + strconv.FormatUint(units, 10) + [...]string{"", "k", "M", "G", "T", "P", "E"}[k]
	}
	// A fraction: the whole digits, then the fraction's digits down to the
	// coarsest of m, u, n that keeps them whole.
	frac, width, suffix := nanos, 9, "n"
	switch {
	case nanos%1_000_000 == 0:
		frac, width, suffix = nanos/1_000_000, 3, "m"
	case nanos%1_000 == 0:
		frac, width, suffix = nanos/1_000, 6, "u"
	}
	if units == 0 {
		return sign + strconv.FormatUint(frac, 10) + suffix
	}
	f := strconv.FormatUint(frac, 10)
	return sign + strconv.FormatUint(units, 10) + strings.Repeat("0", width-len(f)) + f + suffix
}
