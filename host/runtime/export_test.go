package runtime

import (
	"context"

	"github.com/kubeplug/kubeplug/abi"
)

// StartInstanceForTest creates an instance (instantiate and _initialize)
// and closes it, for BenchmarkInstanceStart.
func (m *Module) StartInstanceForTest(ctx context.Context) error {
	inst, _, err := m.newInstance(ctx)
	if err != nil {
		return err
	}
	inst.close()
	return nil
}

// OwnStringsForTest is ownStrings, for TestOwnStrings.
var OwnStringsForTest = ownStrings

// DecodeOutputForTest is decodeOutput, for FuzzDecodeOutput and the tests
// that hold ownResponse to ownStrings.
func DecodeOutputForTest(out []byte, l Limits) (*abi.Response, error) {
	return decodeOutput(out, l.withDefaults())
}

// SetExtismCloseOnDoneForTest makes plugins loaded until the returned
// function is called enforce their deadline with wazero's
// close-on-context-done instead of checkpoints.
func SetExtismCloseOnDoneForTest() (restore func()) {
	extismCloseOnDone = true
	return func() { extismCloseOnDone = false }
}

// DecodeJSONOutputForTest is what a JSON plugin's reconcile answer goes
// through, for FuzzDecodeJSONOutput.
func DecodeJSONOutputForTest(out []byte, l Limits) (*abi.Response, error) {
	return DecodeJSONAnswerForTest(abi.FormReconcile, out, l)
}

// DecodeJSONAnswerForTest is what a JSON plugin's answer in form f goes
// through.
func DecodeJSONAnswerForTest(f abi.HookForm, out []byte, l Limits) (*abi.Response, error) {
	return forms[f].extism.answer(out, l.withDefaults())
}

// ExtismCallForTest starts an instance of p and returns a call of export
// through go-sdk alone (CallWithContext under the instance's call context,
// none of the host's encoding, decoding or checks), and the instance's
// close: what go-sdk costs per call, for BenchmarkExtismCall.
func ExtismCallForTest(ctx context.Context, p *Plugin, export string) (call func(in []byte) error, closeInst func(), err error) {
	inst, _, err := p.newInstance(ctx)
	if err != nil {
		return nil, nil, err
	}
	call = func(in []byte) error {
		inst.ctx.start(ctx, p.limits.Deadline)
		_, _, err := inst.p.CallWithContext(inst.callCtx, export, in)
		inst.ctx.finish()
		return err
	}
	return call, inst.close, nil
}
