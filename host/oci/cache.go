package oci

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"

	"github.com/kubeplug/kubeplug/host/internal/input"
)

// cache keeps blobs (manifests and modules) and the signature bundles that
// verified manifests on disk, each in a file named by its digest. A file is
// written to a temporary name and renamed, so a reader never sees half of
// one. A read trusts nothing on disk: the entry must be a regular file (not
// a symlink, FIFO or device) no larger than the caller's bound, checked
// before it is read; a blob must have its digest, and a bundle is verified
// again with the configured key. An entry that fails is removed and its
// content fetched again.
type cache struct{ dir string }

func (c cache) path(d digest.Digest) string {
	return filepath.Join(c.dir, "blobs", d.Algorithm().String(), d.Encoded())
}

// bundlePath is where the signature bundle that verified the manifest d in
// repository repo (registry/name) is kept: beside the manifest, named by
// the repository too, because a signature is looked up in the repository
// an image is pulled from, and the same manifest pushed unsigned to another
// repository is not signed there.
func (c cache) bundlePath(repo string, d digest.Digest) string {
	h := sha256.Sum256([]byte(repo))
	return c.path(d) + "." + hex.EncodeToString(h[:8]) + ".sigstore.json"
}

// get returns the blob with digest d, at most limit bytes. It returns nil
// and no error when the cache does not hold it, and nil and an ErrCache
// error saying what was wrong when it holds something else there, which it
// removes.
func (c cache) get(d digest.Digest, limit int64) ([]byte, error) {
	if c.dir == "" || d.Validate() != nil {
		return nil, nil
	}
	b, err := c.read(c.path(d), limit)
	if b == nil || err != nil {
		return nil, err
	}
	if d.Algorithm().FromBytes(b) != d {
		_ = os.Remove(c.path(d))
		return nil, fmt.Errorf("%w: %s does not have the digest it is named by (removed; fetched again)", ErrCache, c.path(d))
	}
	return b, nil
}

// getBundle returns the signature bundle kept for the manifest d in repo, nil if
// none; the caller verifies it.
func (c cache) getBundle(repo string, d digest.Digest) ([]byte, error) {
	if c.dir == "" || d.Validate() != nil {
		return nil, nil
	}
	return c.read(c.bundlePath(repo, d), maxMetadata)
}

// read returns the content of the cache file path, nil if there is none;
// a file that is not regular or is larger than limit is removed and
// reported.
func (c cache) read(path string, limit int64) ([]byte, error) {
	b, err := input.ReadOwnFile(path, limit, "image cache entry")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		_ = os.Remove(path) // a symlink or FIFO itself, not what it names
		return nil, fmt.Errorf("%w: %w (removed; fetched again)", ErrCache, err)
	}
	return b, nil
}

// put stores b, whose digest the caller has checked to be d.
func (c cache) put(d digest.Digest, b []byte) error {
	if c.dir == "" {
		return nil
	}
	if err := d.Validate(); err != nil {
		return fmt.Errorf("cache blob: %w", err)
	}
	return c.write(c.path(d), b)
}

// putBundle keeps b, a bundle that verified the manifest d.
func (c cache) putBundle(repo string, d digest.Digest, b []byte) error {
	if c.dir == "" || d.Validate() != nil {
		return nil
	}
	return c.write(c.bundlePath(repo, d), b)
}

func (c cache) write(final string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return c.unwritable(final, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(final), ".tmp-*")
	if err != nil {
		return c.unwritable(final, err)
	}
	_, werr := tmp.Write(b)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("cache %s: %w", final, err)
	}
	// A rename replaces a symlink or FIFO planted at final, never what
	// it names.
	if err := os.Rename(tmp.Name(), final); err != nil && !errors.Is(err, fs.ErrExist) {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("cache %s: %w", final, err)
	}
	return nil
}

// unwritable says that the cache directory cannot take the file final,
// and what to do.
func (c cache) unwritable(final string, err error) error {
	return fmt.Errorf("keep %s in the image cache %s: %w: give kubeplug's --image-cache-dir a writable directory, "+
		"or an empty one to keep no pulled module on disk", filepath.Base(final), c.dir, err)
}
