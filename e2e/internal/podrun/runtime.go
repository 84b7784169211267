package podrun

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	volumeutil "k8s.io/kubernetes/pkg/volume/util"
)

// saDir is where a pod finds its service account's files.
const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// Budgets of one pod: its unpacked image and its logs.
const (
	maxRootfs = 1 << 30
	maxLog    = 8 << 20
)

// Options say what a Runtime runs pods with.
type Options struct {
	// Images maps the image names pods may use to images. A name is
	// matched as containerd matches it: kubeplug:latest is
	// docker.io/library/kubeplug:latest; REPOSITORY@DIGEST names an image
	// by its digest too.
	Images map[string]v1.Image
	// Client reads ConfigMaps and Secrets and asks for tokens.
	Client kubernetes.Interface
	// Host and Port are the API server's, for KUBERNETES_SERVICE_HOST and
	// KUBERNETES_SERVICE_PORT; CA is its serving CA, the pod's ca.crt.
	Host, Port string
	CA         []byte
	// Dir holds the pods' root filesystems.
	Dir string
	// Sync is how often volumes are refreshed and probes run; default 500ms.
	Sync time.Duration
	// LogDir, when set, receives each pod's log as it is written, in
	// NAMESPACE_NAME_UID.log (within the same 8 MiB as Log), kept after
	// the pod is gone, as a node keeps its pods' logs under /var/log/pods.
	LogDir string
	// OwnNetwork runs each pod (but those with hostNetwork) in a network
	// namespace of its own, with a loopback interface only, as a pod has
	// a network of its own: two pods may listen on one port. Host must
	// then be a loopback address: the runtime forwards Host:Port inside
	// the namespace to the API server, and probes the pod there. Without
	// it the pods share the machine's network.
	OwnNetwork bool
}

// Runtime runs pods' containers as processes. Its methods are safe for
// concurrent use.
type Runtime struct {
	o      Options
	images map[string]v1.Image // by normalized reference
	mu     sync.Mutex
	pods   map[types.UID]*container
}

// New returns a Runtime.
func New(o Options) *Runtime {
	if o.Sync == 0 {
		o.Sync = 500 * time.Millisecond
	}
	r := &Runtime{o: o, images: map[string]v1.Image{}, pods: map[types.UID]*container{}}
	for ref, img := range o.Images {
		r.images[normalize(ref)] = img
		if d, err := img.Digest(); err == nil {
			if repo, err := name.ParseReference(ref); err == nil {
				r.images[normalize(repo.Context().Name()+"@"+d.String())] = img
			}
		}
	}
	return r
}

// Names are the image names pods may use, as Options gave them, sorted.
func (r *Runtime) Names() []string {
	return slices.Sorted(maps.Keys(r.o.Images))
}

// Status is what the node reports of a pod's container.
type Status struct {
	Running  bool
	Ready    bool
	Restarts int32
	PID      int
}

// Start runs pod's container unless it runs already; changed is called
// when its Status changes (probes, exits, restarts). An *Error says why
// the pod cannot run here; any other error may pass (a ConfigMap not yet
// there) and Start may be called again.
func (r *Runtime) Start(ctx context.Context, pod *corev1.Pod, changed func()) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.pods[pod.UID]; ok {
		return nil
	}
	c, img, err := r.prepare(pod, changed)
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel = cancel
	if err := c.create(runCtx, img); err != nil {
		c.teardown()
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	r.pods[pod.UID] = c
	c.wg.Go(func() { c.supervise(runCtx) })
	return nil
}

