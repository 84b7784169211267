package runtime

import (
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// newMemoryAllocator returns the allocator of one instance's linear memory:
// one anonymous mapping of the memory's maximum size, reserved up front
// (MAP_NORESERVE) and grown in place. Growing never copies, and the host's
// resident memory is what the guest touches, not twice the memory while
// wazero copies it to a larger buffer (measured: growing page by page to
// 128 MiB peaked at 453 MB RSS with wazero's default allocator, 140 MB with
// this one). Untouched pages read as zero, as wasm requires of grown memory,
// and memory never shrinks.
//
//	reserved:  [0 ............................................ max)
//	committed: [0 .... pages the guest touched)
//	the guest: [0 .... size)   size grows up to max, the address never moves
//
// wazero frees a memory when its module closes, which Module.Close may do
// while a call is still running in it (past its drain timeout). Unmapping
// then would pull the memory from under the running guest or a host function
// reading it, and crash the process. So Free only drops the pages (their
// RSS goes back to the kernel, the addresses stay valid), and the mapping
// is unmapped by a cleanup once owner, the instance, is unreachable: no call
// can be running in it any more.
func newMemoryAllocator[T any](owner *T) experimental.MemoryAllocator {
	a, _ := newMemories(owner)
	return a
}

// newMemories is newMemoryAllocator that also returns the memories it
// makes, so that the owner can tell whether one of them is full.
func newMemories[T any](owner *T) (experimental.MemoryAllocator, *memories) {
	ms := &memories{}
	goruntime.AddCleanup(owner, (*memories).release, ms)
	return experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory {
		m := newReservedMemory(max)
		ms.mu.Lock()
		ms.list = append(ms.list, m)
		ms.mu.Unlock()
		return m
	}), ms
}

// memories are the memories one instance's allocator made: a native
// module's memory 0 (unless a failed instantiation is retried), or an
// Extism plugin's memory and its kernel's.
type memories struct {
	mu   sync.Mutex
	list []*reservedMemory
}

// full reports whether any of the memories is within slack bytes of its
// maximum.
func (ms *memories) full(slack uint64) bool {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for _, m := range ms.list {
		if m.max > 0 && m.size.Load()+slack >= m.max {
			return true
		}
	}
	return false
}

func (ms *memories) release() {
	for _, m := range ms.list {
		m.unmap()
	}
}

// reservedMemory is one guest's linear memory.
type reservedMemory struct {
	// mu orders Free (wazero, on whichever goroutine closes the module)
	// and unmap (the cleanup): once unmapped, the addresses may belong to
	// another mapping, which Free must not touch.
	mu     sync.Mutex
	buf    []byte // the whole mapping (len max), or the Go buffer
	mapped bool   // buf is a mapping, to unmap once unreachable
	max    uint64
	size   atomic.Uint64 // the guest's size, for memories.full
}

func newReservedMemory(max uint64) *reservedMemory {
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
	if size > m.max {
		return nil
	}
	m.size.Store(size)
	switch {
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

// Free returns the memory's pages to the kernel; the mapping stays until
// its instance is unreachable (see newMemoryAllocator).
func (m *reservedMemory) Free() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mapped {
		_ = syscall.Madvise(m.buf, syscall.MADV_DONTNEED)
		return
	}
	m.buf = nil
}

func (m *reservedMemory) unmap() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mapped {
		_ = syscall.Munmap(m.buf)
		m.buf, m.mapped = nil, false
	}
}
