// Package csi is the host's CSI client: it deletes backing volumes through
// the controller service of the CSI drivers the host is configured with, for
// the executor's deleteVolume action (Client implements
// actions.VolumeDeleter).
//
// Each driver is reached over gRPC on its controller's unix socket. The
// connection is made on the first call and kept until the driver is found
// unreachable; before the first DeleteVolume on a connection the client asks
// the driver its name (GetPluginInfo) and its controller capabilities, so
// that a socket pointing at the wrong driver, or at one that cannot delete
// volumes, is refused rather than sent deletes. Probe asks the same at any
// time: the host probes its drivers from its start.
// Every call is bounded by the driver's configured timeout. A volume that is
// already gone counts as deleted, as the CSI specification makes DeleteVolume
// idempotent.
//
// The deletion secret, which the executor resolves from the volume and its
// StorageClass, is read through a SecretGetter, so this package needs no
// Kubernetes client. One that cannot be read is not passed, and the call
// goes ahead, as external-provisioner's does.
//
// It imports the standard library, the CSI spec's Go bindings, gRPC, abi and
// host/config (for CSIDriver). It must not import client-go or any other host
// package.
package csi
