package snapshot

import "errors"

// ErrBadKey is returned for a subject key that does not have the form the
// subject kind needs: "namespace/name" for a StatefulSet, "name" for a
// PersistentVolume.
var ErrBadKey = errors.New("malformed subject key")

// ErrBadClaimUpdate is returned when a VolumeClaimUpdate object does not
// convert to the abi type, e.g. a quantity that does not parse.
var ErrBadClaimUpdate = errors.New("malformed VolumeClaimUpdate")
