// Command kubeplug-image builds the host's container image without a
// container daemon, as `make image` runs it:
//
//	go run ./cmd/kubeplug-image -out ../build/image -modules ../build/guests [-sign-key key.pem]
//
// It cross-compiles host/cmd/kubeplug static (CGO_ENABLED=0), stripped and
// stamped with the version and commit for each platform (linux/amd64 and
// linux/arm64 by default), and writes for each an image of three layers
// (the base: /etc/passwd and /etc/group with the non-root user 65532, the
// CA bundle, the directories a pod mounts over; the modules under
// /modules; the binary at /kubeplug, the entrypoint), and an OCI image
// index of them, tagged with the version:
//
//	out/oci/                      OCI image layout: index.json names the index, then its referrers
//	  index (linux/amd64, linux/arm64)
//	    each image <- its CycloneDX SBOM (artifactType application/vnd.cyclonedx+json)
//	  with -sign-key: a Sigstore bundle on the index, each image and each SBOM
//	out/kubeplug.tar              one platform's image, for docker load
//	out/sbom-linux-ARCH.cdx.json  each platform's SBOM, as attached
//	out/digest                    the index's digest
//
// The SBOM lists what the binary's own build info names (its Go modules
// and Go version, as `go version -m` prints them), the module files and
// the CA bundle. The signatures are the modules' (host/oci): cosign's
// bundle format, verified with the public key.
//
// The same sources give the same digests, of the index and of each image
// and SBOM: every timestamp is SOURCE_DATE_EPOCH (the commit's time unless
// set) in the image config and zero in the layers, entries are sorted,
// owners and modes are fixed, and the binary is built with -trimpath. A
// signature differs at each build (ECDSA signs with a random nonce) and
// changes no digest it signs.
//
// It is a build tool: it must not be imported. Of the host it imports only
// host/oci, for the signature format modules are signed in.
package main
