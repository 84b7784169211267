package config

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
	"oras.land/oras-go/v2/registry"

	"github.com/kubeplug/kubeplug/host/internal/input"
)

var signatureFields = []string{"publicKey"}

// ImageSource is a module in an OCI registry, pulled by host/oci with the
// entry's registry settings (Module.PlainHTTP, DockerConfig, ResolveEvery,
// PublicKey).
type ImageSource struct {
	// Ref is the image reference as written: tag, digest, or both.
	Ref string
}

func (s ImageSource) String() string { return s.Ref }

func (s ImageSource) Read(context.Context) ([]byte, error) {
	return nil, fmt.Errorf("it comes from image %s, not a file; host/oci pulls it", s.Ref)
}

func (s ImageSource) Remote() bool    { return true }
func (s ImageSource) Files() []string { return nil }

func (s ImageSource) pinAdvice() (what, fix string) {
	return "image's module", "pin the image's digest (image: REF@sha256:...) to the pinned version"
}

func init() {
	registerSource(sourceKind{
		rank: 1, field: "image", fields: []string{"plainHTTP", "dockerConfig", "resolveEvery", "signature"},
		example: "its image, e.g. image: registry.example.com/policies/retention:1.2.0",
		parse: func(p *parser, vals map[string]*yaml.Node, field string, m *Module, _, _ bool) (string, *yaml.Node) {
			return p.imageSource(vals, field, m)
		},
		of: func(m *Module) Source {
			if m.Image == "" {
				return nil
			}
			return ImageSource{Ref: m.Image}
		},
	})
}

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
// returns the docker config's JSON, checked by CheckDockerConfig.
//
// No error it returns quotes the file: the decoders' own messages quote
// what they could not decode, and here that is a secret. They say which
// field is wrong, and where, instead.
func ReadDockerConfig(path string) ([]byte, error) {
	b, err := input.ReadFile(path, input.MaxSmallBytes, "docker config or pull secret")
	if err != nil {
		return nil, fmt.Errorf("read registry credentials: %w", err)
	}
	doc, err := input.NewYAMLDecoder(b, secretBudget).Next()
	var se *input.YAMLSyntaxError
	var ex *input.Exceeded
	switch {
	case errors.As(err, &ex):
		// Its message names keys and bounds, never values.
		return nil, fmt.Errorf("%s is not a docker config file or an image pull secret the host reads: %v", path, ex)
	case errors.As(err, &se) && se.Line > 0:
		return nil, fmt.Errorf("%s is neither a docker config file nor an image pull secret: it is not YAML or JSON (line %d)", path, se.Line)
	case err != nil && !errors.Is(err, io.EOF):
		return nil, fmt.Errorf("%s is neither a docker config file nor an image pull secret: it is not YAML or JSON", path)
	}
	if doc == nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s is neither a docker config file nor an image pull secret: it is not a map; give {\"auths\": {...}} or a Secret", path)
	}
	// Read through Pairs, not yaml's Decode into a struct: Decode compares
	// every pair of the mapping's keys, and there may be maxEntries.
	top, problems := input.Pairs(doc.Content[0])
	if len(problems) > 0 {
		pr := input.FirstProblem(problems)
		what := "a key is a list or a mapping, or << merges something other than mappings"
		if pr.Kind == input.KeyRepeated {
			what = fmt.Sprintf("a key is written twice (first at line %d)", pr.First)
		}
		return nil, fmt.Errorf("%s is neither a docker config file nor an image pull secret: line %d: %s", path, pr.Node.Line, what)
	}
	var secret struct{ Kind, Data, StringData yaml.Node }
	for _, kv := range top {
		switch kv.Key.Value {
		case "kind":
			secret.Kind = *input.Deref(kv.Value)
		case "data":
			secret.Data = *input.Deref(kv.Value)
		case "stringData":
			secret.StringData = *input.Deref(kv.Value)
		}
	}
	kind := secret.Kind.Value
	switch {
	case kind == "Secret":
		if s, ok, err := secretValue(&secret.StringData, "stringData"); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		} else if ok {
			return CheckDockerConfig(path+": stringData[.dockerconfigjson]", []byte(s))
		}
		enc, ok, err := secretValue(&secret.Data, "data")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if !ok {
			return nil, fmt.Errorf("%s is a Secret without .dockerconfigjson; give an image pull secret (type kubernetes.io/dockerconfigjson)", path)
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
		if err != nil {
			return nil, fmt.Errorf("%s: data[.dockerconfigjson] is not base64: %w", path, err)
		}
		return CheckDockerConfig(path+": data[.dockerconfigjson]", raw)
	case secret.Kind.Kind == yaml.ScalarNode && kind != "":
		return nil, fmt.Errorf("%s is a %.40q, not a Secret; give a docker config file or an image pull secret", path, kind)
	case secret.Kind.Kind != 0 && secret.Kind.Kind != yaml.ScalarNode:
		return nil, fmt.Errorf("%s: kind: is not a string; give a docker config file or an image pull secret", path)
	}
	return CheckDockerConfig(path, b)
}

