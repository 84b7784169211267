// Package kubelet stands in, inside the test process, for the scheduler and
// the kubelet of one node, so that end-to-end tests on a control plane with
// no nodes see pods run and terminate as on a real cluster. For every pod in
// a namespace it serves it:
//
//   - binds the pod to its node when it has none (the scheduler's part, through
//     pods/binding). This matters for deletion: kube-apiserver deletes a pod
//     that has no spec.nodeName at once, whatever its grace period, so
//     without it no pod is ever seen terminating;
//   - sets a bound pod's status, through pods/status, to phase Running with
//     its containers running and the conditions Initialized, ContainersReady
//     and Ready True, so that OrderedReady StatefulSets and rolling updates
//     make progress; HoldUnready reports a pod Running but not Ready (a
//     failing readiness probe) until the test releases it;
//   - completes a graceful deletion as a kubelet does once the containers have
//     stopped: a pod with a deletionTimestamp is deleted again with
//     gracePeriodSeconds 0 (and its UID as precondition). HoldTerminations
//     keeps a namespace's pods terminating until the test releases them.
//
// It binds a pod only once each of its claims exists and is not being
// deleted, as the scheduler's VolumeBinding plugin; beyond that it does not
// look at volumes: a pod runs whether or not its claims are bound, as if
// every volume were at hand. A namespace served with a
// Runtime (ServeWith; e2e/internal/podrun runs containers as processes from
// an image) has its pods' containers started for real, reported ready only
// while their readiness probes pass, and stopped before a deletion
// completes. It never changes a pod's spec,
// labels or owners, and never creates or deletes anything but what is said
// above (and its Node object).
//
// It must not import the host (github.com/kubeplug/kubeplug/host) or the
// guest modules: it plays the cluster's part, not kubeplug's.
package kubelet
