package config_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/config"
)

const imageDigest = "sha256:" + "4f1c9d6e0b7a4c2e8f5d1a6b9c3e7f0a2d4b6c8e1f3a5b7d9c0e2f4a6b8d0c1e"

// imageFiles are the files the image tests' configurations name.
func imageFiles(t *testing.T) map[string]string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	pub, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	require.NoError(t, err)
	priv, err := x509.MarshalPKCS8PrivateKey(k)
	require.NoError(t, err)
	docker := `{"auths": {"registry.example.com": {"auth": "YWxpY2U6czNjcmV0"}}}`
	return map[string]string{
		"keys/cosign.pub":    string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})),
		"keys/cosign.key":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: priv})),
		"creds/config.json":  docker,
		"creds/secret.yaml":  "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: " + base64.StdEncoding.EncodeToString([]byte(docker)) + "\n",
		"creds/empty.json":   `{"auths": {}}`,
		"creds/opaque.yaml":  "kind: Secret\ndata:\n  password: eA==\n",
		"creds/garbage.json": "{{",
	}
}

func loadImage(t *testing.T, yaml string) (*config.File, string, error) {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, modules)
	writeFiles(t, dir, imageFiles(t))
	writeFiles(t, dir, map[string]string{"host.yaml": yaml})
	f, err := config.Load(filepath.Join(dir, "host.yaml"))
	return f, dir, err
}

func TestImageEntries(t *testing.T) {
	f, dir, err := loadImage(t, `requireSignature:
  publicKey: keys/cosign.pub
modules:
- image: registry.example.com/policies/retention:1.2.0
  resolveEvery: 5m
  dockerConfig: creds/config.json
- image: localhost:5000/reclaim@`+imageDigest+`
  plainHTTP: true
  dockerConfig: creds/secret.yaml
  sha256: `+strings.Repeat("a", 64)+`
- image: registry.example.com/vendor/custom:2.0@`+imageDigest+`
  name: vendor
  signature: {publicKey: keys/cosign.pub}
`)
	require.NoError(t, err)
	key := filepath.Join(dir, "keys", "cosign.pub")
	require.Equal(t, key, f.RequireSignature)

	r := f.Modules[0]
	require.Equal(t, "retention", r.Name)
	require.Equal(t, "registry.example.com/policies/retention:1.2.0", r.Image)
	require.Equal(t, "registry.example.com/policies/retention:1.2.0", r.Source())
	require.Empty(t, r.Path)
	require.False(t, r.PlainHTTP)
	require.Equal(t, 5*time.Minute, r.ResolveEvery)
	require.Equal(t, filepath.Join(dir, "creds", "config.json"), r.DockerConfig)
	require.Equal(t, key, r.PublicKey, "requireSignature's key applies")
	_, err = r.Read()
	require.ErrorContains(t, err, "comes from image")

	c := f.Modules[1]
	require.Equal(t, "reclaim", c.Name)
	require.True(t, c.PlainHTTP)
	require.Zero(t, c.ResolveEvery)
	cfg, err := config.ReadDockerConfig(c.DockerConfig)
	require.NoError(t, err)
	require.JSONEq(t, `{"auths": {"registry.example.com": {"auth": "YWxpY2U6czNjcmV0"}}}`, string(cfg))
	require.ErrorIs(t, c.CheckPin([]byte("other")), config.ErrDigest)

	require.Equal(t, "vendor", f.Modules[2].Name)
	require.Equal(t, key, f.Modules[2].PublicKey)
}

