package rbac

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubeplug/kubeplug/abi"
)

// Module is what Derive needs of one module entry, its manifest loaded and
// checked against the entry.
type Module struct {
	// Name is the entry's name, for messages.
	Name string
	// Subject is the manifest's subject: abi.SubjectStatefulSet or
	// abi.SubjectPersistentVolume; empty with Watches.
	Subject string
	// Watches is the manifest's declaration of its subject and related
	// objects (ABI 1.6), in place of Subject.
	Watches *abi.Watches
	// Hooks are the manifest's hooks (abi.HookReconcile, abi.HookAdmit).
	Hooks []string
	// Namespaces limits the module to subjects in these namespaces; empty
	// is all.
	Namespaces []string
	// Granted are the capabilities the host lets the module use
	// (config.Module.Grant).
	Granted []abi.Capability
	// Shadow is true for a module in shadow mode: the host carries out
	// none of its actions and records nothing in the cluster.
	Shadow bool
}

// Ref names a namespaced object.
type Ref struct{ Namespace, Name string }

// String is NAMESPACE/NAME.
func (r Ref) String() string { return r.Namespace + "/" + r.Name }

// Host is what Derive needs of the host's configuration and command line.
type Host struct {
	Modules []Module
	// CSIDrivers is true when the configuration names CSI drivers the
	// host deletes backing volumes through.
	CSIDrivers bool
	// ShardNamespace, when set, is the one namespace the host's namespaced
	// informers watch (host.yaml's shard.namespace).
	ShardNamespace string
	// PodNamespace is the namespace of the host's Pod, where its own
	// Warning events go (POD_NAMESPACE).
	PodNamespace string
	// Lease is the leader Lease (--leader-elect); nil without leader
	// election.
	Lease *Ref
	// WebhookCertSecret is the Secret the host keeps its webhook CA and
	// serving certificate in (--webhook-cert-secret); nil when it keeps
	// none.
	WebhookCertSecret *Ref
	// WebhookConfigs names the webhook configurations whose caBundle the
	// host keeps current (with WebhookCertSecret).
	WebhookConfigs WebhookConfigs
}

// WebhookConfigs names a host's webhook configurations.
type WebhookConfigs struct {
	Mutating, Validating string
}

// Rules is a derived rule set: the rules of one ClusterRole, and of one
// Role in each namespace. No namespaced rule repeats what a cluster rule
// grants.
type Rules struct {
	Cluster    []rbacv1.PolicyRule
	Namespaced map[string][]rbacv1.PolicyRule
}

// grant is one verb on one resource (with its subresource, as RBAC writes
// it: "volumeclaimupdates/status"), in one namespace ("" is cluster-wide),
// on one object name ("" is any).
type grant struct {
	namespace, group, resource, name string
}

type builder struct {
	verbs map[grant]map[string]bool
}

// add grants verbs on resource of group, in each of namespaces (nil or
// empty: cluster-wide), on name ("" any).
func (b *builder) add(namespaces []string, group, resource, name string, verbs ...string) {
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	for _, ns := range namespaces {
		g := grant{ns, group, resource, name}
		if b.verbs[g] == nil {
			b.verbs[g] = map[string]bool{}
		}
		for _, v := range verbs {
			b.verbs[g][v] = true
		}
	}
}

// addKind is add for a kind of abi.Kinds(): namespaces apply only to a
// namespaced kind; a cluster-scoped kind is granted cluster-wide.
func (b *builder) addKind(namespaces []string, kind, subresource string, verbs ...string) {
	info := abi.KindOf(kind)
	group, _, _ := strings.Cut(info.APIVersion, "/")
	if !strings.Contains(info.APIVersion, "/") {
		group = ""
	}
	r := info.Resource
	if subresource != "" {
		r += "/" + subresource
	}
	if !info.Namespaced {
		namespaces = nil
	}
	b.add(namespaces, group, r, "", verbs...)
}

// inputKinds are the kinds a reconcile input of subject holds (abi's
// subject descriptor: its own kind and the related ones): the only objects
// an action may target (actions.Validate).
func inputKinds(subject string) ([]string, bool) {
	info, ok := abi.Subject(subject).Info()
	return append([]string{info.Kind}, info.Related...), ok
}

// kindOf returns the kind whose resource is r.
func kindOf(r string) (string, bool) {
	for k, info := range abi.Kinds() {
		if info.Resource == r {
			return k, true
		}
	}
	return "", false
}

