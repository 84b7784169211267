package sdktest_test

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
	"github.com/kubeplug/kubeplug/sdk/internal/raw"
)

// This test binary is a guest (it registers echoModule) and, when
// envServe is set, also a stand-in for "kubeplug harness": the remote tests
// point KUBEPLUG_BIN at the binary itself.
const envServe = "SDKTEST_SERVE"

func init() {
	sdk.Register(sdk.Module{
		Name: "echo", Version: "1.0.0", Subject: abi.SubjectStatefulSet,
		Capabilities: []abi.Capability{{Action: abi.ActionEvent, Resources: []string{"statefulsets"}}},
		Reconcile:    echo,
	})
}

// echo answers with one event per pod, logs, and fails on request.
func echo(req *sdk.Request) (sdk.Result, error) {
	set := req.StatefulSet()
	if set == nil {
		return sdk.Result{}, nil
	}
	if set.Metadata.Labels["fail"] != "" {
		return sdk.Result{}, errors.New(set.Metadata.Labels["fail"])
	}
	sdk.Logf(sdk.LevelInfo, "reconciling %s", req.Key())
	var res sdk.Result
	for _, p := range req.Pods() {
		res.Actions = append(res.Actions, sdk.Normal(sdk.RefOf(set), "Pod", p.Metadata.Name))
	}
	return res, nil
}

func TestMain(m *testing.M) {
	if mode := os.Getenv(envServe); mode != "" {
		os.Exit(serve(mode))
	}
	os.Exit(m.Run())
}

// serve is the stand-in server, written from the protocol in abi/frame.go. Modes:
// "ok" serves the module, "loadfail" fails to load, "crash" exits on the
// first request after writing to stderr.
func serve(mode string) int {
	out := bufio.NewWriter(os.Stdout)
	write := func(kind byte, body []byte) {
		out.WriteByte(kind)
		out.Write(binary.BigEndian.AppendUint32(nil, uint32(len(body))))
		out.Write(body)
		out.Flush()
	}
	if mode == "loadfail" {
		write(1, []byte("module.wasm: abi version 9.0.0 is not supported"))
		return 1
	}
	write(0, raw.Manifest())
	in := bufio.NewReader(os.Stdin)
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(in, hdr[:]); err != nil {
			return 0
		}
		body := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(in, body); err != nil {
			return 1
		}
		if mode == "crash" {
			fmt.Fprintln(os.Stderr, "fatal: instance trapped: unreachable")
			return 3
		}
		var resp *abi.Response
		var err error
		dispatch := raw.Reconcile
		if body[0] == 1 { // the admit hook
			dispatch = raw.Admit
		}
		raw.Native(nil, func() { resp, err = abi.DecodeResponse(dispatch(body[1:])) })
		if err != nil {
			write(1, []byte(err.Error()))
			continue
		}
		if err := abi.StatusError(resp.Status, resp.Message); err != nil {
			write(1, []byte(`call module "echo": `+err.Error()))
			continue
		}
		b, _ := resp.MarshalMsg(nil)
		write(0, b)
	}
}
