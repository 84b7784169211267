package config

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
	"oras.land/oras-go/v2/registry"

	"github.com/kubeplug/kubeplug/host/internal/input"
)

var signatureFields = []string{"publicKey"}

// imageSource converts the fields of an entry whose module comes from an
// OCI registry (image, plainHTTP, dockerConfig, resolveEvery, signature)
// into m. It returns the image's repository, which names the module by
// default, and the node it came from; "" when there is no image.
func (p *parser) imageSource(vals map[string]*yaml.Node, field string, m *Module) (string, *yaml.Node) {
	v, ok := vals["image"]
	if !ok {
		for _, only := range []string{"plainHTTP", "dockerConfig", "resolveEvery", "signature"} {
			if n, ok := vals[only]; ok {
				p.addf(n, join(field, only), "applies to a module taken from a registry (image:), and this one is a file; remove %s", only)
			}
		}
		if p.requireKey != "" && m.Path != "" {
			p.addf(vals["path"], join(field, "path"), "requireSignature (line %d) requires every module to be a signed image, and this one is a file; publish it with kubeplug push --sign-key and use image:", p.requireLine)
		}
		return "", nil
	}
	s, ok := p.scalar(v, join(field, "image"), "registry.example.com/policies/retention:1.2.0")
	if !ok {
		return "", nil
	}
	ref, err := registry.ParseReference(s)
	switch {
	case err != nil:
		p.addf(v, join(field, "image"), "%s is not an image reference (%v); write it as registry.example.com/policies/retention:1.2.0, optionally with @sha256:DIGEST", input.Quote(s), err)
		return "", nil
	case ref.Reference == "":
		p.addf(v, join(field, "image"), "%s names no tag or digest; add one, e.g. %s:1.2.0 (a digest, @sha256:..., pins the module)", input.Quote(s), s)
		return "", nil
	}
	m.Image = s
	_, notPinned := ref.Digest()
	pinned := notPinned == nil
	if n, ok := vals["plainHTTP"]; ok {
		m.PlainHTTP, _ = p.boolean(n, join(field, "plainHTTP"))
	}
	if n, ok := vals["dockerConfig"]; ok {
		if s, ok := p.scalar(n, join(field, "dockerConfig"), "~/.docker/config.json"); ok {
			m.DockerConfig = p.existingFile(n, join(field, "dockerConfig"), s, "the docker config file or image pull secret")
			if m.DockerConfig != "" {
				if _, err := ReadDockerConfig(m.DockerConfig); err != nil {
					p.addf(n, join(field, "dockerConfig"), "%v", err)
				}
			}
		}
	}
	if n, ok := vals["resolveEvery"]; ok {
		if d, ok := p.duration(n, join(field, "resolveEvery"), true, "5m, or 0 never to look again"); ok {
			if pinned && d > 0 {
				p.addf(n, join(field, "resolveEvery"), "the image is pinned by its digest, which never moves; remove resolveEvery, or the digest to follow the tag")
			}
			m.ResolveEvery = d
		}
	}
	m.PublicKey = p.requireKey
	if n, ok := vals["signature"]; ok {
		m.PublicKey = p.signature(n, join(field, "signature"))
	}
	return ref.Repository, v
}

// signature converts a signature: mapping, {publicKey: FILE}, and returns
// the key file's absolute path.
func (p *parser) signature(n *yaml.Node, field string) string {
	vals, ok := p.fields(n, field, "a mapping with publicKey: FILE (a PEM public key, as cosign.pub)", signatureFields...)
	if !ok {
		return ""
	}
	k, ok := vals["publicKey"]
	if !ok {
		p.addf(n, field, "publicKey is missing; name the PEM public key the module must be signed with, e.g. publicKey: keys/cosign.pub")
		return ""
	}
	s, ok := p.scalar(k, join(field, "publicKey"), "keys/cosign.pub")
	if !ok {
		return ""
	}
	path := p.existingFile(k, join(field, "publicKey"), s, "the public key")
	if path == "" {
		return ""
	}
	b, err := input.ReadFile(path, input.MaxSmallBytes, "public key")
	if err != nil {
		p.addf(k, join(field, "publicKey"), "cannot read the public key: %v", err)
		return ""
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PUBLIC KEY" {
		p.addf(k, join(field, "publicKey"), "%s is not a PEM public key; give the public half (cosign.pub, or what openssl pkey -pubout writes), never the private key", path)
		return ""
	}
	if _, err := x509.ParsePKIXPublicKey(blk.Bytes); err != nil {
		p.addf(k, join(field, "publicKey"), "%s is not a usable public key: %v", path, err)
		return ""
	}
	return path
}

// existingFile is parser.checkFile for files other than modules; what says
// what the file is. It returns "" when the file cannot be used.
func (p *parser) existingFile(n *yaml.Node, field, given, what string) string {
	path, ok := p.checkFile(n, field, given, fileKind{empty: what, fix: "fix the path", what: what, dir: what})
	if !ok {
		return ""
	}
	return path
}

// boolean returns a true or false.
func (p *parser) boolean(n *yaml.Node, field string) (bool, bool) {
	var b bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&b) != nil {
		p.addf(n, field, "must be true or false; got %s", describe(n))
		return false, false
	}
	return b, true
}

// requireSignature converts the top-level requireSignature: and remembers
// its key for the module entries.
func (p *parser) requireSignature(n *yaml.Node) {
	p.requireKey = p.signature(n, "requireSignature")
	p.requireLine = n.Line
}

// ReadDockerConfig reads registry credentials from path: a docker config
// file ({"auths": {...}}, as docker login writes it), or a Kubernetes
// Secret of type kubernetes.io/dockerconfigjson (YAML or JSON, as kubectl
// get secret -o yaml prints it), whose .dockerconfigjson is the same. It
// returns the docker config's JSON.
func ReadDockerConfig(path string) ([]byte, error) {
	b, err := input.ReadFile(path, input.MaxSmallBytes, "docker config or pull secret")
	if err != nil {
		return nil, fmt.Errorf("read registry credentials: %w", err)
	}
	var doc struct {
		Kind       string            `yaml:"kind"`
		Data       map[string]string `yaml:"data"`
		StringData map[string]string `yaml:"stringData"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s is neither a docker config file nor an image pull secret: %w", path, err)
	}
	switch {
	case doc.Kind == "Secret":
		if s, ok := doc.StringData[".dockerconfigjson"]; ok {
			return checkDockerConfig(path, []byte(s))
		}
		enc, ok := doc.Data[".dockerconfigjson"]
		if !ok {
			return nil, fmt.Errorf("%s is a Secret without .dockerconfigjson; give an image pull secret (type kubernetes.io/dockerconfigjson)", path)
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
		if err != nil {
			return nil, fmt.Errorf("%s: data[.dockerconfigjson] is not base64: %w", path, err)
		}
		return checkDockerConfig(path, raw)
	case doc.Kind != "":
		return nil, fmt.Errorf("%s is a %s; give a docker config file or an image pull secret", path, doc.Kind)
	}
	return checkDockerConfig(path, b)
}

// checkDockerConfig checks that b is a docker config's JSON with auths.
func checkDockerConfig(path string, b []byte) ([]byte, error) {
	var cfg struct {
		Auths map[string]json.RawMessage `json:"auths"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("%s is not a docker config (JSON with auths): %w", path, err)
	}
	if len(cfg.Auths) == 0 {
		return nil, fmt.Errorf("%s has no credentials under auths; log in (docker login, oras login) or give an image pull secret", path)
	}
	return b, nil
}
