package actions_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
)

// call is one call the fakes received.
type call struct {
	Op           string // patch, delete, event, deleteVolume
	Kind         string
	Namespace    string
	Name         string
	PatchType    types.PatchType
	Data         string
	FieldManager string
	Subresource  []string
	UID          string
	RV           string
	Event        []string // type, reason, message, module
	Secrets      *abi.SecretReference
}

// fakeCluster records calls. Patches return resourceVersions "101", "102",
// ...; fail, when set, decides the error of each call.
type fakeCluster struct {
	calls  []call
	nextRV int
	fail   func(c call) error
	// noRV makes patches return an empty resourceVersion.
	noRV bool
	// current answers Current by object name. Nil answers as the
	// fixtures' volume, set and pods are; a missing name is NotFound.
	current map[string]actions.Meta
	// reads counts Current calls.
	reads int
	// onRead, when set, runs after each Current call.
	onRead func()
	// volume, when set, answers CurrentVolume; otherwise it answers with
	// releasedVolume's spec and status and the Meta Current gives pv-1.
	volume *actions.PersistentVolume
	// classes answers CurrentClassParameters by name; a missing name is
	// NotFound.
	classes map[string]map[string]string
}

var _ actions.Cluster = (*fakeCluster)(nil)

func (f *fakeCluster) record(c call) error {
	f.calls = append(f.calls, c)
	if f.fail != nil {
		return f.fail(c)
	}
	return nil
}

func (f *fakeCluster) Patch(_ context.Context, kind, namespace, name string, pt types.PatchType, data []byte, fieldManager string, subresource ...string) (string, error) {
	err := f.record(call{Op: "patch", Kind: kind, Namespace: namespace, Name: name, PatchType: pt, Data: string(data), FieldManager: fieldManager, Subresource: subresource})
	if err != nil {
		return "", err
	}
	if f.noRV {
		return "", nil
	}
	if f.nextRV == 0 {
		f.nextRV = 101
	}
	f.nextRV++
	return strconv.Itoa(f.nextRV - 1), nil
}

// Apply and Create are the generic actions' writes, which the executor
// does not make yet: a call of either is recorded and fails.
func (f *fakeCluster) Apply(_ context.Context, kind, namespace, name string, data []byte, fieldManager string, _ bool, subresource string) (string, error) {
	_ = f.record(call{Op: "apply", Kind: kind, Namespace: namespace, Name: name, Data: string(data), FieldManager: fieldManager, Subresource: []string{subresource}})
	return "", errors.New("fakeCluster: no apply")
}

func (f *fakeCluster) Create(_ context.Context, kind, namespace string, data []byte, fieldManager string) (string, string, error) {
	_ = f.record(call{Op: "create", Kind: kind, Namespace: namespace, Data: string(data), FieldManager: fieldManager})
	return "", "", errors.New("fakeCluster: no create")
}

func (f *fakeCluster) Delete(_ context.Context, kind, namespace, name, uid, resourceVersion string) error {
	return f.record(call{Op: "delete", Kind: kind, Namespace: namespace, Name: name, UID: uid, RV: resourceVersion})
}

func (f *fakeCluster) Current(_ context.Context, kind, _, name string) (actions.Meta, error) {
	f.reads++
	if f.onRead != nil {
		defer f.onRead()
	}
	cur := f.current
	if cur == nil {
		cur = map[string]actions.Meta{
			"pv-1":  {UID: "pv-uid", ResourceVersion: "5"},
			"web":   {UID: "set-uid", ResourceVersion: "10"},
			"web-0": {UID: "pod-0", ResourceVersion: "30"},
			"web-1": {UID: "pod-1", ResourceVersion: "31"},
		}
	}
	v, ok := cur[name]
	if !ok {
		return actions.Meta{}, apierrors.NewNotFound(schema.GroupResource{Resource: abi.KindOf(kind).Resource}, name)
	}
	return v, nil
}

func (f *fakeCluster) CurrentVolume(ctx context.Context, name string) (actions.PersistentVolume, error) {
	m, err := f.Current(ctx, abi.KindPersistentVolume, "", name)
	if f.volume != nil {
		return *f.volume, nil
	}
	if err != nil {
		return actions.PersistentVolume{}, err
	}
	v := releasedVolume()
	v.Meta = m
	return v, nil
}

func (f *fakeCluster) CurrentClassParameters(_ context.Context, name string) (map[string]string, error) {
	p, ok := f.classes[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "storage.k8s.io", Resource: "storageclasses"}, name)
	}
	return p, nil
}

func (f *fakeCluster) RecordEvent(_ context.Context, target abi.ObjectRef, eventType, reason, message, module string) error {
	return f.record(call{Op: "event", Kind: target.Kind, Namespace: target.Namespace, Name: target.Name, UID: target.UID, Event: []string{eventType, reason, message, module}})
}

// writes returns the calls that are not events.
func (f *fakeCluster) writes() []call {
	var out []call
	for _, c := range f.calls {
		if c.Op != "event" {
			out = append(out, c)
		}
	}
	return out
}

// fakeVolumes is a VolumeDeleter configured for some drivers.
type fakeVolumes struct {
	drivers []string
	calls   []call
	err     error
}

var _ actions.VolumeDeleter = (*fakeVolumes)(nil)

func (f *fakeVolumes) Configured(driver string) bool {
	for _, d := range f.drivers {
		if d == driver {
			return true
		}
	}
	return false
}

func (f *fakeVolumes) DeleteVolume(_ context.Context, driver, handle string, secrets *abi.SecretReference) error {
	f.calls = append(f.calls, call{Op: "deleteVolume", Name: driver + "/" + handle, Secrets: secrets})
	return f.err
}

// onlySecret requires exactly one DeleteVolume call and returns the secret
// it was given, "namespace/name", or "" for none.
func (f *fakeVolumes) onlySecret(t *testing.T) string {
	t.Helper()
	require.Len(t, f.calls, 1)
	if s := f.calls[0].Secrets; s != nil {
		return s.Namespace + "/" + s.Name
	}
	return ""
}
