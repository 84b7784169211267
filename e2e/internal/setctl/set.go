package setctl

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// DefaultTimeout bounds each wait of a Set whose Timeout is zero. It is a
// bound on a hung test, not a performance assertion.
const DefaultTimeout = 2 * time.Minute

// Set is one StatefulSet whose pods and claims the stand-in manages. Its
// methods read the set afresh each time: the spec may be changed by the
// caller between calls.
type Set struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string
	// Timeout bounds each wait; zero means DefaultTimeout.
	Timeout time.Duration
}

// Create creates set and then, for every ordinal in range, its claims and
// its pod, as the StatefulSet controller does with podManagementPolicy
// Parallel: the claims first, without owner references, then the pod.
func Create(ctx context.Context, c kubernetes.Interface, set *appsv1.StatefulSet) (*Set, error) {
	created, err := c.AppsV1().StatefulSets(set.Namespace).Create(ctx, set, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create statefulset %s/%s: %w", set.Namespace, set.Name, err)
	}
	s := &Set{Client: c, Namespace: created.Namespace, Name: created.Name}
	start, end := Range(created)
	for ord := start; ord < end; ord++ {
		if err := s.CreateReplica(ctx, ord); err != nil {
			return s, err
		}
	}
	return s, nil
}

// Get reads the StatefulSet.
func (s *Set) Get(ctx context.Context) (*appsv1.StatefulSet, error) {
	set, err := s.Client.AppsV1().StatefulSets(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get statefulset %s/%s: %w", s.Namespace, s.Name, err)
	}
	return set, nil
}

// Pod returns the pod of ordinal, or nil when there is none.
func (s *Set) Pod(ctx context.Context, ordinal int32) (*corev1.Pod, error) {
	pod, err := s.Client.CoreV1().Pods(s.Namespace).Get(ctx, PodName(s.Name, ordinal), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get pod %s/%s: %w", s.Namespace, PodName(s.Name, ordinal), err)
	}
	return pod, nil
}

