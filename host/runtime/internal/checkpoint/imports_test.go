package checkpoint_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/runtime/internal/checkpoint"
)

func TestImportModules(t *testing.T) {
	tests := []struct {
		name    string
		wasm    []byte
		want    map[string]bool
		wantErr error
	}{
		{"no imports", []byte("\x00asm\x01\x00\x00\x00"), map[string]bool{}, nil},
		{
			// (import "extism:host/env" "alloc" (func (type 0))) and a memory from "a"
			"functions and a memory",
			[]byte("\x00asm\x01\x00\x00\x00" +
				"\x01\x04\x01\x60\x00\x00" + // type section: () -> ()
				"\x02\x20\x02" + // import section, two entries
				"\x0fextism:host/env\x05alloc\x00\x00" +
				"\x01a\x01m\x02\x00\x01"),
			map[string]bool{"extism:host/env": true, "a": true}, nil,
		},
		{"truncated import section", []byte("\x00asm\x01\x00\x00\x00\x02\x05\x01\x0fext"), nil, checkpoint.ErrMalformed},
		{"not wasm", []byte("hello"), nil, checkpoint.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := checkpoint.ImportModules(tt.wasm)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// RenameImports renames the modules it names, every kind of import alike,
// and leaves the rest and the imports' order as they were.
func TestInsertRenamesImports(t *testing.T) {
	wasm := []byte("\x00asm\x01\x00\x00\x00" +
		"\x01\x04\x01\x60\x00\x00" + // type section: () -> ()
		"\x02\x20\x02" + // import section, two entries
		"\x0fextism:host/env\x05alloc\x00\x00" +
		"\x01a\x01m\x02\x00\x01")
	imp := checkpoint.Import{Module: "kubeplug:test", Name: "checkpoint"}
	out, err := checkpoint.InsertWithLimits(wasm, imp, 100, checkpoint.Limits{RenameImports: map[string]string{"extism:host/env": "kubeplug:env", "b": "c"}})
	require.NoError(t, err)
	got, err := checkpoint.ImportModules(out)
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"kubeplug:env": true, "a": true, "kubeplug:test": true}, got)

	plain, err := checkpoint.Insert(wasm, imp, 100)
	require.NoError(t, err)
	require.Len(t, out, len(plain)+len("kubeplug:env")-len("extism:host/env"), "only the name changed")
}
