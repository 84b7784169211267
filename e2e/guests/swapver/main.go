// Command swapver is a module for the hot-swap end-to-end test (e2e/swap).
// It is built twice from this source, with -ldflags "-X main.version=a" and
// "-X main.version=b", and the two builds decide differently: version b asks
// for a requeue in an hour, version a does not. Each reconcile logs the
// version that answered it with the set's key and the value of its
// e2e.kubeplug.dev/tick annotation, so that the test can tell which module
// answered a reconcile of a state it wrote after a swap.
package main

import (
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// version is set at build time.
var version = "a"

// TickAnnotation is the annotation the test writes a counter into.
const TickAnnotation = "e2e.kubeplug.dev/tick"

func init() {
	sdk.Register(sdk.Module{
		Name:         "swapver",
		Version:      "0.0.1-" + version,
		Subject:      abi.SubjectStatefulSet,
		Description:  "End-to-end test module: logs which build answered each reconcile.",
		Capabilities: []abi.Capability{},
		Reconcile:    reconcile,
	})
}

func main() {}

func reconcile(req *sdk.Request) (sdk.Result, error) {
	set := req.StatefulSet()
	if set == nil {
		return sdk.Result{}, nil
	}
	sdk.Logf(sdk.LevelInfo, "swapver answered version=%s set=%s tick=%s",
		version, set.Metadata.Name, set.Metadata.Annotations[TickAnnotation])
	if version == "b" {
		return sdk.Result{RequeueAfter: time.Hour}, nil
	}
	return sdk.Result{}, nil
}
