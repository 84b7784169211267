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

// DecodeOutputForTest is decodeOutput, for FuzzDecodeOutput.
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
	return decodeJSONAnswer[abi.Response](out, l.withDefaults())
}
