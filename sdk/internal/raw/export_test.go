package raw

// Reset forgets the registered module, so that each test can register its own.
func Reset() { module = registration{} }

// CopyInput is copyInput, which the wasm export uses on every input.
var CopyInput = copyInput

// CopyBlock is copyBlock.
const CopyBlock = copyBlock
