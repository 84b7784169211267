package alerts_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// ruleFile is the shipped PrometheusRule; the chart renders the same rules
// (e2e/internal/manifests holds the two together).
var ruleFile = filepath.Join("..", "..", "..", "deploy", "prometheus", "prometheusrule.yaml")

// stock parses PromQL as a Prometheus without feature flags does.
var stock = parser.NewParser(parser.Options{})

// load reads the PrometheusRule and parses its spec as Prometheus parses a
// rule file, validating every group, rule, expression and template.
func load(t *testing.T) *rulefmt.RuleGroups {
	t.Helper()
	b, err := os.ReadFile(ruleFile)
	require.NoError(t, err)
	var obj struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name, Namespace string
		}
		Spec yaml.Node `yaml:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(b, &obj))
	require.Equal(t, "monitoring.coreos.com/v1", obj.APIVersion)
	require.Equal(t, "PrometheusRule", obj.Kind)
	require.Equal(t, "kubeplug", obj.Metadata.Name)
	require.Equal(t, "kubeplug-system", obj.Metadata.Namespace, "the base's namespace")
	spec, err := yaml.Marshal(&obj.Spec)
	require.NoError(t, err)
	groups, errs := rulefmt.Parse(spec, false, model.UTF8Validation, stock, slog.New(slog.DiscardHandler))
	require.Empty(t, errs, "%s: the rules do not validate", ruleFile)
	return groups
}

// TestRulesValidate: the rules are what promtool check rules accepts, and
// each alert says how bad it is and what to do.
func TestRulesValidate(t *testing.T) {
	groups := load(t)
	var names []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "only alerts: %q", r.Record)
			require.NotContains(t, names, r.Alert, "alert names are unique")
			names = append(names, r.Alert)
			require.Contains(t, []string{"info", "warning", "critical"}, r.Labels["severity"], "%s: severity", r.Alert)
			require.NotEmpty(t, r.Annotations["summary"], "%s: summary", r.Alert)
			require.NotEmpty(t, r.Annotations["description"], "%s: description", r.Alert)
		}
	}
}

// alertCase is an alert, the series it is evaluated on (promqltest's load
// notation, one sample a minute from time 0), and what fires after minutes
// of evaluations, once a minute; a case where nothing fires at the end must
// not have fired at any evaluation either.
type alertCase struct {
	name    string
	alert   string
	series  string
	minutes int
	// fires lists the label values of each alert that fires at the end;
	// none when it must not fire.
	fires []map[string]string
}

var cases = []alertCase{
	{name: "a module's calls keep failing", alert: "KubeplugGuestErrors", minutes: 25,
		series: `kubeplug_guest_errors_total{namespace="kubeplug-system",pod="kubeplug-0",instance="a",module="retention",kind="trap"} 0+1x30`,
		fires:  []map[string]string{{"namespace": "kubeplug-system", "module": "retention", "kind": "trap", "severity": "warning"}}},
	{name: "one failed call", alert: "KubeplugGuestErrors", minutes: 25,
		series: `kubeplug_guest_errors_total{namespace="kubeplug-system",instance="a",module="retention",kind="trap"} 0 0 0 1x27`},
	{name: "refused actions", alert: "KubeplugActionsRefused", minutes: 25,
		series: `kubeplug_actions_total{namespace="kubeplug-system",instance="a",module="reclaim",type="deleteObject",result="refused"} 0+2x30
kubeplug_actions_total{namespace="kubeplug-system",instance="a",module="reclaim",type="deleteObject",result="executed"} 0+5x30`,
		fires: []map[string]string{{"namespace": "kubeplug-system", "module": "reclaim", "type": "deleteObject"}}},
	{name: "executed actions", alert: "KubeplugActionsRefused", minutes: 25,
		series: `kubeplug_actions_total{namespace="kubeplug-system",instance="a",module="reclaim",type="deleteObject",result="executed"} 0+5x30`},
	{name: "calls keep waiting", alert: "KubeplugGuestCallsWaiting", minutes: 20,
		series: `kubeplug_guest_calls_waiting{namespace="kubeplug-system",pod="kubeplug-0",instance="a",class="reconcile"} 3x30