// prepare checks, before anything is written, what podrun can tell from
// the pod and the image's configuration alone: one container, an image
// it has, a user, env sources and volumes it supports.
func (r *Runtime) prepare(pod *corev1.Pod, changed func()) (*container, v1.Image, error) {
	if uid := os.Geteuid(); uid != 0 {
		return nil, nil, refuse(ReasonCreateContainer, "this node runs as uid %d: it needs root to run a pod (chroot, the pod's user, its network namespace)", uid)
	}
	if len(pod.Spec.Containers) != 1 || len(pod.Spec.InitContainers) != 0 {
		return nil, nil, refuse(ReasonCreateContainer, "podrun runs pods of exactly one container and no init containers")
	}
	spec := pod.Spec.Containers[0]
	img, ok := r.images[normalize(spec.Image)]
	if !ok {
		return nil, nil, refuse(ReasonImageNeverPull, "image %q is not on this node, which pulls no image: it runs only %s",
			spec.Image, strings.Join(r.Names(), ", "))
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, nil, fmt.Errorf("image %s: %w", spec.Image, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, nil, fmt.Errorf("image %s: %w", spec.Image, err)
	}
	c := &container{rt: r, pod: pod.DeepCopy(), spec: spec, image: cf.Config, changed: changed, log: &logBuffer{}}
	c.imageID = spec.Image + "@" + digest.String()
	if ref, err := name.ParseReference(spec.Image); err == nil {
		c.imageID = ref.Context().Name() + "@" + digest.String()
	}
	c.root = filepath.Join(r.o.Dir, string(pod.UID))
	if _, _, err := c.user(); err != nil {
		return nil, nil, refuse(ReasonCreateContainerConfig, "%v", err)
	}
	if _, err := c.environment(); err != nil {
		return nil, nil, refuse(ReasonCreateContainerConfig, "%v", err)
	}
	if err := c.checkVolumes(); err != nil {
		return nil, nil, refuse(ReasonCreateContainerConfig, "%v", err)
	}
	return c, img, nil
}

// create makes the container's root filesystem, network and volumes from
// img, and starts its process.
func (c *container) create(ctx context.Context, img v1.Image) error {
	if dir := c.rt.o.LogDir; dir != "" {
		name := fmt.Sprintf("%s_%s_%s.log", c.pod.Namespace, c.pod.Name, c.pod.UID)
		if err := c.log.openFile(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	if err := unpack(img, c.root); err != nil {
		return fmt.Errorf("unpack %s: %w", c.spec.Image, err)
	}
	if sc := c.spec.SecurityContext; sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
		if err := readOnly(c.root); err != nil {
			return fmt.Errorf("readOnlyRootFilesystem: %w", err)
		}
	}
	if c.rt.o.OwnNetwork && !c.pod.Spec.HostNetwork {
		ns, err := newNetNS()
		if err != nil {
			return err
		}
		c.net = ns
		api := net.JoinHostPort(c.rt.o.Host, c.rt.o.Port)
		if err := ns.forward(api, api); err != nil {
			return err
		}
	}
	if err := c.mountVolumes(ctx); err != nil {
		return err
	}
	return c.start()
}

// teardown undoes what a failed create did.
func (c *container) teardown() {
	c.cancel()
	c.wg.Wait()
	c.net.close()
	c.log.closeFile()
	os.RemoveAll(c.root)
}

// container is pod's container, if it runs here.
func (r *Runtime) container(pod *corev1.Pod) (*container, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.pods[pod.UID]
	return c, ok
}

// Status returns what the runtime knows of pod's container.
func (r *Runtime) Status(pod *corev1.Pod) (Status, bool) {
	c, ok := r.container(pod)
	if !ok {
		return Status{}, false
	}
	return c.status(), true
}

// Ready reports whether pod's container runs and passes its readiness
// probe, and how often it was restarted: what the kubelet stand-in reports.
func (r *Runtime) Ready(pod *corev1.Pod) (bool, int32) {
	s, _ := r.Status(pod)
	return s.Running && s.Ready, s.Restarts
}

// ImageID is the image pod's container runs, as REPOSITORY@DIGEST: what
// the kubelet stand-in reports as its imageID.
func (r *Runtime) ImageID(pod *corev1.Pod) string {
	if c, ok := r.container(pod); ok {
		return c.imageID
	}
	return ""
}

// Log returns what pod's container wrote to standard output and error,
// over all its restarts.
func (r *Runtime) Log(pod *corev1.Pod) string {
	if c, ok := r.container(pod); ok {
		return c.log.String()
	}
	return ""
}

// Stop stops pod's container as the kubelet does (SIGTERM, then SIGKILL
// after the pod's grace period) and removes its root filesystem.
func (r *Runtime) Stop(pod *corev1.Pod) {
	r.mu.Lock()
	c, ok := r.pods[pod.UID]
	delete(r.pods, pod.UID)
	r.mu.Unlock()
	if ok {
		c.stop()
	}
}

// StopAll stops every container.
func (r *Runtime) StopAll() {
	r.mu.Lock()
	cs := r.pods
	r.pods = map[types.UID]*container{}
	r.mu.Unlock()
	for _, c := range cs {
		c.stop()
	}
}

type container struct {
	rt      *Runtime
	pod     *corev1.Pod
	spec    corev1.Container
	image   v1.Config
	imageID string
	root    string
	changed func()
	log     *logBuffer
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	// net is the pod's network namespace; nil: the machine's.
	net *netNS

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	ready    bool
	restarts int32
	stopping bool

	token        string
	tokenRefresh time.Time
}

func (c *container) status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Status{Ready: c.ready, Restarts: c.restarts}
	if c.cmd != nil && c.cmd.Process != nil {
		select {
		case <-c.exited:
		default:
			s.Running, s.PID = true, c.cmd.Process.Pid
		}
	}
	return s
}

// start starts the process; c.mu must not be held.
func (c *container) start() error {
	argv := c.spec.Command
	if len(argv) == 0 {
		argv = c.image.Entrypoint
	}
	args := c.spec.Args
	if len(c.spec.Command) == 0 && len(args) == 0 {
		args = c.image.Cmd
	}
	argv = append(append([]string(nil), argv...), args...)
	if len(argv) == 0 {
		return refuse(ReasonRunContainer, "the container has no command and the image no entrypoint")
	}
	env, err := c.environment()
	if err != nil {
		return err
	}
	uid, gid, err := c.user()
	if err != nil {
		return err
	}
	dir := c.spec.WorkingDir
	if dir == "" {
		dir = c.image.WorkingDir
	}
	if dir == "" {
		dir = "/"
	}
	cmd := &exec.Cmd{
		Path: argv[0], Args: argv, Env: env, Dir: dir,
		Stdout: c.log, Stderr: c.log,
		SysProcAttr: &syscall.SysProcAttr{
			Chroot:     c.root,
			Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}},
			Setpgid:    true,
			Pdeathsig:  syscall.SIGKILL,
		},
	}
	run := cmd.Start
	if c.net != nil {
		// The child is forked from a thread inside the namespace.
		run = func() error { return c.net.do(cmd.Start) }
	}
	if err := run(); err != nil {
		return refuse(ReasonRunContainer, "start %s: %v", argv[0], err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	c.mu.Lock()
	c.cmd, c.exited, c.ready = cmd, exited, false
	c.mu.Unlock()
	return nil
}

// supervise probes the container, restarts it when it exits or its
// liveness probe fails failureThreshold times in a row, and keeps the
// ConfigMap and Secret volumes current.
func (c *container) supervise(ctx context.Context) {
	t := time.NewTicker(c.rt.o.Sync)
	defer t.Stop()
	livenessFailures := int32(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.mu.Lock()
		exited, stopping := c.exited, c.stopping
		c.mu.Unlock()
		if stopping {
			return
		}
		select {
		case <-exited:
			c.restart("exited")
			livenessFailures = 0
			continue
		default:
		}
		if p := c.spec.LivenessProbe; p != nil {
			if c.probe(ctx, p) {
				livenessFailures = 0
			} else if livenessFailures++; livenessFailures >= max(p.FailureThreshold, 1) {
				c.restart("liveness probe failed")
				livenessFailures = 0
				continue
			}
		}
		ready := c.spec.ReadinessProbe == nil || c.probe(ctx, c.spec.ReadinessProbe)
		c.mu.Lock()
		was := c.ready
		c.ready = ready
		c.mu.Unlock()
		if was != ready {
			c.changed()
		}
	}
}

func (c *container) restart(why string) {
	c.mu.Lock()
	c.restarts++
	c.ready = false
	c.mu.Unlock()
	fmt.Fprintf(c.log, "podrun: restarting the container: %s\n", why)
	c.kill(0)
	if err := c.start(); err != nil {
		fmt.Fprintf(c.log, "podrun: %v\n", err)
	}
	c.changed()
}

// probe runs an httpGet probe against 127.0.0.1.
func (c *container) probe(ctx context.Context, p *corev1.Probe) bool {
	if p.HTTPGet == nil {
		return false
	}
	port, err := c.port(p.HTTPGet.Port)
	if err != nil {
		fmt.Fprintf(c.log, "podrun: probe: %v\n", err)
		return false
	}
	timeout := time.Duration(max(p.TimeoutSeconds, 1)) * time.Second
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", port, p.HTTPGet.Path), nil)
	if err != nil {
		return false
	}
	client := http.DefaultClient
	if c.net != nil {
		client = &http.Client{Transport: &http.Transport{DialContext: c.net.dial, DisableKeepAlives: true}}
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 400
}

func (c *container) port(p intstr.IntOrString) (int32, error) {
	if p.Type == intstr.Int {
		return p.IntVal, nil
	}
	for _, cp := range c.spec.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort, nil
		}
	}
	return 0, fmt.Errorf("no container port named %q", p.StrVal)
}

