package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
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
	fs.StringVar(&o.Out, "out", "../build/image", "directory to write the OCI layout (oci/), the docker tarball (kubeplug.tar) and the digest into")
	fs.StringVar(&o.Modules, "modules", "../build/guests", "directory whose *.wasm files go into the image under /modules")
	fs.StringVar(&o.CABundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM bundle of CA certificates installed as /etc/ssl/certs/ca-certificates.crt")
	fs.StringVar(&o.Repository, "repository", "kubeplug", "repository the tarball's tag names (docker load tags the image REPOSITORY:VERSION)")
	fs.StringVar(&o.Arch, "arch", envOr("GOARCH", runtime.GOARCH), "GOARCH of the binary and of the image's platform (linux/ARCH)")
	fs.StringVar(&o.Version, "version", "", "version stamped into the binary and the image; default the VERSION file at the repository root, else git describe --tags --always --dirty")
	fs.StringVar(&o.Commit, "commit", "", "commit stamped into the binary and the image; default git rev-parse HEAD")
	fs.Int64Var(&o.Epoch, "source-date-epoch", -1, "the image's creation time in Unix seconds; default $SOURCE_DATE_EPOCH, else the commit's time")
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w (run with -h for the flags)", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: every input is a flag", fs.Args())
	}
	if err := o.resolve(ctx); err != nil {
		return err
	}
	res, err := Build(ctx, o)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n  digest  %s\n  layout  %s\n  tarball %s (docker load -i)\n", res.Tag, res.Digest, res.Layout, res.Tarball)
	return err
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