kubeplug_guest_calls_waiting{namespace="kubeplug-system",pod="kubeplug-0",instance="a",class="admit"} 0x30`,
		fires: []map[string]string{{"namespace": "kubeplug-system", "pod": "kubeplug-0", "class": "reconcile"}}},
	{name: "a burst of waiting calls", alert: "KubeplugGuestCallsWaiting", minutes: 20,
		series: `kubeplug_guest_calls_waiting{namespace="kubeplug-system",pod="kubeplug-0",instance="a",class="reconcile"} 0 0 5 5 0x26`},
	{name: "calls give up", alert: "KubeplugGuestCallsGaveUp", minutes: 10,
		series: `kubeplug_guest_calls_gave_up_total{namespace="kubeplug-system",pod="kubeplug-0",instance="a",class="admit"} 0+1x30`,
		fires:  []map[string]string{{"namespace": "kubeplug-system", "class": "admit"}}},
	{name: "no call gives up", alert: "KubeplugGuestCallsGaveUp", minutes: 10,
		series: `kubeplug_guest_calls_gave_up_total{namespace="kubeplug-system",pod="kubeplug-0",instance="a",class="admit"} 0x30`},
	{name: "no replica leads", alert: "KubeplugNoLeader", minutes: 10,
		series: `leader_election_master_status{namespace="kubeplug-system",instance="a",name="kubeplug"} 0x30
leader_election_master_status{namespace="kubeplug-system",instance="b",name="kubeplug"} 0x30
kubeplug_leader{namespace="kubeplug-system",instance="a"} 0x30
kubeplug_leader{namespace="kubeplug-system",instance="b"} 0x30`,
		fires: []map[string]string{{"namespace": "kubeplug-system", "name": "kubeplug", "severity": "critical"}}},
	{name: "one replica leads; another controller's Lease is not the host's", alert: "KubeplugNoLeader", minutes: 10,
		series: `leader_election_master_status{namespace="kubeplug-system",instance="a",name="kubeplug"} 0x30
leader_election_master_status{namespace="kubeplug-system",instance="b",name="kubeplug"} 1x30
kubeplug_leader{namespace="kubeplug-system",instance="a"} 0x30
kubeplug_leader{namespace="kubeplug-system",instance="b"} 1x30
leader_election_master_status{namespace="kube-system",instance="kcm",name="kube-controller-manager"} 0x30`},
	{name: "no host scraped", alert: "KubeplugAbsent", minutes: 10,
		series: `up{job="kube-state-metrics",instance="ksm"} 1x30`,
		fires:  []map[string]string{{"severity": "critical"}}},
	{name: "a host scraped, not leading", alert: "KubeplugAbsent", minutes: 10,
		series: `kubeplug_leader{namespace="kubeplug-system",instance="a"} 0x30`},
	{name: "the last host gone for four minutes", alert: "KubeplugAbsent", minutes: 10,
		series: `kubeplug_leader{namespace="kubeplug-system",instance="a"} 1x6`},
	{name: "the last host gone for eleven minutes (five of lookback, five of for)", alert: "KubeplugAbsent", minutes: 13,
		series: `kubeplug_leader{namespace="kubeplug-system",instance="a"} 1x2`,
		fires:  []map[string]string{{"severity": "critical"}}},
	{name: "host.yaml refused", alert: "KubeplugConfigReloadFailed", minutes: 10,
		series: `kubeplug_config_last_reload_successful{namespace="kubeplug-system",pod="kubeplug-0",instance="a"} 1 1 0x28`,
		fires:  []map[string]string{{"namespace": "kubeplug-system", "pod": "kubeplug-0"}}},
	{name: "host.yaml fixed", alert: "KubeplugConfigReloadFailed", minutes: 10,
		series: `kubeplug_config_last_reload_successful{namespace="kubeplug-system",pod="kubeplug-0",instance="a"} 0 0 1x28`},
	{name: "a swap refused", alert: "KubeplugModuleSwapFailed", minutes: 10,
		series: `kubeplug_module_swaps_total{namespace="kubeplug-system",instance="a",module="retention",result="failed"} 0 0 0 1x27`,
		fires:  []map[string]string{{"namespace": "kubeplug-system", "module": "retention"}}},
	{name: "swaps succeed", alert: "KubeplugModuleSwapFailed", minutes: 10,
		series: `kubeplug_module_swaps_total{namespace="kubeplug-system",instance="a",module="retention",result="failed"} 0x30
kubeplug_module_swaps_total{namespace="kubeplug-system",instance="a",module="retention",result="success"} 0+1x30`},
	{name: "a reload partly applied", alert: "KubeplugConfigPartlyApplied", minutes: 10,
		series: `kubeplug_config_reloads_total{namespace="kubeplug-system",instance="a",result="partial"} 0 0 0 1x27`,
		fires:  []map[string]string{{"namespace": "kubeplug-system", "severity": "info"}}},
	{name: "reloads applied", alert: "KubeplugConfigPartlyApplied", minutes: 10,
		series: `kubeplug_config_reloads_total{namespace="kubeplug-system",instance="a",result="partial"} 0x30
kubeplug_config_reloads_total{namespace="kubeplug-system",instance="a",result="success"} 0+1x30`},
	{name: "a host stays unready", alert: "KubeplugNotReady", minutes: 20,
		series: `kubeplug_ready{namespace="kubeplug-system",pod="kubeplug-0",instance="a"} 0x30
