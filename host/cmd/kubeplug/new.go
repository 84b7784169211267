package main

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strconv"
	"strings"
	"text/template"

	"github.com/spf13/cobra"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"

	"github.com/kubeplug/kubeplug/host/internal/input"
)

// scaffold holds the files of a new module, each a text/template (with [[ ]]
// as delimiters) named
// after the file it makes with ".tmpl" added (so that the go tool does not
// take the Go ones for this package's sources).
//
//go:embed scaffold
var scaffold embed.FS

// scaffoldNames maps a template's path under scaffold/ to the file it makes
// where the name cannot say it (a dot file).
var scaffoldNames = map[string]string{"gitignore": ".gitignore"}

// kubeplugModule is the Go module path of abi and sdk.
const kubeplugModule = "github.com/kubeplug/kubeplug"

// moduleName is what kubeplug new takes as a module's name: it becomes the
// manifest's name (metric labels, event sources, webhook paths) and a file
// name, so a DNS label.
var moduleName = regexp.MustCompile(`^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`)

// scaffoldData is what the templates are filled with.
type scaffoldData struct {
	Name, ModulePath, GoVersion string
	// Source is the absolute path of the kubeplug checkout that go.mod's
	// replace points at (quoted as go.mod needs); Kubeplug the kubeplug
	// binary the Makefile runs.
	Source, Kubeplug string
}

// newOptions are kubeplug new's name and flags.
type newOptions struct{ name, dir, modulePath, source string }

