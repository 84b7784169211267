package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/kubeplug/kubeplug/e2e/controlplane"
)

// Kubectl returns the kubectl a test runs as a user runs theirs: KUBECTL
// when set, else kubectl on PATH, else one built once per test binary from
// the k8s.io/kubernetes module e2e requires (go.mod's tool directive keeps
// its packages in the module graph), so that `make e2e` needs nothing but
// Go. The one built is stamped with controlplane.Version, as a release
// build of kubectl is.
func Kubectl() (string, error) {
	if bin := os.Getenv("KUBECTL"); bin != "" {
		return filepath.Abs(bin)
	}
	if bin, err := exec.LookPath("kubectl"); err == nil {
		return bin, nil
	}
	bin, err := binary("kubectl", "e2e", "k8s.io/kubernetes/cmd/kubectl", "-ldflags", controlplane.VersionLDFlags())
	if err != nil {
		return "", fmt.Errorf("%w (set KUBECTL or put kubectl on PATH to use another)", err)
	}
	return bin, nil
}