// kill sends SIGTERM to the process group, then SIGKILL after grace.
func (c *container) kill(grace time.Duration) {
	c.mu.Lock()
	cmd, exited := c.cmd, c.exited
	c.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
		return
	case <-time.After(grace):
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
}

func (c *container) stop() {
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	grace := 30 * time.Second
	if g := c.pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	c.kill(grace)
	c.net.close()
	c.log.closeFile()
	os.RemoveAll(c.root)
}

// environment is the image's env, then the container's, resolved as the
// kubelet resolves it, and the API server's address.
func (c *container) environment() ([]string, error) {
	env := append([]string(nil), c.image.Env...)
	for _, e := range c.spec.Env {
		v, err := c.envValue(e)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		env = append(env, e.Name+"="+v)
	}
	return append(env, "KUBERNETES_SERVICE_HOST="+c.rt.o.Host, "KUBERNETES_SERVICE_PORT="+c.rt.o.Port), nil
}

func (c *container) envValue(e corev1.EnvVar) (string, error) {
	if e.ValueFrom == nil {
		return e.Value, nil
	}
	switch {
	case e.ValueFrom.FieldRef != nil:
		switch path := e.ValueFrom.FieldRef.FieldPath; path {
		case "metadata.name":
			return c.pod.Name, nil
		case "metadata.namespace":
			return c.pod.Namespace, nil
		case "metadata.uid":
			return string(c.pod.UID), nil
		case "spec.serviceAccountName":
			return c.pod.Spec.ServiceAccountName, nil
		case "spec.nodeName":
			return c.pod.Spec.NodeName, nil
		case "status.podIP", "status.hostIP":
			return "127.0.0.1", nil
		default:
			return "", fmt.Errorf("fieldRef %s is not supported by podrun", path)
		}
	case e.ValueFrom.ResourceFieldRef != nil:
		ref := e.ValueFrom.ResourceFieldRef
		q, ok := c.spec.Resources.Limits[corev1.ResourceName(strings.TrimPrefix(ref.Resource, "limits."))]
		if !ok {
			return "", fmt.Errorf("resourceFieldRef %s: the container sets no such limit", ref.Resource)
		}
		div := ref.Divisor
		if div.IsZero() {
			return strconv.FormatInt(q.Value(), 10), nil
		}
		return strconv.FormatInt((q.Value()+div.Value()-1)/div.Value(), 10), nil
	default:
		return "", errors.New("only value, fieldRef and resourceFieldRef are supported by podrun")
	}
}

