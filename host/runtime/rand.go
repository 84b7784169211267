package runtime

import (
	"io"
	"math/rand/v2"
)

// maxRandRead is the most random bytes one read produces before the
// deadline is checked again.
const maxRandRead = 1 << 20

// randSource is a guest's random_get: deterministic (a ChaCha8 stream from a
// fixed seed, like wazero's default, so that a guest stays a function of its
// input) and fast, and it stops once the call's deadline passed, so that
// random_get over a huge buffer ends with the call (the guest gets an error,
// its next checkpoint ends the call) instead of running past it.
type randSource struct {
	ctx *callContext
	rng *rand.ChaCha8
}

var _ io.Reader = (*randSource)(nil)

func newRandSource(ctx *callContext) *randSource {
	return &randSource{ctx: ctx, rng: rand.NewChaCha8([32]byte{})}
}

func (r *randSource) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	if len(p) > maxRandRead {
		p = p[:maxRandRead]
	}
	return r.rng.Read(p)
}
