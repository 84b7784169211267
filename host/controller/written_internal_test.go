package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
)

// TestWritesDoNotOutliveTheirUse: a key's writes are dropped once StaleWait
// has passed, or when its subject is gone, so that the map does not grow
// with every subject the host ever wrote to.
func TestWritesDoNotOutliveTheirUse(t *testing.T) {
	var w writes
	ref := abi.ObjectRef{Kind: abi.KindStatefulSet, Namespace: "default", Name: "web"}
	rep := actions.Report{Written: map[abi.ObjectRef]string{ref: "1"}}

	w.record("default/web", rep)
	w.key["default/web"] = written{objects: rep.Written, at: time.Now().Add(-2 * StaleWait)}
	_, stale := w.stale("default/web", &abi.ReconcileRequest{})
	require.False(t, stale)
	require.Empty(t, w.key, "writes older than StaleWait are dropped")

	w.record("default/db", rep)
	require.Len(t, w.key, 1)
	w.forget("default/db")
	require.Empty(t, w.key, "a gone subject's writes are dropped")
}
