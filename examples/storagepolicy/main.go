package main

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

const (
	// StrictLabel on a namespace, with value "strict", refuses StatefulSets
	// that keep their claims forever.
	StrictLabel = "storage-policy"
	// SetLabel is the label the module puts on a claim of a StatefulSet:
	// the set's name.
	SetLabel = "storagepolicy.example.com/statefulset"
)

func init() {
	sdk.Register(sdk.Module{
		Name:        "storagepolicy",
		Version:     "0.1.0",
		Subject:     abi.SubjectStatefulSet,
		Description: "Refuses StatefulSets that keep their claims forever in namespaces labelled storage-policy=strict, and labels the claims of StatefulSets with their set.",
		Capabilities: []abi.Capability{
			{Action: abi.CapabilityMutate, Resources: []string{"persistentvolumeclaims"}, Paths: []string{"/metadata/labels"}},
		},
		Admit: admit,
		Admission: &abi.Admission{
			Mutates: true,
			Rules: []abi.AdmissionRule{
				{Operations: []string{abi.OperationCreate, abi.OperationUpdate}, APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"statefulsets"}},
				{Operations: []string{abi.OperationCreate}, APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"persistentvolumeclaims"}},
			},
			// The system's own objects are not the module's business, and
			// the API server need not call it for them.
			MatchConditions: []abi.MatchCondition{{Name: "not-kube-system", Expression: "request.namespace != 'kube-system'"}},
		},
	})
}

// main is never called: the host runs the module as a WASI reactor.
func main() {}

func admit(req *abi.AdmitRequest) (sdk.Admission, error) {
	if req.Object == nil {
		return sdk.Allow(), nil
	}
	switch {
	case req.Object.StatefulSet != nil:
		return admitSet(req, req.Object.StatefulSet), nil
	case req.Object.PersistentVolumeClaim != nil:
		return labelClaim(req, req.Object.PersistentVolumeClaim)
	}
	return sdk.Allow(), nil
}

// admitSet refuses a set in a strict namespace whose claims outlive it.
func admitSet(req *abi.AdmitRequest, set *abi.StatefulSet) sdk.Admission {
	if req.NamespaceLabels[StrictLabel] != "strict" || len(set.Spec.VolumeClaimTemplates) == 0 {
		return sdk.Allow()
	}
	p := set.Spec.PersistentVolumeClaimRetentionPolicy
	if p != nil && p.WhenDeleted == "Delete" {
		return sdk.Allow()
	}
	return sdk.Deny("StatefulSet %s would keep its PersistentVolumeClaims forever (persistentVolumeClaimRetentionPolicy.whenDeleted is Retain) "+
		"in namespace %s, which is labelled %s=strict: set spec.persistentVolumeClaimRetentionPolicy.whenDeleted to Delete",
		set.Metadata.Name, req.Namespace, StrictLabel)
}

// labelClaim labels a claim of a StatefulSet's template with the set.
func labelClaim(req *abi.AdmitRequest, claim *abi.PersistentVolumeClaim) (sdk.Admission, error) {
	if req.StatefulSet == nil || req.StatefulSet.Set == nil {
		return sdk.Allow(), nil
	}
	set := req.StatefulSet.Set.Metadata.Name
	if claim.Metadata.Labels[SetLabel] == set {
		return sdk.Allow(), nil
	}
	a := sdk.Allow()
	var err error
	if claim.Metadata.Labels == nil {
		err = a.Patch(abi.PatchAdd, sdk.Pointer("metadata", "labels"), map[string]string{SetLabel: set})
	} else {
		err = a.Patch(abi.PatchAdd, sdk.Pointer("metadata", "labels", SetLabel), set)
	}
	return a, err
}
