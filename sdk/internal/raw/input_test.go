package raw_test

import (
	"bytes"
	"testing"

	"github.com/kubeplug/kubeplug/sdk/internal/raw"
)

// The export decodes each input from its copy and decoded strings share the
// copy's memory, so a copy must hold the input and never change afterwards,
// whatever is copied later.
func TestCopyInput(t *testing.T) {
	tests := []struct {
		name  string
		sizes []int
	}{
		{"small", []int{1, 10, 100}},
		{"fills blocks", []int{raw.CopyBlock / 4, raw.CopyBlock / 4, raw.CopyBlock / 4, raw.CopyBlock / 4, raw.CopyBlock / 4, 3}},
		{"large", []int{raw.CopyBlock/4 + 1, 5, 2 * raw.CopyBlock}},
		{"empty", []int{0, 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var inputs, copies [][]byte
			for i, n := range tt.sizes {
				in := bytes.Repeat([]byte{byte(i + 1)}, n)
				c := raw.CopyInput(in)
				clear(in) // the host writes the next input over the region
				inputs = append(inputs, bytes.Repeat([]byte{byte(i + 1)}, n))
				copies = append(copies, c)
			}
			for i := range copies {
				if !bytes.Equal(copies[i], inputs[i]) {
					t.Errorf("copy %d (size %d) changed after later copies", i, tt.sizes[i])
				}
				if len(copies[i]) != cap(copies[i]) {
					t.Errorf("copy %d has room beyond its input (len %d, cap %d): appending to it would write over the next", i, len(copies[i]), cap(copies[i]))
				}
			}
		})
	}
}
