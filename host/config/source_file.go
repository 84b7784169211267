package config

import (
	"context"

	"go.yaml.in/yaml/v3"

	"github.com/kubeplug/kubeplug/host/internal/input"
)

// FileSource is a module file on the host's disk.
type FileSource struct {
	// Path is the file, absolute.
	Path string
}

func (s FileSource) String() string { return s.Path }

func (s FileSource) Read(context.Context) ([]byte, error) {
	return input.ReadFile(s.Path, input.MaxModuleBytes, "module file")
}

func (s FileSource) Remote() bool    { return false }
func (s FileSource) Files() []string { return []string{s.Path} }

func (s FileSource) pinAdvice() (what, fix string) { return "file", "put back the pinned file" }

func init() {
	registerSource(sourceKind{
		rank: 0, field: "path", example: "file, e.g. path: guests/retention.wasm",
		parse: func(p *parser, vals map[string]*yaml.Node, field string, m *Module, named, alone bool) (string, *yaml.Node) {
			v := vals["path"]
			if !named || !alone {
				return "", nil
			}
			s, ok := p.scalar(v, join(field, "path"), "guests/retention.wasm")
			if !ok {
				return "", nil
			}
			m.Path = p.modulePath(v, join(field, "path"), s)
			return s, v
		},
		of: func(m *Module) Source {
			if m.Path == "" {
				return nil
			}
			return FileSource{Path: m.Path}
		},
	})
}
