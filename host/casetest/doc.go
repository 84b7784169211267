// Package casetest runs the case files of `kubeplug test`: hand-written or
// recorded cluster states, the configuration of a module, and what the
// cluster must look like after the module has reconciled them.
//
// A case file is YAML with one case per document:
//
//	name: scale-down gives the condemned pod's claim to the pod
//	now: 2026-01-01T00:00:00Z   # optional: the clock modules see (default DefaultNow)
//	config: {}                  # optional: the module's configuration
//	objects:                    # full Kubernetes objects, as `kubectl get -o yaml` shows them
//	- {apiVersion: apps/v1, kind: StatefulSet, metadata: {...}, spec: {...}}
//	steps:                      # optional: actions between rounds (steps.go)
//	- scale: {statefulSet: web, replicas: 1}
//	- statefulSetController: {statefulSet: web}
//	expect:
//	  present: [...]            # objects that must exist and match
//	  absent: [...]             # {apiVersion, kind, namespace, name} that must not exist
//	  volumeDeletes: [...]      # {driver, volumeHandle} deleted through CSI
//	  events: [...]             # {type, reason, message, involvedObject: {kind, namespace, name}}
//	  noActions: true           # the module returned no action in any round
//
// Objects may be StatefulSet (apps/v1), Pod, PersistentVolumeClaim and
// PersistentVolume (v1), StorageClass (storage.k8s.io/v1) and
// VolumeClaimUpdate (kubeplug.dev/v1alpha1). Each needs apiVersion, kind and
// metadata.name; a namespaced object without metadata.namespace is in
// "default", as kubectl would put it. Unknown fields, kinds and malformed
// YAML are input errors that name the file and line (*InputError).
//
// Run loads a case's objects into a fresh memcluster whose CSI drivers are
// those the case's PersistentVolumes name, then reconciles every object of
// the module's subject kind, in key order, through controller.Reconcile (the
// reconcile of the live host: namespaces, selector, snapshot, module,
// executor, events and metrics), round after round until a round changes
// nothing (no object written, no volume deleted, no new event, no conflict
// to retry), at most MaxRounds rounds. Then it checks the expectations:
//
//   - maps match by subset: every key of the expected map must match;
//   - lists must have the same length, and their elements match one-to-one
//     in any order, each by subset;
//   - scalars are equal after the JSON normalisation of YAML values, so 1
//     and 1.0 are equal but 1 and "1" are not;
//   - an expected empty list or map matches a missing field, and null
//     matches only a missing or null field.
//
// A case's steps are what users and other controllers do between the host's
// rounds: once the rounds settle, the next step's writes are made (without
// preconditions, as their actors make them) and the rounds settle again, at
// most MaxRounds after each step. A step is a mapping with one action:
//
//	scale: {statefulSet, namespace, replicas}   a user sets spec.replicas
//	delete: {kind, namespace, name}             a user or controller deletes an object
//	create: OBJECT                              an object is created (its own uid)
//	patch: {kind, namespace, name, patch}       a JSON merge patch (.status to the subresource)
//	statefulSetController: {statefulSet, namespace}
//	                                            kube-controller-manager's StatefulSet sync: claims
//	                                            then pods for ordinals below replicas, pods at or
//	                                            above deleted, highest first
//	garbageCollector: {}                        objects none of whose owners exists are deleted
//	releaseVolumes: {}                          Bound PVs whose claim is gone become Released
//	resizeVolumes: {}                           a Bound claim's capacity grows to its request
//
// A controller's step decides its writes on the state it starts from
// (Step.Writes), so that `kubeplug check` (package check) can interleave the
// host with them. Run and package check share Session: the cluster, the host
// on it, and its rounds (Resume starts one on a state a run reached).
//
// casetest imports the host's controller, memcluster, metrics and actions
// packages and abi: it runs the live host's pipeline on an in-memory cluster.
// It must not load modules itself (a controller.Guest is given to Run) nor
// import anything that talks to a real cluster.
package casetest
