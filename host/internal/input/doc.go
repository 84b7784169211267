// Package input reads what an operator hands the host, within bounds: files
// (module files, host.yaml, case files, keys) and the YAML in them. Every
// reader here checks its budget in bytes and count before the work, so that
// a file that is a FIFO, a device or 100 MB, or a YAML document whose
// anchors and merge keys expand without end, is refused with a clear error
// instead of hanging or exhausting the host.
//
// It is the host's one YAML decoding path (YAMLDecoder, Fields, Value): a
// budget checked before anything walks a document, positions taken from the
// decoder's nodes, mappings read strictly with the known key an unknown one
// is most likely a typo of, and values decoded in time linear in the
// document (yaml's own Decode compares every pair of a mapping's keys, so
// nothing here hands it a mapping). Callers word the messages.
//
// It imports the standard library and go.yaml.in/yaml/v3 only: config,
// casetest, oci and the kubeplug command all use it, and it must not import
// any of them.
package input
