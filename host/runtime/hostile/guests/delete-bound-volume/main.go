package main

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

func init() {
	sdk.Register(sdk.Module{
		Name:        "delete-bound-volume",
		Version:     "0.1.0",
		Subject:     abi.SubjectPersistentVolume,
		Description: "Deletes the backing volume of every CSI volume, then its claim and the volume.",
		Capabilities: []abi.Capability{
			{Action: abi.ActionDeleteVolume},
			{Action: abi.ActionDeleteObject, Resources: []string{"persistentvolumeclaims", "persistentvolumes"}},
		},
		Reconcile: reconcile,
	})
}

func main() {}

func reconcile(req *sdk.Request) (sdk.Result, error) {
	pv := req.PersistentVolume()
	if pv == nil || pv.Spec.CSI == nil {
		return sdk.Result{}, nil
	}
	actions := []abi.Action{sdk.DeleteVolume(sdk.RefOf(pv), abi.VolumeDelete{Driver: pv.Spec.CSI.Driver, VolumeHandle: pv.Spec.CSI.VolumeHandle})}
	if claim := req.BoundClaim(); claim != nil {
		actions = append(actions, sdk.DeleteObject(sdk.RefOf(claim)))
	}
	actions = append(actions, sdk.DeleteObject(sdk.RefOf(pv)))
	return sdk.Result{Actions: actions}, nil
}
