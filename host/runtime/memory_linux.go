package runtime

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// memoryAllocator backs each guest's linear memory with one anonymous
// mapping of its maximum size, reserved up front (MAP_NORESERVE) and grown
// in place: growing never copies, and the host's resident memory is what the
// guest touches, not twice the memory while wazero copies it to a larger
// buffer (measured: growing page by page to 128 MiB peaked at 434 MB RSS
// with wazero's default allocator). Untouched pages read as zero, as wasm
// requires of grown memory, and memory never shrinks.
//
//	reserved:  [0 ............................................ max)
//	committed: [0 .... pages the guest touched)
//	the guest: [0 .... size)   size grows up to max, the address never moves
var memoryAllocator experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(newReservedMemory)

// reservedMemory is one guest's linear memory.
type reservedMemory struct {
	buf    []byte // the whole mapping (len max), or the Go buffer
	mapped bool   // buf is a mapping, to unmap on Free
	max    uint64
}

func newReservedMemory(_, max uint64) experimental.LinearMemory {
	m := &reservedMemory{max: max}
	if max == 0 {
		return m
	}
	buf, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_NORESERVE)
	if err == nil {
		m.buf, m.mapped = buf, true
	}
	// Without the mapping (the address space is exhausted), the memory is
	// a Go buffer grown by copying, as wazero's default is.
	return m
}

// Reallocate returns the memory's first size bytes, or nil (the grow fails)
// beyond max.
func (m *reservedMemory) Reallocate(size uint64) []byte {
	switch {
	case size > m.max:
		return nil
	case m.mapped:
		return m.buf[:size:size]
	case size > uint64(cap(m.buf)):
		grown := make([]byte, size)
		copy(grown, m.buf)
		m.buf = grown
	}
	m.buf = m.buf[:size]
	return m.buf
}

// Free returns the mapping to the kernel.
func (m *reservedMemory) Free() {
	if m.mapped {
		_ = syscall.Munmap(m.buf)
	}
	m.buf, m.mapped = nil, false
}
