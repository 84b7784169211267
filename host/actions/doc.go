// Package actions checks the actions a module returns and carries them out.
//
// Validate refuses anything the module's manifest does not allow, anything
// aimed at an object the module was not shown, malformed payloads, and owner
// references to anything but the subject StatefulSet and its pods
// (host/internal/ownerref, the rule admission holds admit patches to). The
// Executor then writes, in order, with the UID and resourceVersion the module
// saw as preconditions, sends nothing when the object already matches, writes
// each object's owner-reference and finalizer changes once per run of such
// actions, stops at the first refusal, conflict or failure so that the subject
// is reconciled again on fresh state, and in shadow mode writes nothing at
// all. Whatever a module asks, it keeps the host's own rules for what cannot
// be undone: a backing volume is deleted only when its own read of the volume
// and its claim says external-provisioner would, with the secret it resolves
// itself, and no reference is added to an owner being deleted with orphan
// propagation.
//
// The package reaches the cluster only through the Cluster and VolumeDeleter
// interfaces: the live host backs them with client-go and a CSI client,
// memcluster with memory. It may import abi, apimachinery (API errors, patch
// types, validation), the owner-reference rule it shares with admission
// (host/internal/ownerref), and csi-translation-lib with the core API types
// it translates, to delete an in-tree volume migrated to CSI as
// external-provisioner does; it must not import client-go, wazero, the
// runtime, snapshot or controller packages.
package actions
