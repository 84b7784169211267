package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/kubeplug/kubeplug/abi"
)

// pluginInstance is one instance of an Extism plugin: go-sdk's Plugin (the
// plugin's module and its own instance of Extism's kernel) and the call
// context its calls run under. It serves one call at a time (the pool
// guarantees it).
type pluginInstance struct {
	plugin *Plugin
	p      *extism.Plugin
	ctx    *callContext
	// mems are the instance's linear memories (the plugin's and the
	// kernel's), for telling an out-of-memory trap from another.
	mems *memories
	// callCtx is ctx carrying kernel, the context of every call.
	callCtx context.Context
	kernel  kernelFuncs
	// in is the last request's encoding, its memory reused for the next
	// (instance.in's twin): go-sdk copies the input into the kernel's
	// memory before the call, so nothing holds it after.
	in []byte
}

// extismLogLevel is set once: go-sdk's log level is a process-wide setting,
// and below info it would also log go-sdk's own lines on every call.
var extismLogLevel sync.Once

// newInstance instantiates the plugin under the same rules as a hook call:
// one Limits.Deadline, the memory cap and allocator. The plugin's
// _initialize, if any, runs at its first call, under that call's deadline.
func (p *Plugin) newInstance(parent context.Context) (*pluginInstance, ErrorKind, error) {
	extismLogLevel.Do(func() { extism.SetLogLevel(extism.LogLevelInfo) })
	inst := &pluginInstance{plugin: p, ctx: newCallContext()}
	inst.callCtx = context.WithValue(inst.ctx, kernelFuncsKey{}, &inst.kernel)
	alloc, mems := newMemories(inst)
	inst.mems = mems
	ctx := inst.ctx.start(experimental.WithMemoryAllocator(parent, alloc), p.limits.Deadline)
	// No arguments, no environment, no directories, stdout and stderr
	// discarded, the native modules' clocks (clock.go) and randomness, which
	// fails once the deadline has passed (rand.go).
	cfg := withClocks(wazero.NewModuleConfig()).WithRandSource(newRandSource(inst.ctx))
	pi, err := p.compiled.Instance(ctx, extism.PluginInstanceConfig{ModuleConfig: cfg})
	if inst.ctx.finish() {
		if pi != nil {
			_ = pi.Close(context.Background())
		}
		return nil, KindDeadline, fmt.Errorf("instantiate: %w", inst.ctx.interrupted(p.limits.Deadline))
	}
	if err != nil {
		kind, err := inst.classify(err, p.limits)
		return nil, kind, fmt.Errorf("instantiate: %w", err)
	}
	inst.p = pi
	pi.SetLogger(inst.logLine)
	return inst, 0, nil
}

// close releases the instance.
func (inst *pluginInstance) close() {
	if inst.p != nil {
		_ = inst.p.Close(context.Background())
	}
}

// logLine writes a log line go-sdk itself logs for the instance within the
// call's log budget, as writeLog does (logBudget.spend), and nothing once
// its deadline has passed. The plugin's own log functions are
// extismGuardedEnv's (logAt).
func (inst *pluginInstance) logLine(level extism.LogLevel, msg string) {
	if inst.ctx.Err() != nil {
		return
	}
	if n, truncated, ok := inst.ctx.log.spend(uint32(len(msg))); ok {
		inst.plugin.logMessage(level, msg[:n], truncated)
	}
}

