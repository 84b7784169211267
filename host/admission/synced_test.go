package admission_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/admission"
	"github.com/kubeplug/kubeplug/host/memcluster"
)

// A review that comes in while the host's caches are still syncing waits
// for them: the module sees what the synced caches hold, never a cache
// that is still filling. If they have not synced by the review's
// deadline, the failure policy answers, and the module is not called.
func TestReviewWaitsForTheCachesToSync(t *testing.T) {
	web := func() map[string]any {
		return map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": map[string]any{"name": "web", "namespace": "default", "uid": "set-uid"},
			"spec": map[string]any{"replicas": 2, "volumeClaimTemplates": []any{map[string]any{"metadata": map[string]any{"name": "data"}}}}}
	}
	stamp := &abi.AdmitResponse{Allowed: true, Patch: []abi.PatchOperation{op("add", "/metadata/ownerReferences", "["+setRef+"]")}}
	review := func(synced chan struct{}, cluster *memcluster.Cluster, timeout time.Duration) (*fakeAdmitter, <-chan *admission.Outcome) {
		r := &admission.Reviewer{Lister: cluster, Synced: synced}
		fake := &fakeAdmitter{mutates: true, rules: claimRules, answer: stamp}
		m := &admission.Module{Name: "retention", Admitter: fake, Granted: ownersGrant, FailurePolicy: admission.Ignore}
		req := claimCreate()
		req.Object = runtime.RawExtension{Raw: []byte(claimOwnedBy(""))}
		out := make(chan *admission.Outcome, 1)
		go func() { out <- r.Review(context.Background(), m, req, timeout) }()
		return fake, out
	}

	t.Run("synced during the review", func(t *testing.T) {
		synced, cluster := make(chan struct{}), memcluster.New(memcluster.Config{})
		fake, out := review(synced, cluster, 10*time.Second)
		require.NoError(t, cluster.Load(web()))
		close(synced)
		o := <-out
		require.NoError(t, o.Failure)
		require.Len(t, fake.seen, 1)
		require.NotNil(t, fake.seen[0].StatefulSet, "the module saw the caches as synced")
		require.Equal(t, "mutated", o.Result())
	})
	t.Run("not synced by the deadline", func(t *testing.T) {
		cluster := memcluster.New(memcluster.Config{})
		require.NoError(t, cluster.Load(web()))
		fake, out := review(make(chan struct{}), cluster, time.Second)
		o := <-out
		require.Empty(t, fake.seen, "the module was called on caches still syncing")
		require.Equal(t, "failed-open", o.Result())
		require.ErrorIs(t, o.Failure, admission.ErrRequest)
		require.True(t, strings.Contains(o.Failure.Error(), "still syncing"), o.Failure.Error())
	})
}
