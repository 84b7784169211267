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
// starts it.
var c *cluster.Cluster

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	defer testenv.Cleanup()
	image, err := testenv.ImageLayout()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c, err = cluster.Start(context.Background(), cluster.Options{Image: image})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Stop()
	return m.Run()
}
