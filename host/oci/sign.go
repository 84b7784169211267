package oci

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"
	"google.golang.org/protobuf/encoding/protojson"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"

	"github.com/kubeplug/kubeplug/host/internal/input"
)

// The format of a signature, as cosign (v2.4+ with --new-bundle-format,
// v3 by default) writes it for `cosign sign --key`: a Sigstore bundle whose
// DSSE envelope holds an in-toto statement naming the manifest's digest,
// attached to the manifest as an OCI referrer.
const (
	MediaTypeSigstoreBundle = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// PredicateCosignSign is the predicate type of cosign's image signature
	// statements, which carry no predicate of their own.
	PredicateCosignSign = "https://sigstore.dev/cosign/sign/v1"

	inTotoStatementType = "https://in-toto.io/Statement/v1"
	inTotoPayloadType   = "application/vnd.in-toto+json"
	maxSignatures       = 32 // referrers looked at; a registry may list more
	// maxReferrerPages bounds the pages of a referrers listing read: a
	// registry may answer with empty page after empty page, each naming
	// a next one.
	maxReferrerPages = 8
)

// Signer signs artifacts with a private key.
type Signer struct {
	key     crypto.Signer
	details signature.AlgorithmDetails
}

// LoadSigner reads an unencrypted PEM private key (PKCS#8, as `openssl
// genpkey` writes it, or SEC 1): ECDSA P-256, P-384 or P-521.
func LoadSigner(path string) (*Signer, error) {
	b, err := input.ReadFile(path, input.MaxSmallBytes, "signing key")
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("signing key %s: %w: not PEM; give a private key as openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 writes it", path, ErrKey)
	}
	var key any
	switch blk.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(blk.Bytes)
	default:
		return nil, fmt.Errorf("signing key %s: %w: a PEM %q block; kubeplug reads unencrypted PKCS#8 or SEC 1 EC keys (for an encrypted cosign key, sign with cosign sign --key KEY --tlog-upload=false)", path, ErrKey, blk.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w: %w", path, ErrKey, err)
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("signing key %s: %w: a %T; give an ECDSA key (P-256, as cosign generate-key-pair makes)", path, ErrKey, key)
	}
	return NewSigner(ec)
}

// NewSigner signs with key.
func NewSigner(key *ecdsa.PrivateKey) (*Signer, error) {
	var alg protocommon.PublicKeyDetails
	switch key.Curve {
	case elliptic.P256():
		alg = protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256
	case elliptic.P384():
		alg = protocommon.PublicKeyDetails_PKIX_ECDSA_P384_SHA_384
	case elliptic.P521():
		alg = protocommon.PublicKeyDetails_PKIX_ECDSA_P521_SHA_512
	default:
		return nil, fmt.Errorf("%w: ECDSA curve %s; use P-256", ErrKey, key.Curve.Params().Name)
	}
	details, err := signature.GetAlgorithmDetails(alg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKey, err)
	}
	return &Signer{key: key, details: details}, nil
}

// PublicKeyPEM returns the public key, as a verifier's key file holds it.
func (s *Signer) PublicKeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(s.key.Public())
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// Sign signs the manifest ref names and attaches the signature to it as a
// referrer. It returns the manifest's pinned reference.
func Sign(ctx context.Context, ref string, s *Signer, o Options) (string, error) {
	ctx, cancel := o.bounded(ctx)
	defer cancel()
	r, err := o.resolve(ctx, ref)
	if err != nil {
		return "", err
	}
	data, err := s.bundle(ctx, r.desc)
	if err != nil {
		return "", fmt.Errorf("sign %s: %w", ref, err)
	}
	if _, err := Attach(ctx, r.repo, r.desc, MediaTypeSigstoreBundle, data, time.Time{}); err != nil {
		return "", o.explain(ref, err)
	}
	return r.artifact().Pinned, nil
}

// SignManifest signs the manifest subject describes, in store (a
// registry's repository or an OCI image layout), and attaches the
// signature to it as a referrer, as Sign does for a module in a registry:
// make image signs the host's image index and each platform's image with
// it. It returns the signature's manifest.
func SignManifest(ctx context.Context, store content.Storage, subject ocispec.Descriptor, s *Signer) (ocispec.Descriptor, error) {
	data, err := s.bundle(ctx, subject)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("sign %s: %w", subject.Digest, err)
	}
	return Attach(ctx, store, subject, MediaTypeSigstoreBundle, data, time.Time{})
}

// bundle is the Sigstore bundle, as JSON, of a cosign signature statement
// naming subject's digest.
func (s *Signer) bundle(ctx context.Context, subject ocispec.Descriptor) ([]byte, error) {
	statement, err := json.Marshal(map[string]any{
		"_type":         inTotoStatementType,
		"subject":       []any{map[string]any{"digest": map[string]string{subject.Digest.Algorithm().String(): subject.Digest.Encoded()}}},
		"predicateType": PredicateCosignSign,
		"predicate":     map[string]any{},
	})
	if err != nil {
		return nil, err
	}
	b, err := sign.Bundle(&sign.DSSEData{Data: statement, PayloadType: inTotoPayloadType}, (*keypair)(s), sign.BundleOptions{Context: ctx})
	if err != nil {
		return nil, err
	}
	return protojson.Marshal(b)
}

