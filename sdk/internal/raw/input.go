package raw

// spare is the unused tail of the block that small inputs are copied into.
// Carving copies out of a shared block saves a trip through the allocator per
// call, which in a guest costs more than the copy itself. The bytes handed
// out are never written again, as the decoded strings require; the price is
// that a string a module keeps pins its whole block.
var spare []byte

// copyBlock is the size of a block of small input copies; inputs larger than
// a quarter of it get an allocation of their own, so that at most a quarter
// of a block is wasted when it runs out.
const copyBlock = 16 << 10

// copyInput returns a copy of b in memory that is never written again.
func copyInput(b []byte) []byte {
	n := len(b)
	if n > copyBlock/4 {
		return append([]byte(nil), b...)[:n:n]
	}
	if n > len(spare) {
		spare = make([]byte, copyBlock)
	}
	c := spare[:n:n]
	spare = spare[n:]
	copy(c, b)
	return c
}
