package abi

import (
	"strings"
)

//msgp:tag json
//msgp:clearomitted
//msgp:ignore projectionField

// ObjectFields is what a module reads of one kind of object (ABI 1.3): a
// Manifest.Projection entry. The host sends every object of Kind in a
// reconcile request with only Fields and the identity fields
// (IdentityFields) set; the others are absent, as if empty.
//
// A field path is the fields' JSON names joined by dots, from the object
// down: "metadata.labels", "status.conditions",
// "spec.volumeClaimTemplates.spec.resources". A path keeps the field it
// names whole, everything under it included; through a list it names that
// field of every element. A kind that has no entry is sent whole, and so is
// every object of a module that declares no projection.
//
// Omit, with no Fields, says the module reads no object of Kind at all: the
// request then carries none, not even their identity. The subject's own
// kind cannot be omitted.
//
//	{kind: Pod, fields: [metadata.labels, status.conditions]}
//	{kind: StorageClass, omit: true}
type ObjectFields struct {
	Kind   string   `json:"kind"`
	Fields []string `json:"fields,omitempty"`
	Omit   bool     `json:"omit,omitempty"`
}

// Budgets of a projection, checked before its paths are read.
const (
	// MaxProjectionFields is how many field paths a projection may list, all
	// kinds together.
	MaxProjectionFields = 256
	// MaxFieldPathLength is the longest field path, in bytes.
	MaxFieldPathLength = 128
)

// ProjectionMinMinor is the ABI minor version that introduced
// Manifest.Projection: a module built for an older minor cannot declare one.
const ProjectionMinMinor = 3

// IdentityFields are the fields of every object the host sends whatever a
// projection says: what a module needs to name an object in an action's
// target, and what the host's preconditions rest on.
func IdentityFields() []string {
	return []string{"metadata.name", "metadata.namespace", "metadata.uid", "metadata.resourceVersion"}
}

// projectionField is one field of a wire type: its JSON name and, for a
// struct or a list of structs, its fields. The tables below mirror the wire
// types of objects.go (a test holds them to the types' JSON tags).
type projectionField struct {
	name string
	sub  []projectionField
}

func pf(name string, sub ...projectionField) projectionField {
	return projectionField{name, sub}
}

func leaves(names ...string) []projectionField {
	fs := make([]projectionField, len(names))
	for i, n := range names {
		fs[i] = projectionField{name: n}
	}
	return fs
}

