//go:build !linux

package runtime

import "github.com/tetratelabs/wazero/experimental"

// newMemoryAllocator is wazero's own allocator elsewhere than on Linux,
// where memory_linux.go reserves each memory up front.
func newMemoryAllocator(*instance) experimental.MemoryAllocator { return nil }
