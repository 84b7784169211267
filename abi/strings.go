package abi

import (
	"unsafe"

	"github.com/tinylib/msgp/msgp"
)

// readStringBytes decodes a MessagePack str without copying it: the string
// shares memory with the message. The generated decoders call it instead of
// msgp.ReadStringBytes (hack/gen-abi.sh rewrites the calls), because copying
// every string was most of the cost of decoding a reconcile input in a guest
// (see RATIONALE.md). The price is the rule on the Decode functions: the
// buffer handed to a decoder must never be written again. The garbage
// collector keeps it alive for as long as any decoded string points into it.
func readStringBytes(b []byte) (string, []byte, error) {
	v, o, err := msgp.ReadStringZC(b)
	if err != nil || len(v) == 0 {
		return "", o, err
	}
	return unsafe.String(&v[0], len(v)), o, nil
}
