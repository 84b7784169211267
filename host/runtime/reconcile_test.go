package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime"
	wb "github.com/kubeplug/kubeplug/host/runtime/internal/wasmbuild"
)

func TestReconcileEchoes(t *testing.T) {
	m := load(t, "good", runtime.Limits{}, runtime.Options{})
	for _, key := range []string{"default/ok", "other/ok"} {
		res, err := m.Reconcile(context.Background(), request(key))
		require.NoError(t, err)
		ns := key[:len(key)-len("/ok")]
		require.Equal(t, []abi.Action{{
			Type:   abi.ActionEvent,
			Target: abi.ObjectRef{Kind: abi.KindStatefulSet, Namespace: ns, Name: "ok", UID: "uid-ok"},
			Event:  &abi.Event{Type: abi.EventNormal, Reason: "Echo", Message: key},
		}}, res.Actions)
	}
	require.Equal(t, uint64(1), m.Stats().Created, "sequential calls reuse one instance")
}

// The runtime checks the manifest only; refusing actions the capabilities do
// not cover is the executor's job, so an undeclared action comes back as is.
func TestReconcileReturnsUndeclaredActionUnchanged(t *testing.T) {
	m := load(t, "good", runtime.Limits{}, runtime.Options{})
	require.Equal(t, []abi.Capability{{Action: abi.ActionEvent, Resources: []string{"statefulsets"}}}, m.Manifest().Capabilities)

	res, err := m.Reconcile(context.Background(), request("default/delete"))
	require.NoError(t, err)
	require.Equal(t, []abi.Action{{
		Type:   abi.ActionDeleteObject,
		Target: abi.ObjectRef{Kind: abi.KindStatefulSet, Namespace: "default", Name: "delete", UID: "uid-delete"},
	}}, res.Actions)
}

// Each misbehaviour fails its own call only: the error names the module, the
// key and the reason, the instance is replaced (or kept, for statuses the
// guest reported itself), and the same module serves the next call.
func TestReconcileFailureFailsThatCallOnly(t *testing.T) {
	tests := []struct {
		mode   string
		limits runtime.Limits
		kind   runtime.ErrorKind
		is     error // also matched with errors.Is, if set
		reason string
		kept   bool // the instance survives the failure
	}{
		{mode: "loop", limits: runtime.Limits{Deadline: 100 * time.Millisecond},
			kind: runtime.KindDeadline, is: context.DeadlineExceeded, reason: "deadline exceeded after 100ms: guest interrupted"},
		{mode: "bomb", limits: runtime.Limits{MemoryBytes: 32 << 20, Deadline: time.Minute},
			kind: runtime.KindMemory, reason: "out of memory at the 32 MiB limit"},
		{mode: "trap", kind: runtime.KindTrap, reason: "guest trapped: wasm error: unreachable"},
		{mode: "panic", kind: runtime.KindTrap, reason: "guest trapped"},
		{mode: "exit", kind: runtime.KindTrap, reason: "guest exited with code 3"},
		{mode: "garbage", kind: runtime.KindOutput, is: abi.ErrDecode, reason: "output: malformed message"},
		{mode: "huge", kind: runtime.KindOutput, reason: "output region of 2097152 bytes is larger than the 1 MiB limit"},
		{mode: "outside", kind: runtime.KindOutput, reason: "output region [0xffff0000, +4096) is outside the guest's"},
		{mode: "failed", kind: runtime.KindStatus, is: abi.ErrFailed, reason: "module returned an error: config is invalid", kept: true},
		{mode: "status", kind: runtime.KindStatus, is: abi.ErrStatus, reason: "unknown status 42: what is this", kept: true},
		{mode: "recovered", kind: runtime.KindStatus, is: abi.ErrPanic, reason: "module panicked: index out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			tt.limits.Instances = 1
			m := load(t, "good", tt.limits, runtime.Options{})
			key := "default/" + tt.mode

			res, err := m.Reconcile(context.Background(), request(key))
			require.Nil(t, res)
			require.ErrorIs(t, err, tt.kind)
			if tt.is != nil {
				require.ErrorIs(t, err, tt.is)
			}
			var ce *runtime.CallError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, "good", ce.Module)
			require.Equal(t, key, ce.Key)
			require.Equal(t, tt.kind, ce.Kind)
			require.Contains(t, err.Error(), `module "good" reconcile "`+key+`": `)
			require.Contains(t, err.Error(), tt.reason)
			require.NotContains(t, err.Error(), "\n", "errors are one line")

			discarded := uint64(1)
			if tt.kept {
				discarded = 0
			}
			require.Equal(t, discarded, m.Stats().Discarded)

			res, err = m.Reconcile(context.Background(), request("default/ok"))
			require.NoError(t, err)
			require.Len(t, res.Actions, 1)
			require.Equal(t, runtime.Stats{Live: 1, Peak: 1, Created: 1 + discarded, Discarded: discarded}, m.Stats())
		})
	}
}

