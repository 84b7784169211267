package runtime

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/kubeplug/kubeplug/abi"
)

// maxLogBytes caps one guest log record (SPEC.md: kubeplug_write_log).
const maxLogBytes = 4 << 10

// instantiateHost provides the kubeplug import module to the guest.
func (m *Module) instantiateHost(ctx context.Context, r wazero.Runtime) error {
	_, err := r.NewHostModuleBuilder(abi.ImportModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(m.writeLog), sigLog.params, sigLog.results).
		WithParameterNames("level", "ptr", "len").
		Export(abi.ImportWriteLog).
		Instantiate(ctx)
	return err
}

// writeLog implements abi.ImportWriteLog.
func (m *Module) writeLog(ctx context.Context, mod api.Module, stack []uint64) {
	level, ptr, n := uint32(stack[0]), uint32(stack[1]), uint32(stack[2])
	truncated := n > maxLogBytes
	if truncated {
		n = maxLogBytes
	}
	b, ok := mod.Memory().Read(ptr, n)
	if !ok {
		m.logger().LogAttrs(ctx, slog.LevelWarn, "guest passed a log message outside its memory",
			slog.Uint64("ptr", uint64(ptr)), slog.Uint64("len", uint64(n)))
		return
	}
	// A cut can split a rune; ToValidUTF8 drops the pieces.
	msg := strings.ToValidUTF8(string(b), "")
	if truncated {
		m.logger().LogAttrs(ctx, guestLevel(level), msg, slog.Bool("truncated", true))
		return
	}
	m.logger().LogAttrs(ctx, guestLevel(level), msg)
}

func guestLevel(level uint32) slog.Level {
	switch level {
	case abi.LogDebug:
		return slog.LevelDebug
	case abi.LogWarn:
		return slog.LevelWarn
	case abi.LogError:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// lineWriter turns a guest's stdout or stderr into one log record per line.
// Each instance has its own, used only by the goroutine calling it.
type lineWriter struct {
	m      *Module
	stream string
	level  slog.Level
	// oom, if set, records that a line reported an out-of-memory death
	// (stderr of Go guests), to classify the call's failure.
	oom *atomic.Bool

	buf  []byte
	skip bool // the current line was already emitted truncated
}

func newLineWriter(m *Module, stream string, level slog.Level, oom *atomic.Bool) *lineWriter {
	return &lineWriter{m: m, stream: stream, level: level, oom: oom}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.add(p)
			break
		}
		w.add(p[:i])
		if !w.skip {
			w.emit(false)
		}
		w.buf, w.skip = w.buf[:0], false
		p = p[i+1:]
	}
	return n, nil
}

// add appends to the current line, emitting it truncated once it is too long.
func (w *lineWriter) add(p []byte) {
	if w.skip {
		return
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) > maxLogBytes {
		w.buf = w.buf[:maxLogBytes]
		w.emit(true)
		w.buf, w.skip = w.buf[:0], true
	}
}

// flush emits a last line that did not end in a newline.
func (w *lineWriter) flush() {
	if len(w.buf) > 0 && !w.skip {
		w.emit(false)
	}
	w.buf, w.skip = w.buf[:0], false
}

func (w *lineWriter) emit(truncated bool) {
	line := strings.ToValidUTF8(string(w.buf), "")
	if w.oom != nil && strings.Contains(line, "out of memory") {
		w.oom.Store(true)
	}
	attrs := []slog.Attr{slog.String("stream", w.stream)}
	if truncated {
		attrs = append(attrs, slog.Bool("truncated", true))
	}
	w.m.logger().LogAttrs(context.Background(), w.level, line, attrs...)
}
