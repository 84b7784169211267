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
)

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
}

// DefaultLimits returns the limits a module gets when its configuration sets
// none.
func DefaultLimits() Limits {
	return Limits{
		MemoryBytes:    DefaultMemoryBytes,
		Deadline:       DefaultDeadline,
		Instances:      DefaultInstances,
		MaxOutputBytes: DefaultMaxOutputBytes,
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
	return l
}

// memoryPages is MemoryBytes in whole wasm pages, rounded up.
func (l Limits) memoryPages() uint32 {
	return uint32((l.MemoryBytes + pageSize - 1) / pageSize)
}
