// Package livehost tests `kubeplug run` end to end: the host as a separate
// process against a real kube-apiserver and etcd started in this process.
package livehost

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/kubeplug/kubeplug/e2e/controlplane"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	// No controllers: these tests are about the host alone.
	cp, err = controlplane.Start(context.Background(), controlplane.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cp.Stop()
	defer testenv.Cleanup()
	return m.Run()
}