// call calls the Extism function export with input in and returns its
// output. keep says whether the instance may serve another call.
func (inst *pluginInstance) call(parent context.Context, l Limits, export string, in []byte) (out []byte, kind ErrorKind, keep bool, err error) {
	inst.ctx.start(parent, l.Deadline)
	rc, out, err := inst.p.CallWithContext(inst.callCtx, export, in)
	fired := inst.ctx.finish()
	inst.ctx.log.report(inst.plugin.logger())
	if fired {
		return nil, KindDeadline, false, inst.ctx.interrupted(l.Deadline)
	}
	if err != nil {
		if msg := inst.p.GetError(); msg != "" && msg == err.Error() {
			// The plugin set an error (the PDK's error function) and
			// returned: it failed, it did not trap. The message is the
			// plugin's output as much as a native module's
			// Response.Message is, and held to the same checks.
			if err := ownStrings(&msg); err != nil {
				return nil, KindOutput, false, fmt.Errorf("output: error message: %w", err)
			}
			return nil, KindStatus, true, abi.StatusError(abi.StatusFailed, msg)
		}
		kind, err := inst.classify(err, l)
		return nil, kind, false, err
	}
	if rc != 0 {
		return nil, KindStatus, true, abi.StatusError(abi.StatusFailed, fmt.Sprintf("%s returned %d without an error message", export, rc))
	}
	if len(out) > l.MaxOutputBytes {
		return nil, KindOutput, false, fmt.Errorf("output of %d bytes is larger than the %s limit", len(out), humanBytes(uint64(l.MaxOutputBytes)))
	}
	return out, 0, true, nil
}

// classify is instance.classify for a plugin.
func (inst *pluginInstance) classify(err error, l Limits) (ErrorKind, error) {
	if err := checkpointExit(err, l); err != nil {
		return KindDeadline, err
	}
	if err := hostCallRefused(err); err != nil {
		return KindTrap, err
	}
	// Within one 64 KiB page of the cap: the plugin's allocator could not
	// grow its memory, or the kernel's, any further.
	if inst.mems.full(pageSize) {
		return KindMemory, &guestError{fmt.Sprintf("out of memory at the %s limit: %s", humanBytes(uint64(l.memoryPages())*pageSize), firstLine(err)), err}
	}
	return KindTrap, &guestError{"guest trapped: " + firstLine(err), err}
}

// callHook is base.call for a plugin: it encodes req in the plugin's
// encoding (for JSON, in its form's JSON form, formSpec.extism), calls the
// hook's Extism function on inst, and decodes the answer with the same
// checks as a native module's output (decodeOutput for MessagePack; for
// JSON the shape bounds, the form's conversion to the wire type, then
// ownResponse), its status turned into an error, and an ok answer held to the
// hook's check. The check runs inside the call, as instance.call runs it
// for a native module, so that an answer it refuses discards the instance
// too.
func (p *Plugin) callHook(ctx context.Context, inst *pluginInstance, h hookID, req abi.HookRequest) (*abi.Response, ErrorKind, bool, error) {
	spec := hookTable[h]
	form := spec.extism
	in, err := inst.encode(p.encoding, form, req)
	if err != nil {
		return nil, KindInput, true, fmt.Errorf("encode request: %w", err)
	}
	out, kind, keep, err := inst.call(ctx, p.limits, spec.Extism, in)
	if err != nil {
		return nil, kind, keep, err
	}
	var resp *abi.Response
	if p.encoding == EncodingMsgpack {
		resp, err = decodeOutput(out, p.limits)
	} else {
		resp, err = form.answer(out, p.limits)
	}
	if err != nil {
		return nil, KindOutput, false, err
	}
	if err := abi.StatusError(resp.Status, resp.Message); err != nil {
		return nil, KindStatus, keep && resp.Status != abi.StatusPanic, err
	}
	if err := spec.check(resp, p.limits); err != nil {
		return nil, KindOutput, false, err
	}
	return resp, 0, keep, nil
}

