package runtime_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/runtime"
)

// Many goroutines share one small pool; some calls kill their instance. Run
// with -race: an instance used by two calls at once would also corrupt the
// echoed keys.
func TestPoolUnderConcurrentCalls(t *testing.T) {
	const (
		instances  = 4
		goroutines = 16
		calls      = 50
	)
	m := load(t, "good", runtime.Limits{Instances: instances}, runtime.Options{})

	var wg sync.WaitGroup
	errs := make(chan error, goroutines*calls)
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				if (g+i)%7 == 0 {
					_, err := m.Reconcile(context.Background(), request("default/trap"))
					if !isKind(err, runtime.KindTrap) {
						errs <- fmt.Errorf("trapping call %d/%d: want a trap, got %v", g, i, err)
					}
					continue
				}
				key := fmt.Sprintf("g%d-i%d/ok", g, i)
				res, err := m.Reconcile(context.Background(), request(key))
				switch {
				case err != nil:
					errs <- fmt.Errorf("good call %s: %w", key, err)
				case len(res.Actions) != 1 || res.Actions[0].Event.Message != key:
					errs <- fmt.Errorf("good call %s: answered %+v", key, res.Actions)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	st := m.Stats()
	require.LessOrEqual(t, st.Peak, instances, "never more instances than the limit")
	require.LessOrEqual(t, st.Live, instances)
	require.Equal(t, 0, st.Busy)
	require.Equal(t, st.Created, st.Discarded+uint64(st.Live))
	require.Positive(t, st.Discarded, "trapped instances were replaced")
}

func isKind(err error, k runtime.ErrorKind) bool {
	ce, ok := err.(*runtime.CallError)
	return ok && ce.Kind == k
}
