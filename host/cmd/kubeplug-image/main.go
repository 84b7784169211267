package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeplug-image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("kubeplug-image", flag.ContinueOnError)
	o := Options{}
	fs.StringVar(&o.Out, "out", "../build/image", "directory to write the OCI layout (oci/), the docker tarball (kubeplug.tar), the SBOMs and the digest into")
	fs.StringVar(&o.Modules, "modules", "../build/guests", "directory whose *.wasm files go into the image under /modules")
	fs.StringVar(&o.CABundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM bundle of CA certificates installed as /etc/ssl/certs/ca-certificates.crt")
	fs.StringVar(&o.Repository, "repository", "kubeplug", "repository the image's tag names (docker load tags the image REPOSITORY:VERSION)")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "platforms of the image index, comma-separated: the binary is cross-compiled for each (CGO off)")
	fs.StringVar(&o.TarballArch, "tarball-arch", "", "GOARCH of the one image in the docker tarball; default this machine's if built, else the first platform's")
	fs.StringVar(&o.SignKey, "sign-key", "", "PEM EC private key (as kubeplug push --sign-key reads) that signs the index, each image and each SBOM, as cosign sign --key would; without it the image is unsigned")
	fs.StringVar(&o.Version, "version", "", "version stamped into the binary and the image; default the VERSION file at the repository root, else git describe --tags --match 'v[0-9]*' --always --dirty, as make -s version prints it")
	fs.StringVar(&o.Commit, "commit", "", "commit stamped into the binary and the image; default git rev-parse HEAD")
	fs.Int64Var(&o.Epoch, "source-date-epoch", -1, "the image's creation time in Unix seconds; default $SOURCE_DATE_EPOCH, else the commit's time")
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fmt.Fprintln(stdout, "kubeplug-image builds the host's image index without a container daemon (make image runs it). Flags:")
		fs.PrintDefaults()
		return nil
	} else if err != nil {
		return fmt.Errorf("%w (run with -h for the flags)", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: every input is a flag", fs.Args())
	}
	archs, err := parsePlatforms(*platforms)
	if err != nil {
		return err
	}
	o.Archs = archs
	if o.TarballArch == "" {
		o.TarballArch = archs[0]
		if slices.Contains(archs, runtime.GOARCH) {
			o.TarballArch = runtime.GOARCH
		}
	}
	if err := o.resolve(ctx); err != nil {
		return err
	}
	res, err := Build(ctx, o)
	if err != nil {
		return err
	}
	return report(stdout, res)
}

// report says what was built, and whether it is signed.
func report(w io.Writer, res Result) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "%s\n  %-13s %s\n", res.Tag, "index", res.Digest)
	for _, p := range res.Platforms {
		fmt.Fprintf(b, "  %-13s %s (SBOM %s)\n", "linux/"+p.Arch, p.Digest, p.SBOM)
	}
	fmt.Fprintf(b, "  %-13s %s\n  %-13s %s (linux/%s, docker load -i)\n", "layout", res.Layout, "tarball", res.Tarball, res.TarballArch)
	if res.Signed {
		fmt.Fprintf(b, "  signed: the index, each image and each SBOM carry a signature (cosign's bundle format) in the layout\n")
	} else {
		fmt.Fprintf(b, "  unsigned: no -sign-key given (make image SIGN_KEY=key.pem signs)\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
