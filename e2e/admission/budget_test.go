package admission

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
	corpus "github.com/kubeplug/kubeplug/host/runtime/hostile"
)

// chartMemoryLimit is the host's memory limit in the chart and the
// kustomize base (resources.limits.memory).
const chartMemoryLimit = 512 << 20

// TestReviewBudgetsUnderTheChartsMemoryLimit floods one host, run under the
// chart's memory limit (a memory cgroup of its own where the machine allows
// it, and GOMEMLIMIT as the chart sets it), with reviews whose bodies are
// within every bound but whose work is not: reviews that decode to
// gigabytes, and a module whose patch, within every per-review bound, is
// megabytes per review times hundreds of reviews. Throughout, the host stays
// up within its limit, answers /healthz, and another module keeps
// reconciling; the reviews are answered, by the module or by the failure
// policy.
func TestReviewBudgetsUnderTheChartsMemoryLimit(t *testing.T) {
	ctx := context.Background()
	c := kubernetes.NewForConfigOrDie(cp.Config)
	warnNs := testenv.Namespace(t, c)

	dir := t.TempDir()
	bctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	mods, err := corpus.AdmitGuests(bctx, "go", dir)
	if err != nil {
		t.Fatal(err)
	}
	bomb := filepath.Join(dir, "patch-copy-bomb.wasm")
	if !hasClass(mods, "patch-copy-bomb") {
		t.Fatal("the corpus has no patch-copy-bomb")
	}
	warn, policy := guest(t, "examples/warnretain"), guest(t, "examples/storagepolicy")
	certDir, _ := testenv.ServingCert(t)
	webhookAddr := testenv.FreeAddr(t)
	// The bomb's patch adds a 300 kB label and copies it twice: a 900 kB
	// object, within every bound of one review.
	config := fmt.Sprintf(`resync: 2s
modules:
- name: warnretain
  path: %s
  namespaces: [%s]
%s- name: storagepolicy
  path: %s
  allow: [{action: mutate, resources: [persistentvolumeclaims], paths: [/metadata/labels]}, {action: admit, resources: [statefulsets]}]
  admission: {failurePolicy: Ignore}
- name: bomb
  path: %s
  config: {size: 300000, copies: 2, flat: true}
  allow: [{action: mutate, resources: [persistentvolumeclaims], paths: [/metadata/labels]}]
  admission: {failurePolicy: Fail}
`, warn, warnNs, testenv.Allow["examples/warnretain"], policy, bomb)
	h := testenv.StartHost(t, testenv.HostOptions{
		Kubeconfig: cp.Kubeconfig, Config: config, MemoryLimit: chartMemoryLimit,
		Args: []string{"--webhook-addr", webhookAddr, "--webhook-cert-dir", certDir},
	})
	h.WaitReady(t)
	if _, err := c.AppsV1().StatefulSets(warnNs).Create(ctx, set("kept", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a flood of loopback
		MaxIdleConnsPerHost: 300, MaxConnsPerHost: 300,
	}}

	// Within the limit, up, and reconciling, after each flood; and the
	// flood was answered.
	check := func(t *testing.T, what string, answers *answers) {
		t.Helper()
		if h.Exited() {
			t.Fatalf("the host exited during %s (killed for its memory limit %d times):\n%s", what, h.OOMKills(), h.Log())
		}
		peak, err := h.PeakMemory()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s; host peak memory %.1f MiB of its %d MiB limit (enforced by the kernel: %v)",
			what, answers, float64(peak)/(1<<20), chartMemoryLimit>>20, h.MemoryLimited())
		if peak > chartMemoryLimit {
			t.Errorf("%s: the host held %.1f MiB, beyond the chart's limit of %d MiB", what, float64(peak)/(1<<20), chartMemoryLimit>>20)
		}
		if answers.total() == 0 {
			t.Errorf("%s: no review was answered", what)
		}
		keepsReconciling(t, h, "warnretain", what)
	}

	t.Run("reviews that decode to gigabytes", func(t *testing.T) {
		// 2.3 million "{}" (6.9 MB): in a claim's managedFields, which the
		// host drops before decoding; in its accessModes, which it refuses
		// to decode.
		empties := strings.TrimSuffix(strings.Repeat("{},", 2_300_000), ",")
		managed := claimReview(`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"x","managedFields":[` + empties + `]}}`)
		elsewhere := claimReview(`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"x"},"spec":{"accessModes":[` + empties + `]}}`)
		a := post(client, webhookAddr, "/admit/storagepolicy?timeout=1s", 20*time.Second, 4, managed, elsewhere)
		check(t, "reviews that decode to gigabytes", a)
		if a.count(http.StatusOK) == 0 {
			t.Errorf("no review with managedFields was answered: %s", a)
		}
	})

	t.Run("patches within every bound, times many reviews", func(t *testing.T) {
		small := claimReview(`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"x","namespace":"default"},"spec":{"resources":{"requests":{"storage":"1Gi"}}}}`)
		for _, clients := range []int{64, 256} {
			a := post(client, webhookAddr, "/admit/bomb?timeout=10s", 20*time.Second, clients, small)
			check(t, fmt.Sprintf("%d clients", clients), a)
			if a.mutated.Load() == 0 {
				t.Errorf("%d clients: the module's patch was never applied: %s", clients, a)
			}
		}
	})
}

func hasClass(mods []corpus.Module, class string) bool {
	for _, m := range mods {
		if m.Class == class {
			return true
		}
	}
	return false
}

// claimReview is an AdmissionReview of a claim's creation with object.
func claimReview(object string) []byte {
	return []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"PersistentVolumeClaim"},` +
		`"resource":{"version":"v1","resource":"persistentvolumeclaims"},"operation":"CREATE","namespace":"default","name":"x","object":` + object + `}}`)
}

// answers counts a flood's answers by HTTP status, and the reviews the
// module mutated.
type answers struct {
	mu      sync.Mutex
	codes   map[int]int
	errs    int
	mutated atomic.Int64
}

func (a *answers) add(code int, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.errs++
		return
	}
	a.codes[code]++
}

func (a *answers) count(code int) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.codes[code]
}

func (a *answers) total() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, k := range a.codes {
		n += k
	}
	return n
}

func (a *answers) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return fmt.Sprintf("answers by status %v, %d mutated, %d requests failed", a.codes, a.mutated.Load(), a.errs)
}

// post has clients clients post bodies (in turn) to the webhook server at
// addr for d, each one request at a time, and counts the answers.
func post(client *http.Client, addr, path string, d time.Duration, clients int, bodies ...[]byte) *answers {
	a := &answers{codes: map[int]int{}}
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			for n := i; time.Now().Before(stop); n++ {
				resp, err := client.Post("https://"+addr+path, "application/json", bytes.NewReader(bodies[n%len(bodies)]))
				if err != nil {
					a.add(0, err)
					time.Sleep(100 * time.Millisecond)
					continue
				}
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
				resp.Body.Close()
				a.add(resp.StatusCode, nil)
				var review struct {
					Response struct {
						Patch []byte `json:"patch"`
					} `json:"response"`
				}
				if resp.StatusCode == http.StatusOK && json.Unmarshal(body, &review) == nil && len(review.Response.Patch) > 0 {
					a.mutated.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return a
}
