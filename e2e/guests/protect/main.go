// Command protect is a module for the host's end-to-end tests. It adds a
// finalizer to every claim of every StatefulSet it reconciles, which is a
// write with preconditions whose result is easy to check. Its config can
// also make it misbehave:
//
//   - {"overreach": true} also asks to set the set's rollout partition, an
//     action its manifest does not declare, which the host must refuse;
//   - {"spin": N}, when there is a claim to protect, logs "spinning" with
//     the set's key and then busy-loops N times before answering: a
//     reconcile a test can catch in flight;
//   - {"fail": true} fails every reconcile with an error.
package main

import (
	"errors"
	"slices"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// Finalizer is the finalizer the module adds.
const Finalizer = "e2e.kubeplug.dev/protect"

type config struct {
	Overreach bool  `json:"overreach"`
	Spin      int64 `json:"spin"`
	Fail      bool  `json:"fail"`
}

// sink keeps the compiler from dropping the busy loop.
var sink int64

func init() {
	sdk.Register(sdk.Module{
		Name:         "protect",
		Version:      "0.0.1",
		Subject:      abi.SubjectStatefulSet,
		Description:  "End-to-end test module: adds a finalizer to every claim of a StatefulSet.",
		Capabilities: []abi.Capability{{Action: abi.ActionAddFinalizer, Resources: []string{"persistentvolumeclaims"}}},
		Reconcile:    reconcile,
	})
}

func main() {}

func reconcile(req *sdk.Request) (sdk.Result, error) {
	var cfg config
	if err := req.Config(&cfg); err != nil {
		return sdk.Result{}, err
	}
	if cfg.Fail {
		return sdk.Result{}, errors.New("configured to fail")
	}
	set := req.StatefulSet()
	if set == nil || set.Metadata.DeletionTimestamp != "" {
		return sdk.Result{}, nil
	}
	var res sdk.Result
	if cfg.Overreach {
		res.Actions = append(res.Actions, sdk.SetPartition(sdk.RefOf(set), 0))
	}
	claims := req.Claims()
	for i := range claims {
		c := &claims[i]
		if c.Metadata.DeletionTimestamp == "" && !slices.Contains(c.Metadata.Finalizers, Finalizer) {
			res.Actions = append(res.Actions, sdk.AddFinalizer(sdk.RefOf(c), Finalizer))
		}
	}
	if cfg.Spin > 0 && len(res.Actions) > 0 {
		sdk.Logf(sdk.LevelInfo, "spinning before answering for %s", req.Key())
		for i := range cfg.Spin {
			sink = sink*31 + i
		}
	}
	return res, nil
}
