package input_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/internal/input"
	"github.com/kubeplug/kubeplug/host/internal/input/inputtest"
)

// TestReadFile: regular files, and symlinks to them, are read; a FIFO, a
// device, a directory and a file over the limit are refused before a byte
// is read, with what the file is and what it should be.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "m.wasm")
	require.NoError(t, os.WriteFile(regular, []byte("0123456789"), 0o644))
	link := filepath.Join(dir, "link.wasm")
	require.NoError(t, os.Symlink(regular, link))

	for _, path := range []string{regular, link} {
		b, err := input.ReadFile(path, 10, "module file")
		require.NoError(t, err)
		require.Equal(t, "0123456789", string(b))
	}

	tests := []struct {
		name  string
		path  string
		limit int64
		is    error
		want  string
	}{
		{"fifo", inputtest.FIFO(t, "m.wasm"), 1 << 20, input.ErrNotRegular, "it is a named pipe (FIFO); name the module file itself"},
		{"symlink to /dev/zero", inputtest.ZeroLink(t, "m.wasm"), 1 << 20, input.ErrNotRegular, "it is a character device (as /dev/zero)"},
		{"directory", dir, 1 << 20, input.ErrNotRegular, "it is a directory"},
		{"over the limit", regular, 9, input.ErrTooLarge, "it has 10 bytes, more than 9 bytes, the most a module file may have"},
		{"100 MB", inputtest.Sparse(t, "m.wasm", 100<<20), input.MaxModuleBytes, input.ErrTooLarge, "it has 100MiB, more than 64MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			inputtest.Within(t, "reading "+tt.name, func() { _, err = input.ReadFile(tt.path, tt.limit, "module file") })
			require.ErrorIs(t, err, tt.is)
			require.ErrorContains(t, err, tt.path)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestExcerpt(t *testing.T) {
	require.Equal(t, "short", input.Excerpt("short", 10))
	require.Equal(t, "ab... (9 bytes)", input.Excerpt("abé€xy", 3)) // not inside é
	require.Equal(t, `"abc"`, input.Quote("abc"))
	long := input.Quote(string(make([]byte, 1<<20)))
	require.Less(t, len(long), 400)
	require.Contains(t, long, "... (1048576 bytes)")
}
