package sdk

import (
	"math"
	"strconv"
	"strings"

	"github.com/kubeplug/kubeplug/abi"
)

// Names the StatefulSet controller gives: pod "<set>-<ordinal>", claim
// "<template>-<set>-<ordinal>". Set and template names may contain dashes, so
// a claim name is parsed from the end, against a known set name. Ordinals are
// canonical decimals ("0", "12", never "012"), so that parsing a name and
// building it again gives the same name.

// PodName returns the name of the pod with ordinal of the StatefulSet set.
//
//	sdk.PodName("web", 2) // "web-2"
func PodName(set string, ordinal int) string {
	return set + "-" + strconv.Itoa(ordinal)
}

// ParsePodName splits a StatefulSet pod's name into its set's name and its
// ordinal. ok is false when name does not end in "-<ordinal>".
//
//	set, ordinal, ok := sdk.ParsePodName("web-app-2") // "web-app", 2, true
func ParsePodName(name string) (set string, ordinal int, ok bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", 0, false
	}
	ordinal, ok = parseOrdinal(name[i+1:])
	if !ok {
		return "", 0, false
	}
	return name[:i], ordinal, true
}

// ClaimName returns the name of the claim from template for the replica of
// set with ordinal.
//
//	sdk.ClaimName("data", "web", 2) // "data-web-2"
func ClaimName(template, set string, ordinal int) string {
	return template + "-" + set + "-" + strconv.Itoa(ordinal)
}

// ClaimOrdinal returns the ordinal when name is ClaimName(template, set,
// ordinal) for an ordinal of at most ten digits, and false otherwise. It
// finds a claim by its parts without building its name: a module that
// matches every claim against its set's templates each reconcile pays for
// each name built and hashed (BENCHMARKS.md, "Issue 26: templateupdate").
//
//	ord, ok := sdk.ClaimOrdinal("data-web-2", "data", "web") // 2, true
func ClaimOrdinal(name, template, set string) (int, bool) {
	digits := len(template) + len(set) + 2
	if len(name) <= digits || len(name) > digits+10 || name[len(template)] != '-' || name[digits-1] != '-' ||
		name[:len(template)] != template || name[len(template)+1:digits-1] != set {
		return 0, false
	}
	s := name[digits:]
	if len(s) > 1 && s[0] == '0' {
		return 0, false // strconv.Itoa writes no leading zero
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// ParseClaimName splits the name of a claim of StatefulSet set into its
// template's name and its ordinal. ok is false when name is not
// "<template>-<set>-<ordinal>" with a non-empty template.
//
//	tmpl, ordinal, ok := sdk.ParseClaimName("data-web-app-2", "web-app") // "data", 2, true
func ParseClaimName(name, set string) (template string, ordinal int, ok bool) {
	prefix, ordinal, ok := ParsePodName(name)
	if !ok {
		return "", 0, false
	}
	// prefix is "<template>-<set>"; checked without building "-"+set, as
	// this runs for every claim of every reconcile.
	cut := len(prefix) - len(set) - 1
	if cut <= 0 || prefix[cut] != '-' || prefix[cut+1:] != set {
		return "", 0, false
	}
	return prefix[:cut], ordinal, true
}

// MatchClaim reports whether name is a claim of one of set's templates, and
// which template and ordinal. Unlike ParseClaimName it accepts only the set's
// own templates.
//
//	if tmpl, ordinal, ok := sdk.MatchClaim(set, pvc.Metadata.Name); ok { ... }
func MatchClaim(set *abi.StatefulSet, name string) (template string, ordinal int, ok bool) {
	template, ordinal, ok = ParseClaimName(name, set.Metadata.Name)
	if !ok {
		return "", 0, false
	}
	for i := range set.Spec.VolumeClaimTemplates {
		if set.Spec.VolumeClaimTemplates[i].Metadata.Name == template {
			return template, ordinal, true
		}
	}
	return "", 0, false
}

// OrdinalRange returns the ordinals of set's replicas as the half-open range
// [start, end): start is spec.ordinals.start (0 when unset) and end is start
// plus spec.replicas. A pod or claim with an ordinal outside it belongs to a
// replica the set no longer wants (upstream calls such a pod condemned).
//
//	start, end := sdk.OrdinalRange(set); for i := start; i < end; i++ { ... }
func OrdinalRange(set *abi.StatefulSet) (start, end int) {
	if o := set.Spec.Ordinals; o != nil && o.Start > 0 {
		start = int(o.Start)
	}
	return start, start + max(int(set.Spec.Replicas), 0)
}

// parseOrdinal parses a canonical decimal in the range of an int32, the type
// of Kubernetes' ordinals.
func parseOrdinal(s string) (int, bool) {
	if s == "" || len(s) > 10 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n <= math.MaxInt32
}
