package oci

import (
	"github.com/kubeplug/kubeplug/abi"
)

// Media types of the artifacts kubeplug reads and writes.
const (
	// MediaTypeModuleConfig is the config blob `kubeplug push` writes:
	// ModuleConfig as JSON. It is also the manifest's artifactType.
	MediaTypeModuleConfig = "application/vnd.kubeplug.module.config.v1+json"
	// MediaTypeWasm is the layer of kubeplug's and the CNCF layout: the
	// module's bytes.
	MediaTypeWasm = "application/wasm"

	// MediaTypeKubewardenConfig and MediaTypeKubewardenLayer are
	// Kubewarden's policy layout (what `kwctl push` writes).
	MediaTypeKubewardenConfig = "application/vnd.wasm.config.v1+json"
	MediaTypeKubewardenLayer  = "application/vnd.wasm.content.layer.v1+wasm"

	// MediaTypeCNCFConfig is the config of the CNCF TAG Runtime wasm
	// artifact layout (wasm-to-oci and its successors), whose layer is
	// MediaTypeWasm.
	MediaTypeCNCFConfig = "application/vnd.wasm.config.v0+json"
)

// Layout is one way of packing a wasm module in an OCI image manifest: a
// config blob of one media type and exactly one layer of another.
type Layout struct {
	Name        string
	ConfigType  string
	LayerType   string
	HasManifest bool // the config blob is a ModuleConfig
}

// Layouts are the layouts Pull accepts, kubeplug's first.
var Layouts = []Layout{
	{Name: "kubeplug", ConfigType: MediaTypeModuleConfig, LayerType: MediaTypeWasm, HasManifest: true},
	{Name: "kubewarden", ConfigType: MediaTypeKubewardenConfig, LayerType: MediaTypeKubewardenLayer},
	{Name: "cncf", ConfigType: MediaTypeCNCFConfig, LayerType: MediaTypeWasm},
}

// layoutOf returns the layout whose config media type is t.
func layoutOf(t string) (Layout, bool) {
	for _, l := range Layouts {
		if l.ConfigType == t {
			return l, true
		}
	}
	return Layout{}, false
}

// ModuleConfig is the config blob of kubeplug's layout. It describes the
// module so that `kubeplug inspect REF` can print it without downloading or
// running the module; the host never trusts it, and reads the manifest from
// the module itself.
type ModuleConfig struct {
	// Manifest is what the module's manifest export returned when it was
	// pushed.
	Manifest abi.Manifest `json:"manifest"`
	// ABIVersion is the ABI version the module was built for.
	ABIVersion string `json:"abiVersion"`
	// SHA256 and Size are the wasm layer's, as sha256sum prints the digest.
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	// Architecture and OS are the CNCF wasm config's fields, so that tools
	// that read that layout make sense of this one too.
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}
