package raw

// Reset forgets the registered module, so that each test can register its own.
func Reset() { module = registration{} }
