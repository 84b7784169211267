package casetest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kubeplug/kubeplug/host/internal/input"
)

// LoadPaths reads and parses the case files at paths. A file is read
// whatever its name; a directory is walked recursively for *.yaml and *.yml
// files, in lexical order. Every error is an *InputError: a path that cannot
// be read, a directory without case files, a file without cases, or a file
// that does not parse.
func LoadPaths(paths []string) ([]File, error) {
	var files []string
	for _, p := range paths {
		found, err := casePaths(p)
		if err != nil {
			return nil, err
		}
		for _, f := range found {
			if !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
	}
	out := make([]File, 0, len(files))
	for _, path := range files {
		data, err := input.ReadFile(path, input.MaxCaseBytes, "case file")
		if err != nil {
			return nil, &InputError{File: path, Msg: readError(err)}
		}
		f, err := Parse(path, data)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func casePaths(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, &InputError{File: p, Msg: readError(err)}
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	var found []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return &InputError{File: path, Msg: readError(err)}
		}
		ext := strings.ToLower(filepath.Ext(path))
		if !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, &InputError{File: p, Msg: "no case files (*.yaml, *.yml) in this directory"}
	}
	return found, nil
}

// readError says why a path cannot be read, without repeating the path.
func readError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return "cannot read: " + err.Error()
}
