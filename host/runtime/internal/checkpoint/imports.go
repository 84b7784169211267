package checkpoint

import (
	"bytes"
	"fmt"
)

// ImportModules returns the names of the modules wasm imports from (functions,
// tables, memories, globals, tags), each once, so that a host can tell which
// ABI a module speaks before it compiles it. It reads the header and the
// import section only, with the same bounds checks as Insert.
func ImportModules(wasm []byte) (map[string]bool, error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], header[:4]) {
		return nil, fmt.Errorf("%w: no WebAssembly magic bytes", ErrMalformed)
	}
	sections, err := split(wasm)
	if err != nil {
		return nil, err
	}
	m := &module{importModules: map[string]bool{}}
	for _, s := range sections {
		if s.id == secImport {
			if err := m.surveyImports(newReader(s.body, s.at, "import section")); err != nil {
				return nil, err
			}
		}
	}
	return m.importModules, nil
}
