package oci

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"
)

// cache keeps blobs (manifests and modules) on disk, each in a file named
// by its digest. A file is written to a temporary name and renamed, so a
// reader never sees half of one; and it is checked against its digest on
// every read, so a file damaged on disk is never returned.
type cache struct{ dir string }

func (c cache) path(d digest.Digest) string {
	return filepath.Join(c.dir, "blobs", d.Algorithm().String(), d.Encoded())
}

// get returns the blob with digest d, or nil when the cache does not hold it
// (or holds a damaged copy, which it removes).
func (c cache) get(d digest.Digest) []byte {
	if c.dir == "" || d.Validate() != nil {
		return nil
	}
	b, err := os.ReadFile(c.path(d))
	if err != nil {
		return nil
	}
	if d.Algorithm().FromBytes(b) != d {
		_ = os.Remove(c.path(d))
		return nil
	}
	return b
}

// put stores b, whose digest the caller has checked to be d.
func (c cache) put(d digest.Digest, b []byte) error {
	if c.dir == "" {
		return nil
	}
	if err := d.Validate(); err != nil {
		return fmt.Errorf("cache blob: %w", err)
	}
	final := c.path(d)
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return c.unwritable(d, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(final), ".tmp-*")
	if err != nil {
		return c.unwritable(d, err)
	}
	_, werr := tmp.Write(b)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("cache blob %s: %w", d, err)
	}
	if err := os.Rename(tmp.Name(), final); err != nil && !errors.Is(err, fs.ErrExist) {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("cache blob %s: %w", d, err)
	}
	return nil
}

// unwritable says that the cache directory cannot take blob d, and what to do.
func (c cache) unwritable(d digest.Digest, err error) error {
	return fmt.Errorf("keep blob %s in the image cache %s: %w: give kubeplug's --image-cache-dir a writable directory, "+
		"or an empty one to keep no pulled module on disk", d, c.dir, err)
}
