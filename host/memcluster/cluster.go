package memcluster

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
)

// Config configures a Cluster. The zero value is usable.
type Config struct {
	// Now is the clock for creationTimestamp, deletionTimestamp and event
	// times. Default: time.Now.
	Now func() time.Time
	// Drivers are the CSI drivers the cluster acts as a deleter for:
	// Configured reports true for them and DeleteVolume accepts them.
	Drivers []string
}

// Cluster is an in-memory API server. It is safe for concurrent use. Create
// it with New.
type Cluster struct {
	now     func() time.Time
	drivers map[string]bool

	mu       sync.Mutex
	objects  map[Key]map[string]any
	rv       int64
	writes   int
	requests int
	events   []Event
	deletes  []VolumeDelete
	// owners is server-side apply's field ownership, by object uid.
	owners map[string]ownership
	// generated counts the names made from generateName.
	generated int
}

// New returns an empty cluster.
func New(cfg Config) *Cluster {
	c := &Cluster{
		now:     cfg.Now,
		drivers: map[string]bool{},
		objects: map[Key]map[string]any{},
	}
	if c.now == nil {
		c.now = time.Now
	}
	for _, d := range cfg.Drivers {
		c.drivers[d] = true
	}
	return c
}

// Load creates objects, as `kubectl create` would: each needs apiVersion,
// kind and metadata.name; a namespaced kind without metadata.namespace gets
// DefaultNamespace. Built-in kinds are stored as the API server would store
// them: fields their Go type does not know are dropped and quantities are
// canonicalised; no defaults are applied. The server's fields are filled in: a new
// resourceVersion (a loaded one is ignored, as on create), and a uid,
// creationTimestamp and generation 1 unless the object has them, so that
// recorded states keep their identities. A loaded object may be under
// deletion only if it has finalizers. Load is all or nothing: on error no
// object is created.
func (c *Cluster) Load(objs ...map[string]any) error {
	prepared := make([]map[string]any, 0, len(objs))
	keys := make(map[Key]bool, len(objs))
	for i, o := range objs {
		obj, k, err := prepare(o)
		if err != nil {
			return fmt.Errorf("load object %d: %w", i, err)
		}
		if keys[k] {
			return fmt.Errorf("load object %d: %w", i, apierrors.NewAlreadyExists(groupResource(k.Kind), k.Name))
		}
		keys[k] = true
		prepared = append(prepared, obj)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range keys {
		if _, ok := c.objects[k]; ok {
			return fmt.Errorf("load %s: %w", k, apierrors.NewAlreadyExists(groupResource(k.Kind), k.Name))
		}
	}
	now := timestamp(c.now())
	for _, obj := range prepared {
		k := keyOf(obj)
		meta := metadata(obj)
		if str(meta, "uid") == "" {
			meta["uid"] = deterministicUID(k)
		}
		if str(meta, "creationTimestamp") == "" {
			meta["creationTimestamp"] = now
		}
		if generation(obj) == 0 {
			meta["generation"] = int64(1)
		}
		c.store(k, obj)
	}
	return nil
}

// Check reports whether Load would accept obj on an empty cluster, with the
// reason if not. It does not modify obj.
func Check(obj map[string]any) error {
	_, _, err := prepare(obj)
	return err
}

// prepare validates a loaded object and returns a JSON-shaped copy of it with
// its namespace defaulted.
func prepare(o map[string]any) (map[string]any, Key, error) {
	v, err := JSONValue(o)
	if err != nil {
		return nil, Key{}, fmt.Errorf("%w: not representable as JSON: %v", ErrInvalidObject, err)
	}
	obj, _ := v.(map[string]any)
	apiVersion, kind := str(obj, "apiVersion"), str(obj, "kind")
	if apiVersion == "" || kind == "" {
		return nil, Key{}, fmt.Errorf("%w: apiVersion and kind are required", ErrInvalidObject)
	}
	meta := metadata(obj)
	name := str(meta, "name")
	if name == "" {
		return nil, Key{}, fmt.Errorf("%w: %s has no metadata.name", ErrInvalidObject, kind)
	}
	info, known := abi.LookupKind(kind)
	switch {
	case known && apiVersion != info.APIVersion:
		return nil, Key{}, fmt.Errorf("%w: %s %s: apiVersion is %q, want %q", ErrInvalidObject, kind, name, apiVersion, info.APIVersion)
	case known && info.Namespaced && str(meta, "namespace") == "":
		meta["namespace"] = DefaultNamespace
	case known && !info.Namespaced && str(meta, "namespace") != "":
		return nil, Key{}, fmt.Errorf("%w: %s %s is cluster-scoped but has metadata.namespace %q", ErrInvalidObject, kind, name, str(meta, "namespace"))
	}
	k := keyOf(obj)
	if str(meta, "deletionTimestamp") != "" && len(finalizers(obj)) == 0 {
		return nil, Key{}, fmt.Errorf("%w: %s has metadata.deletionTimestamp but no finalizers: the API server would already have removed it", ErrInvalidObject, k)
	}
	obj, err = canonical(obj)
	if err != nil {
		return nil, Key{}, fmt.Errorf("%w: %s does not fit the %s schema: %v", ErrInvalidObject, k, kind, err)
	}
	return obj, k, nil
}

func keyOf(obj map[string]any) Key {
	meta := metadata(obj)
	return Key{Kind: str(obj, "kind"), Namespace: str(meta, "namespace"), Name: str(meta, "name")}
}

// store writes obj under k with a new resourceVersion. The caller holds mu.
func (c *Cluster) store(k Key, obj map[string]any) string {
	rv := c.bump()
	metadata(obj)["resourceVersion"] = rv
	c.objects[k] = obj
	return rv
}

// remove deletes the object obj stored at k, and its field ownership with
// it: one created again under its name may get its uid (Load derives uids
// from names). It returns the new resourceVersion. The caller holds mu.
func (c *Cluster) remove(k Key, obj map[string]any) string {
	delete(c.objects, k)
	delete(c.owners, str(metadata(obj), "uid"))
	return c.bump()
}

// bump counts a write and returns the next resourceVersion. The caller holds
// mu.
func (c *Cluster) bump() string {
	c.rv++
	c.writes++
	return strconv.FormatInt(c.rv, 10)
}

// Get returns a deep copy of the named object, or false when it does not
// exist. namespace is ignored for cluster-scoped kinds.
func (c *Cluster) Get(kind, namespace, name string) (map[string]any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	obj, ok := c.objects[c.key(kind, namespace, name)]
	if !ok {
		return nil, false
	}
	return runtime.DeepCopyJSON(obj), true
}

// List returns deep copies of every object of kind, sorted by namespace and
// name.
func (c *Cluster) List(kind string) []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]any
	for _, k := range c.sortedKeys(kind) {
		out = append(out, runtime.DeepCopyJSON(c.objects[k]))
	}
	return out
}

