package app

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/config"
	"github.com/kubeplug/kubeplug/host/controller"
)

// TestCompareClusterIsOneName: the name config keeps from entries is the
// compare_with label the controller counts the comparison with the cluster
// under, so that the label always means the cluster.
func TestCompareClusterIsOneName(t *testing.T) {
	require.Equal(t, config.CompareCluster, controller.CompareCluster)
}
