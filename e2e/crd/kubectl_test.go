package crd

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/cmd/get"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/cmd/wait"
)

// kubectl runs kubectl's own get and wait commands (k8s.io/kubectl, the
// code of the kubectl binary) in this process against the control plane,
// and returns what they print. A command that fails returns its message as
// the error instead of exiting the test binary.
func kubectl(t *testing.T, args ...string) (out string, err error) {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(true)
	kubeconfig := cp.Kubeconfig
	flags.KubeConfig = &kubeconfig
	f := cmdutil.NewFactory(cmdutil.NewMatchVersionFlags(flags))
	var stdout, stderr bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr}
	root := &cobra.Command{Use: "kubectl", SilenceUsage: true}
	flags.AddFlags(root.PersistentFlags())
	root.AddCommand(get.NewCmdGet("kubectl", f, streams), wait.NewCmdWait(f, streams))
	root.SetArgs(args)
	root.SetOut(&stdout)
	root.SetErr(&stderr)

	type fatal struct{ msg string }
	cmdutil.BehaviorOnFatal(func(msg string, _ int) { panic(fatal{msg}) })
	defer cmdutil.DefaultBehaviorOnFatal()
	defer func() {
		if v := recover(); v != nil {
			f, ok := v.(fatal)
			if !ok {
				panic(v)
			}
			out, err = stdout.String(), fmt.Errorf("kubectl %s: %s", strings.Join(args, " "), strings.TrimSpace(f.msg))
		}
	}()
	if err := root.Execute(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), err)
	}
	return stdout.String(), nil
}

// TestKubectl: what the README tells a user to type works with kubectl's own
// code: `kubectl get vcu` prints the printer columns, and `kubectl wait
// --for=condition=...` ends when the module's conditions say so, and not
// before.
func TestKubectl(t *testing.T) {
	c, ns := vcus(t)
	if _, err := c.Create(context.Background(), object(t, valid), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Patch(context.Background(), "data", types.MergePatchType, []byte(status), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}

	out, err := kubectl(t, "get", "vcu", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("kubectl get vcu printed %d lines, want a header and one row:\n%s", len(lines), out)
	}
	if got := strings.Fields(lines[0]); strings.Join(got, " ") != "NAME STATEFULSET UPDATE SYNC COMPATIBLE UPDATING PROGRESSING BLOCKED AGE" {
		t.Errorf("kubectl get vcu header %q", lines[0])
	}
	if got := strings.Fields(lines[1]); len(got) < 8 || strings.Join(got[:8], " ") != "data web OnDelete Async 2 1 True StorageClassDoesNotAllowExpansion" {
		t.Errorf("kubectl get vcu row %q", lines[1])
	}

	// Blocked is True: waiting for it ends at once.
	if out, err := kubectl(t, "wait", "-n", ns, "vcu/data", "--for=condition=Blocked", "--timeout=20s"); err != nil || !strings.Contains(out, "condition met") {
		t.Fatalf("wait for Blocked: %q, %v", out, err)
	}
	// Progressing is True: waiting for its end times out.
	if _, err := kubectl(t, "wait", "-n", ns, "vcu/data", "--for=condition=Progressing=False", "--timeout=1s"); err == nil {
		t.Fatal("kubectl wait --for=condition=Progressing=False ended while Progressing is True")
	}
	done := `{"status": {"observedGeneration": 1, "volumeClaimTemplates": [{"templateName": "data", "compatibleReplicas": 3}],
	  "conditions": [
	    {"type": "Progressing", "status": "False", "reason": "Complete", "message": "every claim is compatible", "lastTransitionTime": "2026-01-02T03:05:05Z", "observedGeneration": 1},
	    {"type": "Blocked", "status": "False", "reason": "NotBlocked", "message": "", "lastTransitionTime": "2026-01-02T03:05:05Z", "observedGeneration": 1}]}}`
	if _, err := c.Patch(context.Background(), "data", types.MergePatchType, []byte(done), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	if out, err := kubectl(t, "wait", "-n", ns, "vcu/data", "--for=condition=Progressing=False", "--timeout=20s"); err != nil || !strings.Contains(out, "volumeclaimupdate.kubeplug.dev/data condition met") {
		t.Fatalf("wait for the end: %q, %v", out, err)
	}
}