// Keys returns the keys of every object of kind, sorted.
func (c *Cluster) Keys(kind string) []Key {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sortedKeys(kind)
}

func (c *Cluster) sortedKeys(kind string) []Key {
	var keys []Key
	for k := range c.objects {
		if k.Kind == kind {
			keys = append(keys, k)
		}
	}
	sortKeys(keys)
	return keys
}

// sortKeys sorts keys by kind, namespace and name.
func sortKeys(keys []Key) {
	slices.SortFunc(keys, func(a, b Key) int {
		switch {
		case a.less(b):
			return -1
		case b.less(a):
			return 1
		}
		return 0
	})
}

// key builds the key of an object, dropping the namespace of cluster-scoped
// kinds so callers that pass one still find the object.
func (c *Cluster) key(kind, namespace, name string) Key {
	if info, ok := abi.LookupKind(kind); ok && !info.Namespaced {
		namespace = ""
	}
	return Key{Kind: kind, Namespace: namespace, Name: name}
}

// WriteCount returns how many writes changed the stored objects so far
// (creates, patches that changed something, deletes and deletion marks).
// Compare it before and after a reconcile round to tell whether the round
// changed anything.
func (c *Cluster) WriteCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes
}

// RequestCount returns how many Patch and Delete calls the cluster received,
// including those that failed or changed nothing. A steady state shows zero
// new requests.
func (c *Cluster) RequestCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests
}

// Current implements actions.Cluster: the named object's UID,
// resourceVersion and finalizers, or a NotFound error.
func (c *Cluster) Current(ctx context.Context, kind, namespace, name string) (actions.Meta, error) {
	if err := ctx.Err(); err != nil {
		return actions.Meta{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	obj, ok := c.objects[c.key(kind, namespace, name)]
	if !ok {
		return actions.Meta{}, apierrors.NewNotFound(groupResource(kind), name)
	}
	meta, _ := obj["metadata"].(map[string]any)
	var m actions.Meta
	m.UID, _ = meta["uid"].(string)
	m.ResourceVersion, _ = meta["resourceVersion"].(string)
	m.Deleting = meta["deletionTimestamp"] != nil
	m.Generation = generation(obj)
	fins, _ := meta["finalizers"].([]any)
	for _, f := range fins {
		if s, ok := f.(string); ok {
			m.Finalizers = append(m.Finalizers, s)
		}
	}
	return m, nil
}

// CurrentVolume implements actions.Cluster: the named PersistentVolume as
// stored, or a NotFound error.
func (c *Cluster) CurrentVolume(ctx context.Context, name string) (actions.PersistentVolume, error) {
	obj, err := c.current(ctx, abi.KindPersistentVolume, name)
	if err != nil {
		return actions.PersistentVolume{}, err
	}
	return actions.VolumeFromObject(obj), nil
}

// CurrentClassParameters implements actions.Cluster: the parameters of the
// named StorageClass as stored, or a NotFound error.
func (c *Cluster) CurrentClassParameters(ctx context.Context, name string) (map[string]string, error) {
	obj, err := c.current(ctx, abi.KindStorageClass, name)
	if err != nil {
		return nil, err
	}
	return actions.ClassParametersFromObject(obj), nil
}

// current returns a deep copy of the cluster-scoped object kind name.
func (c *Cluster) current(ctx context.Context, kind, name string) (map[string]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	obj, ok := c.Get(kind, "", name)
	if !ok {
		return nil, apierrors.NewNotFound(groupResource(kind), name)
	}
	return obj, nil
}
