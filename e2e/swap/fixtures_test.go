package swap

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// tickAnnotation is the annotation the load writes its counter into; the
// swapver module logs it (see e2e/guests/swapver).
const tickAnnotation = "e2e.kubeplug.dev/tick"

// variant builds e2e/guests/swapver as version v into dir.
func variant(t *testing.T, dir, v string) string {
	t.Helper()
	out := filepath.Join(dir, "swapver-"+v+".wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-ldflags", "-X main.version="+v, "-o", out, "./guests/swapver")
	cmd.Dir = filepath.Join(testenv.Root(), "e2e")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build swapver %s: %v\n%s", v, err, b)
	}
	return out
}

// install puts the bytes of src at dst by a rename, as a deployment tool
// replaces a file, so that the host never reads half a module.
func install(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dst, data)
}

func writeFile(t *testing.T, dst string, data []byte) {
	t.Helper()
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

// createSets creates n StatefulSets with one claim template and no policy
// (claims retained), one replica each.
func createSets(t *testing.T, c kubernetes.Interface, ns string, n int) []string {
	t.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("web-%02d", i)
		one := int32(1)
		s := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: names[i], Namespace: ns},
			Spec: appsv1.StatefulSetSpec{
				Replicas:    &one,
				ServiceName: names[i],
				Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": names[i]}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": names[i]}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
				},
				VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claimTemplate()},
			},
		}
		if _, err := c.AppsV1().StatefulSets(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// claimTemplate is the claim template of every set: data, 1Gi.
func claimTemplate() corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi"),
			}},
		},
	}
}

// load scales the sets in a loop, one patch at a time, each writing the
// next value of a counter into the set's tick annotation.
type load struct {
	c     kubernetes.Interface
	ns    string
	sets  []string
	tick  atomic.Int64
	mu    sync.Mutex
	last  map[string]int64 // set -> the last tick written to it
	errs  []error
	stop  chan struct{}
	done  chan struct{}
	pause sync.Mutex // held to stop writes for a while
}

func startLoad(t *testing.T, cfg *rest.Config, ns string, sets []string) *load {
	t.Helper()
	rc := rest.CopyConfig(cfg)
	rc.QPS, rc.Burst = 200, 200
	l := &load{c: kubernetes.NewForConfigOrDie(rc), ns: ns, sets: sets, last: map[string]int64{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go l.run()
	t.Cleanup(l.halt)
	return l
}

func (l *load) run() {
	defer close(l.done)
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		l.pause.Lock()
		n := l.tick.Add(1)
		name := l.sets[int(n)%len(l.sets)]
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"%d"}},"spec":{"replicas":%d}}`, tickAnnotation, n, n%3+1)
		_, err := l.c.AppsV1().StatefulSets(l.ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		l.mu.Lock()
		if err != nil {
			l.errs = append(l.errs, err)
		} else {
			l.last[name] = n
		}
		l.mu.Unlock()
		l.pause.Unlock()
	}
}

// halt stops the load; idempotent.
func (l *load) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
}

// answer is one reconcile as the swapver module logged it.
type answer struct {
	at      time.Time
	version string
	set     string
	tick    int64
}

var answerLine = regexp.MustCompile(`^time=(\S+) .*msg="swapver answered version=(\w+) set=(\S+) tick=(\d*)"`)

// answers parses the module's answers out of the host's log.
func answers(t *testing.T, log string) []answer {
	t.Helper()
	var out []answer
	for line := range strings.Lines(log) {
		m := answerLine.FindStringSubmatch(line)
		if m == nil || m[4] == "" {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			t.Fatalf("time of %q: %v", line, err)
		}
		tick, _ := strconv.ParseInt(m[4], 10, 64)
		out = append(out, answer{at: at, version: m[2], set: m[3], tick: tick})
	}
	return out
}

var firstCallLine = regexp.MustCompile(`^time=(\S+) .*msg="module generation served its first call" module=(\S+) generation=(\d+)`)

// firstCall returns when generation gen of a module served its first call,
// as the host logged it, and whether it has.
func firstCall(log, module string, gen uint64) (time.Time, bool) {
	for line := range strings.Lines(log) {
		m := firstCallLine.FindStringSubmatch(line)
		if m == nil || m[2] != module || m[3] != strconv.FormatUint(gen, 10) {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, m[1])
		return at, err == nil
	}
	return time.Time{}, false
}

// readiness polls /readyz until stopped and keeps every answer that was not
// 200.
type readiness struct {
	h    *testenv.Host
	mu   sync.Mutex
	bad  []string
	n    int
	stop chan struct{}
	done chan struct{}
}

func watchReadiness(t *testing.T, h *testenv.Host) *readiness {
	r := &readiness{h: h, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			code, body, err := h.Get("/readyz")
			r.mu.Lock()
			r.n++
			if err != nil || code != 200 {
				r.bad = append(r.bad, fmt.Sprintf("%d %q %v", code, body, err))
			}
			r.mu.Unlock()
			select {
			case <-r.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(r.halt)
	return r
}

func (r *readiness) halt() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
}