// A guest without any language runtime: the failures are the wasm
// machine's own.
func TestReconcileRawGuestFailures(t *testing.T) {
	tests := []struct {
		name      string
		reconcile []byte
		funcs     []wb.Func // added to the raw guest
		kind      runtime.ErrorKind
		reason    string
	}{
		{name: "unreachable", reconcile: []byte{wb.OpUnreachable}, kind: runtime.KindTrap, reason: "guest trapped: wasm error: unreachable"},
		{name: "loop", reconcile: infiniteLoop, kind: runtime.KindDeadline, reason: "deadline exceeded after 50ms"},
		{name: "recursion without loops", reconcile: fanout(40), funcs: []wb.Func{fanoutFunc}, kind: runtime.KindDeadline, reason: "deadline exceeded after 50ms"},
		{name: "empty output", reconcile: wb.I64Const(0), kind: runtime.KindOutput, reason: "output: malformed message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := rawGuest(tt.reconcile)
			g.Funcs = append(g.Funcs, tt.funcs...)
			m, err := newEngine(t, runtime.Options{}).Load(context.Background(), "raw.wasm", g.Bytes(),
				runtime.Limits{Deadline: 50 * time.Millisecond})
			require.NoError(t, err)
			_, err = m.Reconcile(context.Background(), request("default/web"))
			require.ErrorIs(t, err, tt.kind)
			require.Contains(t, err.Error(), `module "raw" reconcile "default/web": `+tt.reason)
		})
	}
}

func TestReconcileCallerCancelInterruptsGuest(t *testing.T) {
	sink := &logSink{}
	m := load(t, "good", runtime.Limits{Deadline: time.Minute}, runtime.Options{Logger: sink.logger()})
	ctx, cancel := context.WithCancel(context.Background())
	looping := sink.when("looping default/loop")
	go func() {
		<-looping
		cancel()
	}()

	_, err := m.Reconcile(ctx, request("default/loop"))
	require.ErrorIs(t, err, runtime.KindDeadline)
	require.ErrorIs(t, err, context.Canceled)
	require.Contains(t, err.Error(), `module "good" reconcile "default/loop": caller gave up (context canceled): guest interrupted`)

	res, err := m.Reconcile(context.Background(), request("default/ok"))
	require.NoError(t, err)
	require.Len(t, res.Actions, 1)
}

// startLoop starts a call of m's guest that loops until stop is called,
// and returns once the guest has logged that it loops; done receives the
// call's error.
func startLoop(m *runtime.Module, sink *logSink) (stop func(), done <-chan error) {
	ctx, stop := context.WithCancel(context.Background())
	looping := sink.when("looping default/loop")
	errs := make(chan error)
	go func() {
		_, err := m.Reconcile(ctx, request("default/loop"))
		errs <- err
	}()
	<-looping
	return stop, errs
}

