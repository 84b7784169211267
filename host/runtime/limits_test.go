package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/runtime"
)

func TestDefaultLimits(t *testing.T) {
	require.Equal(t, runtime.Limits{
		MemoryBytes:      128 << 20,
		Deadline:         time.Second,
		Instances:        4,
		MaxOutputBytes:   1 << 20,
		MaxTableElements: 1 << 20,
		MaxActions:       4096,
	}, runtime.DefaultLimits())
	require.NoError(t, runtime.DefaultLimits().Validate())
}

func TestLimitsValidate(t *testing.T) {
	tests := []struct {
		name   string
		limits runtime.Limits
		field  string // in the error; "" means valid
	}{
		{name: "zero takes defaults", limits: runtime.Limits{}},
		{name: "4 GiB memory", limits: runtime.Limits{MemoryBytes: 4 << 30}},
		{name: "memory beyond wasm32", limits: runtime.Limits{MemoryBytes: 4<<30 + 1}, field: "memoryBytes"},
		{name: "negative deadline", limits: runtime.Limits{Deadline: -time.Second}, field: "deadline"},
		{name: "negative instances", limits: runtime.Limits{Instances: -1}, field: "instances"},
		{name: "negative output", limits: runtime.Limits{MaxOutputBytes: -1}, field: "maxOutputBytes"},
		{name: "negative actions", limits: runtime.Limits{MaxActions: -1}, field: "maxActions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.limits.Validate()
			if tt.field == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, runtime.ErrLimits)
			require.Contains(t, err.Error(), tt.field)
		})
	}
}

func TestLoadAppliesLimits(t *testing.T) {
	eng := newEngine(t, runtime.Options{})
	_, err := eng.Load(context.Background(), "good.wasm", guest(t, "good"), runtime.Limits{Instances: -1})
	require.ErrorIs(t, err, runtime.ErrLimits)
	require.Contains(t, err.Error(), `load module "good.wasm": invalid limits: instances -1 is negative`)

	m, err := eng.Load(context.Background(), "good.wasm", guest(t, "good"), runtime.Limits{Deadline: 3 * time.Second, MemoryBytes: 100<<20 + 1})
	require.NoError(t, err)
	want := runtime.DefaultLimits()
	want.Deadline, want.MemoryBytes = 3*time.Second, 100<<20+1
	require.Equal(t, want, m.Limits(), "zero fields take their defaults")
}

// The bound counts every instance's memory and tables at their caps, its
// output copy and its call stack.
func TestHostMemoryBound(t *testing.T) {
	const stack = 100 << 20
	for _, tt := range []struct {
		name   string
		limits runtime.Limits
		want   uint64
	}{
		{"defaults", runtime.Limits{}, 4 * (128<<20 + 8<<20 + 1<<20 + stack)},
		{"memory rounded up to whole pages", runtime.Limits{Instances: 1, MemoryBytes: 1, MaxTableElements: 1, MaxOutputBytes: 1}, 64<<10 + 8 + 1 + stack},
		{"two small instances", runtime.Limits{Instances: 2, MemoryBytes: 1 << 20, MaxTableElements: 1000, MaxOutputBytes: 1 << 10}, 2 * (1<<20 + 8000 + 1<<10 + stack)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.limits.HostMemoryBound())
		})
	}
}

func TestErrorKindString(t *testing.T) {
	for k, want := range map[runtime.ErrorKind]string{
		runtime.KindTrap: "trap", runtime.KindDeadline: "deadline", runtime.KindMemory: "memory",
		runtime.KindOutput: "output", runtime.KindStatus: "status", runtime.KindInput: "input",
	} {
		require.Equal(t, want, k.String())
	}
}
