package faults

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// birth is where a claim's creation falls against its set's deletion, in
// etcd's order of writes rather than by the claim's creationTimestamp,
// which is whole seconds: kube-controller-manager can recreate a claim
// from a lagging informer in the very second its set is deleted.
type birth int

const (
	// birthUnknown: etcd no longer holds the history (compacted), or the
	// claim changed since it was listed; judge by the timestamps.
	birthUnknown birth = iota
	// bornBefore: the set still existed at the claim's creation revision.
	bornBefore
	// bornAfter: the set was gone at the claim's creation revision.
	bornAfter
)

// revisions reads the control plane's etcd, where the API shows no
// creation revision. It only reads.
type revisions struct {
	kv clientv3.KV
}

// newRevisions connects to the etcd at url; close releases it.
func newRevisions(url string) (r *revisions, close func() error, err error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, nil, fmt.Errorf("etcd at %s: %w", url, err)
	}
	return &revisions{kv: c.KV}, c.Close, nil
}

// etcdKey is where kube-apiserver keeps an object: its default prefix,
// the resource, the namespace and the name.
func etcdKey(resource, ns, name string) string {
	return "/registry/" + resource + "/" + ns + "/" + name
}

// claimBirth places the creation of claim cl, as listed, against the
// deletion of its set: the revision etcd created the claim's key at, and
// whether the set's key existed at that revision. birthUnknown, with the
// reason, when it cannot tell.
func (r *revisions) claimBirth(ctx context.Context, cl *corev1.PersistentVolumeClaim, set string) (birth, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	listed, err := strconv.ParseInt(cl.ResourceVersion, 10, 64)
	if err != nil {
		return birthUnknown, 0, fmt.Errorf("claim %s: resourceVersion %q is not an etcd revision", cl.Name, cl.ResourceVersion)
	}
	got, err := r.kv.Get(ctx, etcdKey("persistentvolumeclaims", cl.Namespace, cl.Name))
	if err != nil {
		return birthUnknown, 0, err
	}
	if len(got.Kvs) == 0 || got.Kvs[0].CreateRevision > listed {
		return birthUnknown, 0, fmt.Errorf("claim %s was deleted or created again since it was listed at %d", cl.Name, listed)
	}
	created := got.Kvs[0].CreateRevision
	at, err := r.kv.Get(ctx, etcdKey("statefulsets", cl.Namespace, set), clientv3.WithRev(created), clientv3.WithCountOnly())
	if err != nil {
		return birthUnknown, created, err // most likely compacted
	}
	if at.Count == 0 {
		return bornAfter, created, nil
	}
	return bornBefore, created, nil
}

// String says where the claim was born, for the log.
func (b birth) String() string {
	switch b {
	case bornBefore:
		return "while its set existed"
	case bornAfter:
		return "after its set was gone"
	}
	return "at a revision etcd no longer places"
}

// TestClaimBirth: on the control plane's own etcd, a claim created before
// its set's deletion is placed before it and one created after, after it,
// whatever their timestamps' seconds say; a claim created again since it
// was listed is not placed.
func TestClaimBirth(t *testing.T) {
	ctx := t.Context()
	c := cp.Client()
	ns := testenv.Namespace(t, c)
	rev, closeRev, err := newRevisions(cp.EtcdURL)
	if err != nil {
		t.Fatal(err)
	}
	defer closeRev()
	claim := func(name string) *corev1.PersistentVolumeClaim {
		cl, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	// No replicas: kube-controller-manager creates nothing for it.
	if _, err := c.AppsV1().StatefulSets(ns).Create(ctx, testenv.StatefulSet("s", class, "1Gi", 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := claim("data-s-0")
	if err := c.AppsV1().StatefulSets(ns).Delete(ctx, "s", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	after := claim("data-s-1")

	for _, tc := range []struct {
		cl   *corev1.PersistentVolumeClaim
		want birth
	}{{before, bornBefore}, {after, bornAfter}} {
		got, at, err := rev.claimBirth(ctx, tc.cl, "s")
		if err != nil {
			t.Fatalf("%s: %v", tc.cl.Name, err)
		}
		if got != tc.want {
			t.Errorf("%s: born %s, want %s", tc.cl.Name, got, tc.want)
		}
		if want, _ := strconv.ParseInt(tc.cl.ResourceVersion, 10, 64); at != want {
			t.Errorf("%s: created at revision %d, want its resourceVersion at creation, %d", tc.cl.Name, at, want)
		}
	}

	// Deleted and created again since it was listed: the listing's claim
	// is not the one etcd holds.
	if err := c.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, before.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, testenv.Timeout, "the claim to be gone", func() (bool, error) {
		_, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, before.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	claim(before.Name)
	if got, _, err := rev.claimBirth(ctx, before, "s"); got != birthUnknown || err == nil {
		t.Errorf("a claim created again since it was listed: born %s (err %v), want unknown with an error", got, err)
	}
}