// encode encodes req in the plugin's encoding into the instance's input
// buffer, which a call never outgrows for long (maxKeptInput), and returns
// the encoding: json.Marshal's bytes (without the newline json.Encoder
// adds) or MessagePack's.
func (inst *pluginInstance) encode(enc string, form extismForm, req abi.HookRequest) (in []byte, err error) {
	if enc == EncodingMsgpack {
		in, err = req.MarshalMsg(inst.in[:0])
	} else {
		buf := bytes.NewBuffer(inst.in[:0])
		err = json.NewEncoder(buf).Encode(form.request(req))
		in = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	if err != nil {
		return nil, err
	}
	if cap(in) <= maxKeptInput {
		inst.in = in
	} else {
		inst.in = nil
	}
	return in, nil
}

// extismForm is a hook's messages in the Extism profile's JSON encoding.
type extismForm struct {
	// request is the request's JSON form.
	request func(req abi.HookRequest) any
	// answer decodes the plugin's JSON answer into the wire type.
	answer func(out []byte, l Limits) (*abi.Response, error)
}

// jsonAnswer decodes a JSON answer of form J, its shape bounded before it is
// decoded, converts it to the wire type with fromJSON and checks its strings
// as a MessagePack answer's are (ownResponse: the JSON forms name their
// fields as the wire types do, so the errors are the same).
func jsonAnswer[J any](fromJSON func(*J) *abi.Response) func([]byte, Limits) (*abi.Response, error) {
	return func(out []byte, l Limits) (*abi.Response, error) {
		j := new(J)
		if err := decodeJSONOutput(out, l, j); err != nil {
			return nil, err
		}
		return ownAnswer(fromJSON(j))
	}
}

// jsonReconcileRequest is a ReconcileRequest in the JSON encoding, where
// the configuration is the JSON value itself rather than base64 bytes.
type jsonReconcileRequest struct {
	*abi.ReconcileRequest
	Config json.RawMessage `json:"config,omitempty"`
}

// jsonAdmitObject is an AdmitObject in the JSON encoding, where the object
// as the API server sent it is the JSON value itself rather than base64.
type jsonAdmitObject struct {
	*abi.AdmitObject
	JSON json.RawMessage `json:"json,omitempty"`
}

func asJSONAdmitObject(o *abi.AdmitObject) *jsonAdmitObject {
	if o == nil {
		return nil
	}
	return &jsonAdmitObject{o, json.RawMessage(o.JSON)}
}

// jsonAdmitRequest is an AdmitRequest in the JSON encoding: the
// configuration and the objects' JSON are JSON values.
type jsonAdmitRequest struct {
	*abi.AdmitRequest
	Object    *jsonAdmitObject `json:"object,omitempty"`
	OldObject *jsonAdmitObject `json:"oldObject,omitempty"`
	Config    json.RawMessage  `json:"config,omitempty"`
}

// jsonPatchOperation is a PatchOperation in the JSON encoding: its value is
// the JSON value itself.
type jsonPatchOperation struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	From  string          `json:"from,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
}

// jsonAdmitResponse is an AdmitResponse in the JSON encoding.
type jsonAdmitResponse struct {
	Allowed  bool                 `json:"allowed"`
	Message  string               `json:"message,omitempty"`
	Reason   string               `json:"reason,omitempty"`
	Code     int32                `json:"code,omitempty"`
	Warnings []string             `json:"warnings,omitempty"`
	Patch    []jsonPatchOperation `json:"patch,omitempty"`
}

// jsonAdmitAnswer is a Response to the admit hook in the JSON encoding.
type jsonAdmitAnswer struct {
	Status  abi.Status         `json:"status"`
	Message string             `json:"message,omitempty"`
	Result  *abi.Result        `json:"result,omitempty"`
	Admit   *jsonAdmitResponse `json:"admit,omitempty"`
}

// response turns the JSON answer into the wire type the host checks.
func (a *jsonAdmitAnswer) response() *abi.Response {
	r := &abi.Response{Status: a.Status, Message: a.Message, Result: a.Result}
	if j := a.Admit; j != nil {
		r.Admit = &abi.AdmitResponse{Allowed: j.Allowed, Message: j.Message, Reason: j.Reason, Code: j.Code, Warnings: j.Warnings}
		for _, op := range j.Patch {
			r.Admit.Patch = append(r.Admit.Patch, abi.PatchOperation{Op: op.Op, Path: op.Path, From: op.From, Value: []byte(op.Value)})
		}
	}
	return r
}
