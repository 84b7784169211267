//go:build !linux

package runtime

import "github.com/tetratelabs/wazero/experimental"

// memoryAllocator is wazero's own elsewhere than on Linux, where
// memory_linux.go reserves each memory up front.
var memoryAllocator experimental.MemoryAllocator
