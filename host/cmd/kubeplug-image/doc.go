// Command kubeplug-image builds the host's container image without a
// container daemon, as `make image` runs it:
//
//	go run ./cmd/kubeplug-image -out ../build/image -modules ../build/guests
//
// It compiles host/cmd/kubeplug static (CGO_ENABLED=0), stripped and
// stamped with the version and commit, and writes an image of three layers
// (the base: /etc/passwd and /etc/group with the non-root user 65532, the
// CA bundle, the directories a pod mounts over; the modules under
// /modules; the binary at /kubeplug, the entrypoint) as an OCI image layout
// directory and as a tarball `docker load` reads.
//
// The same sources give the same image digest: every timestamp is
// SOURCE_DATE_EPOCH (the commit's time unless set) in the image config and
// zero in the layers, entries are sorted, owners and modes are fixed, and
// the binary is built with -trimpath.
//
// It is a build tool: it must not be imported, and it imports nothing of
// the host but what go-containerregistry needs.
package main
