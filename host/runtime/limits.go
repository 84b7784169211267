package runtime

import (
	"fmt"
	"time"
)

// Defaults of Limits.
const (
	DefaultMemoryBytes    = 128 << 20
	DefaultDeadline       = time.Second
	DefaultInstances      = 4
	DefaultMaxOutputBytes = 1 << 20
	// DefaultMaxTableElements is 160 times what stock-Go guests declare
	// (about 6,600 elements), about 8 MiB of host memory per instance.
	DefaultMaxTableElements = 1 << 20
	// DefaultMaxActions fits the reference modules many times over: they
	// return at most a few actions per claim of a set.
	DefaultMaxActions = 4096
)

// tableElementBytes is what one table element costs the host (wazero keeps
// a pointer-sized reference per element; measured: a table of 100,000,000
// elements took 822 MB).
const tableElementBytes = 8

// callStackBytes is the most stack one call into a guest can make wazero
// allocate on the host: it doubles the stack until it is longer than
// 50,000,000 bytes, so at most about 100 MB (a recursion without end
// reaches it in about half a second, then fails with "stack overflow").
const callStackBytes = 100 << 20

const (
	pageSize = 64 << 10
	// maxMemoryBytes is the most a 32-bit wasm memory can address.
	maxMemoryBytes = 1 << 32
)

// Limits bound what one module may use. A zero field takes its default, so
// Limits{Deadline: 2 * time.Second} changes only the deadline.
type Limits struct {
	// MemoryBytes caps the guest's linear memory, rounded up to whole 64 KiB
	// pages. Default 128 MiB; at most 4 GiB.
	MemoryBytes uint64
	// Deadline bounds each call into the guest; a guest still running then
	// is interrupted and its instance discarded. Default 1s.
	Deadline time.Duration
	// Instances is the most instances of the module that exist at once, and
	// so the most concurrent calls. Default 4.
	Instances int
	// MaxOutputBytes caps the region a hook may return. Default 1 MiB.
	MaxOutputBytes int
	// MaxTableElements caps the elements of all the module's tables
	// together: a module whose tables start larger is refused, and
	// table.grow fails (returns -1) beyond it. Each element costs the host
	// 8 bytes per instance, outside the memory cap. Default 1,048,576.
	MaxTableElements uint32
	// MaxActions caps the actions one call may return; the output is
	// refused, before it is decoded, when it holds more. Default 4096.
	MaxActions int
}

// DefaultLimits returns the limits a module gets when its configuration sets
// none.
func DefaultLimits() Limits {
	return Limits{
		MemoryBytes:      DefaultMemoryBytes,
		Deadline:         DefaultDeadline,
		Instances:        DefaultInstances,
		MaxOutputBytes:   DefaultMaxOutputBytes,
		MaxTableElements: DefaultMaxTableElements,
		MaxActions:       DefaultMaxActions,
	}
}

// Validate reports the first field that is out of range. Zero fields are
// valid: they take their defaults.
func (l Limits) Validate() error {
	switch {
	case l.MemoryBytes > maxMemoryBytes:
		return fmt.Errorf("%w: memoryBytes %d is more than a wasm32 memory can hold (4 GiB)", ErrLimits, l.MemoryBytes)
	case l.Deadline < 0:
		return fmt.Errorf("%w: deadline %v is negative", ErrLimits, l.Deadline)
	case l.Instances < 0:
		return fmt.Errorf("%w: instances %d is negative", ErrLimits, l.Instances)
	case l.MaxOutputBytes < 0:
		return fmt.Errorf("%w: maxOutputBytes %d is negative", ErrLimits, l.MaxOutputBytes)
	case l.MaxActions < 0:
		return fmt.Errorf("%w: maxActions %d is negative", ErrLimits, l.MaxActions)
	case uint64(l.MaxOutputBytes) > maxMemoryBytes:
		return fmt.Errorf("%w: maxOutputBytes %d is more than a wasm32 memory can hold (4 GiB)", ErrLimits, l.MaxOutputBytes)
	}
	return nil
}

// withDefaults returns l with its zero fields set to their defaults.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MemoryBytes == 0 {
		l.MemoryBytes = d.MemoryBytes
	}
	if l.Deadline == 0 {
		l.Deadline = d.Deadline
	}
	if l.Instances == 0 {
		l.Instances = d.Instances
	}
	if l.MaxOutputBytes == 0 {
		l.MaxOutputBytes = d.MaxOutputBytes
	}
	if l.MaxTableElements == 0 {
		l.MaxTableElements = d.MaxTableElements
	}
	if l.MaxActions == 0 {
		l.MaxActions = d.MaxActions
	}
	return l
}

// HostMemoryBound is the most host memory, in bytes, the module's guests can
// make the host hold at once through one hook's pool (a module has one pool
// per hook), with the zero fields of l taken as their defaults:
//
//	Instances × (MemoryBytes (whole pages) + MaxTableElements × 8 + MaxOutputBytes + 100 MiB)
//
// that is, every instance's linear memory and tables at their caps, the copy
// of its output the host decodes, and the call stack wazero grows for a
// deeply recursing guest (up to about 100 MB). Linear memory is reserved, not
// committed (see memory_linux.go): the host's resident memory grows with
// what the guests touch, up to this bound. The compiled code, shared by the
// instances, and the host's own buffers (the encoded request) are not
// counted: they do not depend on what the guest does.
func (l Limits) HostMemoryBound() uint64 {
	l = l.withDefaults()
	perInstance := uint64(l.memoryPages())*pageSize + uint64(l.MaxTableElements)*tableElementBytes + uint64(l.MaxOutputBytes) + callStackBytes
	return uint64(l.Instances) * perInstance
}

// memoryPages is MemoryBytes in whole wasm pages, rounded up.
func (l Limits) memoryPages() uint32 {
	return uint32((l.MemoryBytes + pageSize - 1) / pageSize)
}
