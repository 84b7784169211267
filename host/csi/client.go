package csi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/config"
)

// SecretGetter returns the data of the named Secret, decoded. The host reads
// Secrets through client-go; tests use a map.
type SecretGetter func(ctx context.Context, namespace, name string) (map[string]string, error)

// Client deletes volumes through the controller services of a fixed set of
// CSI drivers. It is safe for concurrent use.
type Client struct {
	secrets SecretGetter
	drivers map[string]*driver
	names   []string // sorted
}

// New returns a client for drivers, which connects to each on first use.
// A driver's zero Timeout means config.DefaultCSITimeout. A nil log
// discards.
func New(drivers []config.CSIDriver, secrets SecretGetter, log *slog.Logger) (*Client, error) {
	if secrets == nil {
		return nil, errors.New("csi.New: nil SecretGetter; pass one that reads Secrets from the cluster")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Client{secrets: secrets, drivers: make(map[string]*driver, len(drivers))}
	for i, d := range drivers {
		switch {
		case d.Name == "":
			return nil, fmt.Errorf("%w: driver %d has no name", ErrInvalidDriver, i)
		case c.drivers[d.Name] != nil:
			return nil, fmt.Errorf("%w: %q is listed twice; keep one", ErrInvalidDriver, d.Name)
		case !filepath.IsAbs(d.Endpoint):
			return nil, fmt.Errorf("%w: %q: endpoint %q is not an absolute socket path", ErrInvalidDriver, d.Name, d.Endpoint)
		case d.Timeout < 0:
			return nil, fmt.Errorf("%w: %q: negative timeout %s", ErrInvalidDriver, d.Name, d.Timeout)
		}
		if d.Timeout == 0 {
			d.Timeout = config.DefaultCSITimeout
		}
		c.drivers[d.Name] = &driver{CSIDriver: d, log: log.With("driver", d.Name)}
		c.names = append(c.names, d.Name)
	}
	slices.Sort(c.names)
	return c, nil
}

// Configured reports whether driver is one of the client's drivers.
func (c *Client) Configured(driver string) bool {
	return c.drivers[driver] != nil
}

// Drivers returns the names of the client's drivers, sorted.
func (c *Client) Drivers() []string {
	return slices.Clone(c.names)
}

// DeleteVolume deletes the volume with handle through driver's controller,
// passing the data of the Secret ref names (if ref is not nil; none if it
// cannot be read, as external-provisioner does). A volume that is already
// gone counts as deleted. Errors from the driver wrap ErrCall and
// the gRPC status, so status.Code(err) gives the driver's code.
func (c *Client) DeleteVolume(ctx context.Context, driver, handle string, ref *abi.SecretReference) error {
	d := c.drivers[driver]
	switch {
	case d == nil:
		return fmt.Errorf("delete volume %q: %w: %q is not one of the host's CSI drivers (%s); add it under csiDrivers: in the host configuration",
			handle, ErrDriverNotConfigured, driver, c.list())
	case handle == "":
		return fmt.Errorf("delete volume through CSI driver %q: %w", driver, ErrEmptyHandle)
	}
	var secrets map[string]string
	if ref != nil {
		s, err := c.secrets(ctx, ref.Namespace, ref.Name)
		if err != nil {
			// As external-provisioner does: the Secret may have been
			// deleted since the volume was provisioned, and a driver that
			// needs it refuses the call, which then fails and is retried.
			d.log.Error("cannot read the deletion secret; deleting without secrets, as external-provisioner does. Check that the Secret exists and that the host may get it",
				"volumeHandle", handle, "secret", ref.Namespace+"/"+ref.Name, "err", err)
		} else {
			secrets = s
		}
	}
	if err := d.deleteVolume(ctx, handle, secrets); err != nil {
		return fmt.Errorf("delete volume %q through CSI driver %q: %w", handle, driver, err)
	}
	return nil
}

// Probe asks driver what its first DeleteVolume would: whether it answers
// on its socket (GetPluginInfo), is the driver configured there, and can
// delete volumes (ControllerGetCapabilities). It asks each time, so that a
// driver that went away since it last passed is found; one that passes is
// ready for DeleteVolume without being asked again. The host probes its
// drivers from its start, so that one that does not answer shows before a
// volume waits on it.
func (c *Client) Probe(ctx context.Context, driver string) error {
	d := c.drivers[driver]
	if d == nil {
		return fmt.Errorf("probe CSI driver %q: %w: it is not one of the host's CSI drivers (%s); add it under csiDrivers: in the host configuration",
			driver, ErrDriverNotConfigured, c.list())
	}
	if err := d.probe(ctx); err != nil {
		return fmt.Errorf("CSI driver %q: %w", driver, err)
	}
	return nil
}

// list names the drivers for an error message.
func (c *Client) list() string {
	if len(c.names) == 0 {
		return "it has none"
	}
	return strings.Join(c.names, ", ")
}

// Close closes the connections to the drivers. Calls in flight fail with
// codes.Canceled; later calls fail with ErrClosed.
func (c *Client) Close() error {
	var errs []error
	for _, name := range c.names {
		if err := c.drivers[name].close(); err != nil {
			errs = append(errs, fmt.Errorf("close connection to CSI driver %q: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
