package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/kubeplug/kubeplug/host/kube"
	"github.com/kubeplug/kubeplug/host/metrics"
)

// lead runs run while this host holds the Lease. It returns nil when ctx is
// done (after releasing the Lease, so that another host takes over at once)
// and ErrLostLease when the Lease was lost while ctx was live.
//
// run is given two contexts: the first ends on shutdown or on losing the
// Lease, and the controllers drain; the second, the leadership itself, ends
// only on losing the Lease, and cancels the reconciles in flight.
func lead(ctx context.Context, client kubernetes.Interface, le LeaderElection, run func(ctx, writes context.Context), log *slog.Logger) error {
	if le.Identity == "" {
		host := os.Getenv("POD_NAME")
		if host == "" {
			host, _ = os.Hostname()
		}
		le.Identity = host + "_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: le.Name},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: le.Identity},
	}
	if o := le.owner; o != nil && o.Namespace == le.Namespace {
		// An owner in another namespace would be no owner at all: the
		// garbage collector would find none and delete the Lease.
		lock.Client = kube.OwnedLeases(lock.Client, o)
	}
	// The elector gets a context of its own, cancelled only after the
	// controllers have drained: with ReleaseOnCancel it gives up the Lease
	// when that context ends, and no other host may start writing while
	// this one still finishes a reconcile.
	leaderelection.SetProvider(leaderMetrics{})
	leCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElector()
	started := make(chan struct{})
	drained := make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.leaseDuration(),
		RenewDeadline:   le.renewDeadline(),
		RetryPeriod:     orDefault(le.RetryPeriod, 2*time.Second),
		ReleaseOnCancel: true,
		WatchDog:        le.watchDog,
		Name:            le.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				close(started)
				defer close(drained)
				log.Info("leading: controllers start", "lease", le.Namespace+"/"+le.Name, "identity", le.Identity)
				// Stop on shutdown or on losing the Lease, whichever
				// comes first.
				runCtx, cancel := context.WithCancel(lctx)
				defer cancel()
				stop := context.AfterFunc(ctx, cancel)
				defer stop()
				// lctx ends only when the Lease is lost: the elector's
				// own context lives until the controllers have drained.
				run(runCtx, lctx)
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(id string) {
				if id != le.Identity {
					log.Info("following", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	electorDone := make(chan struct{})
	go func() {
		defer close(electorDone)
		elector.Run(leCtx)
	}()

	select {
	case <-ctx.Done():
		// Shutdown: drain if leading, then release the Lease.
		leading := false
		select {
		case <-started:
			<-drained
			leading = true
		default:
		}
		stopElector()
		<-electorDone
		if leading {
			log.Info("stopped leading: reconciles in flight finished, the Lease released", "lease", le.Namespace+"/"+le.Name)
		}
		return nil
	case <-electorDone:
		// The elector only stops on its own when the Lease was lost.
		select {
		case <-started:
			<-drained
		default:
		}
		return ErrLostLease
	}
}

// leaderMetrics hands client-go's elector leader_election_master_status
// and leader_election_slowpath_total (metrics.LeaderElection), labelled
// with the Lease's name as kube-controller-manager's are. client-go takes
// the first provider of the process and ignores the others.
type leaderMetrics struct{}

func (leaderMetrics) NewLeaderMetric() leaderelection.LeaderMetric { return metrics.LeaderElection }

func (le LeaderElection) leaseDuration() time.Duration {
	return orDefault(le.LeaseDuration, 15*time.Second)
}
func (le LeaderElection) renewDeadline() time.Duration {
	return orDefault(le.RenewDeadline, 10*time.Second)
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
