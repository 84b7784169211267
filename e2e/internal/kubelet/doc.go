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
// while their readiness probes pass, with the image the runtime runs as
// imageID, and stopped before a deletion completes; a pod the runtime
// cannot run (an image the node does not hold) is never reported Running:
// it stays Pending, its containers Waiting with the runtime's reason, and a
// Warning event says why. Without a Runtime, pods are reported running
// while nothing runs: what the tests of StatefulSets need, and nothing more.
//
// The node itself is registered with a status (Ready, its capacity, the
// loopback address, the API server's version as its kubelet's) and holds
// its Lease in kube-node-lease, renewed every 10 s and its status posted
// every 5 minutes, as a kubelet's heartbeats. It never changes a pod's
// spec, labels or owners, and never creates or deletes anything but what is
// said above (its Node, its Lease, and the events of pods it cannot run).
//
// It must not import the host (github.com/kubeplug/kubeplug/host) or the
// guest modules: it plays the cluster's part, not kubeplug's.
package kubelet
