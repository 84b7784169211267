package input

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// MaxExcerpt is how much of a value an error message quotes by default.
const MaxExcerpt = 80

// Excerpt returns s when it has at most max bytes, else its first max bytes
// (cut on a rune boundary) followed by "... (N bytes)", so that an error
// about a 200 MB value says which value without repeating it.
func Excerpt(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("... (%d bytes)", len(s))
}

// Quote is strconv.Quote of Excerpt(s, MaxExcerpt), the excerpt's length
// note outside the quotes: "abc..." (200000000 bytes).
func Quote(s string) string {
	if len(s) <= MaxExcerpt {
		return strconv.Quote(s)
	}
	cut := MaxExcerpt
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + fmt.Sprintf("... (%d bytes)", len(s))
}