// user is the uid and gid the process runs as: the container's
// securityContext, the pod's, or the image's User ("uid" or "uid:gid").
func (c *container) user() (uint32, uint32, error) {
	var uid, gid *int64
	if sc := c.pod.Spec.SecurityContext; sc != nil {
		uid, gid = sc.RunAsUser, sc.RunAsGroup
	}
	if sc := c.spec.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			gid = sc.RunAsGroup
		}
	}
	imgUID, imgGID := int64(0), int64(0)
	if u := c.image.User; u != "" {
		parts := strings.SplitN(u, ":", 2)
		n, err := strconv.ParseInt(parts[0], 10, 32)
		if err != nil {
			return 0, 0, fmt.Errorf("image user %q: podrun takes numeric users only", u)
		}
		imgUID, imgGID = n, n
		if len(parts) == 2 {
			if imgGID, err = strconv.ParseInt(parts[1], 10, 32); err != nil {
				return 0, 0, fmt.Errorf("image user %q: podrun takes numeric groups only", u)
			}
		}
	}
	if uid == nil {
		uid = &imgUID
	}
	if gid == nil {
		gid = &imgGID
	}
	runAsNonRoot := false
	for _, sc := range []*bool{podNonRoot(c.pod), containerNonRoot(c.spec)} {
		if sc != nil {
			runAsNonRoot = *sc
		}
	}
	if runAsNonRoot && *uid == 0 {
		return 0, 0, errors.New("runAsNonRoot and the container would run as root: the kubelet refuses to start it")
	}
	return uint32(*uid), uint32(*gid), nil
}

