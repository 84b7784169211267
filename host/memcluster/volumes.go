package memcluster

import (
	"context"
	"fmt"

	"github.com/kubeplug/kubeplug/abi"
)

// VolumeDelete is one backing volume deleted through DeleteVolume.
type VolumeDelete struct {
	Driver       string
	VolumeHandle string
	// Secrets is the secret reference of the first call for the volume.
	Secrets *abi.SecretReference
}

// Configured implements actions.VolumeDeleter: it reports whether driver is
// one of Config.Drivers.
func (c *Cluster) Configured(driver string) bool {
	return c.drivers[driver]
}

// DeleteVolume implements actions.VolumeDeleter by recording the call.
// Deleting a volume again succeeds, as CSI requires, and is recorded once.
// A driver the cluster was not configured with fails with
// ErrDriverNotConfigured.
func (c *Cluster) DeleteVolume(ctx context.Context, driver, handle string, secrets *abi.SecretReference) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !c.drivers[driver] {
		return fmt.Errorf("delete volume %q: %w: %q", handle, ErrDriverNotConfigured, driver)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.deletes {
		if d.Driver == driver && d.VolumeHandle == handle {
			return nil
		}
	}
	var s *abi.SecretReference
	if secrets != nil {
		cp := *secrets
		s = &cp
	}
	c.deletes = append(c.deletes, VolumeDelete{Driver: driver, VolumeHandle: handle, Secrets: s})
	return nil
}

// VolumeDeletes returns the volumes deleted so far, in call order.
func (c *Cluster) VolumeDeletes() []VolumeDelete {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]VolumeDelete, len(c.deletes))
	for i, d := range c.deletes {
		out[i] = d
		if d.Secrets != nil {
			s := *d.Secrets
			out[i].Secrets = &s
		}
	}
	return out
}
