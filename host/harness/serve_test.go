package harness_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/harness"
)

// fakeModule answers by request key: "fail" fails, "nil" returns a nil
// result, anything else an event naming the key.
type fakeModule struct {
	seen []*abi.ReconcileRequest
}

func (f *fakeModule) Manifest() abi.Manifest {
	return abi.Manifest{Name: "fake", Version: "1.2.3", ABIVersion: abi.Current.String(), Subject: abi.SubjectStatefulSet, Hooks: []string{abi.HookReconcile}}
}

// Call serves the hooks as the runtime does, by their typed methods.
func (f *fakeModule) Call(ctx context.Context, h abi.Hook, req abi.HookRequest) (*abi.Response, error) {
	switch h {
	case abi.HookReconcile:
		res, err := f.Reconcile(ctx, req.(*abi.ReconcileRequest))
		if err != nil {
			return nil, err
		}
		return &abi.Response{Result: res}, nil
	case abi.HookAdmit:
		res, err := f.Admit(ctx, req.(*abi.AdmitRequest))
		if err != nil {
			return nil, err
		}
		return &abi.Response{Admit: res}, nil
	}
	return nil, abi.ErrNoHook
}

func (f *fakeModule) Admit(_ context.Context, req *abi.AdmitRequest) (*abi.AdmitResponse, error) {
	return &abi.AdmitResponse{Allowed: req.Name == "ok", Message: "admit saw " + req.Name}, nil
}

func (f *fakeModule) Reconcile(_ context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
	f.seen = append(f.seen, req)
	switch req.Key {
	case "fail":
		return nil, errors.New(`call module "fake": module returned an error: boom`)
	case "nil":
		return nil, nil
	}
	return &abi.Result{
		Actions:            []abi.Action{{Type: abi.ActionEvent, Target: abi.ObjectRef{Kind: abi.KindStatefulSet, Name: req.Key}, Event: &abi.Event{Type: abi.EventNormal, Reason: "Seen"}}},
		RequeueAfterMillis: 1500,
	}, nil
}

// requestFrame is the client half of the protocol, written from the
// description in abi/frame.go.
func requestFrame(t *testing.T, req *abi.ReconcileRequest) []byte {
	t.Helper()
	body, err := req.MarshalMsg([]byte{0}) // hook 0: reconcile
	require.NoError(t, err)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

type frame struct {
	kind byte
	body []byte
}

func readFrames(t *testing.T, b []byte) []frame {
	t.Helper()
	var frames []frame
	for len(b) > 0 {
		require.GreaterOrEqual(t, len(b), 5, "truncated frame header")
		n := int(binary.BigEndian.Uint32(b[1:5]))
		require.GreaterOrEqual(t, len(b), 5+n, "truncated frame body")
		frames = append(frames, frame{b[0], b[5 : 5+n]})
		b = b[5+n:]
	}
	return frames
}

func TestServe(t *testing.T) {
	var in bytes.Buffer
	for _, key := range []string{"default/web", "fail", "nil"} {
		in.Write(requestFrame(t, &abi.ReconcileRequest{Subject: abi.SubjectStatefulSet, Key: key, Config: []byte(`{"a":1}`)}))
	}
	in.Write([]byte{0, 0, 0, 4, 0, 0xc1, 0xc1, 0xc1}) // a frame whose body is not MessagePack
	in.Write(requestFrame(t, &abi.ReconcileRequest{Key: "after-garbage"}))

	m := &fakeModule{}
	var out bytes.Buffer
	require.NoError(t, harness.Serve(context.Background(), m, &in, &out))

	frames := readFrames(t, out.Bytes())
	require.Len(t, frames, 6)

	require.Equal(t, byte(0), frames[0].kind, "the first frame is the manifest")
	man, err := abi.DecodeManifest(frames[0].body)
	require.NoError(t, err)
	require.Equal(t, m.Manifest(), *man)

	require.Equal(t, byte(0), frames[1].kind)
	resp, err := abi.DecodeResponse(frames[1].body)
	require.NoError(t, err)
	require.Equal(t, abi.StatusOK, resp.Status)
	require.Equal(t, int64(1500), resp.Result.RequeueAfterMillis)
	require.Equal(t, "default/web", resp.Result.Actions[0].Target.Name)

	require.Equal(t, byte(1), frames[2].kind, "a failed call is an error frame")
	require.Equal(t, `call module "fake": module returned an error: boom`, string(frames[2].body))

	require.Equal(t, byte(0), frames[3].kind)
	resp, err = abi.DecodeResponse(frames[3].body)
	require.NoError(t, err)
	require.Equal(t, abi.StatusOK, resp.Status)
	require.NotNil(t, resp.Result, "a nil result is sent as an empty one")
	require.Empty(t, resp.Result.Actions)

	require.Equal(t, byte(1), frames[4].kind, "an undecodable request is an error frame")
	require.Contains(t, string(frames[4].body), "decode request")

	require.Equal(t, byte(0), frames[5].kind, "serving goes on after a bad request")

	require.Len(t, m.seen, 4)
	require.Equal(t, []byte(`{"a":1}`), m.seen[0].Config)
	require.Equal(t, "after-garbage", m.seen[3].Key)
}

func TestServeMalformedFrames(t *testing.T) {
	good := requestFrame(t, &abi.ReconcileRequest{Key: "default/web"})
	tests := []struct {
		name  string
		in    []byte
		calls int
	}{
		{"truncated header", append(append([]byte{}, good...), 0, 0), 1},
		{"truncated body", good[:len(good)-1], 0},
		{"too long", binary.BigEndian.AppendUint32(nil, harness.MaxFrame+1), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &fakeModule{}
			var out bytes.Buffer
			err := harness.Serve(context.Background(), m, bytes.NewReader(tt.in), &out)
			require.ErrorIs(t, err, harness.ErrFrame)
			require.Len(t, m.seen, tt.calls)
			require.Len(t, readFrames(t, out.Bytes()), 1+tt.calls)
		})
	}
}

func TestServeStopsWhenContextDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := &fakeModule{}
	var out bytes.Buffer
	err := harness.Serve(ctx, m, bytes.NewReader(requestFrame(t, &abi.ReconcileRequest{Key: "x"})), &out)
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, m.seen)
	require.Len(t, readFrames(t, out.Bytes()), 1, "only the manifest was sent")
}

func TestServeOverPipes(t *testing.T) {
	// The way the kubeplug command runs it: the client writes a request and
	// waits for its answer before writing the next.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- harness.Serve(context.Background(), &fakeModule{}, inR, outW) }()

	readOne := func() frame {
		var hdr [5]byte
		_, err := io.ReadFull(outR, hdr[:])
		require.NoError(t, err)
		body := make([]byte, binary.BigEndian.Uint32(hdr[1:]))
		_, err = io.ReadFull(outR, body)
		require.NoError(t, err)
		return frame{hdr[0], body}
	}
	require.Equal(t, byte(0), readOne().kind)
	for _, key := range []string{"a", "fail", "b"} {
		_, err := inW.Write(requestFrame(t, &abi.ReconcileRequest{Key: key}))
		require.NoError(t, err)
		f := readOne()
		if key == "fail" {
			require.Equal(t, byte(1), f.kind)
			continue
		}
		resp, err := abi.DecodeResponse(f.body)
		require.NoError(t, err)
		require.Equal(t, key, resp.Result.Actions[0].Target.Name)
	}
	require.NoError(t, inW.Close())
	require.NoError(t, <-done)
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("pipe closed") }

func TestServeWriteError(t *testing.T) {
	err := harness.Serve(context.Background(), &fakeModule{}, bytes.NewReader(nil), failingWriter{})
	require.ErrorContains(t, err, "pipe closed")
}

func TestServeAdmitAndUnknownHook(t *testing.T) {
	body, err := (&abi.AdmitRequest{Name: "ok"}).MarshalMsg([]byte{1}) // hook 1: admit
	require.NoError(t, err)
	var in bytes.Buffer
	in.Write(binary.BigEndian.AppendUint32(nil, uint32(len(body))))
	in.Write(body)
	in.Write([]byte{0, 0, 0, 2, 7, 0x80}) // hook 7
	var out bytes.Buffer
	require.NoError(t, harness.Serve(context.Background(), &fakeModule{}, &in, &out))
	frames := readFrames(t, out.Bytes())
	require.Len(t, frames, 3)
	require.Equal(t, byte(0), frames[1].kind)
	resp, err := abi.DecodeResponse(frames[1].body)
	require.NoError(t, err)
	require.Equal(t, &abi.AdmitResponse{Allowed: true, Message: "admit saw ok"}, resp.Admit)
	require.Nil(t, resp.Result)
	require.Equal(t, byte(1), frames[2].kind)
	require.Contains(t, string(frames[2].body), "unknown hook 7")
}
