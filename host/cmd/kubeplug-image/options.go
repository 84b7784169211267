package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Options say what to build and where to write it.
type Options struct {
	// Out receives oci/, kubeplug.tar and digest.
	Out string
	// Modules is the directory of *.wasm files put under ModulesDir.
	Modules string
	// CABundle is the PEM bundle installed at CABundlePath.
	CABundle string
	// Repository and Version make the image's tag.
	Repository string
	// Archs are the platforms' GOARCHs, linux/ARCH each: one image per
	// platform, its binary cross-compiled, in one image index.
	Archs []string
	// TarballArch is the platform of the docker tarball, which holds one
	// image; one of Archs.
	TarballArch string
	// SignKey, when set, is a PEM EC private key that signs the index,
	// each platform's image and each SBOM, as modules are signed.
	SignKey string
	// Version and Commit are stamped into the binary (main.version,
	// main.commit) and the image's labels.
	Version, Commit string
	// Epoch is the creation time of the image in Unix seconds; -1 until
	// resolved.
	Epoch int64
	// HostDir is the host module's directory; default found with go list.
	HostDir string
}

const hostModule = "github.com/kubeplug/kubeplug/host"

var (
	// A version must be a valid tag: docker's rule.
	versionSyntax = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	commitSyntax  = regexp.MustCompile(`^[0-9a-f]{7,64}$`)
	archs         = map[string]bool{"amd64": true, "arm64": true, "arm": true, "ppc64le": true, "s390x": true, "riscv64": true, "386": true}
)

// resolve fills what the flags left out from the repository: the VERSION
// file or git for the version, git for the commit and its time.
func (o *Options) resolve(ctx context.Context) error {
	if o.HostDir == "" {
		dir, err := output(ctx, "", "go", "list", "-m", "-f", "{{.Dir}}", hostModule)
		if err != nil {
			return fmt.Errorf("find the host module (run from inside host/): %w", err)
		}
		o.HostDir = dir
	}
	root := filepath.Dir(o.HostDir)
	if o.Version == "" {
		if b, err := os.ReadFile(filepath.Join(root, "VERSION")); err == nil {
			o.Version = strings.TrimSpace(string(b))
		} else if v, err := output(ctx, root, "git", "describe", "--tags", "--match", "v[0-9]*", "--always", "--dirty"); err == nil {
			o.Version = v
		} else {
			return fmt.Errorf("no VERSION file at %s and git describe failed (%w): pass -version", root, err)
		}
	}
	if o.Commit == "" {
		c, err := output(ctx, root, "git", "rev-parse", "HEAD")
		if err != nil {
			return fmt.Errorf("git rev-parse HEAD failed (%w): pass -commit", err)
		}
		o.Commit = c
	}
	if o.Epoch < 0 {
		s := os.Getenv("SOURCE_DATE_EPOCH")
		if s == "" {
			var err error
			if s, err = output(ctx, root, "git", "log", "-1", "--format=%ct", "HEAD"); err != nil {
				return fmt.Errorf("the commit's time: git log failed (%w): pass -source-date-epoch or set SOURCE_DATE_EPOCH", err)
			}
		}
		e, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH %q is not Unix seconds: %w", s, err)
		}
		o.Epoch = e
	}
	return nil
}

func (o Options) validate() error {
	var errs []error
	if !versionSyntax.MatchString(o.Version) {
		errs = append(errs, fmt.Errorf("version %q must match %s to be an image tag (git describe gives one; so must the VERSION file)", o.Version, versionSyntax))
	}
	if !commitSyntax.MatchString(o.Commit) {
		errs = append(errs, fmt.Errorf("commit %q must be a git object name in lower-case hex", o.Commit))
	}
	if o.Epoch < 0 || o.Epoch > 1<<34 {
		errs = append(errs, fmt.Errorf("source date epoch %d is out of range", o.Epoch))
	}
	seen := map[string]bool{}
	for _, a := range o.Archs {
		if !archs[a] {
			errs = append(errs, fmt.Errorf("platform linux/%s: %q is not a linux GOARCH images are built for (%s)", a, a, knownArchs()))
		} else if seen[a] {
			errs = append(errs, fmt.Errorf("platform linux/%s is named twice", a))
		}
		seen[a] = true
	}
	if len(o.Archs) == 0 {
		errs = append(errs, errors.New("no platform: name at least one, e.g. -platforms linux/amd64"))
	} else if !seen[o.TarballArch] {
		errs = append(errs, fmt.Errorf("the tarball's platform linux/%s is not among those built", o.TarballArch))
	}
	if o.HostDir == "" || o.Out == "" {
		errs = append(errs, errors.New("the host module's directory and -out are needed"))
	}
	return errors.Join(errs...)
}

// knownArchs lists archs, sorted, for messages.
func knownArchs() string {
	var as []string
	for a := range archs {
		as = append(as, "linux/"+a)
	}
	sort.Strings(as)
	return strings.Join(as, ", ")
}

// parsePlatforms reads -platforms: linux/ARCH, comma-separated.
func parsePlatforms(s string) ([]string, error) {
	var as []string
	for p := range strings.SplitSeq(s, ",") {
		a, ok := strings.CutPrefix(strings.TrimSpace(p), "linux/")
		if !ok || a == "" {
			return nil, fmt.Errorf("-platforms %q: %q is not linux/ARCH (images are built for %s)", s, p, knownArchs())
		}
		as = append(as, a)
	}
	return as, nil
}

// compile cross-compiles the static, stripped, stamped binary for
// linux/arch and returns it.
func compile(ctx context.Context, o Options, arch string) ([]byte, error) {
	tmp, err := os.MkdirTemp(o.Out, ".kubeplug-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "kubeplug")
	ldflags := fmt.Sprintf("-s -w -buildid= -X main.version=%s -X main.commit=%s", o.Version, o.Commit)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", bin, "./cmd/kubeplug")
	cmd.Dir = o.HostDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./cmd/kubeplug for linux/%s: %w\n%s", arch, err, out)
	}
	return os.ReadFile(bin)
}

// output runs a command and returns its trimmed standard output.
func output(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
