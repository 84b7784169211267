package main

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// termSafe returns s with everything a terminal would act on instead of
// print written out as an escape, as Go writes it: control characters (C0,
// DEL and C1: ESC starts the sequences that move the cursor, clear lines
// and retitle the window), Unicode's format characters (bidirectional
// overrides and isolates, which reorder what is shown, zero-width ones),
// and bytes that are not UTF-8. A backslash is left as it is: text that
// spells an escape out is shown as written, and does nothing. Module-supplied strings go through it
// before any text output: a manifest's description must not be able to
// redraw the capabilities printed above it. Newlines are the caller's to
// split on; JSON output is escaped by encoding/json instead.
func termSafe(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r) && r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsEscape reports whether termSafe would change s.
func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || unsafeRune(r) {
			return true
		}
		i += size
	}
	return false
}

// unsafeRune reports whether a terminal may act on r rather than print it.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// termLines is termSafe for text of several lines: each line is escaped,
// the newlines kept.
func termLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = termSafe(l)
	}
	return strings.Join(lines, "\n")
}
