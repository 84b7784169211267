package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"oras.land/oras-go/v2/registry"

	"github.com/kubeplug/kubeplug/host/config"
	"github.com/kubeplug/kubeplug/host/internal/input"
	"github.com/kubeplug/kubeplug/host/oci"
	"github.com/kubeplug/kubeplug/host/runtime"
)

// registryFlags are how the registry commands reach a registry, as a
// module entry's plainHTTP and dockerConfig say it for the host.
type registryFlags struct {
	plainHTTP    bool
	dockerConfig string
	publicKey    string // pull and inspect: require a signature by this key
}

func (f *registryFlags) add(cmd *cobra.Command, verify bool) {
	cmd.Flags().BoolVar(&f.plainHTTP, "plain-http", false, "talk HTTP to the registry instead of HTTPS")
	cmd.Flags().StringVar(&f.dockerConfig, "docker-config", "",
		"registry credentials: a docker config file (e.g. ~/.docker/config.json) or an image pull secret (YAML or JSON)")
	if verify {
		cmd.Flags().StringVar(&f.publicKey, "public-key", "", "require a signature by this PEM public key (cosign.pub) before downloading the module")
	}
}

// options returns the oci options the flags say.
func (f *registryFlags) options(opts *globalOptions) (oci.Options, error) {
	o := oci.Options{PlainHTTP: f.plainHTTP, CacheDir: opts.imageCacheDir.dir(), Timeout: opts.imageTimeout}
	if f.dockerConfig != "" {
		b, err := config.ReadDockerConfig(f.dockerConfig)
		if err != nil {
			return oci.Options{}, inputErrorf("--docker-config: %w", err)
		}
		o.DockerConfig, o.DockerConfigFrom = b, f.dockerConfig
	}
	if f.publicKey != "" {
		v, err := oci.LoadVerifier(f.publicKey)
		if err != nil {
			return oci.Options{}, inputErrorf("--public-key: %w", err)
		}
		o.Verifier = v
	}
	return o, nil
}

// registryError classifies an error of the oci package: a reference or key
// that cannot be used is the caller's input; the rest failed.
func registryError(err error) error {
	if errors.Is(err, oci.ErrKey) || errors.Is(err, oci.ErrReference) {
		return inputError(err)
	}
	return failure(err)
}

// isReference reports whether arg names an image rather than a file: it
// is no file, and parses as a reference with a tag or digest whose registry
// is a host name with a dot or a port, or localhost (as docker tells a
// registry from a path).
func isReference(arg string) bool {
	if _, err := os.Stat(arg); err == nil {
		return false
	}
	r, err := registry.ParseReference(arg)
	return err == nil && r.Reference != "" && (strings.ContainsAny(r.Registry, ".:") || r.Registry == "localhost")
}

func newPushCommand(opts *globalOptions, s streams) *cobra.Command {
	var (
		rf      registryFlags
		signKey string
	)
	cmd := &cobra.Command{
		Use:   "push MODULE.wasm REF",
		Short: "Publish a module to an OCI registry",
		Long: `Push loads the module as the host would (so that nothing unusable is published),
then pushes it to REF (registry/repository:tag) as an OCI artifact: the module
as a layer of type application/wasm, and its manifest in a config blob of type
` + oci.MediaTypeModuleConfig + `, which "kubeplug inspect REF"
prints without downloading the module. It prints the pinned reference
(repository@sha256:...), to use as image: in host.yaml.

With --sign-key it then signs the artifact as "cosign sign --key" does: a
Sigstore bundle attached to it as an OCI referrer.`,
		Example: `  kubeplug push guests/retention.wasm registry.example.com/policies/retention:1.2.0
  kubeplug push --plain-http --sign-key cosign.key retention.wasm localhost:5000/retention:1.2.0`,
		Args: exactArgs(2, "a module file and a reference"),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, ref := args[0], args[1]
			o, err := rf.options(opts)
			if err != nil {
				return err
			}
			var signer *oci.Signer
			if signKey != "" {
				if signer, err = oci.LoadSigner(signKey); err != nil {
					return inputErrorf("--sign-key: %w", err)
				}
			}
			// Read once: the bytes checked are the bytes pushed.
			wasm, err := input.ReadFile(path, input.MaxModuleBytes, "module file")
			if err != nil {
				return inputErrorf("cannot read module: %w", err)
			}
			l, err := loadInput(cmd.Context(), opts, s, path, wasm, runtime.DefaultLimits())
			if err != nil {
				return err
			}
			defer l.close(cmd.Context())
			cfg := oci.ModuleConfig{Manifest: l.module.Manifest(), ABIVersion: l.module.Info().ABIVersion.String()}
			pinned, err := oci.Push(cmd.Context(), ref, wasm, cfg, o)
			if err != nil {
				return registryError(err)
			}
			fmt.Fprintf(s.out, "pushed %s\n", pinned)
			if signer != nil {
				if _, err := oci.Sign(cmd.Context(), pinned, signer, o); err != nil {
					return registryError(err)
				}
				fmt.Fprintf(s.out, "signed %s with %s\n", pinned, signKey)
			}
			return nil
		},
	}
	rf.add(cmd, false)
	cmd.Flags().StringVar(&signKey, "sign-key", "", "sign the pushed artifact with this PEM private key (unencrypted PKCS#8 or SEC 1 ECDSA)")
	return cmd
}