var (
	fieldsOwnerReference = leaves("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")
	fieldsObjectMeta     = append(leaves("name", "namespace", "uid", "resourceVersion", "generation", "labels", "annotations"),
		pf("ownerReferences", fieldsOwnerReference...), pf("finalizers"), pf("creationTimestamp"), pf("deletionTimestamp"))
	fieldsCondition = leaves("type", "status", "reason", "message", "lastTransitionTime", "observedGeneration")
	fieldsClaim     = []projectionField{
		pf("metadata", fieldsObjectMeta...),
		pf("spec", pf("accessModes"), pf("resources", leaves("requests", "limits")...), pf("storageClassName"),
			pf("volumeName"), pf("volumeMode"), pf("volumeAttributesClassName")),
		pf("status", pf("phase"), pf("accessModes"), pf("capacity"), pf("conditions", fieldsCondition...),
			pf("allocatedResources"), pf("allocatedResourceStatuses"), pf("currentVolumeAttributesClassName")),
	}
	fieldsStatefulSet = []projectionField{
		pf("metadata", fieldsObjectMeta...),
		pf("spec", pf("replicas"), pf("ordinals", pf("start")), pf("selector"), pf("serviceName"), pf("podManagementPolicy"),
			pf("updateStrategy", pf("type"), pf("rollingUpdate", leaves("partition", "maxUnavailable")...)),
			pf("volumeClaimTemplates", fieldsClaim...),
			pf("persistentVolumeClaimRetentionPolicy", leaves("whenDeleted", "whenScaled")...),
			pf("revisionHistoryLimit"), pf("minReadySeconds")),
		pf("status", leaves("observedGeneration", "replicas", "readyReplicas", "currentReplicas", "updatedReplicas",
			"availableReplicas", "currentRevision", "updateRevision")...),
	}
	fieldsPod = []projectionField{
		pf("metadata", fieldsObjectMeta...),
		pf("spec", pf("nodeName"), pf("volumes", leaves("name", "claimName")...)),
		pf("status", pf("phase"), pf("conditions", fieldsCondition...)),
	}
	fieldsVolume = []projectionField{
		pf("metadata", fieldsObjectMeta...),
		pf("spec", pf("capacity"), pf("accessModes"),
			pf("claimRef", leaves("apiVersion", "kind", "namespace", "name", "uid", "resourceVersion")...),
			pf("persistentVolumeReclaimPolicy"), pf("storageClassName"), pf("volumeMode"), pf("volumeAttributesClassName"),
			pf("source"), pf("csi", pf("driver"), pf("volumeHandle"), pf("fsType"), pf("readOnly"), pf("volumeAttributes"),
				pf("controllerExpandSecretRef", leaves("namespace", "name")...))),
		pf("status", leaves("phase", "reason", "message")...),
	}
	fieldsStorageClass = append([]projectionField{pf("metadata", fieldsObjectMeta...)},
		leaves("provisioner", "parameters", "reclaimPolicy", "volumeBindingMode", "allowVolumeExpansion")...)
	fieldsClaimUpdate = []projectionField{
		pf("metadata", fieldsObjectMeta...),
		pf("spec", pf("statefulSetName"), pf("volumeClaimTemplates", fieldsClaim...), pf("volumeClaimUpdateStrategy"),
			pf("volumeClaimSyncStrategy")),
		pf("status", pf("observedGeneration"),
			pf("volumeClaimTemplates", leaves("templateName", "compatibleReplicas", "updatingReplicas", "overSizedReplicas", "totalCapacity")...),
			pf("conditions", fieldsCondition...), pf("heldPartition"), pf("userPartition")),
	}
)

// projectionKinds maps each kind a reconcile request carries to its fields.
var projectionKinds = map[string][]projectionField{
	KindStatefulSet:           fieldsStatefulSet,
	KindPod:                   fieldsPod,
	KindPersistentVolumeClaim: fieldsClaim,
	KindPersistentVolume:      fieldsVolume,
	KindStorageClass:          fieldsStorageClass,
	KindVolumeClaimUpdate:     fieldsClaimUpdate,
}

// FieldPaths returns every field path of kind a projection may name, in
// the wire type's order; nil for a kind a request does not carry.
func FieldPaths(kind string) []string {
	fs, ok := projectionKinds[kind]
	if !ok {
		return nil
	}
	var paths []string
	var walk func(prefix string, fs []projectionField)
	walk = func(prefix string, fs []projectionField) {
		for _, f := range fs {
			paths = append(paths, prefix+f.name)
			walk(prefix+f.name+".", f.sub)
		}
	}
	walk("", fs)
	return paths
}

// checkFieldPath reports why path is not a field path of kind: at is where
// the path goes wrong (the kind, or the field path above the step), step is
// the name it finds no field for there, and fields the names there are. ok
// is true when path is a field path of kind.
func checkFieldPath(kind, path string) (at, step string, fields []string, ok bool) {
	fs := projectionKinds[kind]
	at = kind
	for i, step := range strings.Split(path, ".") {
		found := false
		for _, f := range fs {
			if f.name == step {
				fs, found = f.sub, true
				break
			}
		}
		if !found {
			for _, f := range fs {
				fields = append(fields, f.name)
			}
			return at, step, fields, false
		}
		if i == 0 {
			at = step
		} else {
			at += "." + step
		}
	}
	return "", "", nil, true
}

// covers reports whether path a keeps path b: they are equal, or b lies
// under a.
func covers(a, b string) bool {
	return a == b || strings.HasPrefix(b, a) && b[len(a)] == '.'
}