// keypair is a Signer as sigstore-go's sign.Keypair.
type keypair Signer

func (k *keypair) GetHashAlgorithm() protocommon.HashAlgorithm { return k.details.GetProtoHashType() }
func (k *keypair) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return k.details.GetSignatureAlgorithm()
}
func (k *keypair) GetKeyAlgorithm() string        { return "ECDSA" }
func (k *keypair) GetPublicKey() crypto.PublicKey { return k.key.Public() }

// GetHint is the key's fingerprint, as sigstore-go's own keypairs give it.
func (k *keypair) GetHint() []byte {
	der, err := x509.MarshalPKIXPublicKey(k.key.Public())
	if err != nil {
		return nil
	}
	sum := sha256.Sum256(der)
	return []byte(base64.StdEncoding.EncodeToString(sum[:]))
}

func (k *keypair) GetPublicKeyPem() (string, error) {
	b, err := (*Signer)(k).PublicKeyPEM()
	return string(b), err
}

func (k *keypair) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	h := k.details.GetHashType().New()
	h.Write(data)
	digest := h.Sum(nil)
	sig, err := k.key.Sign(rand.Reader, digest, k.details.GetHashType())
	return sig, digest, err
}

// Verifier checks that an artifact is signed by one public key.
type Verifier struct {
	from     string // where the key came from, for messages
	verifier *verify.Verifier
}

// LoadVerifier reads a PEM public key (PKIX, as cosign.pub holds it).
func LoadVerifier(path string) (*Verifier, error) {
	b, err := input.ReadFile(path, input.MaxSmallBytes, "public key")
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	return NewVerifier(b, path)
}

// NewVerifier verifies with the PEM public key in pemKey; from says where
// it came from.
func NewVerifier(pemKey []byte, from string) (*Verifier, error) {
	blk, _ := pem.Decode(pemKey)
	if blk == nil || blk.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("public key %s: %w: not a PEM PUBLIC KEY block; give the public key file (cosign.pub, or openssl pkey -pubout)", from, ErrKey)
	}
	pub, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("public key %s: %w: %w", from, ErrKey, err)
	}
	sv, err := signature.LoadDefaultVerifier(pub)
	if err != nil {
		return nil, fmt.Errorf("public key %s: %w: %w", from, ErrKey, err)
	}
	// The key is trusted whatever the bundle's hint says, and for all
	// time: there is no transparency log or timestamp to bound it by.
	key := root.NewExpiringKey(sv, time.Time{}, time.Time{})
	material := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return key, nil })
	v, err := verify.NewVerifier(material, verify.WithNoObserverTimestamps())
	if err != nil {
		return nil, fmt.Errorf("public key %s: %w", from, err)
	}
	return &Verifier{from: from, verifier: v}, nil
}

// checkSignature checks r's signature when o requires one: from the bundle
// the cache kept when it last verified (verified again, with the key
// configured now), else from the registry, keeping the bundle that
// verifies. So an image pinned by digest and cached starts without the
// registry.
func (o *Options) checkSignature(ctx context.Context, r *resolved) error {
	v := o.Verifier
	if v == nil {
		return nil
	}
	c := cache{o.CacheDir}
	repo := r.ref.Registry + "/" + r.ref.Repository
	raw, err := c.getBundle(repo, r.desc.Digest)
	if err != nil {
		o.logger().Warn("image cache entry refused; fetching the signatures again", "digest", r.desc.Digest, "err", err)
	}
	if raw != nil {
		b, err := parseBundle(raw)
		if err == nil {
			err = v.verifyBundle(b, r.desc)
		}
		if err == nil {
			return nil
		}
		o.logger().Info("the cached signature of the image does not verify with the key configured; fetching the signatures again",
			"image", r.given, "digest", r.desc.Digest, "err", err)
	}
	raw, err = v.verify(ctx, r.repo, r.desc)
	if err != nil {
		return o.explain(r.given, err)
	}
	return c.putBundle(repo, r.desc.Digest, raw)
}

// VerifyManifest checks that one of the Sigstore bundles attached to desc
// in store (an OCI image layout, or any store oras-go can find a
// manifest's predecessors in) verifies with the key, as the host checks a
// module's in a registry: the check of make image's signatures.
func (v *Verifier) VerifyManifest(ctx context.Context, store content.ReadOnlyGraphStorage, desc ocispec.Descriptor) error {
	_, err := v.verify(ctx, graphReferrers{store}, desc)
	return err
}

// referrerSource is where the signatures of a manifest are found: a
// registry's repository lists its referrers itself; graphReferrers lists
// them in any other store.
type referrerSource interface {
	content.Fetcher
	registry.ReferrerLister
}

