package hostile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

// guest is a Go guest of the corpus: the module its sources under
// guests/<class>/ build, and where the host stops it.
type guest struct {
	class string
	stage Stage
	want  string
}

// guests are the action-level classes, written in Go against the SDK (or,
// where the SDK cannot express the attack, against abi alone): modules that
// load and return, and ask for what the host must refuse or bound. Stage and
// want are for the default limits.
var guests = []guest{
	{"invalid-utf8-type", StageCall, "actions[0].type: invalid UTF-8"},
	{"invalid-utf8-version", StageLoad, "version: invalid UTF-8"},
	{"unknown-types", StageCall, "output holds 40000 actions, more than the limit of"},
	{"empty-actions", StageCall, "output holds 100000 actions, more than the limit of"},
	{"event-flood", StageCall, "event.message: a string of 1000000 bytes, more than the limit of"},
	{"requeue-1ms", StageAction, "requeue delay clamped"},
	{"requeue-huge", StageAction, "requeue delay clamped"},
	{"beyond-allow", StageLoad, "deleteObject"},
	{"owner-unrelated", StageAction, "nor one of its pods"},
	{"claim-shrink", StageAction, "kubeplug never shrinks a claim's request"},
	{"delete-bound-volume", StageAction, "only a released volume is deleted"},
	{"named-secret", StageAction, "names a Secret"},
	{"finalizer-flood", StageCall, "output holds 9000 actions, more than the limit of"},
}

// Guests builds the corpus's Go guests with the Go toolchain goBin (stock Go,
// GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared), writing each module to
// outDir/<class>.wasm, and returns them in a fixed order. It builds two at a
// time, the first alone so that it compiles the Go runtime for wasip1 into the
// build cache for the rest.
//
// The sources are found beside this file, so the calling binary must be built
// from a checkout without -trimpath, as tests are.
//
//	mods, err := hostile.Guests(ctx, "go", t.TempDir())
func Guests(ctx context.Context, goBin, outDir string) ([]Module, error) {
	return buildGuests(ctx, goBin, outDir, guests)
}

// buildGuests builds the guests of list as Guests says.
func buildGuests(ctx context.Context, goBin, outDir string, list []guest) ([]Module, error) {
	hostDir, err := hostModuleDir()
	if err != nil {
		return nil, err
	}
	build := func(g guest) (Module, error) {
		out := filepath.Join(outDir, g.class+".wasm")
		cmd := exec.CommandContext(ctx, goBin, "build", "-buildmode=c-shared", "-o", out, "./runtime/hostile/guests/"+g.class)
		cmd.Dir = hostDir
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		var log bytes.Buffer
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Run(); err != nil {
			return Module{}, fmt.Errorf("build hostile guest %s: %w\n%s", g.class, err, log.String())
		}
		wasm, err := os.ReadFile(out)
		if err != nil {
			return Module{}, fmt.Errorf("read hostile guest %s: %w", g.class, err)
		}
		return Module{Class: g.class, Wasm: wasm, Stage: g.stage, Want: g.want}, nil
	}

	mods := make([]Module, len(list))
	errs := make([]error, len(list))
	mods[0], errs[0] = build(list[0])
	if errs[0] != nil {
		return nil, errs[0]
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i := 1; i < len(list); i++ {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			mods[i], errs[i] = build(list[i])
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return mods, nil
}

// hostModuleDir is the directory of the host's go.mod, found from this
// file's path.
func hostModuleDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("hostile guests: cannot find the package's source directory")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "..")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("hostile guests: the host module's sources are not beside the binary (built with -trimpath?): %w", err)
	}
	return dir, nil
}
