// Package podrun is the container runtime of the kubelet stand-in
// (e2e/internal/kubelet) for the pods a test wants really run: it runs a
// pod's container as a process from an unpacked image, as a node would,
// so that what a user installs (a Deployment from the Helm chart or the
// kustomize base) is what runs.
//
// For a pod it:
//
//   - checks, before it writes anything, what it can tell from the pod and
//     the image's configuration: one container, an image it holds (looked
//     up by name as containerd does, or by REPOSITORY@DIGEST), a user, env
//     sources and volumes it supports; what it cannot run is an *Error
//     whose Reason is the kubelet's Waiting reason (ErrImageNeverPull,
//     CreateContainerConfigError, ...), which the kubelet stand-in reports
//     on the pod instead of calling it Running;
//   - unpacks the container's image (an OCI image from `make image`; see
//     ReadLayout) into a root filesystem of its own, owners and modes as
//     the layers say;
//   - with Options.OwnNetwork, makes the pod a network namespace of its
//     own with only a loopback interface, so that pods may listen on one
//     port, and forwards the API server's address inside it to the API
//     server (at most 64 connections at once per pod);
//   - writes the pod's ConfigMap and Secret volumes and emptyDirs into it at
//     their mount paths, ConfigMaps and Secrets with the kubelet's own
//     AtomicWriter (a `..data` symlink swapped atomically), and keeps them
//     up to date as the kubelet does, so a changed ConfigMap reaches the
//     process without a restart;
//   - writes the service account's token (a TokenRequest bound to the pod),
//     the API server's CA and the namespace where client-go's in-cluster
//     configuration reads them, /var/run/secrets/kubernetes.io/serviceaccount,
//     as the ServiceAccount admission plugin and the kubelet's projected
//     volume would (the test control plane runs without that plugin);
//   - with readOnlyRootFilesystem, makes the image's files root's and
//     unwritable, so the process (never root: runAsNonRoot is honoured) can
//     write only to its volumes;
//   - starts the image's entrypoint with the container's args and env (values
//     and the downward API's fieldRef and resourceFieldRef), with
//     KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT at the test API
//     server, chrooted into the root filesystem and as the user the pod's
//     securityContext or the image names;
//   - probes it as the kubelet does (httpGet on 127.0.0.1, in the pod's
//     network namespace when it has one): readiness sets the pod's Ready
//     condition, a failed liveness probe or an exit restarts the container
//     and counts the restart.
//
// Without OwnNetwork the processes share the machine's network: two pods
// must not listen on the same port. Running as another user, chroot and
// network namespaces need root, which the e2e tests and make cluster have.
// It pulls no image, whatever a pod's imagePullPolicy says.
//
// It must not import the host: it plays the node's part.
package podrun
