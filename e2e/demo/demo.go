package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeplug/kubeplug/e2e/controlplane"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
	"github.com/kubeplug/kubeplug/host/csi/csitest"
)

// Options say where the demo finds what it runs.
type Options struct {
	// Root is the repository's root; examples/demo is read from it.
	Root string
	// Kubeplug is the kubeplug binary.
	Kubeplug string
	// Guests is the directory of built modules (<name>.wasm).
	Guests string
	// Out receives the narration.
	Out io.Writer
	// HostLog, when set, receives the host's own log.
	HostLog io.Writer
	// Keep leaves the control plane and the host running after the last
	// scene, until ctx is cancelled, for a look with kubectl.
	Keep bool
}

// scene is one part of the story; it runs when the modules it needs exist.
type scene struct {
	title   string
	modules []string
	run     func(ctx context.Context, d *demo) error
}

// scenes are played in order.
var scenes = []scene{
	{title: "A vendor module warns about claims that are kept forever", modules: []string{"warnretain"}, run: warnRetained},
	{title: "An admission module refuses a StatefulSet that would keep its claims forever, and labels claims", modules: []string{"storagepolicy"}, run: admitStorage},
	{title: "KEP-1847 story 1: keep volumes while the application lives, reclaim them when it is deleted", modules: []string{"retention"}, run: retentionStory1},
	{title: "KEP-1847 story 2: reclaim volumes on scale-down, keep them when the set is deleted", modules: []string{"retention"}, run: retentionStory2},
	{title: "KEP-1847 story 3: reclaim volumes on scale-down and deletion, keep them across pod restarts", modules: []string{"retention"}, run: retentionStory3},
	{title: "KEP-2644: a volume deleted before its claim no longer leaks its storage", modules: []string{"reclaim"}, run: reclaimLeak},
	{title: "Compare before trusting: a vendor's retention module in shadow beside the reference", modules: []string{"retention", "retentionlite"}, run: shadowVendor},
	{title: "KEP-4650 story 1: a StatefulSet's volumes grow from 1Gi to 2Gi, each replica's claim before its pod", modules: []string{"templateupdate"}, run: templateUpdateLockStep},
}

// demo is the state the scenes share.
type demo struct {
	Options
	n      *narrator
	client kubernetes.Interface
	// dyn reaches the custom resources (VolumeClaimUpdates).
	dyn dynamic.Interface
	// driver is the CSI driver the host deletes volumes through.
	driver *csitest.Driver
	// host is the kubeplug run process.
	host *hostProcess
	// kubeconfig is the control plane's, for the kubeplug commands the
	// scenes run beside the host (record).
	kubeconfig string
	// webhooks are the webhook configurations registered for the host.
	webhooks []string
}

// Run plays the demo and stops everything it started. A host that does not
// exit 0 on SIGTERM fails the demo too.
func Run(ctx context.Context, o Options) (err error) {
	n := &narrator{w: o.Out, start: time.Now()}
	mods := available(o.Guests)
	if len(mods) == 0 {
		return fmt.Errorf("no modules in %s: run 'make guests' first", o.Guests)
	}
	n.step("starting the control plane in this process: etcd, kube-apiserver, kube-controller-manager")
	cp, err := controlplane.Start(ctx, controlplane.Options{Controllers: []string{
		"garbage-collector-controller", "persistentvolumeclaim-protection-controller",
		"persistentvolume-binder-controller", "persistentvolume-protection-controller",
	}})
	if err != nil {
		return err
	}
	defer cp.Stop()
	n.step("control plane up at %s", cp.Config.Host)

	driver, socket, stopDriver, err := startDriver()
	if err != nil {
		return err
	}
	defer stopDriver()
	n.step("CSI driver %s serving on %s", csiDriverName, socket)

	if slices.Contains(mods, "templateupdate") {
		// The host looks for the resource once, when it starts.
		if err := testenv.InstallCRDs(ctx, cp.Config, filepath.Join(o.Root, "deploy", "crds", "volumeclaimupdate-crd.yaml")); err != nil {
			return err
		}
		n.step("installed the VolumeClaimUpdate CRD (deploy/crds/volumeclaimupdate-crd.yaml)")
	}

	cfg, err := hostConfig(mods, o.Guests, socket)
	if err != nil {
		return err
	}
	n.step("starting kubeplug run with modules %s and this host.yaml:", strings.Join(mods, ", "))
	n.say("%s", strings.TrimRight(cfg, "\n"))
	host, err := startHost(ctx, o, cp.Kubeconfig, cfg)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := host.stop(n); err == nil {
			err = stopErr
		}
	}()
	if err := host.waitReady(ctx); err != nil {
		return err
	}
	n.step("host ready: caches synced, modules loaded (metrics on http://%s/metrics, admission webhooks on https://%s)", host.addr, host.webhookAddr)
	// retention's admit hook is served but not registered: the demo plays
	// the StatefulSet controller and narrates the references retention
	// writes once the claims exist, and a claim stamped at its creation
	// (which needs the set in the host's caches first) would make that
	// narration a race. e2e/retention's TestClaimBornOwned shows the hook.
	regMods := slices.DeleteFunc(slices.Clone(mods), func(m string) bool { return m == "retention" })
	var webhooks []string
	if len(regMods) > 0 {
		regCfg, err := hostConfig(regMods, o.Guests, socket)
		if err != nil {
			return err
		}
		regPath := filepath.Join(host.dir, "webhooks.yaml")
		if err := os.WriteFile(regPath, []byte(regCfg), 0o644); err != nil {
			return err
		}
		hooks, unregister, err := testenv.Register(ctx, cp.Client(), o.Kubeplug, regPath, host.webhookAddr, host.caFile)
		defer unregister()
		if err != nil {
			return err
		}
		webhooks = append(hooks.Mutating, hooks.Validating...)
	}
	n.step("registered the modules' admit hooks with kube-apiserver (kubeplug webhook-config), all but retention's: %s", strings.Join(webhooks, ", "))

	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	d := &demo{Options: o, n: n, client: cp.Client(), dyn: dyn, driver: driver, host: host, kubeconfig: cp.Kubeconfig, webhooks: webhooks}
	played := 0
	for _, s := range scenes {
		if missing := missingModules(s.modules, mods); len(missing) > 0 {
			n.scene(s.title)
			n.say("(skipped: module %s not built)", strings.Join(missing, ", "))
			continue
		}
		n.scene(s.title)
		if err := s.run(ctx, d); err != nil {
			return fmt.Errorf("scene %q: %w", s.title, err)
		}
		played++
	}
	if o.Keep {
		return keep(ctx, d, played)
	}
	fmt.Fprintf(o.Out, "\n%d scenes played in %.0fs; stopping the host and the control plane.\n", played, time.Since(n.start).Seconds())
	return nil
}

