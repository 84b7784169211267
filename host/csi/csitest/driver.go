package csitest

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// Driver is a CSI plugin whose volumes live in memory. Set its fields before
// Serve; they must not change while it serves. Its methods are safe for
// concurrent use, also with the calls it serves.
type Driver struct {
	// Name is the plugin name GetPluginInfo answers.
	Name string
	// Caps are the controller capabilities advertised; nil means
	// CREATE_DELETE_VOLUME only.
	Caps []csipb.ControllerServiceCapability_RPC_Type
	// Secrets, when not nil, are the secrets DeleteVolume requires, as a
	// driver with a provisioner secret does: none is InvalidArgument, others
	// are Unauthenticated.
	Secrets map[string]string
	// NotFound makes DeleteVolume of an unknown volume answer NotFound, as
	// some drivers do, instead of OK as the CSI specification asks.
	NotFound bool
	// NodeOnly serves the Identity service only, as a node plugin's socket
	// does: Controller calls answer Unimplemented.
	NodeOnly bool

	mu          sync.Mutex
	volumes     map[string]volume // by id
	next        int               // number in the last volume id made
	calls       map[string]int    // by method name
	volumeCalls map[methodVolume]int
	lastSecrets map[string]string // of the last DeleteVolume that reached the driver
	failCode    codes.Code        // of every DeleteVolume while not OK (FailDeletes)
	failMsg     string
	hold        *hold // of successful DeleteVolume calls, while not nil
}

// volume is one volume the driver has.
type volume struct {
	name     string // CreateVolume's name, which makes CreateVolume idempotent
	capacity int64
}

// methodVolume keys the calls of a method that name a volume.
type methodVolume struct {
	method, volumeID string
}

// New returns a driver named name that can create and delete volumes and
// has none.
func New(name string) *Driver {
	return &Driver{Name: name}
}

// SetName changes the plugin name GetPluginInfo answers from now on: another
// driver behind the same connection, as a socket taken over by another
// binary looks once gRPC has reconnected to it.
func (d *Driver) SetName(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Name = name
}

func (d *Driver) name() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.Name
}

// Calls returns how many calls of method, such as "DeleteVolume", the driver
// received, whatever their answer. Calls of methods it does not implement,
// and calls an interceptor of Serve answered, are not counted.
func (d *Driver) Calls(method string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[method]
}

// CallsFor returns how many calls of method, such as "DeleteVolume", naming
// the volume volumeID the driver received, whatever their answer, counted as
// Calls counts them.
func (d *Driver) CallsFor(method, volumeID string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.volumeCalls[methodVolume{method, volumeID}]
}

// LastSecrets returns the secrets of the last DeleteVolume call that reached
// the driver (one FailDeletes failed did not), or nil.
func (d *Driver) LastSecrets() map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.lastSecrets)
}

// Volumes returns the ids of the driver's volumes, sorted.
func (d *Driver) Volumes() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Sorted(maps.Keys(d.volumes))
}

// AddVolume gives the driver a volume named name, as CreateVolume does
// without a capacity, and returns its id. If the driver has a volume of that
// name already, it returns that one's id.
func (d *Driver) AddVolume(name string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if id, _, ok := d.volumeNamed(name); ok {
		return id
	}
	return d.add(name, 0)
}

// received counts a call of method naming volumeID, "" for none.
func (d *Driver) received(method, volumeID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.calls == nil {
		d.calls = map[string]int{}
		d.volumeCalls = map[methodVolume]int{}
	}
	d.calls[method]++
	if volumeID != "" {
		d.volumeCalls[methodVolume{method, volumeID}]++
	}
}

// volumeNamed returns the volume named name, if any. The caller holds mu.
func (d *Driver) volumeNamed(name string) (id string, v volume, ok bool) {
	for id, v := range d.volumes {
		if v.name == name {
			return id, v, true
		}
	}
	return "", volume{}, false
}

// add makes a volume and returns its id. The caller holds mu.
func (d *Driver) add(name string, capacity int64) string {
	if d.volumes == nil {
		d.volumes = map[string]volume{}
	}
	d.next++
	id := fmt.Sprintf("vol-%d-%s", d.next, name)
	d.volumes[id] = volume{name: name, capacity: capacity}
	return id
}
