package memcluster

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// The writes of a declared module's generic actions (ABI 1.6): a create,
// and a server-side apply that may not force. Both record field ownership
// as the API server does as far as conflicts go: a create is its field
// manager's Update, which an Apply by the same manager conflicts with
// (measured on kube-apiserver 1.37, RATIONALE.md "What does server-side
// apply do at the edges …").

// updateOwner is the key of manager's Update entry in an ownership: apart
// from its Apply entry, which is keyed by the bare name.
func updateOwner(manager string) string { return manager + "\x00update" }

// Apply implements actions.Cluster: a server-side apply of data to the named
// object (or its status subresource) with fieldManager; unless force, it
// fails with a conflict (apierrors.IsConflict, causes naming the field and
// its manager) when it would change a field the manager's Apply entry does
// not own alone. Like Patch, the object must exist.
func (c *Cluster) Apply(ctx context.Context, kind, namespace, name string, data []byte, fieldManager string, force bool, subresource string) (string, error) {
	var sub []string
	if subresource != "" {
		sub = []string{subresource}
	}
	return c.patch(ctx, kind, namespace, name, types.ApplyPatchType, data, fieldManager, force, sub...)
}

// conflicts returns the apply conflict of manager's apply of leaves
// (patch's values) to stored, or nil: every leaf whose value the apply
// changes and that manager's Apply entry does not own alone, with the
// other manager that owns it ("" when no record says, a field written
// before any apply this cluster saw: the case file's author's).
func (o ownership) conflicts(gr schema.GroupResource, name, manager string, leaves map[fieldPath]bool, patch, stored map[string]any) error {
	var causes []metav1.StatusCause
	for _, p := range slices.Sorted(maps.Keys(leaves)) {
		cur, ok := valueAt(stored, p)
		want, _ := valueAt(patch, p)
		if !ok || reflect.DeepEqual(cur, want) || o[manager][p] {
			continue
		}
		other := "the object's earlier writer"
		for _, m := range slices.Sorted(maps.Keys(o)) {
			if _, owns := o[m][p]; owns && m != manager {
				other = strconv.Quote(strings.TrimSuffix(m, "\x00update"))
				break
			}
		}
		causes = append(causes, metav1.StatusCause{
			Type:    metav1.CauseTypeFieldManagerConflict,
			Message: "conflict with " + other,
			Field:   "." + strings.ReplaceAll(p, pathSep, "."),
		})
	}
	if len(causes) == 0 {
		return nil
	}
	msgs := make([]string, len(causes))
	for i, c := range causes {
		msgs[i] = c.Message + ": " + c.Field
	}
	return apierrors.NewApplyConflict(causes, fmt.Sprintf("Apply failed with %d conflict(s) on %s %s: %s", len(causes), gr, name, strings.Join(msgs, ", ")))
}

// Create implements actions.Cluster: it creates data, an object of kind as
// JSON, in namespace as the API server's POST does with fieldManager (an
// Update entry owning every field), naming it from metadata.generateName
// when it has no name. It returns the name and resourceVersion; an object
// of the name that exists is AlreadyExists.
func (c *Cluster) Create(ctx context.Context, kind, namespace string, data []byte, fieldManager string) (string, string, error) {
	if err := ctx.Err(); err != nil {
		return "", "", err
	}
	v, err := decodeJSON(data)
	if err != nil {
		return "", "", apierrors.NewBadRequest(fmt.Sprintf("create %s: not JSON: %v", kind, err))
	}
	obj, ok := v.(map[string]any)
	if !ok || str(obj, "kind") != kind {
		return "", "", apierrors.NewBadRequest(fmt.Sprintf("create %s: want a JSON object of kind %s", kind, kind))
	}
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	if namespace != "" {
		meta["namespace"] = namespace
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++
	if str(meta, "name") == "" && str(meta, "generateName") != "" {
		c.generated++
		meta["name"] = str(meta, "generateName") + generatedSuffix(c.generated)
	}
	prepared, k, err := prepare(obj)
	if err != nil {
		return "", "", apierrors.NewBadRequest(err.Error())
	}
	if _, exists := c.objects[k]; exists {
		return "", "", apierrors.NewAlreadyExists(groupResource(kind), k.Name)
	}
	owned := map[fieldPath]bool{}
	for p := range appliedLeaves(prepared) {
		owned[p] = true
	}
	pm := metadata(prepared)
	pm["uid"] = deterministicUID(k)
	pm["creationTimestamp"] = timestamp(c.now())
	pm["generation"] = int64(1)
	delete(pm, "resourceVersion")
	rv := c.store(k, prepared)
	c.ownersOf(prepared)[updateOwner(fieldManager)] = owned
	return k.Name, rv, nil
}

// generatedSuffix is the n-th name suffix of generateName: five characters,
// as the API server's, but counted rather than random so that a case runs
// the same every time.
func generatedSuffix(n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	var b [5]byte
	for i := range b {
		b[4-i] = alphabet[n%len(alphabet)]
		n /= len(alphabet)
	}
	return string(b[:])
}
