// Package retention tests the retention module (guests/retention, KEP-1847)
// end to end beside the implementation it mirrors: `kubeplug run` and
// kube-controller-manager's statefulset-controller, garbage-collector-controller
// and persistentvolumeclaim-protection-controller run against the same
// kube-apiserver. Each scenario of the proposal's test plan runs under the four
// retention policies; the tests assert which claims survive, and that neither
// writer ever undoes an owner-reference write of the other.
package retention

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/kubeplug/kubeplug/e2e/controlplane"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// The scenarios spend their time waiting for controllers, not on the
	// CPU: run them all at once unless -parallel says otherwise.
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", fmt.Sprint(max(32, runtime.GOMAXPROCS(0))))
	}

	var err error
	cp, err = controlplane.Start(context.Background(), controlplane.Options{Controllers: []string{
		"statefulset-controller",
		"garbage-collector-controller",
		"persistentvolumeclaim-protection-controller",
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cp.Stop()
	defer testenv.Cleanup()
	return m.Run()
}
