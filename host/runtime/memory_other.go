//go:build !linux

package runtime

import "github.com/tetratelabs/wazero/experimental"

// newMemoryAllocator is wazero's own allocator elsewhere than on Linux,
// where memory_linux.go reserves each memory up front.
func newMemoryAllocator[T any](*T) experimental.MemoryAllocator { return nil }

// newMemories returns no allocator and memories that never say they are
// full: the caller falls back on other evidence.
func newMemories[T any](*T) (experimental.MemoryAllocator, *memories) { return nil, &memories{} }

type memories struct{}

func (*memories) full(uint64) bool { return false }
