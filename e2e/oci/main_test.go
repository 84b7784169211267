// Package oci tests `kubeplug run` with a module taken from an OCI
// registry: go-containerregistry's registry served on loopback by this
// process, asking for credentials, the module pushed and signed with the
// kubeplug binary, and the host (a separate process) pulling, verifying and
// running it against a real kube-apiserver and etcd.
package oci

import (
	"os"
	"testing"

	"github.com/kubeplug/kubeplug/e2e/controlplane"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

var cp *controlplane.ControlPlane

// TestMain starts kube-apiserver and etcd but no controllers: these tests
// are about where the host's module comes from.
func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &cp, testenv.MainOptions{})) }
