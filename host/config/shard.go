package config

import (
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeplug/kubeplug/host/internal/input"
)

// Shard is the part of a cluster one host watches, when several hosts split
// a cluster between them (each with its own leader election Lease). It
// restricts the host's informer caches, not only its modules' subjects: a
// host holds in memory, and lists and watches, only its shard.
//
// It applies to the namespaced kinds the host caches (StatefulSets, Pods,
// PersistentVolumeClaims, VolumeClaimUpdates). PersistentVolumes and
// StorageClasses are cluster-scoped and carry no shard's labels: every
// shard caches them whole, so a persistentvolume module belongs in one
// shard only.
type Shard struct {
	// LabelSelector, when not nil, keeps only the namespaced objects whose
	// labels match: a StatefulSet's selector labels must then be on the
	// set, its pod template and its claim templates, so that its pods and
	// claims are in the same shard.
	LabelSelector labels.Selector
	// Namespace, when not empty, keeps only the objects of this namespace.
	Namespace string
}

var shardFields = []string{"labelSelector", "namespace"}

// shard converts the shard: mapping.
func (p *parser) shard(n *yaml.Node, field string) Shard {
	var s Shard
	vals, ok := p.fields(n, field, "a mapping with labelSelector and/or namespace", shardFields...)
	if !ok {
		return s
	}
	if v, ok := vals["labelSelector"]; ok {
		s.LabelSelector = p.selector(v, join(field, "labelSelector"))
	}
	if v, ok := vals["namespace"]; ok {
		if ns, ok := p.scalar(v, join(field, "namespace"), "team-a"); ok {
			if !isLabel(ns) {
				p.addf(v, join(field, "namespace"), "%s is not a namespace name (%s)", input.Quote(ns), labelRule)
			} else {
				s.Namespace = ns
			}
		}
	}
	return s
}
