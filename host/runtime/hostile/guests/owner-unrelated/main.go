package main

import (
	"fmt"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

type config struct {
	Owner string `json:"owner"`
	Pod   struct {
		Name string `json:"name"`
		UID  string `json:"uid"`
	} `json:"pod"`
}

func init() {
	sdk.Register(sdk.Module{
		Name:         "owner-unrelated",
		Version:      "0.1.0",
		Subject:      abi.SubjectStatefulSet,
		Description:  "Gives a claim an owner reference to an unrelated Pod or to a StorageClass.",
		ConfigSchema: `{"type": "object", "properties": {"owner": {"enum": ["pod", "storageclass"]}, "pod": {"type": "object"}}}`,
		Capabilities: []abi.Capability{{Action: abi.ActionUpdateOwnerReferences, Resources: []string{"persistentvolumeclaims"}}},
		Reconcile:    reconcile,
	})
}

func main() {}

func reconcile(req *sdk.Request) (sdk.Result, error) {
	var cfg config
	if err := req.Config(&cfg); err != nil {
		return sdk.Result{}, err
	}
	claims := req.Claims()
	if len(claims) == 0 {
		return sdk.Result{}, nil
	}
	var owner abi.OwnerReference
	switch cfg.Owner {
	case "pod":
		owner = abi.OwnerReference{APIVersion: "v1", Kind: abi.KindPod, Name: cfg.Pod.Name, UID: cfg.Pod.UID}
	case "storageclass":
		scs := req.StorageClasses()
		if len(scs) == 0 {
			return sdk.Result{}, nil
		}
		owner = abi.OwnerReference{APIVersion: "storage.k8s.io/v1", Kind: abi.KindStorageClass, Name: scs[0].Metadata.Name, UID: scs[0].Metadata.UID}
	default:
		return sdk.Result{}, fmt.Errorf("config owner %q: want pod or storageclass", cfg.Owner)
	}
	return sdk.Result{Actions: []abi.Action{sdk.UpdateOwnerReferences(sdk.RefOf(&claims[0]), nil, owner)}}, nil
}