func TestImageEntriesRefused(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"path and image", "modules:\n- path: guests/m.wasm\n  image: r.example.com/m:1\n", []string{"host.yaml:2: modules[0].path: path and image are both set; keep the one the module comes from"}},
		{"neither", "modules:\n- name: m\n", []string{"host.yaml:2: modules[0]: path is missing", "or its image, e.g. image: registry.example.com/policies/retention:1.2.0"}},
		{"no tag", "modules:\n- image: r.example.com/m\n", []string{`host.yaml:2: modules[0].image: "r.example.com/m" names no tag or digest; add one, e.g. r.example.com/m:1.2.0`}},
		{"not a reference", "modules:\n- image: 'R.example.com/M:1'\n", []string{`host.yaml:2: modules[0].image: "R.example.com/M:1" is not an image reference`}},
		{"plainHTTP on a file", "modules:\n- path: guests/m.wasm\n  plainHTTP: true\n", []string{"host.yaml:3: modules[0].plainHTTP: applies to a module taken from a registry (image:), and this one is a file; remove plainHTTP"}},
		{"signature on a file", "modules:\n- path: guests/m.wasm\n  signature: {publicKey: keys/cosign.pub}\n", []string{"host.yaml:3: modules[0].signature: applies to a module taken from a registry"}},
		{"plainHTTP not a boolean", "modules:\n- image: r.example.com/m:1\n  plainHTTP: yes please\n", []string{`host.yaml:3: modules[0].plainHTTP: must be true or false; got the string "yes please"`}},
		{"resolveEvery on a digest", "modules:\n- image: r.example.com/m@" + imageDigest + "\n  resolveEvery: 1m\n", []string{"host.yaml:3: modules[0].resolveEvery: the image is pinned by its digest, which never moves"}},
		{"resolveEvery not a duration", "modules:\n- image: r.example.com/m:1\n  resolveEvery: hourly\n", []string{`host.yaml:3: modules[0].resolveEvery: "hourly" is not a duration`}},
		{"signature without key", "modules:\n- image: r.example.com/m:1\n  signature: {}\n", []string{"host.yaml:3: modules[0].signature: publicKey is missing"}},
		{"missing key file", "modules:\n- image: r.example.com/m:1\n  signature: {publicKey: keys/nope.pub}\n", []string{"host.yaml:3: modules[0].signature.publicKey: DIR/keys/nope.pub does not exist"}},
		{"private key for public", "modules:\n- image: r.example.com/m:1\n  signature:\n    publicKey: keys/cosign.key\n", []string{"host.yaml:4: modules[0].signature.publicKey: DIR/keys/cosign.key is not a PEM public key; give the public half", "never the private key"}},
		{"unknown signature field", "modules:\n- image: r.example.com/m:1\n  signature: {key: keys/cosign.pub}\n", []string{"modules[0].signature.key: unknown field"}},
		{"requireSignature and a file", "requireSignature: {publicKey: keys/cosign.pub}\nmodules:\n- path: guests/m.wasm\n", []string{"host.yaml:3: modules[0].path: requireSignature (line 1) requires every module to be a signed image, and this one is a file"}},
		{"requireSignature bad key", "requireSignature: {publicKey: creds/config.json}\nmodules:\n- image: r.example.com/m:1\n", []string{"host.yaml:1: requireSignature.publicKey: DIR/creds/config.json is not a PEM public key"}},
		{"missing docker config", "modules:\n- image: r.example.com/m:1\n  dockerConfig: creds/nope.json\n", []string{"host.yaml:3: modules[0].dockerConfig: DIR/creds/nope.json does not exist"}},
		{"garbage docker config", "modules:\n- image: r.example.com/m:1\n  dockerConfig: creds/garbage.json\n", []string{"host.yaml:3: modules[0].dockerConfig: DIR/creds/garbage.json is neither a docker config file nor an image pull secret"}},
		{"docker config without auths", "modules:\n- image: r.example.com/m:1\n  dockerConfig: creds/empty.json\n", []string{"host.yaml:3: modules[0].dockerConfig: DIR/creds/empty.json has no credentials under auths"}},
		{"opaque secret", "modules:\n- image: r.example.com/m:1\n  dockerConfig: creds/opaque.yaml\n", []string{"host.yaml:3: modules[0].dockerConfig: DIR/creds/opaque.yaml is a Secret without .dockerconfigjson"}},
		{"duplicate default names", "modules:\n- image: a.example.com/m:1\n- image: b.example.com/x/m:2\n", []string{`host.yaml:3: modules[1].name: "m" is also the name of modules[0]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, dir, err := loadImage(t, tt.yaml)
			require.ErrorIs(t, err, config.ErrInvalid)
			for _, want := range tt.want {
				require.Contains(t, err.Error(), strings.ReplaceAll(want, "DIR", dir))
			}
		})
	}
}