func newSignCommand(opts *globalOptions, s streams) *cobra.Command {
	var (
		rf  registryFlags
		key string
	)
	cmd := &cobra.Command{
		Use:   "sign --key KEY REF",
		Short: "Sign a module in an OCI registry",
		Long: `Sign signs the module REF names as "cosign sign --key KEY --tlog-upload=false"
does: an in-toto statement naming the artifact's digest, in a DSSE envelope
signed with KEY, in a Sigstore bundle attached to the artifact as an OCI
referrer. A host whose configuration requires a signature by the matching
public key then loads it. A tag is resolved first: the signature is of the
digest, and stays with it when the tag moves.`,
		Example: `  kubeplug sign --key cosign.key registry.example.com/policies/retention:1.2.0`,
		Args:    exactArgs(1, "one reference"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if key == "" {
				return inputErrorf("--key is required: name the PEM private key to sign with")
			}
			signer, err := oci.LoadSigner(key)
			if err != nil {
				return inputErrorf("--key: %w", err)
			}
			o, err := rf.options(opts)
			if err != nil {
				return err
			}
			pinned, err := oci.Sign(cmd.Context(), args[0], signer, o)
			if err != nil {
				return registryError(err)
			}
			fmt.Fprintf(s.out, "signed %s with %s\n", pinned, key)
			return nil
		},
	}
	rf.add(cmd, false)
	cmd.Flags().StringVar(&key, "key", "", "PEM private key to sign with (unencrypted PKCS#8 or SEC 1 ECDSA)")
	return cmd
}

func newPullCommand(opts *globalOptions, s streams) *cobra.Command {
	var (
		rf  registryFlags
		out string
	)
	cmd := &cobra.Command{
		Use:   "pull REF -o FILE",
		Short: "Fetch a module from an OCI registry",
		Long: `Pull fetches the module REF names into FILE, as the host fetches an image:
entry: it accepts kubeplug's layout, Kubewarden's and the CNCF wasm layout,
refuses a module larger than 64 MiB before downloading it, checks its digest,
and with --public-key requires a signature by that key first.`,
		Example: `  kubeplug pull registry.example.com/policies/retention:1.2.0 -o retention.wasm`,
		Args:    exactArgs(1, "one reference"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return inputErrorf("-o is required: name the file to write the module to")
			}
			o, err := rf.options(opts)
			if err != nil {
				return err
			}
			a, err := oci.Pull(cmd.Context(), args[0], o)
			if err != nil {
				return registryError(err)
			}
			if err := writeFileAtomic(out, a.Wasm); err != nil {
				return failure(err)
			}
			fmt.Fprintf(s.out, "pulled %s (%s layout, %d bytes, sha256 %s) to %s\n", a.Pinned, a.Layout.Name, len(a.Wasm), a.SHA256, out)
			return nil
		},
	}
	rf.add(cmd, true)
	cmd.Flags().StringVarP(&out, "output", "o", "", "file to write the module to (required)")
	return cmd
}

// writeFileAtomic writes b to path through a temporary file, so that path
// holds either its old content or all of b.
func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
