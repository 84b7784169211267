package casetest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kubeplug/kubeplug/host/casetest"
)

// wideMapping returns a case whose one mapping (at where: "config", or a
// Pod's "labels") has n entries, each key 72 bytes that differ only in
// their last eight: the shape that costs most to compare pairwise, about
// as many entries as fit the bytes a case file may have at the bound.
// dup repeats the first key as the last (n entries all told).
func wideMapping(where string, n int, dup bool) []byte {
	var b strings.Builder
	indent := "  "
	b.WriteString("name: wide\n")
	if where == "config" {
		b.WriteString("config:\n")
	} else {
		b.WriteString("objects:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p\n    labels:\n")
		indent = "      "
	}
	prefix := strings.Repeat("k", 64)
	for i := range n {
		if dup && i == n-1 {
			i = 0
		}
		fmt.Fprintf(&b, "%s%s%08d: v\n", indent, prefix, i)
	}
	return []byte(b.String())
}

// BenchmarkParseWideMapping parses a case with one mapping of 1,000, 10,000
// and 99,999 entries (the bound is 100,000): the time per op divided by the
// entries says whether the work grows with the mapping or with its square.
func BenchmarkParseWideMapping(b *testing.B) {
	for _, where := range []string{"config", "labels"} {
		for _, n := range []int{1_000, 10_000, 99_999} {
			data := wideMapping(where, n, false)
			b.Run(fmt.Sprintf("%s/entries=%d", where, n), func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					if _, err := casetest.Parse("wide.yaml", data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
