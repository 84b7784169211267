package abi

// Guest exports. Every guest exports the version marker (see VersionExport),
// ExportMalloc, ExportManifest, and one entry point per hook its manifest
// declares. A WASI reactor also exports "_initialize", which the host calls
// once per instance before anything else.
const (
	// ExportInitialize is the WASI reactor initializer.
	ExportInitialize = "_initialize"
	// ExportMalloc: (size u32) -> ptr u32. Returns a guest buffer of at least
	// size bytes for the host to write a hook's input into.
	ExportMalloc = "kubeplug_malloc"
	// ExportManifest: () -> u64 packed (ptr, len) of an encoded Manifest.
	ExportManifest = "kubeplug_manifest"
	// ExportReconcile: (ptr u32, len u32) -> u64 packed (ptr, len) of an
	// encoded Response whose Result answers the encoded ReconcileRequest.
	ExportReconcile = "kubeplug_on_reconcile"
	// ExportAdmit: (ptr u32, len u32) -> u64 packed (ptr, len) of an
	// encoded Response whose Admit answers the encoded AdmitRequest (ABI 1.1).
	ExportAdmit = "kubeplug_on_admit"
)

// Host imports, all in the module named ImportModule.
const (
	// ImportModule is the import module name of the host functions.
	ImportModule = "kubeplug"
	// ImportWriteLog: (level u32, ptr u32, len u32) -> (). Writes a UTF-8
	// message to the host log, tagged with the module name.
	ImportWriteLog = "kubeplug_write_log"
)

// WASIModule is the only other import module a guest may use. The host
// provides it with no arguments, no environment, no preopened directories and
// no sockets.
const WASIModule = "wasi_snapshot_preview1"

// Log levels for ImportWriteLog.
const (
	LogDebug uint32 = 0
	LogInfo  uint32 = 1
	LogWarn  uint32 = 2
	LogError uint32 = 3
)

// PackPtrLen packs a guest memory region into the u64 that exports return:
// pointer in the high 32 bits, length in the low 32 bits.
func PackPtrLen(ptr, length uint32) uint64 { return uint64(ptr)<<32 | uint64(length) }

// UnpackPtrLen is the inverse of PackPtrLen.
func UnpackPtrLen(v uint64) (ptr, length uint32) { return uint32(v >> 32), uint32(v) }
