package scale

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// Fleet is a set of StatefulSets in the state guests/retention,
// guests/reclaim and examples/warnretain converge to: claims whose only
// owner is their set's controller reference (whenDeleted: Delete), CSI
// volumes of policy Delete that carry external-provisioner's finalizer, and
// a retention policy that warnretain does not warn about.
type Fleet struct {
	// Run prefixes every namespace and cluster-scoped name, so that fleets
	// of several tests share a control plane.
	Run string
	// Sets is the number of StatefulSets, each of Replicas pods.
	Sets int
	// PerNamespace is the number of sets in each namespace.
	PerNamespace int
	// Labels are added to every namespaced object (sets, pod and claim
	// templates, pods, claims): a shard's selector selects them.
	Labels map[string]string
	// Driver is the CSI driver of the volumes and the classes' provisioner.
	Driver string
}

// Replicas is the size of each set, and the claims per set.
const Replicas = 3

// classes is how many StorageClasses the sets spread over.
const classes = 3

// template is every set's only volumeClaimTemplate.
const template = "data"

// Objects is how many objects the fleet holds.
func (f Fleet) Objects() int { return f.Sets*(1+3*Replicas) + classes }

// Namespaces lists the fleet's namespaces.
func (f Fleet) Namespaces() []string {
	n := (f.Sets + f.PerNamespace - 1) / f.PerNamespace
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", f.Run, i)
	}
	return out
}

// Set returns the namespace and name of set i.
func (f Fleet) Set(i int) (ns, name string) {
	return fmt.Sprintf("%s-%d", f.Run, i/f.PerNamespace), fmt.Sprintf("db-%d", i)
}

func (f Fleet) class(i int) string { return fmt.Sprintf("%s-class-%d", f.Run, i%classes) }

func (f Fleet) labels(set string) map[string]string {
	l := map[string]string{"app": set}
	for k, v := range f.Labels {
		l[k] = v
	}
	return l
}

func (f Fleet) statefulSet(i int) *appsv1.StatefulSet {
	ns, name := f.Set(i)
	replicas := int32(Replicas)
	class := f.class(i)
	selector := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: f.labels(name)},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &replicas,
			ServiceName:         name,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: f.labels(name)},
				Spec:       podSpec(),
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: template, Labels: f.labels(name)},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: &class,
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
			},
		},
	}
}

// podSpec is a database's pod, about the size of one in a real cluster.
func podSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{
		Name:  "db",
		Image: "registry.k8s.io/pause:3.10",
		Ports: []corev1.ContainerPort{{Name: "sql", ContainerPort: 5432}, {Name: "metrics", ContainerPort: 9187}},
		Env: []corev1.EnvVar{
			{Name: "PGDATA", Value: "/var/lib/postgresql/data/pgdata"},
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: template, MountPath: "/var/lib/postgresql/data"}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(5432)},
		}, PeriodSeconds: 10},
	}}}
}

func (f Fleet) pod(set *appsv1.StatefulSet, ordinal int) *corev1.Pod {
	name := fmt.Sprintf("%s-%d", set.Name, ordinal)
	l := f.labels(set.Name)
	l["statefulset.kubernetes.io/pod-name"] = name
	l["apps.kubernetes.io/pod-index"] = fmt.Sprint(ordinal)
	spec := podSpec()
	spec.Hostname, spec.Subdomain = name, set.Name
	spec.Volumes = []corev1.Volume{{Name: template, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(set.Name, ordinal)},
	}}}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: set.Namespace, Name: name, Labels: l,
			OwnerReferences: []metav1.OwnerReference{controllerRef(set)}},
		Spec: spec,
	}
}

func claimName(set string, ordinal int) string {
	return fmt.Sprintf("%s-%s-%d", template, set, ordinal)
}

func controllerRef(set *appsv1.StatefulSet) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: set.Name, UID: set.UID, Controller: &yes, BlockOwnerDeletion: &yes}
}

func (f Fleet) claim(set *appsv1.StatefulSet, ordinal int) *corev1.PersistentVolumeClaim {
	spec := *set.Spec.VolumeClaimTemplates[0].Spec.DeepCopy()
	spec.VolumeName = volumeName(set.Namespace, claimName(set.Name, ordinal))
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: set.Namespace, Name: claimName(set.Name, ordinal), Labels: f.labels(set.Name),
			Annotations: map[string]string{
				"pv.kubernetes.io/bind-completed":               "yes",
				"pv.kubernetes.io/bound-by-controller":          "yes",
				"volume.beta.kubernetes.io/storage-provisioner": f.Driver,
				"volume.kubernetes.io/storage-provisioner":      f.Driver,
			},
			Finalizers:      []string{"kubernetes.io/pvc-protection"},
			OwnerReferences: []metav1.OwnerReference{controllerRef(set)},
		},
		Spec: spec,
	}
}

