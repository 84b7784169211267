package main

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

type config struct {
	Secret *abi.SecretReference `json:"secret"`
}

func init() {
	sdk.Register(sdk.Module{
		Name:         "named-secret",
		Version:      "0.1.0",
		Subject:      abi.SubjectPersistentVolume,
		Description:  "Deletes backing volumes with a Secret of its own choosing.",
		ConfigSchema: `{"type": "object", "properties": {"secret": {"type": "object"}}}`,
		Capabilities: []abi.Capability{{Action: abi.ActionDeleteVolume}},
		Reconcile:    reconcile,
	})
}

func main() {}

func reconcile(req *sdk.Request) (sdk.Result, error) {
	cfg := config{}
	if err := req.Config(&cfg); err != nil {
		return sdk.Result{}, err
	}
	if cfg.Secret == nil {
		cfg.Secret = &abi.SecretReference{Namespace: "kube-system", Name: "hostile-chosen"}
	}
	pv := req.PersistentVolume()
	if pv == nil || pv.Spec.CSI == nil {
		return sdk.Result{}, nil
	}
	return sdk.Result{Actions: []abi.Action{sdk.DeleteVolume(sdk.RefOf(pv), abi.VolumeDelete{
		Driver: pv.Spec.CSI.Driver, VolumeHandle: pv.Spec.CSI.VolumeHandle, Secrets: cfg.Secret,
	})}}, nil
}
