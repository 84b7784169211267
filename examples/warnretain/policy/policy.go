package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

const (
	// Reason is the reason of the Warning event the module records.
	Reason = "ClaimsRetainedForever"
	// OptOutLabel set to "true" on a StatefulSet silences the warning for it.
	OptOutLabel = "warnretain.example.com/ignore"
)

// config is the module's configuration.
type config struct {
	// IgnoreNamespaces lists namespaces whose StatefulSets are never warned about.
	IgnoreNamespaces []string `json:"ignoreNamespaces"`
}

const configSchema = `{
  "type": "object",
  "properties": {
    "ignoreNamespaces": {
      "type": "array",
      "items": {"type": "string"},
      "description": "namespaces whose StatefulSets are never warned about"
    }
  },
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Module{
		Name:         "warnretain",
		Version:      "0.1.0",
		Subject:      abi.SubjectStatefulSet,
		Description:  "Warns about StatefulSets whose PersistentVolumeClaims are kept after the StatefulSet is deleted.",
		ConfigSchema: configSchema,
		Capabilities: []abi.Capability{{Action: abi.ActionEvent, Resources: []string{"statefulsets"}}},
		// What reconcile reads (ABI 1.3): of the set, what the warning
		// needs; of its pods, claims, classes and update, nothing, so
		// they are not sent.
		Projection: []abi.ObjectFields{
			{Kind: abi.KindStatefulSet, Fields: []string{"metadata.labels", "metadata.deletionTimestamp",
				"spec.volumeClaimTemplates.metadata.name", "spec.persistentVolumeClaimRetentionPolicy"}},
			{Kind: abi.KindPod, Omit: true}, {Kind: abi.KindPersistentVolumeClaim, Omit: true},
			{Kind: abi.KindStorageClass, Omit: true}, {Kind: abi.KindVolumeClaimUpdate, Omit: true},
		},
		Reconcile: reconcile,
	})
}

func reconcile(req *sdk.Request) (sdk.Result, error) {
	cfg := config{}
	if err := req.Config(&cfg); err != nil {
		return sdk.Result{}, err
	}
	set := req.StatefulSet()
	if set == nil || !keepsClaimsForever(set) || ignored(set, cfg) {
		return sdk.Result{}, nil
	}
	return sdk.Result{Actions: []abi.Action{sdk.Warning(sdk.RefOf(set), Reason, message(set))}}, nil
}

// keepsClaimsForever reports whether the claims of set will outlive it:
// it has claim templates and whenDeleted is Retain, explicitly or by the API
// default (no policy, or a policy without whenDeleted). whenScaled does not
// matter: claims kept on scale-down are reused on the next scale-up. A set
// under deletion is left alone, as its claims' fate is already decided.
func keepsClaimsForever(set *abi.StatefulSet) bool {
	if set.Metadata.DeletionTimestamp != "" || len(set.Spec.VolumeClaimTemplates) == 0 {
		return false
	}
	p := set.Spec.PersistentVolumeClaimRetentionPolicy
	return p == nil || p.WhenDeleted != "Delete"
}

func ignored(set *abi.StatefulSet, cfg config) bool {
	return set.Metadata.Labels[OptOutLabel] == "true" || slices.Contains(cfg.IgnoreNamespaces, set.Metadata.Namespace)
}

func message(set *abi.StatefulSet) string {
	claims := make([]string, len(set.Spec.VolumeClaimTemplates))
	for i, t := range set.Spec.VolumeClaimTemplates {
		claims[i] = t.Metadata.Name + "-" + set.Metadata.Name + "-*"
	}
	return fmt.Sprintf("claims %s are kept after the StatefulSet is deleted (persistentVolumeClaimRetentionPolicy.whenDeleted is Retain); "+
		"set whenDeleted to Delete, or label the StatefulSet %s=true to silence this warning",
		strings.Join(claims, ", "), OptOutLabel)
}