// volumeName names the volume bound to claim ns/name. (A provisioner names
// it after the claim's UID; a name known before the claim exists lets the
// claim be created bound.)
func volumeName(ns, claim string) string { return "pvc-" + ns + "-" + claim }

func (f Fleet) volume(c *corev1.PersistentVolumeClaim) *corev1.PersistentVolume {
	fs := corev1.PersistentVolumeFilesystem
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        c.Spec.VolumeName,
			Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": f.Driver},
			Finalizers:  []string{"kubernetes.io/pv-protection", "external-provisioner.volume.kubernetes.io/finalizer"},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              *c.Spec.StorageClassName,
			VolumeMode:                    &fs,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: c.Namespace, Name: c.Name, UID: c.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: f.Driver, VolumeHandle: "vol-" + string(c.UID), FSType: "ext4",
				VolumeAttributes: map[string]string{"storage.kubernetes.io/csiProvisionerIdentity": "1700000000000-1234-" + f.Driver},
			}},
		},
	}
}

func (f Fleet) storageClass(i int) *storagev1.StorageClass {
	del := corev1.PersistentVolumeReclaimDelete
	wait := storagev1.VolumeBindingWaitForFirstConsumer
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: f.class(i)},
		Provisioner:       f.Driver,
		ReclaimPolicy:     &del,
		VolumeBindingMode: &wait,
		Parameters:        map[string]string{"type": fmt.Sprintf("tier-%d", i)},
	}
}

// Load creates the fleet through client with workers sets in flight at once,
// and returns how many API requests it made.
func (f Fleet) Load(ctx context.Context, client kubernetes.Interface, workers int) (int64, error) {
	var requests atomic.Int64
	call := func(fn func() error) error {
		return retry.OnError(retry.DefaultBackoff, transient, func() error {
			requests.Add(1)
			return fn()
		})
	}
	for i := range classes {
		if err := call(func() error {
			_, err := client.StorageV1().StorageClasses().Create(ctx, f.storageClass(i), metav1.CreateOptions{})
			return err
		}); err != nil {
			return requests.Load(), fmt.Errorf("create storageclass: %w", err)
		}
	}
	for _, ns := range f.Namespaces() {
		if err := call(func() error {
			_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			return err
		}); err != nil {
			return requests.Load(), fmt.Errorf("create namespace %s: %w", ns, err)
		}
	}
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := f.loadSet(ctx, client, i, call); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err error
feed:
	for i := range f.Sets {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	if err == nil {
		err = <-errs
	}
	return requests.Load(), err
}

// loadSet creates set i and its pods, claims and volumes, then sets the
// claims' and volumes' status to Bound, as the binder would have.
func (f Fleet) loadSet(ctx context.Context, client kubernetes.Interface, i int, call func(func() error) error) error {
	ns, name := f.Set(i)
	var set *appsv1.StatefulSet
	if err := call(func() (err error) {
		set, err = client.AppsV1().StatefulSets(ns).Create(ctx, f.statefulSet(i), metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("create statefulset %s/%s: %w", ns, name, err)
	}
	for o := range Replicas {
		if err := call(func() error {
			_, err := client.CoreV1().Pods(ns).Create(ctx, f.pod(set, o), metav1.CreateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("create pod of %s/%s: %w", ns, name, err)
		}
		var c *corev1.PersistentVolumeClaim
		want := f.claim(set, o)
		if err := call(func() (err error) {
			c, err = client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, want, metav1.CreateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("create claim %s/%s: %w", ns, want.Name, err)
		}
		var pv *corev1.PersistentVolume
		if err := call(func() (err error) {
			pv, err = client.CoreV1().PersistentVolumes().Create(ctx, f.volume(c), metav1.CreateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("create volume of %s/%s: %w", ns, c.Name, err)
		}
		c.Status = corev1.PersistentVolumeClaimStatus{
			Phase:       corev1.ClaimBound,
			AccessModes: c.Spec.AccessModes,
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		}
		if err := call(func() error {
			_, err := client.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, c, metav1.UpdateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("claim %s/%s status: %w", ns, c.Name, err)
		}
		pv.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}
		if err := call(func() error {
			_, err := client.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("volume %s status: %w", pv.Name, err)
		}
	}
	return nil
}

// transient is an error worth retrying while the API server is loaded.
func transient(err error) bool {
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}