kubeplug_ready{namespace="kubeplug-system",pod="kubeplug-1",instance="b"} 1x30`,
		fires: []map[string]string{{"namespace": "kubeplug-system", "pod": "kubeplug-0"}}},
	{name: "a host gets ready", alert: "KubeplugNotReady", minutes: 20,
		series: `kubeplug_ready{namespace="kubeplug-system",pod="kubeplug-0",instance="a"} 0 0 0 1x27`},
	{name: "a driver does not answer", alert: "KubeplugCSIDriverNotReady", minutes: 15,
		series: `kubeplug_csi_driver_ready{namespace="kubeplug-system",pod="kubeplug-0",instance="a",driver="hostpath.csi.k8s.io"} 0x30`,
		fires:  []map[string]string{{"namespace": "kubeplug-system", "pod": "kubeplug-0", "driver": "hostpath.csi.k8s.io"}}},
	{name: "a driver answers late", alert: "KubeplugCSIDriverNotReady", minutes: 15,
		series: `kubeplug_csi_driver_ready{namespace="kubeplug-system",pod="kubeplug-0",instance="a",driver="hostpath.csi.k8s.io"} 0 0 0 1x27`},
}

// labelRef finds the labels an annotation's template reads.
var labelRef = regexp.MustCompile(`\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)`)

// TestAlertsFire is `promtool test rules` for every alert: each fires on a
// series it is made for, with the labels its annotations read, and keeps
// quiet on one that is fine, evaluated by Prometheus' rule engine.
func TestAlertsFire(t *testing.T) {
	byName := map[string]rulefmt.Rule{}
	for _, g := range load(t).Groups {
		for _, r := range g.Rules {
			byName[r.Alert] = r
		}
	}
	tested := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.alert+"/"+tc.name, func(t *testing.T) {
			r, ok := byName[tc.alert]
			require.True(t, ok, "no alert %s in %s", tc.alert, ruleFile)
			if tc.fires != nil {
				tested[tc.alert] = true
			}
			firing, fired := evaluate(t, r, tc.series, tc.minutes)
			require.Len(t, firing, len(tc.fires), "alerts firing after %d minutes", tc.minutes)
			if tc.fires == nil {
				require.Zero(t, fired, "fired at minute %d", fired)
			}
			for i, want := range tc.fires {
				got := firing[i].Labels.Map()
				for k, v := range want {
					require.Equal(t, v, got[k], "label %s", k)
				}
				for _, text := range []string{r.Annotations["summary"], r.Annotations["description"]} {
					for _, m := range labelRef.FindAllStringSubmatch(text, -1) {
						require.NotEmpty(t, got[m[1]], "the annotations read $labels.%s, which the alert does not carry", m[1])
					}
				}
				for name, text := range firing[i].Annotations.Map() {
					require.NotContains(t, text, "<no value>", name)
					require.NotContains(t, text, "{{", "%s: a template left unexpanded", name)
				}
			}
		})
	}
	for name := range byName {
		require.True(t, tested[name], "alert %s has no case that fires it", name)
	}
}

// evaluate runs rule r over series once a minute for minutes, as
// Prometheus' rule manager would, and returns the alerts firing at the end,
// sorted by their labels, and the first minute any alert fired (0: none).
func evaluate(t *testing.T, r rulefmt.Rule, series string, minutes int) (firing []*rules.Alert, fired int) {
	t.Helper()
	storage := promqltest.LoadedStorage(t, "load 1m\n"+indent(series))
	engine := promqltest.NewTestEngine(t, false, 5*time.Minute, 1_000_000)
	expr, err := stock.ParseExpr(r.Expr)
	require.NoError(t, err)
	rule := rules.NewAlertingRule(r.Alert, expr, time.Duration(r.For), time.Duration(r.KeepFiringFor),
		labels.FromMap(r.Labels), labels.FromMap(r.Annotations), labels.EmptyLabels(), "", true, slog.New(slog.DiscardHandler))
	query := rules.EngineQueryFunc(engine, storage)
	start := time.Unix(0, 0).UTC()
	for m := 0; m <= minutes; m++ {
		_, err := rule.Eval(context.Background(), 0, start.Add(time.Duration(m)*time.Minute), query, nil, 0)
		require.NoError(t, err, "at minute %d", m)
		firing = firing[:0]
		for _, a := range rule.ActiveAlerts() {
			if a.State == rules.StateFiring {
				firing = append(firing, a)
			}
		}
		if len(firing) > 0 && fired == 0 {
			fired = max(m, 1)
		}
	}
	slices.SortFunc(firing, func(a, b *rules.Alert) int { return labels.Compare(a.Labels, b.Labels) })
	return firing, fired
}

// indent puts each line of series under a load command.
func indent(series string) string { return "  " + strings.ReplaceAll(series, "\n", "\n  ") + "\n" }
