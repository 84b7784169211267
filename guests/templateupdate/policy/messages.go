package policy

import (
	"strconv"
	"strings"

	"github.com/kubeplug/kubeplug/abi"
)

// Messages are built without fmt, which keeps the decision path small and
// TinyGo-friendly.

func claimUpdatingMessage(c, t *abi.PersistentVolumeClaim, changes []string) string {
	return "updating claim " + c.Metadata.Name + " in place to template " + t.Metadata.Name + ": " + strings.Join(changes, ", ")
}

func failedBlockage(c *abi.PersistentVolumeClaim) *blockage {
	why := c.Status.AllocatedResourceStatuses[storage]
	if why == "" {
		why = "a resize error condition"
	}
	return &blockage{ReasonClaimUpdateFailed, "the update of claim " + c.Metadata.Name + " failed (" + why +
		"): no further replica is updated until it is fixed; fix the volume, or delete the claim and its pod so they are recreated from the template"}
}

func noExpansionBlockage(c *abi.PersistentVolumeClaim) *blockage {
	return &blockage{ReasonStorageClassDoesNotAllowExpansion, "claim " + c.Metadata.Name + " must grow but its StorageClass " +
		strconv.Quote(str(c.Spec.StorageClassName)) + " does not allow volume expansion: set allowVolumeExpansion: true on the class, or delete the claim and its pod so they are recreated from the template"}
}

func immutableBlockage(c, t *abi.PersistentVolumeClaim, pod string) *blockage {
	what := immutableDiff(c, t)
	return &blockage{ReasonImmutableFieldChanged, "claim " + c.Metadata.Name + " differs from template " + t.Metadata.Name + " in " + what +
		", which cannot change in place: delete claim " + c.Metadata.Name + " and pod " + pod + " so they are recreated with the new template"}
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }

func onDeleteBlockage(c, t *abi.PersistentVolumeClaim, pod string) *blockage {
	return &blockage{ReasonClaimNeedsRecreation, "claim " + c.Metadata.Name + " is not compatible with template " + t.Metadata.Name +
		" and volumeClaimUpdateStrategy is OnDelete, so it is not updated in place; LockStep holds pod " + pod +
		" until it is: delete claim " + c.Metadata.Name + " and pod " + pod + " so they are recreated with the new template, or update the claim by hand"}
}

func deletingBlockage(reason string, c *abi.PersistentVolumeClaim, pod string) *blockage {
	return &blockage{reason, "claim " + c.Metadata.Name + " is being deleted and waits for pod " + pod +
		", which uses it: delete pod " + pod + " so that both are recreated with the new template"}
}
