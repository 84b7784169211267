package memcluster

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeplug/kubeplug/abi"
)

// Key identifies a stored object. Namespace is empty for cluster-scoped
// kinds.
type Key struct {
	Kind, Namespace, Name string
}

// String renders k as "Kind namespace/name", or "Kind name" for a
// cluster-scoped object.
func (k Key) String() string {
	if k.Namespace == "" {
		return k.Kind + " " + k.Name
	}
	return k.Kind + " " + k.Namespace + "/" + k.Name
}

func (k Key) less(o Key) bool {
	if k.Kind != o.Kind {
		return k.Kind < o.Kind
	}
	if k.Namespace != o.Namespace {
		return k.Namespace < o.Namespace
	}
	return k.Name < o.Name
}

// DefaultNamespace is the namespace Load gives a namespaced object that names
// none, as kubectl does.
const DefaultNamespace = "default"

// groupResource names kind for API errors. Kinds unknown to the ABI get the
// API server's naive plural.
func groupResource(kind string) schema.GroupResource {
	info, ok := abi.LookupKind(kind)
	if !ok {
		return schema.GroupResource{Resource: strings.ToLower(kind) + "s"}
	}
	gv, _ := schema.ParseGroupVersion(info.APIVersion)
	return schema.GroupResource{Group: gv.Group, Resource: info.Resource}
}

func groupKind(kind string) schema.GroupKind {
	info := abi.KindOf(kind)
	gv, _ := schema.ParseGroupVersion(info.APIVersion)
	return schema.GroupKind{Group: gv.Group, Kind: kind}
}

// hasStatusSubresource reports whether writes to kind's main resource leave
// .status alone, as they do on the API server for every built-in kind with a
// status and for CRDs that enable the subresource (VolumeClaimUpdate does).
func hasStatusSubresource(kind string) bool {
	_, known := abi.LookupKind(kind)
	return known && kind != abi.KindStorageClass
}

// deterministicUID derives a UUID-shaped uid from an object's identity, so
// case files that name no uids still give the same uids on every run.
func deterministicUID(k Key) string {
	sum := sha256.Sum256([]byte(k.Kind + "/" + k.Namespace + "/" + k.Name))
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// timestamp renders t as metav1.Time does on the wire.
func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// jsonValue turns v into the value encoding/json would decode its JSON into,
// except that integral numbers become int64 (as in unstructured objects).
// The result shares nothing with v.
// JSONValue returns v as encoding/json would decode its JSON form, except that
// integers are int64 (other numbers float64): the one representation objects
// are kept and compared in, here and in casetest.
func JSONValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeJSON(b)
}

func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out any
	if err := d.Decode(&out); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return numbers(out), nil
}

func numbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

// Accessors for the few metadata fields the server itself manages. Objects
// are always JSON-shaped maps, so a wrong type means the field is unset.

func metadata(obj map[string]any) map[string]any {
	m, _ := obj["metadata"].(map[string]any)
	if m == nil {
		m = map[string]any{}
		obj["metadata"] = m
	}
	return m
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func finalizers(obj map[string]any) []string {
	list, _ := metadata(obj)["finalizers"].([]any)
	out := make([]string, 0, len(list))
	for _, f := range list {
		if s, ok := f.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func generation(obj map[string]any) int64 {
	g, _ := metadata(obj)["generation"].(int64)
	return g
}