// graphReferrers lists referrers from the manifests that name a manifest
// as their subject, among the store's predecessors of it.
type graphReferrers struct {
	content.ReadOnlyGraphStorage
}

func (g graphReferrers) Referrers(ctx context.Context, desc ocispec.Descriptor, artifactType string, fn func([]ocispec.Descriptor) error) error {
	rs, err := registry.Referrers(ctx, g.ReadOnlyGraphStorage, desc, artifactType)
	if err != nil {
		return err
	}
	return fn(rs)
}

// verify checks that one of the Sigstore bundles attached to desc verifies
// with the key and names desc's digest as the subject of a cosign signature
// statement, and returns that bundle.
func (v *Verifier) verify(ctx context.Context, repo referrerSource, desc ocispec.Descriptor) ([]byte, error) {
	// All referrers are listed, not those of the bundle's artifactType:
	// some registries (go-containerregistry's among them) report a
	// referrer's config media type as its artifactType, so a filter would
	// hide cosign's bundles. Each referrer's own manifest says what it is.
	// A registry may list referrers page after page: past maxSignatures
	// referrers, or maxReferrerPages pages (oras-go's
	// ReferrerListMaxPages, set in Options.repository), the listing stops
	// and the referrers found so far are looked at.
	var found []ocispec.Descriptor
	errEnough := errors.New("enough referrers")
	err := repo.Referrers(ctx, desc, "", func(rs []ocispec.Descriptor) error {
		found = append(found, rs...)
		if len(found) >= maxSignatures {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) && !errors.Is(err, errdef.ErrTooManyPages) {
		return nil, fmt.Errorf("list signatures: %w", err)
	}
	bundles := 0
	var reasons []error
	for i, r := range found {
		if i == maxSignatures {
			break
		}
		b, raw, err := bundleOf(ctx, repo, r)
		if err != nil {
			reasons = append(reasons, fmt.Errorf("referrer %s: %w", r.Digest, err))
			continue
		}
		if b == nil {
			continue
		}
		bundles++
		if err := v.verifyBundle(b, desc); err != nil {
			reasons = append(reasons, fmt.Errorf("signature %s: %w", r.Digest, err))
			continue
		}
		return raw, nil
	}
	if bundles == 0 {
		return nil, errors.Join(append([]error{fmt.Errorf("%w: %s has no Sigstore bundle attached (among the first %d referrers, %d pages) and the configuration requires one signed by %s: sign it (kubeplug push --sign-key, or cosign sign --key)",
			ErrUnsigned, desc.Digest, maxSignatures, maxReferrerPages, v.from)}, reasons...)...)
	}
	return nil, fmt.Errorf("%w: none of the %d signatures of %s verifies with %s: %w", ErrSignature, bundles, desc.Digest, v.from, errors.Join(reasons...))
}

// bundleOf returns the Sigstore bundle the referrer r holds, parsed and
// as sent, or nil when r is something else (an SBOM, an attestation of
// another format).
func bundleOf(ctx context.Context, repo content.Fetcher, r ocispec.Descriptor) (*bundle.Bundle, []byte, error) {
	raw, err := fetchSmall(ctx, repo, r)
	if err != nil {
		return nil, nil, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, nil, fmt.Errorf("manifest: %w", err)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != MediaTypeSigstoreBundle {
		return nil, nil, nil
	}
	data, err := fetchSmall(ctx, repo, m.Layers[0])
	if err != nil {
		return nil, nil, err
	}
	b, err := parseBundle(data)
	if err != nil {
		return nil, nil, err
	}
	return b, data, nil
}

func parseBundle(data []byte) (*bundle.Bundle, error) {
	var b bundle.Bundle
	if err := b.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	return &b, nil
}

// verifyBundle checks b's signature with the key, and that its statement
// is a cosign signature of subject's digest.
func (v *Verifier) verifyBundle(b *bundle.Bundle, subject ocispec.Descriptor) error {
	want, err := hex.DecodeString(subject.Digest.Encoded())
	if err != nil {
		return err
	}
	res, err := v.verifier.Verify(b, verify.NewPolicy(verify.WithArtifactDigest(subject.Digest.Algorithm().String(), want), verify.WithKey()))
	if err != nil {
		return err
	}
	if res.Statement == nil || res.Statement.GetPredicateType() != PredicateCosignSign {
		return fmt.Errorf("not a signature statement (predicate type %q, want %s)", res.Statement.GetPredicateType(), PredicateCosignSign)
	}
	return nil
}

// fetchSmall fetches a manifest or blob of at most maxMetadata bytes,
// checking its digest.
func fetchSmall(ctx context.Context, repo content.Fetcher, desc ocispec.Descriptor) ([]byte, error) {
	if desc.Size < 0 || desc.Size > maxMetadata {
		return nil, fmt.Errorf("%w: %d bytes", ErrTooLarge, desc.Size)
	}
	rc, err := repo.Fetch(ctx, desc)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return content.ReadAll(rc, desc)
}
