package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// cacheFlag is a cache directory flag (--cache-dir, --image-cache-dir). Given,
// it is used as it is ("" keeps nothing on disk). Not given, it is the first
// writable of the user's cache directory ($XDG_CACHE_HOME or ~/.cache, under
// kubeplug/<sub>) and a per-user directory under the temporary directory
// (kubeplug-<uid>/<sub>), else none: a container with a read-only root
// filesystem and a writable /tmp (or none at all) still runs, where the old
// default, ~/.cache, failed at start.
//
// The default is found the first time a command asks for it, so commands
// that keep nothing (version, new, ...) touch no directory.
type cacheFlag struct {
	name, sub string
	value     string
	given     bool

	once     sync.Once
	resolved string
}

func newCacheFlag(name, sub string) cacheFlag { return cacheFlag{name: name, sub: sub} }

func (f *cacheFlag) String() string { return f.value }
func (f *cacheFlag) Type() string   { return "dir" }
func (f *cacheFlag) Set(v string) error {
	f.value, f.given = v, true
	return nil
}

// dir is the directory to use: the one given, or the default found (see
// cacheFlag); "" for none.
func (f *cacheFlag) dir() string {
	if f.given {
		return f.value
	}
	f.once.Do(func() {
		for _, d := range defaultCacheDirs(f.sub) {
			if writable(d) == nil {
				f.resolved = d
				return
			}
		}
	})
	return f.resolved
}

// writableDir is dir, checked: a directory that was given and cannot be
// written is a usage error that names the flag. A default that cannot be
// written was already passed over.
func (f *cacheFlag) writableDir() (string, error) {
	d := f.dir()
	if d == "" || !f.given {
		return d, nil
	}
	if err := writable(d); err != nil {
		return "", inputErrorf("--%s %s is not a directory kubeplug can write: %v: give a writable directory, or --%s= to keep nothing on disk",
			f.name, d, err, f.name)
	}
	return d, nil
}

// defaultCacheDirs are the candidates of a cache flag's default, in order.
func defaultCacheDirs(sub string) []string {
	var dirs []string
	if d, err := os.UserCacheDir(); err == nil {
		dirs = append(dirs, filepath.Join(d, "kubeplug", sub))
	}
	return append(dirs, filepath.Join(os.TempDir(), "kubeplug-"+strconv.Itoa(os.Getuid()), sub))
}

// writable makes dir (only its owner may enter it, as it holds code the host
// runs) and checks that a file can be created in it.
func writable(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	return nil
}
