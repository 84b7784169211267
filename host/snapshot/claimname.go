package snapshot

import (
	"strconv"
	"strings"
)

// ClaimName returns the name of the claim the StatefulSet controller creates
// for template and ordinal of set: "<template>-<set>-<ordinal>".
func ClaimName(template, set string, ordinal int32) string {
	return template + "-" + set + "-" + strconv.FormatInt(int64(ordinal), 10)
}

// parseOrdinal splits name into the part before its last dash and the
// ordinal after it. ok is false unless the ordinal is a non-negative int32 in
// canonical decimal form: "web-01" has no ordinal, because the controller
// never names a claim so and accepting it would let two names alias one
// replica.
func parseOrdinal(name string) (prefix string, ordinal int32, ok bool) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return "", 0, false
	}
	digits := name[i+1:]
	if digits == "" || (len(digits) > 1 && digits[0] == '0') {
		return "", 0, false
	}
	n, err := strconv.ParseUint(digits, 10, 31)
	if err != nil {
		return "", 0, false
	}
	return name[:i], int32(n), true
}

// ParseClaimName reports whether claim is named "<template>-<set>-<ordinal>"
// for set and one of templates, and returns which template and ordinal. A
// name matches at most one template of a given set, since the template is
// what precedes "-<set>-<ordinal>".
func ParseClaimName(claim, set string, templates []string) (template string, ordinal int32, ok bool) {
	prefix, ordinal, ok := parseOrdinal(claim)
	if !ok {
		return "", 0, false
	}
	// prefix must be "<template>-<set>" with a non-empty template.
	cut := len(prefix) - len(set) - 1
	if cut < 1 || prefix[cut] != '-' || prefix[cut+1:] != set {
		return "", 0, false
	}
	t := prefix[:cut]
	for _, x := range templates {
		if x == t {
			return t, ordinal, true
		}
	}
	return "", 0, false
}

// SetNamesInClaimName returns every set name claim could be a claim of, by
// its name alone: each <set> such that claim is "<template>-<set>-<ordinal>"
// with a non-empty template. A claim belongs to one of them if that set has
// a template of the matching name (ParseClaimName says which). A name with
// many dashes has as many candidates.
func SetNamesInClaimName(claim string) []string {
	prefix, _, ok := parseOrdinal(claim)
	if !ok {
		return nil
	}
	var out []string
	for i := 1; i < len(prefix)-1; i++ {
		if prefix[i] == '-' {
			out = append(out, prefix[i+1:])
		}
	}
	return out
}