// Derive returns the rules h needs. Each rule is there because of a call
// the host makes, named in the comment beside it.
func Derive(h Host) (Rules, error) {
	b := &builder{verbs: map[grant]map[string]bool{}}

	// kube.NewCache: an informer (list, watch) for every kind a reconcile
	// input can hold, whatever the modules, so that a reload may add a
	// module of either subject without a restart. The namespaced kinds
	// are watched in the shard's namespace when it has one.
	var shard []string
	if h.ShardNamespace != "" {
		shard = []string{h.ShardNamespace}
	}
	for _, k := range slices.Sorted(maps.Keys(abi.Kinds())) {
		b.addKind(shard, k, "", "list", "watch")
	}
	// Reloader.event: the host's own Warning events (a module or
	// configuration refused on reload) on its Pod. kube.EventSink creates
	// an event, and patches it when it repeats (client-go's recorder).
	if h.PodNamespace == "" {
		return Rules{}, fmt.Errorf("the host's Pod namespace is empty: give the namespace the host runs in")
	}
	b.add([]string{h.PodNamespace}, "", "events", "", "create", "patch")

	admits, deletesVolumes := false, false
	for _, m := range h.Modules {
		if err := b.module(m); err != nil {
			return Rules{}, err
		}
		if m.Shadow {
			continue
		}
		if b.admission(m) {
			admits = true
		}
		deletesVolumes = deletesVolumes || slices.Contains(m.Hooks, abi.HookReconcile) &&
			slices.ContainsFunc(m.Granted, func(c abi.Capability) bool { return c.Action == abi.ActionDeleteVolume })
	}
	if deletesVolumes && h.CSIDrivers {
		// Executor.checkVolumeDeletion: the volume and its claim read
		// from the API server before DeleteVolume; finishVolumeDeletion
		// reads the volume again. Executor.deletionSecret: the class's
		// parameters, then the Secret they (or the volume's annotations)
		// name, read by kube.SecretGetter for the driver. Which Secret,
		// and in which namespace, is decided by StorageClasses and
		// volumes at deletion time, so the read cannot be limited to
		// names here.
		b.addKind(nil, abi.KindPersistentVolume, "", "get")
		b.addKind(nil, abi.KindPersistentVolumeClaim, "", "get")
		b.addKind(nil, abi.KindStorageClass, "", "get")
		b.add(nil, "", "secrets", "", "get")
	}
	if admits {
		// startWebhook: a namespace informer, for the labels an admit
		// hook's namespaceSelector and input see.
		b.add(nil, "", "namespaces", "", "list", "watch")
	}
	if h.Lease != nil || h.WebhookCertSecret != nil {
		// app.installOwner (kube.InstallOwner): the host's own Pod and
		// its ReplicaSet, read to find the Deployment that owns the
		// Lease and the Secret it makes. The Pod's name is the
		// ReplicaSet's and a suffix, known only at run time.
		b.add([]string{h.PodNamespace}, "", "pods", "", "get")
		b.add([]string{h.PodNamespace}, "apps", "replicasets", "", "get")
	}
	if l := h.Lease; l != nil {
		// client-go's LeaseLock: get and update its Lease by name; create
		// it when absent (create cannot be limited to a name).
		b.add([]string{l.Namespace}, "coordination.k8s.io", "leases", l.Name, "get", "update")
		b.add([]string{l.Namespace}, "coordination.k8s.io", "leases", "", "create")
	}
	if s := h.WebhookCertSecret; s != nil {
		// admission.SecretCerts: read and update its own Secret by
		// name; create it when absent (create cannot be limited to a
		// name, see SECURITY.md).
		b.add([]string{s.Namespace}, "", "secrets", s.Name, "get", "update")
		b.add([]string{s.Namespace}, "", "secrets", "", "create")
		// admission.CABundlePatcher: read and patch the caBundle of the
		// host's own webhook configurations, by name.
		group := "admissionregistration.k8s.io"
		if n := h.WebhookConfigs.Mutating; n != "" {
			b.add(nil, group, "mutatingwebhookconfigurations", n, "get", "patch")
		}
		if n := h.WebhookConfigs.Validating; n != "" {
			b.add(nil, group, "validatingwebhookconfigurations", n, "get", "patch")
		}
	}
	return b.rules(), nil
}

// ModuleRules returns the rules m adds to its host's: what the executor
// does for its granted capabilities and what its admit hook reads, without
// what the host needs whatever its modules (informers on every kind an
// input holds, its own events, Lease and Secret, deleteVolume's reads),
// which Derive adds. kubeplug inspect prints them for what a module asks.
func ModuleRules(m Module) (Rules, error) {
	b := &builder{verbs: map[grant]map[string]bool{}}
	if err := b.module(m); err != nil {
		return Rules{}, err
	}
	if !m.Shadow {
		b.admission(m)
	}
	return b.rules(), nil
}

// admission adds what the webhook reads for m's admit hook and reports
// whether m has one.
func (b *builder) admission(m Module) bool {
	if !slices.Contains(m.Hooks, abi.HookAdmit) {
		return false
	}
	if m.Subject == abi.SubjectStatefulSet {
		// admission.Reviewer.LiveStatefulSet: the set a claim or pod
		// under review belongs to, read from the API server when the
		// host's cache has not got it yet, where the webhook admits
		// (the entry's namespaces).
		b.addKind(m.Namespaces, abi.KindStatefulSet, "", "get")
	}
	return true
}

