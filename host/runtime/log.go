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

// Each call into a guest (a hook, the manifest, instantiation with
// _initialize) may log at most maxCallLogRecords records and write at most
// maxCallLogBytes bytes to its log, stdout and stderr together (SPEC.md:
// kubeplug_write_log). What is over is dropped, and one record after the call says how
// much: a guest that floods its output costs the host a bounded amount of
// work per call, not one record per line.
const (
	maxCallLogRecords = 256
	maxCallLogBytes   = 64 << 10
)

// logBudget is what is left of one call's log budget.
type logBudget struct {
	records, bytes               int
	droppedRecords, droppedBytes int
}

func (b *logBudget) reset() { *b = logBudget{records: maxCallLogRecords, bytes: maxCallLogBytes} }

// take returns the part of p within the byte budget and counts the rest as
// dropped.
func (b *logBudget) take(p []byte) []byte {
	k := min(len(p), b.bytes)
	b.bytes -= k
	b.droppedBytes += len(p) - k
	return p[:k]
}

// record spends one record, or counts it dropped and returns false.
func (b *logBudget) record() bool {
	if b.records == 0 {
		b.droppedRecords++
		return false
	}
	b.records--
	return true
}

// report logs, once per call, what the budget dropped.
func (b *logBudget) report(l *slog.Logger) {
	if b.droppedBytes == 0 && b.droppedRecords == 0 {
		return
	}
	l.LogAttrs(context.Background(), slog.LevelWarn, "guest output over the per-call budget was dropped",
		slog.Int("droppedBytes", b.droppedBytes), slog.Int("droppedRecords", b.droppedRecords),
		slog.Int("budgetBytes", maxCallLogBytes), slog.Int("budgetRecords", maxCallLogRecords))
	b.droppedBytes, b.droppedRecords = 0, 0
}

// budgetOf returns the log budget of the call whose context is ctx. Every
// call into a guest runs under its instance's callContext, which wazero
// hands to host functions.
func budgetOf(ctx context.Context) *logBudget {
	if c := callOf(ctx); c != nil {
		return &c.log
	}
	return &logBudget{} // no budget: nothing is logged
}

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
//
// Its guard (guardHostCall) ends a call whose deadline passed; it reads
// at most maxLogBytes of the message, whatever length the guest passes.
func (m *Module) writeLog(ctx context.Context, mod api.Module, stack []uint64) {
	level, ptr, n := uint32(stack[0]), uint32(stack[1]), uint32(stack[2])
	guardHostCall(ctx, mod.IsClosed(), abi.ImportWriteLog, 0)
	budget := budgetOf(ctx)
	n, truncated, ok := budget.spend(n)
	if !ok {
		return
	}
	chargeHostCall(ctx, abi.ImportWriteLog, uint64(n))
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

// spend takes one log record of n bytes from the budget: it returns how
// many of them may be logged (at most maxLogBytes, and no more than are
// left), whether that cut the record, and false when the record is
// dropped whole (counting what was dropped for report).
func (b *logBudget) spend(n uint32) (uint32, bool, bool) {
	if b.bytes == 0 || n == 0 {
		b.droppedRecords++
		b.droppedBytes += int(n)
		return 0, false, false
	}
	if !b.record() {
		b.droppedBytes += int(n)
		return 0, false, false
	}
	truncated := n > maxLogBytes
	if truncated {
		n = maxLogBytes
	}
	if left := uint32(b.bytes); left < n {
		b.droppedBytes += int(n - left)
		n, truncated = left, true
	}
	b.bytes -= int(n)
	return n, truncated, true
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
	ctx    *callContext // the instance's: its deadline and log budget
	stream string
	level  slog.Level
	// oom, if set, records that a line reported an out-of-memory death
	// (stderr of Go guests), to classify the call's failure.
	oom *atomic.Bool

	buf  []byte
	skip bool // the current line was already emitted truncated
}

func newLineWriter(m *Module, ctx *callContext, stream string, level slog.Level, oom *atomic.Bool) *lineWriter {
	return &lineWriter{m: m, ctx: ctx, stream: stream, level: level, oom: oom}
}

// Write logs the lines of p within the call's log budget. Empty lines are
// not logged. Once the call's deadline passed it fails, and WASI's fd_write
// returns an error to the guest, whose next checkpoint ends the call.
func (w *lineWriter) Write(p []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	n := len(p)
	p = w.ctx.log.take(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.add(p)
			break
		}
		w.add(p[:i])
		if !w.skip && len(w.buf) > 0 {
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
	// Seen even over the budget: it classifies the call's failure.
	if w.oom != nil && bytes.Contains(w.buf, []byte("out of memory")) {
		w.oom.Store(true)
	}
	if !w.ctx.log.record() {
		return
	}
	line := strings.ToValidUTF8(string(w.buf), "")
	attrs := []slog.Attr{slog.String("stream", w.stream)}
	if truncated {
		attrs = append(attrs, slog.Bool("truncated", true))
	}
	w.m.logger().LogAttrs(context.Background(), w.level, line, attrs...)
}
