package cluster_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/kubeplug/kubeplug/e2e/cluster"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// c is the cluster the tests install kubeplug on, started as make cluster
// starts it, with the pods' logs in logDir.
var (
	c      *cluster.Cluster
	logDir string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	defer testenv.Cleanup()
	image, err := testenv.ImageLayout()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if logDir, err = os.MkdirTemp("", "kubeplug-cluster-logs-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(logDir)
	c, err = cluster.Start(context.Background(), cluster.Options{Image: image, LogDir: logDir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Stop()
	return m.Run()
}
