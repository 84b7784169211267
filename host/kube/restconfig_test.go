package kube_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/kube"
)

// kubeconfigFile writes a kubeconfig with one cluster, user and context per
// name, each cluster at https://<name>.example:6443, and current-context
// current ("" for none).
func kubeconfigFile(t *testing.T, current string, names ...string) string {
	t.Helper()
	var clusters, users, contexts strings.Builder
	for _, n := range names {
		clusters.WriteString("- name: " + n + "\n  cluster: {server: 'https://" + n + ".example:6443'}\n")
		users.WriteString("- name: " + n + "\n  user: {token: token-" + n + "}\n")
		contexts.WriteString("- name: " + n + "\n  context: {cluster: " + n + ", user: " + n + "}\n")
	}
	doc := "apiVersion: v1\nkind: Config\nclusters:\n" + clusters.String() + "users:\n" + users.String() +
		"contexts:\n" + contexts.String()
	if current != "" {
		doc += "current-context: " + current + "\n"
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
	return path
}

// TestRESTConfigFollowsKubectl: the file given wins over $KUBECONFIG, which
// wins over ~/.kube/config; $KUBECONFIG is a list whose files merge; the
// context given wins over current-context; with nothing anywhere the error
// says where it looked, without klog's KUBERNETES_MASTER hint.
func TestRESTConfigFollowsKubectl(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	homeConfig := kubeconfigFile(t, "home", "home")
	a := kubeconfigFile(t, "a", "a")
	b := kubeconfigFile(t, "", "b") // no current-context: a's applies
	explicit := kubeconfigFile(t, "explicit", "explicit", "other")
	list := a + string(os.PathListSeparator) + b

	for _, tc := range []struct {
		name                string
		kubeconfig, context string
		env                 string // $KUBECONFIG
		withHome            bool
		want, wantErr       string
	}{
		{name: "given file", kubeconfig: explicit, env: list, withHome: true, want: "explicit"},
		{name: "given file and context", kubeconfig: explicit, context: "other", want: "other"},
		{name: "KUBECONFIG list, first file's current-context", env: list, withHome: true, want: "a"},
		{name: "KUBECONFIG list, context of the second file", env: list, context: "b", want: "b"},
		{name: "home file", withHome: true, want: "home"},
		{name: "unknown context", withHome: true, context: "nope", wantErr: `context "nope" does not exist`},
		{name: "missing file", kubeconfig: missing, wantErr: missing},
		{name: "nothing", wantErr: "no cluster to connect to: give --kubeconfig, set KUBECONFIG, or write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := t.TempDir()
			if tc.withHome {
				require.NoError(t, os.MkdirAll(filepath.Join(h, ".kube"), 0o700))
				data, err := os.ReadFile(homeConfig)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(h, ".kube", "config"), data, 0o600))
			}
			t.Setenv("HOME", h)
			t.Setenv("KUBECONFIG", tc.env)
			// Not in a cluster, whatever the machine running the test is.
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			c, err := kube.RESTConfig(tc.kubeconfig, tc.context)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.NotContains(t, err.Error(), "KUBERNETES_MASTER")
				return
			}
			require.NoError(t, err)
			require.Equal(t, "https://"+tc.want+".example:6443", c.Host)
			require.Equal(t, "token-"+tc.want, c.BearerToken)
		})
	}
}
