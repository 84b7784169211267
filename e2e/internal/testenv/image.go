package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sync"
)

var (
	imageOnce sync.Once
	imageDir  string
	imageErr  error
)

// ImageModules are the modules ImageLayout puts in the image it builds:
// those the installs run, and the examples the install tests add.
var ImageModules = []string{"guests/retention", "guests/reclaim", "examples/warnretain", "examples/storagepolicy"}

// ImageLayout is the OCI layout directory of kubeplug's image: the one
// `make image` built when KUBEPLUG_IMAGE names it (build/image/oci), or
// else one built once per test binary with host/cmd/kubeplug-image, as
// make image builds it, from ImageModules.
func ImageLayout() (string, error) {
	imageOnce.Do(func() {
		if dir := os.Getenv("KUBEPLUG_IMAGE"); dir != "" {
			imageDir, imageErr = filepath.Abs(dir)
			return
		}
		imageDir, imageErr = buildImage()
	})
	return imageDir, imageErr
}

func buildImage() (string, error) {
	if err := scratch(); err != nil {
		return "", err
	}
	mods := filepath.Join(buildDir, "image-modules")
	if err := os.MkdirAll(mods, 0o755); err != nil {
		return "", err
	}
	for _, dir := range ImageModules {
		wasm, err := Guest(dir)
		if err != nil {
			return "", err
		}
		b, err := os.ReadFile(wasm)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(mods, filepath.Base(dir)+".wasm"), b, 0o644); err != nil {
			return "", err
		}
	}
	out := filepath.Join(buildDir, "image")
	// This node's platform only: another's cross-compile would be built
	// for nothing.
	cmd := exec.Command("go", "run", "./cmd/kubeplug-image", "-out", out, "-modules", mods, "-platforms", "linux/"+goruntime.GOARCH)
	cmd.Dir = filepath.Join(Root(), "host")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the image: %v\n%s", err, b)
	}
	return filepath.Join(out, "oci"), nil
}