func podNonRoot(p *corev1.Pod) *bool {
	if p.Spec.SecurityContext == nil {
		return nil
	}
	return p.Spec.SecurityContext.RunAsNonRoot
}

func containerNonRoot(c corev1.Container) *bool {
	if c.SecurityContext == nil {
		return nil
	}
	return c.SecurityContext.RunAsNonRoot
}

// checkVolumes refuses what mountVolumes cannot mount.
func (c *container) checkVolumes() error {
	vols := map[string]corev1.Volume{}
	for _, v := range c.pod.Spec.Volumes {
		vols[v.Name] = v
	}
	for _, m := range c.spec.VolumeMounts {
		v, ok := vols[m.Name]
		switch {
		case !ok:
			return fmt.Errorf("volume mount %s names no volume of the pod", m.Name)
		case m.SubPath != "" || m.SubPathExpr != "":
			return fmt.Errorf("volume mount %s: subPath is not supported by podrun", m.Name)
		case v.EmptyDir == nil && v.ConfigMap == nil && v.Secret == nil:
			return fmt.Errorf("volume %s: only emptyDir, configMap and secret volumes are supported by podrun", v.Name)
		}
	}
	return nil
}

// mountVolumes puts each of the container's volumes at its mount path in
// the root filesystem, and the service account's files at saDir.
func (c *container) mountVolumes(ctx context.Context) error {
	vols := map[string]corev1.Volume{}
	for _, v := range c.pod.Spec.Volumes {
		vols[v.Name] = v
	}
	var syncs []func(context.Context) error
	for _, m := range c.spec.VolumeMounts {
		v, ok := vols[m.Name]
		if !ok {
			return fmt.Errorf("volume mount %s names no volume of the pod", m.Name)
		}
		if m.SubPath != "" {
			return fmt.Errorf("volume mount %s: subPath is not supported by podrun", m.Name)
		}
		target := filepath.Join(c.root, filepath.Clean("/"+m.MountPath))
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
		switch {
		case v.EmptyDir != nil:
			if err := os.Chmod(target, 0o777); err != nil {
				return err
			}
		case v.ConfigMap != nil:
			syncs = append(syncs, c.projection(target, "configmap "+v.ConfigMap.Name, func(ctx context.Context) (map[string][]byte, error) {
				cm, err := c.rt.o.Client.CoreV1().ConfigMaps(c.pod.Namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
				if err != nil {
					return nil, err
				}
				out := map[string][]byte{}
				for k, s := range cm.Data {
					out[k] = []byte(s)
				}
				for k, b := range cm.BinaryData {
					out[k] = b
				}
				return out, nil
			}))
		case v.Secret != nil:
			syncs = append(syncs, c.projection(target, "secret "+v.Secret.SecretName, func(ctx context.Context) (map[string][]byte, error) {
				s, err := c.rt.o.Client.CoreV1().Secrets(c.pod.Namespace).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
				if err != nil {
					return nil, err
				}
				return s.Data, nil
			}))
		default:
			return fmt.Errorf("volume %s: only emptyDir, configMap and secret volumes are supported by podrun", v.Name)
		}
	}
	if a := c.pod.Spec.AutomountServiceAccountToken; a == nil || *a {
		target := filepath.Join(c.root, saDir)
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
		syncs = append(syncs, c.projection(target, "service account token", c.serviceAccountFiles))
	}
	for _, s := range syncs {
		if err := s(ctx); err != nil {
			return err
		}
	}
	c.wg.Go(func() {
		t := time.NewTicker(c.rt.o.Sync)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			for _, s := range syncs {
				if err := s(ctx); err != nil && ctx.Err() == nil {
					fmt.Fprintf(c.log, "podrun: volume: %v\n", err)
				}
			}
		}
	})
	return nil
}

