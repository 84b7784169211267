package config

import (
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kubeplug/kubeplug/host/internal/input"
)

// CSIDriver is a CSI driver the host may delete backing volumes through.
type CSIDriver struct {
	// Name is the driver's name as PersistentVolumes carry it in
	// spec.csi.driver, e.g. hostpath.csi.k8s.io; unique in the file.
	Name string
	// Endpoint is the absolute path of the driver's controller socket; the
	// file may write it as unix:///run/csi/hostpath.sock or as the path.
	Endpoint string
	// Timeout bounds each call to the driver. Default 60s.
	Timeout time.Duration
}

var csiFields = []string{"name", "endpoint", "timeout"}

// csiName is the CSI specification's syntax for a driver name (GetPluginInfo).
var csiName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,61}[A-Za-z0-9])?$`)

// csiDrivers converts the entries under csiDrivers: and checks that their
// names are unique.
func (p *parser) csiDrivers(ns []*yaml.Node) []CSIDriver {
	out := make([]CSIDriver, 0, len(ns))
	first := map[string]int{} // name -> index of the first driver with it
	for i, n := range ns {
		field := index("csiDrivers", i)
		d, nameAt := p.csiDriver(n, field)
		if d.Name != "" {
			if j, dup := first[d.Name]; dup {
				p.addf(nameAt, join(field, "name"), "%q is listed already as csiDrivers[%d]; keep one", d.Name, j)
			} else {
				first[d.Name] = i
			}
		}
		out = append(out, d)
	}
	return out
}

// csiDriver converts one entry under csiDrivers:.
func (p *parser) csiDriver(n *yaml.Node, field string) (d CSIDriver, nameAt *yaml.Node) {
	d.Timeout = DefaultCSITimeout
	vals, ok := p.fields(n, field, "a driver: a mapping with name: and endpoint:", csiFields...)
	if !ok {
		return d, n
	}
	nameAt = n
	if v, ok := vals["name"]; !ok {
		p.addf(n, field, "name is missing; give the driver's name as PersistentVolumes show it in spec.csi.driver, e.g. name: hostpath.csi.k8s.io")
	} else if s, ok := p.scalar(v, join(field, "name"), "hostpath.csi.k8s.io"); ok {
		nameAt = v
		if csiName.MatchString(s) {
			d.Name = s
		} else {
			p.addf(v, join(field, "name"), "%s is not a CSI driver name (at most 63 letters, digits, '-' and '.', "+
				"starting and ending with a letter or digit); use the name PersistentVolumes show in spec.csi.driver", input.Quote(s))
		}
	}
	if v, ok := vals["endpoint"]; !ok {
		p.addf(n, field, "endpoint is missing; give the driver's controller socket, e.g. endpoint: unix:///run/csi/hostpath.sock")
	} else if s, ok := p.scalar(v, join(field, "endpoint"), "unix:///run/csi/hostpath.sock"); ok {
		d.Endpoint = p.endpoint(v, join(field, "endpoint"), s)
	}
	if v, ok := vals["timeout"]; ok {
		if t, ok := p.duration(v, join(field, "timeout"), false, "30s"); ok {
			d.Timeout = t
		}
	}
	return d, nameAt
}

// endpoint returns the socket path of a unix:// URL or an absolute path.
// Other transports are refused: the host talks to drivers on its own node.
func (p *parser) endpoint(n *yaml.Node, field, s string) string {
	path, isURL := strings.CutPrefix(s, "unix://")
	switch {
	case isURL && filepath.IsAbs(path):
		return filepath.Clean(path)
	case isURL:
		p.addf(n, field, "%s has no absolute socket path; write three slashes, e.g. unix:///run/csi/hostpath.sock", input.Quote(s))
	case strings.Contains(s, "://"):
		p.addf(n, field, "%s is not a unix socket; the host reaches CSI drivers only through unix sockets, e.g. unix:///run/csi/hostpath.sock", input.Quote(s))
	case filepath.IsAbs(s):
		return filepath.Clean(s)
	default:
		p.addf(n, field, "%s is neither a unix:// URL nor an absolute socket path; use e.g. unix:///run/csi/hostpath.sock", input.Quote(s))
	}
	return ""
}
