package testenv

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/kubeplug/kubeplug/e2e/controlplane"
)

// MainOptions say what Main starts for a test package.
type MainOptions struct {
	// ControlPlane is the control plane to start: which
	// kube-controller-manager controllers run beside kube-apiserver.
	ControlPlane controlplane.Options
	// Parallel, when not zero, raises -test.parallel to the larger of it
	// and GOMAXPROCS, unless the command line sets -test.parallel: for
	// tests that spend their time waiting for controllers, not on the CPU.
	Parallel int
}

// Main is the body of a TestMain whose tests share one control plane,
// which it keeps in *cp for them:
//
//	var cp *controlplane.ControlPlane
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &cp, testenv.MainOptions{})) }
//
// It starts the control plane, runs the tests, and then undoes everything:
// what Kubeplug and Guest built, the control plane. It returns the exit code for os.Exit: m.Run's, or 1, after saying
// why on standard error, when the tests could not start.
func Main(m *testing.M, cp **controlplane.ControlPlane, o MainOptions) int {
	if o.Parallel > 0 {
		raiseParallel(o.Parallel)
	}
	started, err := controlplane.Start(context.Background(), o.ControlPlane)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer started.Stop()
	defer Cleanup()
	*cp = started
	return m.Run()
}

// raiseParallel sets -test.parallel to max(n, GOMAXPROCS) unless the command
// line set it. It parses the command line first, as m.Run would.
func raiseParallel(n int) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", fmt.Sprint(max(n, runtime.GOMAXPROCS(0))))
	}
}
