// Package input reads what an operator hands the host, within bounds: files
// (module files, host.yaml, case files, keys) and the YAML in them. Every
// reader here checks its budget in bytes and count before the work, so that
// a file that is a FIFO, a device or 100 MB, or a YAML document whose
// anchors and merge keys expand without end, is refused with a clear error
// instead of hanging or exhausting the host.
//
// It imports the standard library and gopkg.in/yaml.v3 only: config,
// casetest, oci and the kubeplug command all use it, and it must not import
// any of them.
package input
