package app

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeplug/kubeplug/host/metrics"
)

// TestLostLeaseCancelsWrites: when the Lease can no longer be renewed, the
// context of the controllers' writes ends (so no reconcile in flight writes
// after another host could take the Lease), and lead reports the loss.
// Shutdown, by contrast, ends the controllers' context and leaves writes
// live until they have drained.
func TestLostLeaseCancelsWrites(t *testing.T) {
	le := LeaderElection{Namespace: "kube-system", Name: "kubeplug", Identity: "a",
		LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}
	log := slog.New(slog.DiscardHandler)

	t.Run("lost", func(t *testing.T) {
		client, refuse := refusingClient()
		writesEnded := make(chan struct{})
		run := func(_, writes context.Context) {
			// From now on every renewal fails, as when the API server
			// cannot be reached.
			refuse.Store(true)
			<-writes.Done()
			close(writesEnded)
		}
		err := lead(context.Background(), client, le, run, log)
		require.ErrorIs(t, err, ErrLostLease)
		select {
		case <-writesEnded:
		default:
			t.Fatal("lead returned while the controllers' writes were live")
		}
	})

	t.Run("shutdown", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		writesLiveAtStop := make(chan bool, 1)
		run := func(stop, writes context.Context) {
			cancel()
			<-stop.Done()
			writesLiveAtStop <- writes.Err() == nil
		}
		var logs bytes.Buffer
		require.NoError(t, lead(ctx, fake.NewClientset(), le, run, slog.New(slog.NewTextHandler(&logs, nil))))
		require.True(t, <-writesLiveAtStop, "a drain lets the reconciles in flight write")
		require.Contains(t, logs.String(), `level=INFO msg="leading: controllers start" lease=kube-system/kubeplug identity=a`)
		require.Contains(t, logs.String(), `level=INFO msg="stopped leading: reconciles in flight finished, the Lease released" lease=kube-system/kubeplug`,
			"a leadership change in the log at info, as its start is")
	})
}

// TestLeaderSeries: the elector reports leader_election_master_status, by
// the Lease's name as kube-controller-manager's does: 1 while this host
// leads, 0 once it has lost the Lease.
func TestLeaderSeries(t *testing.T) {
	le := LeaderElection{Namespace: "kube-system", Name: "kubeplug-series", Identity: "a",
		LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}
	m := metrics.New()
	status := func() (float64, bool) {
		return seriesValue(t, m, "leader_election_master_status", map[string]string{"name": le.Name})
	}
	client, refuse := refusingClient()
	var leading float64
	var shown bool
	run := func(_, writes context.Context) {
		leading, shown = status()
		refuse.Store(true)
		<-writes.Done()
	}
	require.ErrorIs(t, lead(context.Background(), client, le, run, slog.New(slog.DiscardHandler)), ErrLostLease)
	require.True(t, shown, "no leader_election_master_status while leading")
	require.Equal(t, 1.0, leading, "while leading")
	lost, _ := status()
	require.Zero(t, lost, "after the Lease was lost")
}

// seriesValue is the value of the gauge or counter name whose labels
// include want, and whether there is one.
func seriesValue(t *testing.T, m *metrics.Metrics, name string, want map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Errorf("gather: %v", err)
		return 0, false
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if v, ok := want[l.GetName()]; ok && v != l.GetValue() {
					continue series
				}
			}
			if s.Gauge != nil {
				return s.Gauge.GetValue(), true
			}
			return s.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

// refusingClient is a fake clientset whose Lease updates fail once refuse
// is set, as when the API server cannot be reached. The reactor is in place
// before the elector runs: the fake's reactors are not safe to change while
// it calls them.
func refusingClient() (*fake.Clientset, *atomic.Bool) {
	client := fake.NewClientset()
	refuse := &atomic.Bool{}
	client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refuse.Load() {
			return true, nil, errors.New("renewal refused")
		}
		return false, nil, nil
	})
	return client, refuse
}