func newNewCommand(s streams) *cobra.Command {
	var o newOptions
	cmd := &cobra.Command{
		Use:   "new NAME [--dir DIR] [--module-path PATH] [--kubeplug-source DIR]",
		Short: "Make a new module outside this repository, ready to build and test",
		Long: `New writes a module named NAME into DIR (default ./NAME, which must not exist or
be empty): main.go (a working StatefulSet policy to change), main_test.go (tests
that run natively and against the compiled module), testdata/cases.yaml (case
files for kubeplug test), a Makefile (build, test) and go.mod.

github.com/kubeplug/kubeplug, the Go module of the SDK, is not published yet:
go.mod requires it through a replace directive that points at a kubeplug
checkout, --kubeplug-source (default: the checkout this kubeplug binary was
built from, found beside the binary, at the path it was compiled from, or
above the current directory). Then:

  cd NAME && go mod tidy && make test`,
		Example: `  kubeplug new mypolicy
  kubeplug new mypolicy --dir ~/src/mypolicy --module-path example.com/policies/mypolicy --kubeplug-source ~/src/kubeplug`,
		Args: exactArgs(1, "the new module's name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.name = args[0]
			return newModule(s, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "", "directory to write the module into (default ./NAME)")
	f.StringVar(&o.modulePath, "module-path", "", "the new module's Go module path (default example.com/NAME)")
	f.StringVar(&o.source, "kubeplug-source", "", "the kubeplug checkout go.mod's replace points at (default: the one this binary was built from)")
	return cmd
}

// newModule writes the module o asks for. Each input that reaches a file is
// checked for what that file's syntax would read in it: the name (in Go
// source, the Makefile and file names) is a DNS label, the module path (in
// go.mod) is a module path as the go command checks it, so a newline cannot
// add a directive, and the checkout's path and this binary's are quoted or
// left out where they are not plain.
func newModule(s streams, o newOptions) error {
	if !moduleName.MatchString(o.name) {
		return inputErrorf("module name %q: want lower-case letters, digits and '-', starting with a letter, at most 63 (it names the module in metrics, events and files)", o.name)
	}
	if o.dir == "" {
		o.dir = o.name
	}
	if o.modulePath == "" {
		o.modulePath = "example.com/" + o.name
	}
	if err := module.CheckPath(o.modulePath); err != nil {
		return inputErrorf("--module-path: %w; give a Go module path such as example.com/%s", err, o.name)
	}
	src, err := findSource(o.source)
	if err != nil {
		return err
	}
	d := scaffoldData{Name: o.name, ModulePath: o.modulePath, Source: modfile.AutoQuote(src.dir), GoVersion: src.goVersion, Kubeplug: "kubeplug"}
	var note string
	if exe, err := os.Executable(); err == nil {
		d.Kubeplug, note = makefileBinary(exe)
	}
	files, err := renderScaffold(d)
	if err != nil {
		return failure(err)
	}
	if err := writeScaffold(o.dir, files); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "wrote module %s in %s (go.mod replaces %s with %s)%s\nnext: cd %s && go mod tidy && make test\n",
		o.name, termSafe(o.dir), kubeplugModule, termSafe(src.dir), termSafe(note), termSafe(o.dir))
	return nil
}

// makefileBinary returns what the Makefile's KUBEPLUG names: exe, this
// binary, when its path is plain (see plainPath), else kubeplug from PATH,
// with a note that says why.
func makefileBinary(exe string) (bin, note string) {
	if plainPath.MatchString(exe) {
		return exe, ""
	}
	return "kubeplug", fmt.Sprintf("; its Makefile runs kubeplug from PATH, as this binary's path %s cannot be written in a Makefile as it is (make KUBEPLUG=... names another)", strconv.Quote(exe))
}

// plainPath is a path that a Makefile variable and the shell running its
// recipes both read as written: no '$' for make to expand, no '#' to start a
// comment, no space, quote, ';', '~' or newline for the shell.
var plainPath = regexp.MustCompile(`^[A-Za-z0-9_@+=:,./-]+$`)

// kubeplugSource is a kubeplug checkout: its absolute path and its go.mod's
// go version.
type kubeplugSource struct{ dir, goVersion string }

// findSource returns the checkout given, or the first of: the directory
// above the binary (make build writes build/kubeplug), the checkout the
// binary was compiled in (when built without -trimpath), and the current
// directory and those above it.
func findSource(given string) (kubeplugSource, error) {
	if given != "" {
		s, err := readSource(given)
		if err != nil {
			return s, inputErrorf("--kubeplug-source %s: %w", given, err)
		}
		return s, nil
	}
	var candidates []string
	if exe, err := os.Executable(); err == nil {
		if exe, err := filepath.EvalSymlinks(exe); err == nil {
			candidates = append(candidates, filepath.Dir(filepath.Dir(exe)))
		}
	}
	if _, file, _, ok := goruntime.Caller(0); ok && filepath.IsAbs(file) {
		// file is <checkout>/host/cmd/kubeplug/new.go
		candidates = append(candidates, filepath.Join(filepath.Dir(file), "..", "..", ".."))
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			candidates = append(candidates, d)
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	for _, c := range candidates {
		if s, err := readSource(c); err == nil {
			return s, nil
		}
	}
	return kubeplugSource{}, inputErrorf("cannot find a kubeplug checkout (a directory whose go.mod is module %s) beside this binary, "+
		"where it was built, or above the current directory: pass --kubeplug-source DIR", kubeplugModule)
}

// readSource checks that dir is a kubeplug checkout.
func readSource(dir string) (kubeplugSource, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return kubeplugSource{}, err
	}
	path := filepath.Join(abs, "go.mod")
	data, err := input.ReadFile(path, input.MaxSmallBytes, "go.mod")
	if err != nil {
		return kubeplugSource{}, err
	}
	f, err := modfile.ParseLax(path, data, nil)
	if err != nil {
		return kubeplugSource{}, err
	}
	if f.Module == nil || f.Module.Mod.Path != kubeplugModule {
		return kubeplugSource{}, fmt.Errorf("%s is not the go.mod of %s", path, kubeplugModule)
	}
	if _, err := os.Stat(filepath.Join(abs, "sdk", "sdktest")); err != nil {
		return kubeplugSource{}, fmt.Errorf("%s has no sdk/sdktest: %w", abs, err)
	}
	s := kubeplugSource{dir: abs, goVersion: goruntime.Version()[2:]}
	if f.Go != nil {
		s.goVersion = f.Go.Version
	}
	return s, nil
}

// renderScaffold fills every template with d, by the path of the file it
// makes.
func renderScaffold(d scaffoldData) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := fs.WalkDir(scaffold, "scaffold", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		// [[ ]] rather than {{ }}, which Go's composite literals are full of.
		t, err := template.New(filepath.Base(path)).Delims("[[", "]]").ParseFS(scaffold, path)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, d); err != nil {
			return fmt.Errorf("scaffold %s: %w", path, err)
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(path, "scaffold/"), ".tmpl")
		if n, ok := scaffoldNames[rel]; ok {
			rel = n
		}
		out[filepath.FromSlash(rel)] = b.Bytes()
		return nil
	})
	return out, err
}

// writeScaffold writes files under dir, which must not exist or be empty:
// kubeplug new never overwrites anything.
func writeScaffold(dir string, files map[string][]byte) error {
	entries, err := os.ReadDir(dir)
	switch {
	case err == nil && len(entries) > 0:
		return inputErrorf("%s exists and is not empty: kubeplug new writes only into a new or empty directory (--dir)", dir)
	case err != nil && !os.IsNotExist(err):
		return inputErrorf("%s: %w", dir, err)
	}
	for rel, data := range files {
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return inputErrorf("write the module: %w", err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return inputErrorf("write the module: %w", err)
		}
	}
	return nil
}