// secretValue returns the .dockerconfigjson key of a Secret's data: or
// stringData: node n, if it has one.
func secretValue(n *yaml.Node, field string) (string, bool, error) {
	if n.Kind == 0 {
		return "", false, nil
	}
	if n.Kind != yaml.MappingNode {
		return "", false, fmt.Errorf("%s: is not a map (line %d; its value is not quoted, as it may hold credentials): write %s: {.dockerconfigjson: ...}", field, n.Line, field)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != ".dockerconfigjson" {
			continue
		}
		v := n.Content[i+1]
		if v.Kind != yaml.ScalarNode {
			return "", false, fmt.Errorf("%s[.dockerconfigjson]: is not a string (line %d)", field, v.Line)
		}
		return v.Value, true, nil
	}
	return "", false, nil
}

// secretBudget bounds a docker config or pull secret as a host
// configuration is bounded: a few registries' credentials need far less.
var secretBudget = input.Budget{Bytes: input.MaxSmallBytes, Nodes: maxConfigNodes, Depth: maxNesting, ScalarBytes: maxScalarBytes, Entries: maxEntries}

// CheckDockerConfig checks that b, from where from says, is a docker
// config's JSON with auths, and that each entry's auth, if any, is the
// base64 of user:password, as registry clients read it. Its errors name
// the entry and field, never the bytes: they are credentials.
func CheckDockerConfig(from string, b []byte) ([]byte, error) {
	var cfg struct {
		Auths map[string]json.RawMessage `json:"auths"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("%s is not a docker config (JSON with auths)%s", from, jsonOffset(err))
	}
	if len(cfg.Auths) == 0 {
		return nil, fmt.Errorf("%s has no credentials under auths; log in (docker login, oras login) or give an image pull secret", from)
	}
	for host, raw := range cfg.Auths {
		var e struct {
			Auth          *string `json:"auth"`
			Username      *string `json:"username"`
			Password      *string `json:"password"`
			IdentityToken *string `json:"identitytoken"`
			RegistryToken *string `json:"registrytoken"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("%s: auths[%.100q]: is not an object of strings (auth, or username and password)", from, host)
		}
		if e.Auth == nil || *e.Auth == "" {
			continue
		}
		dec, err := base64.StdEncoding.DecodeString(*e.Auth)
		if err != nil {
			return nil, fmt.Errorf("%s: auths[%.100q].auth: is not base64 (%w): write the base64 of user:password", from, host, err)
		}
		if !strings.Contains(string(dec), ":") {
			return nil, fmt.Errorf("%s: auths[%.100q].auth: does not decode to user:password (no colon; %d bytes, not quoted): write the base64 of user:password", from, host, len(dec))
		}
	}
	return b, nil
}

// jsonOffset returns " (at byte N)" for a JSON syntax error: its own
// message quotes the character it met.
func jsonOffset(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf(" (syntax error at byte %d)", se.Offset)
	}
	return ""
}
