package admission_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/admission"
	"github.com/kubeplug/kubeplug/host/memcluster"
)

// A claim created for a StatefulSet the host's cache has not seen yet
// (kube-controller-manager's informer is ahead of the host's) gets the set
// from the API server: the module sees it, and may stamp the set's
// reference, which the owner rule then accepts. When the API server has no
// such set either, or cannot answer, the module sees none, as before; the
// reads are bounded whatever the claim's name.
func TestReviewReadsASetTheCacheHasNot(t *testing.T) {
	web := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "set-uid"},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}},
	}
	stamp := &abi.AdmitResponse{Allowed: true, Patch: []abi.PatchOperation{op("add", "/metadata/ownerReferences", "["+setRef+"]")}}
	for _, tt := range []struct {
		name      string
		live      func(ctx context.Context, ns, name string) (*appsv1.StatefulSet, error)
		claim     string
		wantSet   bool
		wantReads int
	}{{
		name: "the API server has it",
		live: func(_ context.Context, ns, name string) (*appsv1.StatefulSet, error) {
			if ns == "default" && name == "web" {
				return web.DeepCopy(), nil
			}
			return nil, apierrors.NewNotFound(appsv1.Resource("statefulsets"), name)
		},
		claim: "data-web-0", wantSet: true, wantReads: 1, // the builder asks again: kept for the review
	}, {
		name: "nor has the API server",
		live: func(_ context.Context, _, name string) (*appsv1.StatefulSet, error) {
			return nil, apierrors.NewNotFound(appsv1.Resource("statefulsets"), name)
		},
		claim: "data-web-0", wantReads: 1,
	}, {
		name: "the API server fails",
		live: func(context.Context, string, string) (*appsv1.StatefulSet, error) {
			return nil, errors.New("connection refused")
		},
		claim: "data-web-0", wantReads: 1,
	}, {
		name: "a name that names many sets",
		live: func(_ context.Context, _, name string) (*appsv1.StatefulSet, error) {
			return nil, apierrors.NewNotFound(appsv1.Resource("statefulsets"), name)
		},
		claim: "a-b-c-d-e-f-g-h-0", wantReads: 3,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			reads := 0
			r := &admission.Reviewer{
				Lister: memcluster.New(memcluster.Config{}),
				LiveStatefulSet: func(ctx context.Context, ns, name string) (*appsv1.StatefulSet, error) {
					reads++
					return tt.live(ctx, ns, name)
				},
			}
			fake := &fakeAdmitter{mutates: true, rules: claimRules, answer: stamp}
			m := &admission.Module{Name: "retention", Admitter: fake, Granted: ownersGrant, FailurePolicy: admission.Ignore}
			req := claimCreate()
			req.Name = tt.claim
			req.Object = runtime.RawExtension{Raw: []byte(strings.Replace(claimOwnedBy(""), `"data-web-0"`, `"`+tt.claim+`"`, 1))}
			o := r.Review(context.Background(), m, req, 0)
			require.Len(t, fake.seen, 1)
			require.Equal(t, tt.wantReads, reads, "API reads")
			if !tt.wantSet {
				require.Nil(t, fake.seen[0].StatefulSet)
				require.ErrorContains(t, o.Failure, "neither the subject StatefulSet nor one of its pods")
				return
			}
			require.NotNil(t, fake.seen[0].StatefulSet)
			require.Equal(t, "set-uid", fake.seen[0].StatefulSet.Set.Metadata.UID)
			require.NoError(t, o.Failure)
			require.Equal(t, "mutated", o.Result())
		})
	}
}