// module adds what the executor does for m's granted capabilities.
func (b *builder) module(m Module) error {
	if m.Watches != nil {
		return b.declared(m)
	}
	kinds, ok := inputKinds(m.Subject)
	if !ok {
		return fmt.Errorf("module %q: subject %q is not one of %s", m.Name, m.Subject, strings.Join(abi.Subjects(), ", "))
	}
	if m.Shadow || !slices.Contains(m.Hooks, abi.HookReconcile) {
		// Shadow mode executes nothing and records nothing in the
		// cluster (actions.Executor.Shadow); its reads are the
		// informers'. An admit hook writes nothing itself: its patch
		// goes back to the API server in the admission response.
		return nil
	}
	ns := m.Namespaces
	if m.Subject == abi.SubjectPersistentVolume {
		ns = nil
	}
	// Executor.recordRefusal: a Warning event on the subject for every
	// refused action, whatever the module is granted. A
	// PersistentVolume's events, cluster-scoped, go to "default".
	b.addEvents(ns, kinds[0])
	for _, c := range m.Granted {
		targets := c.Resources
		if slices.Contains(targets, "*") {
			targets = nil
			for _, k := range kinds {
				targets = append(targets, abi.KindOf(k).Resource)
			}
		}
		for _, r := range targets {
			kind, ok := kindOf(r)
			if !ok || !slices.Contains(kinds, kind) {
				continue // never an object of the module's input: Validate refuses it
			}
			switch c.Action {
			case abi.ActionUpdateOwnerReferences:
				// Executor.call: a JSON merge patch of
				// metadata.ownerReferences. checkNewOwners: each new
				// owner (the set or one of its pods, in the
				// dependent's namespace) read first.
				b.addKind(ns, kind, "", "patch")
				b.addKind(ns, abi.KindStatefulSet, "", "get")
				b.addKind(ns, abi.KindPod, "", "get")
			case abi.ActionAddFinalizer, abi.ActionRemoveFinalizer:
				// Executor.call: a JSON merge patch of
				// metadata.finalizers.
				b.addKind(ns, kind, "", "patch")
			case abi.ActionDeleteObject:
				// Executor.call: a delete with preconditions.
				b.addKind(ns, kind, "", "delete")
			case abi.ActionApplyClaim:
				// planApplyClaim: a server-side apply, a claim's only.
				if kind == abi.KindPersistentVolumeClaim {
					b.addKind(ns, kind, "", "patch")
				}
			case abi.ActionSetPartition:
				// A merge patch of the set's rollingUpdate.partition.
				if kind == abi.KindStatefulSet {
					b.addKind(ns, kind, "", "patch")
				}
			case abi.ActionUpdateClaimUpdateStatus:
				// planClaimUpdateStatus: a merge patch of the status
				// subresource.
				if kind == abi.KindVolumeClaimUpdate {
					b.addKind(ns, kind, "status", "patch")
				}
			case abi.ActionEvent:
				// Executor.call: an event on the target.
				b.addEvents(ns, kind)
			}
		}
		// deleteVolume's reads are the host's (see Derive): they depend
		// on csiDrivers as well.
	}
	return nil
}

// addEvents grants creating (and patching, for repeats) the events of
// objects of kind in namespaces ns: an event lives in its object's
// namespace, a cluster-scoped object's in "default" (client-go's
// recorder).
func (b *builder) addEvents(ns []string, kind string) {
	if !abi.KindOf(kind).Namespaced {
		ns = []string{"default"}
	}
	b.add(ns, "", "events", "", "create", "patch")
}

// rules turns the grants into rules: per namespace, one rule for each
// group, resource names and verbs, resources sorted; a namespaced grant that
// a cluster-wide one covers is dropped.
func (b *builder) rules() Rules {
	covered := func(g grant, verb string) bool {
		for _, c := range []grant{{"", g.group, g.resource, ""}, {"", g.group, g.resource, g.name}, {g.namespace, g.group, g.resource, ""}} {
			if c != g && b.verbs[c][verb] {
				return true
			}
		}
		return false
	}
	type ruleKey struct {
		namespace, group, name, verbs string
	}
	resources := map[ruleKey][]string{}
	for g, vs := range b.verbs {
		var verbs []string
		for v := range vs {
			if !covered(g, v) {
				verbs = append(verbs, v)
			}
		}
		if len(verbs) == 0 {
			continue
		}
		slices.Sort(verbs)
		k := ruleKey{g.namespace, g.group, g.name, strings.Join(verbs, ",")}
		resources[k] = append(resources[k], g.resource)
	}
	for _, rs := range resources {
		slices.Sort(rs)
	}
	keys := slices.SortedFunc(maps.Keys(resources), func(a, b ruleKey) int {
		return strings.Compare(a.group+"\x00"+strings.Join(resources[a], ",")+"\x00"+a.name+"\x00"+a.verbs,
			b.group+"\x00"+strings.Join(resources[b], ",")+"\x00"+b.name+"\x00"+b.verbs)
	})
	out := Rules{Namespaced: map[string][]rbacv1.PolicyRule{}}
	for _, k := range keys {
		r := rbacv1.PolicyRule{APIGroups: []string{k.group}, Resources: resources[k], Verbs: strings.Split(k.verbs, ",")}
		if k.name != "" {
			r.ResourceNames = []string{k.name}
		}
		if k.namespace == "" {
			out.Cluster = append(out.Cluster, r)
		} else {
			out.Namespaced[k.namespace] = append(out.Namespaced[k.namespace], r)
		}
	}
	return out
}