// Claims returns the claims of ordinal that exist, in template order.
func (s *Set) Claims(ctx context.Context, set *appsv1.StatefulSet, ordinal int32) ([]*corev1.PersistentVolumeClaim, error) {
	var out []*corev1.PersistentVolumeClaim
	for _, t := range set.Spec.VolumeClaimTemplates {
		name := ClaimName(t.Name, s.Name, ordinal)
		c, err := s.Client.CoreV1().PersistentVolumeClaims(s.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("get claim %s/%s: %w", s.Namespace, name, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// Scale sets spec.replicas to n and does what the StatefulSet controller
// does about it. Up: it creates the new replicas (CreateReplica). Down: it
// waits until the claims of every condemned pod carry the owner references
// the policy asks (AwaitOwners), then deletes those pods, highest ordinal
// first.
func (s *Set) Scale(ctx context.Context, n int32) error {
	set, err := s.Get(ctx)
	if err != nil {
		return err
	}
	_, oldEnd := Range(set)
	if err := s.SetReplicas(ctx, n); err != nil {
		return err
	}
	if set, err = s.Get(ctx); err != nil {
		return err
	}
	start, end := Range(set)
	for ord := oldEnd; ord < end; ord++ {
		if err := s.CreateReplica(ctx, ord); err != nil {
			return err
		}
	}
	var condemned []int32
	for ord := oldEnd - 1; ord >= end && ord >= start; ord-- {
		pod, err := s.Pod(ctx, ord)
		if err != nil {
			return err
		}
		if pod != nil {
			condemned = append(condemned, ord)
		}
	}
	for _, ord := range condemned {
		if err := s.AwaitOwners(ctx, ord); err != nil {
			return err
		}
	}
	for _, ord := range condemned {
		if err := s.DeletePod(ctx, ord); err != nil {
			return err
		}
	}
	return nil
}

// SetReplicas changes spec.replicas and nothing else.
func (s *Set) SetReplicas(ctx context.Context, n int32) error {
	return s.update(ctx, func(set *appsv1.StatefulSet) { set.Spec.Replicas = &n })
}

// SetPolicy changes spec.persistentVolumeClaimRetentionPolicy.
func (s *Set) SetPolicy(ctx context.Context, p Policy) error {
	return s.update(ctx, func(set *appsv1.StatefulSet) { set.Spec.PersistentVolumeClaimRetentionPolicy = p.Spec() })
}

func (s *Set) update(ctx context.Context, change func(*appsv1.StatefulSet)) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		set, err := s.Client.AppsV1().StatefulSets(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(set)
		_, err = s.Client.AppsV1().StatefulSets(s.Namespace).Update(ctx, set, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("update statefulset %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// AwaitOwners waits until every claim of ordinal carries exactly the owner
// references Owners gives for the set's current spec: the module's work. A
// condemned ordinal's pod must exist.
func (s *Set) AwaitOwners(ctx context.Context, ordinal int32) error {
	return s.await(ctx, fmt.Sprintf("the claims of %s to carry the owner references their policy asks", PodName(s.Name, ordinal)),
		func(ctx context.Context) (bool, error) {
			set, err := s.Get(ctx)
			if err != nil {
				return false, err
			}
			start, end := Range(set)
			condemned := ordinal < start || ordinal >= end
			pod, err := s.Pod(ctx, ordinal)
			if err != nil {
				return false, err
			}
			if condemned && pod == nil {
				return false, fmt.Errorf("pod %s/%s of condemned ordinal %d does not exist", s.Namespace, PodName(s.Name, ordinal), ordinal)
			}
			want := Owners(set, pod, condemned)
			claims, err := s.Claims(ctx, set, ordinal)
			if err != nil {
				return false, err
			}
			for _, c := range claims {
				if !SameOwners(c.OwnerReferences, want) {
					return false, nil
				}
			}
			return len(claims) == len(set.Spec.VolumeClaimTemplates), nil
		})
}

// CreateReplica creates the claims of ordinal that are missing and then its
// pod, unless it exists. Like upstream, it first waits while a claim of the
// ordinal is being deleted or, under whenScaled Delete, still refers to an
// earlier pod of that name (PodClaimIsStale): the garbage collector is about
// to delete it, and a new claim will be created in its place.
func (s *Set) CreateReplica(ctx context.Context, ordinal int32) error {
	set, err := s.Get(ctx)
	if err != nil {
		return err
	}
	if pod, err := s.Pod(ctx, ordinal); err != nil || pod != nil {
		return err
	}
	name := PodName(s.Name, ordinal)
	err = s.await(ctx, "no claim of "+name+" to be on its way out", func(ctx context.Context) (bool, error) {
		claims, err := s.Claims(ctx, set, ordinal)
		if err != nil {
			return false, err
		}
		for _, c := range claims {
			if c.DeletionTimestamp != nil {
				return false, nil
			}
			for _, ref := range c.OwnerReferences {
				if PolicyOf(set).WhenScaled == Delete && ref.Kind == "Pod" && ref.Name == name {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	for i := range set.Spec.VolumeClaimTemplates {
		c := newClaim(set, &set.Spec.VolumeClaimTemplates[i], ordinal)
		_, err := s.Client.CoreV1().PersistentVolumeClaims(s.Namespace).Create(ctx, c, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create claim %s/%s: %w", s.Namespace, c.Name, err)
		}
	}
	if _, err := s.Client.CoreV1().Pods(s.Namespace).Create(ctx, newPod(set, ordinal), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create pod %s/%s: %w", s.Namespace, name, err)
	}
	return nil
}

// DeletePod deletes the pod of ordinal and waits until it is gone. With no
// kubelet and no node, a pod is removed at once.
func (s *Set) DeletePod(ctx context.Context, ordinal int32) error {
	name := PodName(s.Name, ordinal)
	err := s.Client.CoreV1().Pods(s.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s/%s: %w", s.Namespace, name, err)
	}
	return s.await(ctx, "pod "+name+" to be gone", func(ctx context.Context) (bool, error) {
		pod, err := s.Pod(ctx, ordinal)
		return pod == nil, err
	})
}

// RestartPod deletes the pod of ordinal and creates it again, as a rolling
// update, an eviction or a node drain does.
func (s *Set) RestartPod(ctx context.Context, ordinal int32) error {
	if err := s.DeletePod(ctx, ordinal); err != nil {
		return err
	}
	return s.CreateReplica(ctx, ordinal)
}

// Delete deletes the StatefulSet with the given propagation (background
// when empty) and returns; the garbage collector does the rest.
func (s *Set) Delete(ctx context.Context, propagation metav1.DeletionPropagation) error {
	opts := metav1.DeleteOptions{}
	if propagation != "" {
		opts.PropagationPolicy = &propagation
	}
	if err := s.Client.AppsV1().StatefulSets(s.Namespace).Delete(ctx, s.Name, opts); err != nil {
		return fmt.Errorf("delete statefulset %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// await polls cond every 100ms until it holds, fails, or Timeout passes.
func (s *Set) await(ctx context.Context, what string, cond func(context.Context) (bool, error)) error {
	timeout := s.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, cond)
	switch {
	case err == nil:
		return nil
	case wait.Interrupted(err) && ctx.Err() == nil:
		return fmt.Errorf("wait for %s in %s: %w after %v", what, s.Namespace, ErrTimeout, timeout)
	}
	return fmt.Errorf("wait for %s in %s: %w", what, s.Namespace, err)
}
