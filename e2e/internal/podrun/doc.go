// Package podrun is the container runtime of the kubelet stand-in
// (e2e/internal/kubelet) for the pods a test wants really run: it runs a
// pod's container as a process from an unpacked image, as a node would,
// so that what a user installs (a Deployment from the Helm chart or the
// kustomize base) is what runs.
//
// For a pod it:
//
//   - unpacks the container's image (an OCI image from `make image`, looked
//     up by the pod's image name) into a root filesystem of its own, owners
//     and modes as the layers say;
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
//   - probes it as the kubelet does (httpGet on 127.0.0.1): readiness sets
//     the pod's Ready condition, a failed liveness probe or an exit restarts
//     the container and counts the restart.
//
// The processes share the test machine's network: two pods must not listen
// on the same port. Running as another user and chroot need root, which the
// e2e tests have.
//
// It must not import the host: it plays the node's part.
package podrun