// projection returns a sync that writes what read returns into target
// with the kubelet's AtomicWriter, which changes the files only when their
// content changed, by swapping the ..data symlink.
func (c *container) projection(target, what string, read func(context.Context) (map[string][]byte, error)) func(context.Context) error {
	return func(ctx context.Context) error {
		w, err := volumeutil.NewAtomicWriter(target, what)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		data, err := read(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		payload := map[string]volumeutil.FileProjection{}
		for k, b := range data {
			payload[k] = volumeutil.FileProjection{Data: b, Mode: 0o644}
		}
		if err := w.Write(payload, nil); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
}

// serviceAccountFiles asks for a token bound to the pod, as the kubelet's
// projected service account volume does, refreshing it when it is past
// 80% of its life.
func (c *container) serviceAccountFiles(ctx context.Context) (map[string][]byte, error) {
	c.mu.Lock()
	tok, exp := c.token, c.tokenRefresh
	c.mu.Unlock()
	if tok == "" || time.Now().After(exp) {
		seconds := int64(3600)
		tr, err := c.rt.o.Client.CoreV1().ServiceAccounts(c.pod.Namespace).CreateToken(ctx, c.pod.Spec.ServiceAccountName,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
				ExpirationSeconds: &seconds,
				BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: c.pod.Name, UID: c.pod.UID},
			}}, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		tok, exp = tr.Status.Token, time.Now().Add(48*time.Minute)
		c.mu.Lock()
		c.token, c.tokenRefresh = tok, exp
		c.mu.Unlock()
	}
	return map[string][]byte{"token": []byte(tok), "ca.crt": c.rt.o.CA, "namespace": []byte(c.pod.Namespace)}, nil
}

// unpack writes the image's flattened filesystem under root: directories,
// regular files and symlinks, with the layers' owners and modes, within
// maxRootfs bytes. Paths are cleaned and kept under root.
func unpack(img v1.Image, root string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		rel := filepath.Clean("/" + h.Name)
		path := filepath.Join(root, rel)
		if rel == "/" {
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if total += h.Size; total > maxRootfs {
				return refuse(ReasonCreateContainer, "the image is larger than %d bytes unpacked", maxRootfs)
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, io.LimitReader(tr, h.Size))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, path); err != nil {
				return err
			}
			continue
		default:
			return refuse(ReasonCreateContainer, "%s: entry type %c is not supported by podrun", h.Name, h.Typeflag)
		}
		if err := os.Lchown(path, h.Uid, h.Gid); err != nil {
			return err
		}
		if err := os.Chmod(path, os.FileMode(h.Mode).Perm()|modeBits(h.Mode)); err != nil {
			return err
		}
	}
}

// readOnly stands in for a read-only root filesystem for a process that is
// not root: every file and directory of the image becomes root's and loses
// its write bits, so only the volumes mounted afterwards can be written.
func readOnly(root string) error {
	return filepath.Walk(root, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return nil
		}
		if err := os.Lchown(path, 0, 0); err != nil {
			return err
		}
		return os.Chmod(path, fi.Mode()&^0o222&(os.ModePerm|os.ModeSticky))
	})
}

func modeBits(m int64) os.FileMode {
	var out os.FileMode
	if m&0o1000 != 0 {
		out |= os.ModeSticky
	}
	return out
}

// logBuffer keeps a container's output up to maxLog bytes, then the rest
// is dropped with a note; file, when set, gets the same bytes.
type logBuffer struct {
	mu      sync.Mutex
	b       strings.Builder
	dropped bool
	file    *os.File
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := maxLog - l.b.Len(); room < len(p) {
		if !l.dropped {
			l.add(p[:max(room, 0)])
			l.add([]byte("\npodrun: log truncated\n"))
			l.dropped = true
		}
		return len(p), nil
	}
	l.add(p)
	return len(p), nil
}

// add keeps p; a log file that cannot be written loses it, the buffer not.
func (l *logBuffer) add(p []byte) {
	l.b.Write(p)
	if l.file != nil {
		_, _ = l.file.Write(p)
	}
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// openFile has the log written to path too, from now on.
func (l *logBuffer) openFile(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("the pod's log file: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.file = f
	return nil
}

// closeFile closes the log file, if any.
func (l *logBuffer) closeFile() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file != nil {
		l.file.Close()
		l.file = nil
	}
}