// keep leaves everything running until ctx ends (Ctrl-C), with the
// kubeconfig copied where the user can find it.
func keep(ctx context.Context, d *demo, played int) error {
	dir := filepath.Join(d.Root, "build", "demo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	b, err := os.ReadFile(d.kubeconfig)
	if err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfig, b, 0o600); err != nil {
		return err
	}
	rel, err := filepath.Rel(d.Root, kubeconfig)
	if err != nil {
		rel = kubeconfig
	}
	fmt.Fprintf(d.Out, "\n%d scenes played in %.0fs. The control plane and the host keep running (KEEP=1):\n\n", played, time.Since(d.n.start).Seconds())
	fmt.Fprintf(d.Out, "  export KUBECONFIG=$PWD/%s\n", rel)
	fmt.Fprintf(d.Out, "  kubectl get statefulsets,pvc,pv -A\n")
	fmt.Fprintf(d.Out, "  kubectl get vcu -A\n")
	fmt.Fprintf(d.Out, "  kubectl get events -A --field-selector source=kubeplug\n")
	fmt.Fprintf(d.Out, "  kubectl get mutatingwebhookconfigurations,validatingwebhookconfigurations\n")
	fmt.Fprintf(d.Out, "  curl -s http://%s/metrics | grep ^kubeplug_\n", d.host.addr)
	fmt.Fprintf(d.Out, "\nThe host's configuration is %s. Press Ctrl-C to stop everything.\n", d.host.config)
	<-ctx.Done()
	fmt.Fprintln(d.Out, "\nstopping the host and the control plane.")
	return nil
}

// available lists the modules built in dir that the demo knows how to run.
func available(dir string) []string {
	var out []string
	for _, m := range []string{"warnretain", "storagepolicy", "retention", "reclaim", "retentionlite", "templateupdate"} {
		if _, err := os.Stat(filepath.Join(dir, m+".wasm")); err == nil {
			out = append(out, m)
		}
	}
	return out
}

func missingModules(need, have []string) []string {
	var out []string
	for _, m := range need {
		found := false
		for _, h := range have {
			found = found || h == m
		}
		if !found {
			out = append(out, m)
		}
	}
	return out
}

// allow is what the demo allows each module: what its manifest asks.
var allow = map[string]string{
	"retention": "{action: updateOwnerReferences, resources: [persistentvolumeclaims]}, {action: event, resources: [statefulsets]}, {action: mutate, resources: [persistentvolumeclaims], paths: [/metadata/ownerReferences]}",
	"reclaim": "{action: addFinalizer, resources: [persistentvolumes]}, {action: removeFinalizer, resources: [persistentvolumes]}, " +
		"{action: deleteObject, resources: [persistentvolumes]}, {action: deleteVolume}, {action: event, resources: [persistentvolumes]}",
	"warnretain": "{action: event, resources: [statefulsets]}",
	// An admit hook: it may patch a claim's labels, and nothing else.
	"storagepolicy": "{action: mutate, resources: [persistentvolumeclaims], paths: [/metadata/labels]}, {action: admit, resources: [statefulsets]}",
	"templateupdate": "{action: applyClaim, resources: [persistentvolumeclaims]}, {action: setPartition, resources: [statefulsets]}, " +
		"{action: updateClaimUpdateStatus, resources: [volumeclaimupdates]}, " +
		"{action: event, resources: [persistentvolumeclaims, volumeclaimupdates, statefulsets]}, " +
		"{action: mutate, resources: [persistentvolumeclaims], paths: [/metadata/labels, /metadata/annotations, /spec/accessModes, " +
		"/spec/storageClassName, /spec/resources, /spec/volumeMode, /spec/volumeAttributesClassName]}",
}

