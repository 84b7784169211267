package retentionalone

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeplug/kubeplug/e2e/internal/setctl"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

const (
	// setName and template name every subtest's StatefulSet and its one
	// claim template: the claims are data-web-<ordinal>.
	setName  = "web"
	template = "data"
)

func client(t testing.TB) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side throttling: the subtests share it
	return kubernetes.NewForConfigOrDie(cfg)
}

// env is one subtest's world: a namespace and the set the stand-in runs.
type env struct {
	t   *testing.T
	ctx context.Context
	c   kubernetes.Interface
	ns  string
	s   *setctl.Set
}

// newEnv creates the namespace and the set, its claims (without owner
// references) and its pods, and waits until the module has given every
// claim the references its policy asks.
func newEnv(t *testing.T, p setctl.Policy, replicas int32) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), c: client(t)}
	e.ns = testenv.Namespace(t, e.c)
	s, err := setctl.Create(e.ctx, e.c, setctl.NewStatefulSet(e.ns, setName, template, p, replicas))
	if err != nil {
		t.Fatal(err)
	}
	s.Timeout = testenv.Timeout
	e.s = s
	e.inLine(0, replicas)
	return e
}

// must fails the test on err.
func (e *env) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// inLine waits until the claims of ordinals [from, to) carry the references
// the set's policy asks.
func (e *env) inLine(from, to int32) {
	e.t.Helper()
	for ord := from; ord < to; ord++ {
		e.must(e.s.AwaitOwners(e.ctx, ord))
	}
}

func (e *env) claim(ordinal int32) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	c, err := e.c.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, setctl.ClaimName(template, setName, ordinal), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	e.must(err)
	return c
}

func (e *env) claimUIDs(from, to int32) map[int32]types.UID {
	e.t.Helper()
	out := map[int32]types.UID{}
	for ord := from; ord < to; ord++ {
		if c := e.claim(ord); c != nil {
			out[ord] = c.UID
		}
	}
	return out
}

// awaitGone waits until no claim of ordinal exists.
func (e *env) awaitGone(ordinals ...int32) {
	e.t.Helper()
	testenv.Eventually(e.t, testenv.Timeout, fmt.Sprintf("claims %v of %s gone", ordinals, e.ns), func() (bool, error) {
		for _, ord := range ordinals {
			if e.claim(ord) != nil {
				return false, nil
			}
		}
		return true, nil
	})
}

// unowned asserts that the claim of ordinal exists, is not being deleted and
// has no owner reference: nothing will delete it.
func (e *env) unowned(ordinal int32) {
	e.t.Helper()
	c := e.claim(ordinal)
	switch {
	case c == nil:
		e.t.Fatalf("claim %s of %s is gone; it must be kept", setctl.ClaimName(template, setName, ordinal), e.ns)
	case c.DeletionTimestamp != nil || len(c.OwnerReferences) > 0:
		e.t.Fatalf("claim %s of %s: deletionTimestamp %v, owner references %v; want neither", c.Name, e.ns, c.DeletionTimestamp, c.OwnerReferences)
	}
}

// same asserts that the claims of before still exist with the same UIDs:
// kept, not deleted and created again.
func (e *env) same(before map[int32]types.UID) {
	e.t.Helper()
	for ord, uid := range before {
		if c := e.claim(ord); c == nil || c.UID != uid {
			e.t.Errorf("claim of ordinal %d in %s was deleted (uid %s before)", ord, e.ns, uid)
		}
	}
}

// hostWrites counts the host's OwnerReferencesUpdated events in the
// namespace: one per owner-reference write.
func (e *env) hostWrites() int {
	e.t.Helper()
	list, err := e.c.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{FieldSelector: "reason=OwnerReferencesUpdated"})
	e.must(err)
	n := 0
	for _, ev := range list.Items {
		if ev.Source.Component == "kubeplug.dev/retention" {
			n += int(max(ev.Count, 1))
		}
	}
	return n
}

// awaitWrites waits until the host has made n owner-reference writes in the
// namespace, failing if it makes more.
func (e *env) awaitWrites(n int) {
	e.t.Helper()
	testenv.Eventually(e.t, testenv.Timeout, fmt.Sprintf("%d owner-reference writes by the host in %s", n, e.ns), func() (bool, error) {
		got := e.hostWrites()
		if got > n {
			return false, fmt.Errorf("the host made %d owner-reference writes in %s, want %d", got, e.ns, n)
		}
		return got == n, nil
	})
	e.t.Logf("%d owner-reference writes by the host so far", n)
}
