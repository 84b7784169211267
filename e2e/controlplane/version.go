package controlplane

import (
	"fmt"
	"strings"
	"sync"
	_ "unsafe" // go:linkname: the version variables below

	"k8s.io/component-base/version"
)

// Version is the release of Kubernetes this control plane is built from:
// k8s.io/kubernetes's version in e2e/go.mod (a test holds them equal). Its
// kube-apiserver reports it at /version, where kubectl version and Helm's
// kubeVersion check read it.
const Version = "v1.37.1"

// The build's version of Kubernetes, which release builds set with
// -ldflags -X and `go build` or `go test` leaves at placeholders
// ("v0.0.0-master+$Format:%H$", no major, no minor). Set here so that every
// user of the package (tests, make demo, make cluster) gets the real
// version without a linker flag on every go command: RATIONALE.md, "Why
// does the control plane set its version with go:linkname?".
//
//go:linkname gitVersion k8s.io/component-base/version.gitVersion
var gitVersion string

//go:linkname gitMajor k8s.io/component-base/version.gitMajor
var gitMajor string

//go:linkname gitMinor k8s.io/component-base/version.gitMinor
var gitMinor string

var stampOnce sync.Once

// stampVersion makes the process's Kubernetes version Version, before a
// server reads it: version.Get, which kube-apiserver's /version and
// kube-controller-manager report, reads the major and minor as they are
// and the git version through SetDynamicVersion, which accepts only a
// version of the same major, minor and patch as gitVersion's.
func stampVersion() error {
	var err error
	stampOnce.Do(func() {
		major, minor, ok := majorMinor(Version)
		if !ok {
			err = fmt.Errorf("controlplane: version %q is not vMAJOR.MINOR.PATCH", Version)
			return
		}
		gitVersion, gitMajor, gitMinor = Version, major, minor
		if e := version.SetDynamicVersion(Version); e != nil {
			err = fmt.Errorf("controlplane: set the Kubernetes version to %s: %w", Version, e)
		}
	})
	return err
}

// VersionLDFlags are the linker flags that stamp a binary built from
// k8s.io/kubernetes (kubectl, for a test without one) with Version, as a
// release build is stamped.
func VersionLDFlags() string {
	major, minor, _ := majorMinor(Version)
	const pkg = "k8s.io/component-base/version."
	return fmt.Sprintf("-X %sgitVersion=%s -X %sgitMajor=%s -X %sgitMinor=%s", pkg, Version, pkg, major, pkg, minor)
}

// majorMinor splits "v1.37.1" into "1" and "37".
func majorMinor(v string) (major, minor string, ok bool) {
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if len(parts) != 3 || !strings.HasPrefix(v, "v") {
		return "", "", false
	}
	return parts[0], parts[1], true
}