func TestReconcileWaitsForAFreeInstance(t *testing.T) {
	sink := &logSink{}
	m := load(t, "good", runtime.Limits{Instances: 1, Deadline: time.Minute}, runtime.Options{Logger: sink.logger()})

	// The only instance loops until its caller gives up.
	stopLoop, loopDone := startLoop(m, sink)

	// A caller that stops waiting gets its own context's error, not a call
	// error.
	impatient, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := m.Reconcile(impatient, request("default/ok"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, err.Error(), `module "good" reconcile "default/ok": waiting for a free instance`)
	require.False(t, errors.As(err, new(*runtime.CallError)))

	// So does one that gave up before calling; no instance is harmed.
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = m.Reconcile(canceled, request("default/ok"))
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, errors.As(err, new(*runtime.CallError)))

	// A caller that waits is served once the instance is free (here: replaced).
	okDone := make(chan error)
	go func() {
		_, err := m.Reconcile(context.Background(), request("default/ok"))
		okDone <- err
	}()
	stopLoop()
	require.ErrorIs(t, <-loopDone, runtime.KindDeadline)
	require.NoError(t, <-okDone)
	require.Equal(t, 1, m.Stats().Peak)
}

func TestReconcileAfterClose(t *testing.T) {
	ctx := context.Background()
	eng := newEngine(t, runtime.Options{})
	wasm := guest(t, "good")

	m, err := eng.Load(ctx, "good.wasm", wasm, runtime.Limits{})
	require.NoError(t, err)
	require.NoError(t, m.Close(ctx))
	require.NoError(t, m.Close(ctx), "Close is idempotent")
	_, err = m.Reconcile(ctx, request("default/ok"))
	require.ErrorIs(t, err, runtime.ErrClosed)
	require.Contains(t, err.Error(), `module "good" reconcile "default/ok": module closed`)
	require.Equal(t, 0, m.Stats().Live)

	// Closing the engine closes what it loaded and refuses to load more.
	m, err = eng.Load(ctx, "good.wasm", wasm, runtime.Limits{})
	require.NoError(t, err)
	require.NoError(t, eng.Close(ctx))
	_, err = m.Reconcile(ctx, request("default/ok"))
	require.ErrorIs(t, err, runtime.ErrClosed)
	_, err = eng.Load(ctx, "good.wasm", wasm, runtime.Limits{})
	require.ErrorIs(t, err, runtime.ErrClosed)
}

func TestCloseLetsCallsInFlightFinish(t *testing.T) {
	sink := &logSink{}
	m := load(t, "good", runtime.Limits{Deadline: 200 * time.Millisecond}, runtime.Options{Logger: sink.logger()})
	looping := sink.when("looping default/loop")
	done := make(chan error)
	go func() {
		_, err := m.Reconcile(context.Background(), request("default/loop"))
		done <- err
	}()
	<-looping
	require.NoError(t, m.Close(context.Background()))
	// Close returned only after the call ended on its own deadline.
	require.ErrorIs(t, <-done, runtime.KindDeadline)
}

func TestCloseInterruptsCallsStillRunningWhenItGivesUp(t *testing.T) {
	sink := &logSink{}
	m := load(t, "good", runtime.Limits{Deadline: time.Minute}, runtime.Options{Logger: sink.logger()})
	looping := sink.when("looping default/loop")
	done := make(chan error)
	go func() {
		_, err := m.Reconcile(context.Background(), request("default/loop"))
		done <- err
	}()
	<-looping
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, m.Close(ctx))
	err := <-done
	require.ErrorIs(t, err, runtime.ErrClosed)
	require.Contains(t, err.Error(), `module "good" reconcile "default/loop": module closed during the call`)
}

