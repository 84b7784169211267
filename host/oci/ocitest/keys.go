package ocitest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// KeyPair writes a fresh P-256 key pair to dir, as NAME.key (PKCS#8, the
// unencrypted PEM kubeplug's -sign-key and --sign-key read) and NAME.pub
// (PKIX, as cosign.pub holds it), and returns their paths.
func KeyPair(t testing.TB, dir, name string) (private, public string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(k)
	require.NoError(t, err)
	pubDER, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	require.NoError(t, err)
	private, public = filepath.Join(dir, name+".key"), filepath.Join(dir, name+".pub")
	require.NoError(t, os.WriteFile(private, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(public, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644))
	return private, public
}
