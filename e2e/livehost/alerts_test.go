package livehost

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
	"github.com/kubeplug/kubeplug/host/csi/csitest"
)

// seriesName finds the names of series in a PromQL expression: the host's
// own and client-go's.
var seriesName = regexp.MustCompile(`\b(kubeplug_[a-z_]+|leader_election_[a-z_]+|workqueue_[a-z_]+|rest_client_[a-z_]+)\b`)

// alertSeries returns the series deploy/prometheus/prometheusrule.yaml's
// alerts name.
func alertSeries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.Root(), "deploy", "prometheus", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct{ Alert, Expr string }
			}
		}
	}
	if err := yaml.Unmarshal(b, &rule); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			for _, name := range seriesName.FindAllString(r.Expr, -1) {
				if !slices.Contains(out, name) {
					out = append(out, name)
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no series found in the rules")
	}
	return out
}

// TestAlertSeries: a host run as the base runs it (leader election, its pod
// named by the downward API) with a CSI driver whose controller is not
// there serves every series the shipped alerts name, client-go's under the
// names kube-controller-manager gives them (issue 37, item 11); /readyz
// answers 200 and names the driver, a Warning event on the host's pod says
// so, and kubeplug_csi_driver_ready is 0, before any volume needs the
// driver; once the driver comes up the probes going on find it (item 12).
func TestAlertSeries(t *testing.T) {
	ns := namespace(t)
	dir, err := os.MkdirTemp("", "csi") // short: a socket's path has about 100 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	const driver, pod, lease = "absent.csi.kubeplug.dev", "kubeplug-alerts-0", "kubeplug-alerts"
	sock := filepath.Join(dir, "csi.sock")
	h := testenv.StartHost(t, testenv.HostOptions{
		Kubeconfig: cp.Kubeconfig,
		Config: fmt.Sprintf("csiDrivers:\n- name: %s\n  endpoint: %s\nmodules:\n", driver, sock) +
			moduleYAML(guest(t, "examples/warnretain"), "warnretain", ns, ""),
		Args: []string{"--leader-elect", "--leader-elect-namespace", ns, "--leader-elect-name", lease},
		Env:  []string{"POD_NAMESPACE=" + ns, "POD_NAME=" + pod},
	})
	h.WaitReady(t)
	createSet(t, ns, "web", 1)
	testenv.Eventually(t, wait, "the leader's executed action", func() (bool, error) {
		m, err := h.Scrape()
		if err != nil {
			return false, err
		}
		return m.Sum("kubeplug_actions_total", "module", "warnretain", "result", "executed") >= 1, nil
	})

	m, err := h.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range alertSeries(t) {
		if !m.Has(name) {
			t.Errorf("/metrics lacks %s, which an alert of deploy/prometheus/prometheusrule.yaml reads", name)
		}
	}
	for _, s := range [][]string{
		{"workqueue_adds_total", "name", "warnretain", "controller", "warnretain"},
		{"workqueue_depth", "name", "warnretain"},
		{"workqueue_queue_duration_seconds", "name", "warnretain"},
		{"workqueue_work_duration_seconds", "name", "warnretain"},
		{"workqueue_retries_total", "name", "warnretain"},
		{"workqueue_unfinished_work_seconds", "name", "warnretain"},
		{"workqueue_longest_running_processor_seconds", "name", "warnretain"},
		{"rest_client_requests_total", "method", "GET", "code", "200"},
		{"rest_client_request_duration_seconds", "verb", "GET"},
		{"leader_election_master_status", "name", lease},
		{"kubeplug_csi_driver_ready", "driver", driver},
	} {
		if !m.Has(s[0], s[1:]...) {
			t.Errorf("/metrics lacks %s%v", s[0], s[1:])
		}
	}
	for _, s := range []struct {
		name  string
		match []string
		want  float64
	}{
		{"leader_election_master_status", []string{"name", lease}, 1},
		{"kubeplug_csi_driver_ready", []string{"driver", driver}, 0},
		{"kubeplug_ready", nil, 1},
		{"kubeplug_config_last_reload_successful", nil, 1},
	} {
		if got := m.Sum(s.name, s.match...); got != s.want {
			t.Errorf("%s%v = %v, want %v", s.name, s.match, got, s.want)
		}
	}
	if n := m.Sum("workqueue_adds_total", "name", "warnretain"); n < 1 {
		t.Errorf("workqueue_adds_total{name=warnretain} = %v: the module's queue is not counted", n)
	}

	code, body, err := h.Get("/readyz")
	if err != nil || code != http.StatusOK {
		t.Errorf("/readyz: %d %v with a CSI driver down, want 200: the reconcilers and the webhook work", code, err)
	}
	if !strings.Contains(body, `warning: csi driver "`+driver+`": `) || !strings.Contains(body, sock) {
		t.Errorf("/readyz does not name the driver that does not answer:\n%s", body)
	}
	testenv.Eventually(t, wait, "a Warning event CSIDriverNotReady on the host's pod", func() (bool, error) {
		for _, e := range events(t, ns, "CSIDriverNotReady") {
			if e.Type == "Warning" && e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == pod && strings.Contains(e.Message, sock) {
				return true, nil
			}
		}
		return false, nil
	})

	// The driver's controller comes up: the host's probes, going on with
	// backoff, find it, and the note goes.
	stop, err := csitest.New(driver).Serve(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	testenv.Eventually(t, wait, "the driver answering the host's probe", func() (bool, error) {
		m, err := h.Scrape()
		if err != nil {
			return false, err
		}
		_, body, err := h.Get("/readyz")
		return err == nil && m.Sum("kubeplug_csi_driver_ready", "driver", driver) == 1 && body == "ok\n", err
	})
	if n := len(events(t, ns, "CSIDriverReady")); n != 1 {
		t.Errorf("%d Normal events CSIDriverReady, want 1", n)
	}
}
