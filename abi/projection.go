package abi

import (
	"fmt"
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
// Since ABI 1.5 a step may say in brackets which part of its field to keep
// (ParseFieldPath): one key of a map, "metadata.labels[app]"; or the
// elements of a list of objects whose string field has a value,
// "status.conditions[type=Ready]", which keeps those elements whole, or,
// with a path below it, "status.conditions[type=Ready].status", that field
// and the one filtered on. Paths naming other keys of the map, or other
// values of the field, keep those too; a path through the list without a
// filter keeps every element.
//
// Omit, with no Fields, says the module reads no object of Kind at all: the
// request then carries none, not even their identity. The subject's own
// kind cannot be omitted.
//
//	{kind: Pod, fields: [metadata.labels, status.conditions]}
//	{kind: Pod, fields: ["metadata.labels[controller-revision-hash]", "status.conditions[type=Ready].status"]}
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
	// MaxFieldPathLength is the longest field path, in bytes. It was 128
	// before ABI 1.5, when no path had brackets (the longest field path is
	// 66 bytes); a key or filter value may be as long as a Kubernetes
	// qualified name, a 253-byte DNS prefix, "/" and a 63-byte name (317
	// bytes), and the longest field with one under it makes that 365.
	MaxFieldPathLength = 512
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

// shape is what a field of a wire type holds, as far as a field path
// cares: what it may name under the field, or in brackets after it.
type shape uint8

const (
	// shapeScalar is a leaf brackets cannot select in: a number, a bool, a
	// pointer to a string or number, a list of strings.
	shapeScalar shape = iota
	// shapeString is a string: what a list filter compares.
	shapeString
	// shapeMap is a map of strings: a key in brackets keeps one of its keys.
	shapeMap
	// shapeStruct is an object, or a pointer to one: its fields are named
	// after a dot.
	shapeStruct
	// shapeList is a list of objects: a filter in brackets keeps some of
	// its elements, and a dot names a field of each.
	shapeList
)

func (s shape) String() string {
	return [...]string{"scalar", "string", "map", "object", "list of objects"}[s]
}

// projectionField is one field of a wire type: its JSON name, its shape
// and, for an object or a list of objects, its fields. The tables below
// mirror the wire types of objects.go (a test holds them to the types'
// JSON tags and Go types).
type projectionField struct {
	name  string
	shape shape
	sub   []projectionField
}

// The tables are built of lists of fields: obj is an object field and list
// a list-of-objects field, with the fields their lists name; strs, dicts
// and scalars are leaf fields of one shape.
func obj(name string, sub ...[]projectionField) []projectionField {
	return []projectionField{{name, shapeStruct, join(sub...)}}
}

func list(name string, sub ...[]projectionField) []projectionField {
	return []projectionField{{name, shapeList, join(sub...)}}
}

func strs(names ...string) []projectionField    { return leaves(shapeString, names) }
func dicts(names ...string) []projectionField   { return leaves(shapeMap, names) }
func scalars(names ...string) []projectionField { return leaves(shapeScalar, names) }

func leaves(s shape, names []string) []projectionField {
	fs := make([]projectionField, len(names))
	for i, n := range names {
		fs[i] = projectionField{name: n, shape: s}
	}
	return fs
}

// join concatenates lists of fields, in order.
func join(lists ...[]projectionField) []projectionField {
	var fs []projectionField
	for _, l := range lists {
		fs = append(fs, l...)
	}
	return fs
}

var (
	fieldsOwnerReference = join(strs("apiVersion", "kind", "name", "uid"), scalars("controller", "blockOwnerDeletion"))
	fieldsObjectMeta     = join(strs("name", "namespace", "uid", "resourceVersion"), scalars("generation"), dicts("labels", "annotations"),
		list("ownerReferences", fieldsOwnerReference), scalars("finalizers"), strs("creationTimestamp", "deletionTimestamp"))
	fieldsCondition = join(strs("type", "status", "reason", "message", "lastTransitionTime"), scalars("observedGeneration"))
	fieldsClaim     = join(
		obj("metadata", fieldsObjectMeta),
		obj("spec", scalars("accessModes"), obj("resources", dicts("requests", "limits")), scalars("storageClassName"),
			strs("volumeName", "volumeMode"), scalars("volumeAttributesClassName")),
		obj("status", strs("phase"), scalars("accessModes"), dicts("capacity"), list("conditions", fieldsCondition),
			dicts("allocatedResources", "allocatedResourceStatuses"), scalars("currentVolumeAttributesClassName")),
	)
	fieldsStatefulSet = join(
		obj("metadata", fieldsObjectMeta),
		obj("spec", scalars("replicas"), obj("ordinals", scalars("start")), dicts("selector"), strs("serviceName", "podManagementPolicy"),
			obj("updateStrategy", strs("type"), obj("rollingUpdate", scalars("partition"), strs("maxUnavailable"))),
			list("volumeClaimTemplates", fieldsClaim),
			obj("persistentVolumeClaimRetentionPolicy", strs("whenDeleted", "whenScaled")),
			scalars("revisionHistoryLimit", "minReadySeconds")),
		obj("status", scalars("observedGeneration", "replicas", "readyReplicas", "currentReplicas", "updatedReplicas",
			"availableReplicas"), strs("currentRevision", "updateRevision")),
	)
	fieldsPod = join(
		obj("metadata", fieldsObjectMeta),
		obj("spec", strs("nodeName"), list("volumes", strs("name", "claimName"))),
		obj("status", strs("phase"), list("conditions", fieldsCondition)),
	)
	fieldsVolume = join(
		obj("metadata", fieldsObjectMeta),
		obj("spec", dicts("capacity"), scalars("accessModes"),
			obj("claimRef", strs("apiVersion", "kind", "namespace", "name", "uid", "resourceVersion")),
			strs("persistentVolumeReclaimPolicy", "storageClassName", "volumeMode"), scalars("volumeAttributesClassName"), strs("source"),
			obj("csi", strs("driver", "volumeHandle", "fsType"), scalars("readOnly"), dicts("volumeAttributes"),
				obj("controllerExpandSecretRef", strs("namespace", "name")))),
		obj("status", strs("phase", "reason", "message")),
	)
	fieldsStorageClass = join(obj("metadata", fieldsObjectMeta),
		strs("provisioner"), dicts("parameters"), strs("reclaimPolicy", "volumeBindingMode"), scalars("allowVolumeExpansion"))
	fieldsClaimUpdate = join(
		obj("metadata", fieldsObjectMeta),
		obj("spec", strs("statefulSetName"), list("volumeClaimTemplates", fieldsClaim), strs("volumeClaimUpdateStrategy", "volumeClaimSyncStrategy")),
		obj("status", scalars("observedGeneration"),
			list("volumeClaimTemplates", strs("templateName"), scalars("compatibleReplicas", "updatingReplicas", "overSizedReplicas"), dicts("totalCapacity")),
			list("conditions", fieldsCondition), scalars("heldPartition", "userPartition")),
	)
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

// checkFieldPath says why steps, a parsed field path, are not a field path
// of kind: where the path goes wrong and what is there instead. It returns
// "" when they are one.
func checkFieldPath(kind string, steps []FieldStep) string {
	fs := projectionKinds[kind]
	at := kind
	for i, step := range steps {
		var f *projectionField
		for k := range fs {
			if fs[k].name == step.Name {
				f = &fs[k]
				break
			}
		}
		if f == nil {
			if len(fs) == 0 {
				return at + " has no fields under it (name fields with their JSON names, joined by dots)"
			}
			names := make([]string, len(fs))
			for k := range fs {
				names[k] = fs[k].name
			}
			return fmt.Sprintf("%s has no field %q (it has %s)", at, step.Name, strings.Join(names, ", "))
		}
		where := JoinFieldPath(append(steps[:i:i], FieldStep{Name: step.Name}))
		switch {
		case step.Key != "" && f.shape == shapeList:
			return fmt.Sprintf("%s is a list of objects: filter its elements with [field=value], e.g. %s[%s=...]", where, where, firstString(f.sub))
		case step.Key != "" && f.shape != shapeMap:
			return fmt.Sprintf("%s is not a map: only a map's key can be named in brackets (metadata.labels[app])", where)
		case step.Key != "" && i < len(steps)-1:
			return fmt.Sprintf("%s is a string: nothing is under it", JoinFieldPath(steps[:i+1]))
		case step.Match != "" && f.shape == shapeMap:
			return fmt.Sprintf("%s is a map: name one of its keys, %s[key] (a key has no \"=\")", where, where)
		case step.Match != "" && f.shape != shapeList:
			return fmt.Sprintf("%s is not a list of objects: only a list's elements can be filtered (status.conditions[type=Ready])", where)
		case step.Match != "":
			var texts []string
			found := false
			for _, e := range f.sub {
				if e.shape == shapeString {
					texts = append(texts, e.name)
					found = found || e.name == step.Match
				}
			}
			if len(texts) == 0 {
				return fmt.Sprintf("the elements of %s have no string field of their own to filter on: keep the fields of every element", where)
			}
			if !found {
				return fmt.Sprintf("the elements of %s have no string field %q to filter on (they have %s)", where, step.Match, strings.Join(texts, ", "))
			}
		}
		fs = f.sub
		at = JoinFieldPath(steps[:i+1])
	}
	return ""
}

// firstString is the name of the first string field of fs, what an error
// gives as an example of a filter.
func firstString(fs []projectionField) string {
	for _, f := range fs {
		if f.shape == shapeString {
			return f.name
		}
	}
	return "field"
}

// covers reports whether path a keeps all of path b, both parsed: a is no
// longer, and each of its steps names b's field there and keeps all of it
// or the same part (metadata.labels covers metadata.labels[app];
// status.conditions covers status.conditions[type=Ready].status).
func covers(a, b []FieldStep) bool {
	if len(a) > len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Selects() && a[i] != b[i] {
			return false
		}
	}
	return true
}

// filtersDiffer reports whether paths a and b may reach one list and filter
// it on different fields (status.conditions[type=Ready] and
// status.conditions[status=True]), and the step where they do: each list
// is filtered on one field, so that what an element keeps depends on the
// value of that one field.
func filtersDiffer(a, b []FieldStep) (int, bool) {
	for i := range min(len(a), len(b)) {
		x, y := a[i], b[i]
		switch {
		case x.Name != y.Name:
			return 0, false
		case x.Match != "" && y.Match != "" && x.Match != y.Match:
			return i, true
		case x.Selects() && y.Selects() && x != y:
			return 0, false // different keys, or elements with different values
		}
	}
	return 0, false
}
