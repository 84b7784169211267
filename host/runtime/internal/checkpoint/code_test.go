package checkpoint

import "testing"

func TestStartsWithLoop(t *testing.T) {
	for _, tt := range []struct {
		name string
		code []byte
		want bool
	}{
		{"loop", []byte{opLoop, blockEmpty, opEnd, opEnd}, true},
		{"stock Go's prologue", []byte{opGlobalGet, 0, 0x21, 1, opBlock, blockEmpty, opLoop, blockEmpty}, true},
		{"constants first", []byte{opI32Const, 0x7f, 0x42, 0x80, 0x01, 0x1a, opLoop, blockEmpty}, false}, // drop is not in the list
		{"a call first", []byte{opCall, 3, opLoop, blockEmpty}, false},
		{"a branch first", []byte{opBlock, blockEmpty, 0x0d, 0, opLoop, blockEmpty}, false},
		{"a load first (it may trap)", []byte{0x28, 2, 0, opLoop, blockEmpty}, false},
		{"no loop", []byte{opI32Const, 1, opEnd}, false},
		{"empty", nil, false},
		{"truncated", []byte{opBlock}, false},
	} {
		if got := startsWithLoop(tt.code); got != tt.want {
			t.Errorf("%s: startsWithLoop(% x) = %v, want %v", tt.name, tt.code, got, tt.want)
		}
	}
}
