// Package actions checks the actions a module returns and carries them out.
//
// Validate refuses anything the module's manifest does not allow, anything
// aimed at an object the module was not shown, and malformed payloads. The
// Executor then writes, in order, with the UID and resourceVersion the module
// saw as preconditions, sends nothing when the object already matches, stops
// at the first conflict or failure so that the subject is reconciled again on
// fresh state, and in shadow mode writes nothing at all.
//
// The package reaches the cluster only through the Cluster and VolumeDeleter
// interfaces: the live host backs them with client-go and a CSI client,
// memcluster with memory. It may import abi and apimachinery (API errors,
// patch types, validation); it must not import client-go, wazero, the
// runtime, snapshot or controller packages.
package actions
