package abi

import (
	"fmt"
	"strconv"
	"strings"
)

// The ABI version this package implements. Major changes break guests; minor
// adds functions; patch adds enum values (new action types, statuses).
const (
	VersionMajor = 1
	VersionMinor = 5
	VersionPatch = 0
)

// VersionExportPrefix starts the name of the export that marks a module's ABI
// version: a guest exports a function named
// "kubeplug_abi_version_<major>_<minor>_<patch>" (taking and returning nothing).
const VersionExportPrefix = "kubeplug_abi_version_"

// VersionExport is the version marker this package's guests export.
var VersionExport = Version{VersionMajor, VersionMinor, VersionPatch}.ExportName()

// Current is the version this package implements.
var Current = Version{VersionMajor, VersionMinor, VersionPatch}

//msgp:ignore Version KindInfo

// Version is an ABI version.
type Version struct {
	Major, Minor, Patch int
}

// String returns "major.minor.patch".
func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// ExportName returns the name of the marker export for v.
func (v Version) ExportName() string {
	return fmt.Sprintf("%s%d_%d_%d", VersionExportPrefix, v.Major, v.Minor, v.Patch)
}

// Compatible reports whether a host implementing Current can run a guest built
// for v: same major, and a minor no newer than the host's.
func (v Version) Compatible() bool {
	return v.Major == VersionMajor && v.Minor <= VersionMinor
}

// ParseVersionExport parses a marker export name. ok is false when name does
// not start with VersionExportPrefix; err is set when it does but the rest is
// not three non-negative integers joined by underscores.
func ParseVersionExport(name string) (v Version, ok bool, err error) {
	rest, ok := strings.CutPrefix(name, VersionExportPrefix)
	if !ok {
		return Version{}, false, nil
	}
	parts := strings.Split(rest, "_")
	if len(parts) != 3 {
		return Version{}, true, fmt.Errorf("abi version export %q: want %s<major>_<minor>_<patch>", name, VersionExportPrefix)
	}
	var n [3]int
	for i, p := range parts {
		x, perr := strconv.Atoi(p)
		if perr != nil || x < 0 {
			return Version{}, true, fmt.Errorf("abi version export %q: %q is not a non-negative integer", name, p)
		}
		n[i] = x
	}
	return Version{n[0], n[1], n[2]}, true, nil
}
