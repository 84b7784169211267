// Command demo is `make demo`: the main job of kubeplug on an embedded
// control plane. See e2e/demo.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/kubeplug/kubeplug/e2e/demo"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

func main() {
	root := testenv.Root()
	o := demo.Options{Root: root, Out: os.Stdout}
	flag.StringVar(&o.Kubeplug, "kubeplug", filepath.Join(root, "build", "kubeplug"), "kubeplug binary")
	flag.StringVar(&o.Guests, "guests", filepath.Join(root, "build", "guests"), "directory of built modules")
	verbose := flag.Bool("host-log", false, "show the host's own log on standard error")
	flag.BoolVar(&o.Keep, "keep", false, "leave the control plane and the host running after the last scene, until Ctrl-C")
	flag.Parse()
	if *verbose {
		o.HostLog = os.Stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := demo.Run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}
