// Package livehost tests `kubeplug run` end to end: the host as a separate
// process against a real kube-apiserver and etcd started in this process.
package livehost

import (
	"os"
	"testing"

	"github.com/kubeplug/kubeplug/e2e/controlplane"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

var cp *controlplane.ControlPlane

// TestMain starts kube-apiserver and etcd but no controllers: these tests
// are about the host alone.
func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &cp, testenv.MainOptions{})) }
