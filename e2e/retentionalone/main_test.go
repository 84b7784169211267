// Package retentionalone tests the retention module (guests/retention,
// KEP-1847) as the only implementation: kube-controller-manager runs the
// garbage collector and the claim-protection controller but not the
// StatefulSet controller, whose part the test plays with
// e2e/internal/setctl. Every owner reference on a claim is then the
// module's, and the claims the garbage collector deletes are exactly those
// the module's references say.
package retentionalone

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
	// The subtests spend their time waiting for the host and the garbage
	// collector, not on the CPU: run them all at once unless -parallel
	// says otherwise.
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", fmt.Sprint(max(16, runtime.GOMAXPROCS(0))))
	}

	var err error
	cp, err = controlplane.Start(context.Background(), controlplane.Options{Controllers: []string{
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
