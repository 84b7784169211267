//go:build wasip1

package raw

import "unsafe"

// writeLog is the host's kubeplug_write_log: (level, ptr, len) -> (). The
// host reads the message during the call only.
//
//go:wasmimport kubeplug kubeplug_write_log
func writeLog(level uint32, ptr unsafe.Pointer, length uint32)

// WriteLog sends msg to the host log at level (abi.LogDebug ... abi.LogError).
func WriteLog(level uint32, msg string) {
	if len(msg) == 0 {
		return
	}
	writeLog(level, unsafe.Pointer(unsafe.StringData(msg)), uint32(len(msg)))
}

// Native runs f. It exists so that code written for the native fake host
// compiles for wasip1 too; in wasm, logs always go to the host.
func Native(_ LogFunc, f func()) { f() }
