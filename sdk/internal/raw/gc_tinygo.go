//go:build wasip1 && tinygo

package raw

// afterCall does nothing under TinyGo: its collector stops the world on
// allocation already, with no write barriers to spare, and it has no
// runtime/metrics.
func afterCall() {}
