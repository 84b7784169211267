package input

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Bounds of the files the host reads on an operator's say.
const (
	// MaxModuleBytes bounds a module file: the size oci bounds an image's
	// module layer to, so that a file is no way around it.
	MaxModuleBytes = 64 << 20
	// MaxConfigBytes bounds host.yaml: many times a configuration of
	// dozens of modules with their guest configurations. yaml.v3 builds a
	// document's whole tree before anything can count it, at up to about
	// 150 bytes of heap per byte of input, so this bound is also what a
	// reload may allocate to parse the file (about 40 MB at worst).
	MaxConfigBytes = 256 << 10
	// MaxCaseBytes bounds one case file of kubeplug test: a recorded
	// StatefulSet with a thousand pods and claims fits several times.
	MaxCaseBytes = 8 << 20
	// MaxSmallBytes bounds the small files host.yaml names beside modules:
	// public keys, CA bundles, docker configs and pull secrets.
	MaxSmallBytes = 1 << 20
)

var (
	// ErrNotRegular: the path names a directory, a FIFO, a device or a
	// socket (after symlinks), which the host never reads.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: the file is larger than its bound.
	ErrTooLarge = errors.New("file too large")
)

// ReadFile returns the contents of the regular file at path, at most limit
// bytes; what names the file in errors ("module file", "host
// configuration"). A symlink to a regular file is followed; anything that
// is not a regular file once opened is refused without a read (wrapping
// ErrNotRegular), and so is a file larger than limit (ErrTooLarge), whether
// it was before the read or grew during it.
//
// The file is opened with O_NONBLOCK, so that opening a FIFO with no writer
// returns at once instead of waiting for one; the type is then checked on
// the opened descriptor (fstat), so that a path swapped between a check and
// the open cannot slip a device through.
func ReadFile(path string, limit int64, what string) ([]byte, error) {
	return read(path, limit, what, 0)
}

// ReadOwnFile is ReadFile for a file only the host writes (an entry of its
// image cache): a symlink there was planted, and is refused (O_NOFOLLOW)
// rather than followed.
func ReadOwnFile(path string, limit int64, what string) ([]byte, error) {
	return read(path, limit, what, syscall.O_NOFOLLOW)
}

func read(path string, limit int64, what string, flags int) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|flags, 0)
	if errors.Is(err, syscall.ELOOP) && flags&syscall.O_NOFOLLOW != 0 {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: it is a symbolic link; the %s must be the file itself", ErrNotRegular, what)}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: it is %s; name the %s itself", ErrNotRegular, Kind(st.Mode()), what)}
	}
	if st.Size() > limit {
		return nil, tooLarge(path, Bytes(st.Size())+", more than "+Bytes(limit), what)
	}
	buf := make([]byte, 0, st.Size()+1) // +1: EOF is seen without a grow
	b, err := readAll(io.LimitReader(f, limit+1), buf)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if int64(len(b)) > limit { // it grew while read
		return nil, tooLarge(path, "more than "+Bytes(limit), what)
	}
	return b, nil
}

// readAll is io.ReadAll into buf.
func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// tooLarge says a file is over its limit; has says by how much.
func tooLarge(path, has, what string) error {
	return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: it has %s, the most a %s may have; check that the path names the right file",
		ErrTooLarge, has, what)}
}

// Kind names what a file that is not regular is, for messages: "a named
// pipe (FIFO)".
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device (as /dev/zero)"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file (" + m.Type().String() + ")"
}

// Bytes formats n as the operator would write it: 64MiB, 1.5KiB, 12 bytes.
func Bytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