func TestGuestCallsWaitForASlotAcrossModules(t *testing.T) {
	ctx := context.Background()
	sink := &logSink{}
	eng := newEngine(t, runtime.Options{Logger: sink.logger(), GuestCalls: 1})
	wasm := guest(t, "good")
	busy, err := eng.Load(ctx, "busy.wasm", wasm, runtime.Limits{Deadline: time.Minute})
	require.NoError(t, err)
	busy.SetName("busy")
	other, err := eng.Load(ctx, "other.wasm", wasm, runtime.Limits{Deadline: time.Second})
	require.NoError(t, err)
	other.SetName("other")

	// busy's call holds the engine's only slot until its caller gives up.
	stopLoop, loopDone := startLoop(busy, sink)
	s := eng.GuestCalls()
	require.Equal(t, []int{1, 2, 1}, []int{s.PerClass, s.Slots, s.Running}, "%+v", s)

	// Another module's call waits for it, with its own instance idle.
	okDone := make(chan error)
	go func() {
		_, err := other.Reconcile(ctx, request("default/ok"))
		okDone <- err
	}()
	for eng.GuestCalls().Waiting != 1 {
		select {
		case err := <-okDone:
			t.Fatalf("other's call ran beside busy's on an engine of one guest call: %v", err)
		case <-time.After(time.Millisecond):
		}
	}

	// A waiting caller that gives up gets its context's error, not a call
	// error, and leaves the queue.
	impatient, cancel := context.WithCancel(ctx)
	impatientDone := make(chan error)
	go func() {
		_, err := other.Reconcile(impatient, request("default/ok"))
		impatientDone <- err
	}()
	for eng.GuestCalls().Waiting != 2 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	err = <-impatientDone
	require.ErrorIs(t, err, context.Canceled)
	require.Contains(t, err.Error(), `module "other" reconcile "default/ok": waiting for a guest call seat`)
	require.False(t, errors.As(err, new(*runtime.CallError)))

	// The slot passes on when busy's call ends. other's deadline starts
	// then: it waited longer than its deadline, and its call succeeds.
	time.Sleep(1500 * time.Millisecond)
	stopLoop()
	require.ErrorIs(t, <-loopDone, runtime.KindDeadline)
	require.NoError(t, <-okDone)
	s = eng.GuestCalls()
	require.Equal(t, 0, s.Running)
	require.Equal(t, int64(1), s.Classes[1].GaveUp, "the impatient call is counted: %+v", s)
}

// Whatever calls of one class hold every seat they may, a call of the
// other class runs at once: reconciles with long deadlines do not fail
// admissions, and admissions that run to their deadline do not stop every
// reconcile.
func TestEachClassKeepsAGuestCallSeat(t *testing.T) {
	ctx := context.Background()
	sink := &logSink{}
	eng := newEngine(t, runtime.Options{Logger: sink.logger(), GuestCalls: 1})
	reconciler, err := eng.Load(ctx, "good.wasm", guest(t, "good"), runtime.Limits{Deadline: time.Minute})
	require.NoError(t, err)
	admitter, err := eng.Load(ctx, "admitter.wasm", guest(t, "admitter"), runtime.Limits{Deadline: time.Minute})
	require.NoError(t, err)
	within := func() context.Context { // what a test waits before calling it a hang
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		t.Cleanup(cancel)
		return c
	}

	t.Run("reconciles hold their seats", func(t *testing.T) {
		stop, done := startLoop(reconciler, sink)
		defer func() { stop(); <-done }()
		got, err := admitter.Admit(within(), admitRequest("allow"))
		require.NoError(t, err, "an admission waited behind a reconcile: %+v", eng.GuestCalls())
		require.True(t, got.Allowed)
	})
	t.Run("admissions hold their seats", func(t *testing.T) {
		loopCtx, stop := context.WithCancel(ctx)
		done := make(chan error)
		go func() {
			_, err := admitter.Admit(loopCtx, admitRequest("loop"))
			done <- err
		}()
		defer func() { stop(); <-done }()
		for eng.GuestCalls().Classes[0].Running != 1 {
			time.Sleep(time.Millisecond)
		}
		_, err := reconciler.Reconcile(within(), request("default/ok"))
		require.NoError(t, err, "a reconcile waited behind an admission: %+v", eng.GuestCalls())
	})
}