// hostConfig is the host configuration the demo runs with.
func hostConfig(mods []string, guests, socket string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "resync: 30s\ncsiDrivers:\n- name: %s\n  endpoint: unix://%s\nmodules:\n", csiDriverName, socket)
	for _, m := range mods {
		p, err := filepath.Abs(filepath.Join(guests, m+".wasm"))
		if err != nil {
			return "", err
		}
		if m == "retentionlite" {
			// A candidate: compared with the reference, never executed.
			if slices.Contains(mods, "retention") {
				fmt.Fprintf(&b, "- name: %s\n  path: %s\n  mode: shadow\n  compareWith: retention\n", m, p)
			}
			continue
		}
		fmt.Fprintf(&b, "- name: %s\n  path: %s\n  allow: [%s]\n", m, p, allow[m])
		if m == "retention" {
			// Its admit hook stamps the set's reference on new claims; a
			// claim it cannot stamp is created as without it, and
			// reconcile adds the reference.
			b.WriteString("  admission: {failurePolicy: Ignore}\n")
		}
		if m == "warnretain" {
			b.WriteString("  namespaces: [demo]\n")
		}
	}
	return b.String(), nil
}

// startDriver serves a CSI driver on a socket in a new directory.
func startDriver() (*csitest.Driver, string, func(), error) {
	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		return nil, "", nil, err
	}
	socket := filepath.Join(dir, "csi.sock")
	d := csitest.New(csiDriverName)
	stop, err := d.Serve(socket)
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", nil, err
	}
	return d, socket, func() { stop(); os.RemoveAll(dir) }, nil
}

// hostProcess is the kubeplug run process.
type hostProcess struct {
	cmd  *exec.Cmd
	addr string
	// webhookAddr is where it serves admission webhooks, with the
	// certificate that caFile holds.
	webhookAddr, caFile string
	// config is its host.yaml.
	config string
	dir    string
	done   chan struct{}
	log    *testenv.SyncBuffer
}

func startHost(ctx context.Context, o Options, kubeconfig, cfg string) (*hostProcess, error) {
	dir, err := os.MkdirTemp("", "kubeplug-demo-")
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "host.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	certDir, caFile, err := testenv.WriteServingCert(dir)
	if err != nil {
		return nil, err
	}
	addr, err := testenv.LoopbackAddr()
	if err != nil {
		return nil, err
	}
	webhookAddr, err := testenv.LoopbackAddr()
	if err != nil {
		return nil, err
	}
	h := &hostProcess{addr: addr, webhookAddr: webhookAddr, caFile: caFile, config: cfgPath, dir: dir, done: make(chan struct{}), log: &testenv.SyncBuffer{}}
	h.cmd = exec.Command(o.Kubeplug, "run", "--config", cfgPath, "--kubeconfig", kubeconfig,
		"--metrics-bind-address", addr, "--health-probe-bind-address", "0", "--webhook-addr", webhookAddr, "--webhook-cert-dir", certDir, "--log-level", "info")
	var w io.Writer = h.log
	if o.HostLog != nil {
		w = io.MultiWriter(h.log, o.HostLog)
	}
	h.cmd.Stdout, h.cmd.Stderr = w, w
	if err := h.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Kubeplug, err)
	}
	go func() { _ = h.cmd.Wait(); close(h.done) }()
	return h, nil
}

func (h *hostProcess) waitReady(ctx context.Context) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-h.done:
			return false, errors.New("kubeplug run exited")
		default:
		}
		resp, err := http.Get("http://" + h.addr + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("host not ready: %w\n%s", err, h.log.String())
	}
	return nil
}

// stop sends SIGTERM and waits for the host to exit, killing it after 30s.
// It returns an error, with the host's log, unless the host exited 0.
func (h *hostProcess) stop(n *narrator) error {
	defer os.RemoveAll(h.dir)
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.done:
		n.step("host stopped on SIGTERM: %s", h.cmd.ProcessState)
	case <-time.After(30 * time.Second):
		_ = h.cmd.Process.Kill()
		<-h.done
		n.step("host did not stop within 30s of SIGTERM; killed")
		return fmt.Errorf("kubeplug run did not stop within 30s of SIGTERM\n%s", h.log.String())
	}
	if !h.cmd.ProcessState.Success() {
		return fmt.Errorf("kubeplug run exited with %s on SIGTERM\n%s", h.cmd.ProcessState, h.log.String())
	}
	return nil
}

// await polls cond until it holds; what says what the demo waits for.
func (d *demo) await(ctx context.Context, what string, cond func(ctx context.Context) (bool, error)) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, cond)
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}
