package runtime

import (
	"context"
	"encoding/json"
	"errors"
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
	ctx := inst.ctx.start(parent, l.Deadline)
	rc, out, err := inst.p.CallWithContext(ctx, export, in)
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

// invoke calls hook on an idle instance (creating one if none is idle and
// fewer than Limits.Instances exist, or waiting for one) with the encoded
// request in, and hands the output to decode, which returns the answer's
// status and message. It is the one way into a plugin's hooks: each hook is
// an Extism function of abi's hook table and a typed method over invoke.
func (p *Plugin) invoke(ctx context.Context, h hookID, key string, in []byte, decode func(out []byte) (abi.Status, string, error)) error {
	return invokeOn(ctx, p.pools[h], p.name, string(hookTable[h].Name), key, &p.interrupted, p.newInstance,
		func(inst *pluginInstance) (ErrorKind, bool, error) { return p.roundTrip(ctx, inst, h, in, decode) })
}

func (p *Plugin) roundTrip(ctx context.Context, inst *pluginInstance, h hookID, in []byte, decode func([]byte) (abi.Status, string, error)) (ErrorKind, bool, error) {
	out, kind, keep, err := inst.call(ctx, p.limits, hookTable[h].Extism, in)
	if err != nil {
		return kind, keep, err
	}
	status, message, err := decode(out)
	if err != nil {
		return KindOutput, false, err
	}
	if err := abi.StatusError(status, message); err != nil {
		return KindStatus, keep && status != abi.StatusPanic, err
	}
	return 0, keep, nil
}

// jsonReconcileRequest is a ReconcileRequest in the JSON encoding, where
// the configuration is the JSON value itself rather than base64 bytes.
type jsonReconcileRequest struct {
	*abi.ReconcileRequest
	Config json.RawMessage `json:"config,omitempty"`
}

// Reconcile calls the plugin's reconcile hook, as Module.Reconcile does.
func (p *Plugin) Reconcile(ctx context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
	if req == nil {
		return nil, &CallError{Module: p.name, Kind: KindInput, Err: errors.New("nil request")}
	}
	resp, err := callHook(ctx, p, hookReconcile, req.Key,
		jsonReconcileRequest{req, json.RawMessage(req.Config)}, req,
		func(r *abi.Response) *abi.Response { return r })
	if err != nil {
		return nil, err
	}
	if resp.Result == nil {
		return &abi.Result{}, nil
	}
	return resp.Result, nil
}

// callHook is one typed hook call of a plugin: the request encoded in the
// plugin's encoding (asJSON is its JSON form, asMsgpack the wire type), the
// answer decoded with the same checks as a native module's output
// (decodeOutput for MessagePack; for JSON the shape bounds, then
// ownStrings, then fromJSON turns the JSON form J into the wire type), its
// status turned into an error, and an ok answer held to the hook's check.
// A new hook is a row of abi's hook table and a method that calls this.
//
// The check runs inside the call, as instance.call runs it for a native
// module, so that an answer it refuses discards the instance too.
func callHook[J any](ctx context.Context, p *Plugin, h hookID, key string,
	asJSON any, asMsgpack message, fromJSON func(*J) *abi.Response,
) (*abi.Response, error) {
	spec := hookTable[h]
	var in []byte
	var err error
	if p.encoding == EncodingMsgpack {
		in, err = asMsgpack.MarshalMsg(nil)
	} else {
		in, err = json.Marshal(asJSON)
	}
	if err != nil {
		return nil, &CallError{Module: p.name, Hook: string(spec.Name), Key: key, Kind: KindInput, Err: fmt.Errorf("encode request: %w", err)}
	}
	var resp *abi.Response
	err = p.invoke(ctx, h, key, in, func(out []byte) (abi.Status, string, error) {
		var derr error
		if p.encoding == EncodingMsgpack {
			resp, derr = decodeOutput(out, p.limits)
		} else {
			var j *J
			if j, derr = decodeJSONAnswer[J](out, p.limits); derr == nil {
				resp = fromJSON(j)
			}
		}
		if derr != nil {
			return 0, "", derr
		}
		if resp.Status == abi.StatusOK {
			if err := spec.check(resp, p.limits); err != nil {
				return 0, "", err
			}
		}
		return resp.Status, resp.Message, nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// decodeJSONAnswer decodes a plugin's JSON answer into a new Resp: its shape
// bounded before it is decoded, its strings checked after.
func decodeJSONAnswer[Resp any](out []byte, l Limits) (*Resp, error) {
	resp := new(Resp)
	if err := decodeJSONOutput(out, l, resp); err != nil {
		return nil, err
	}
	if err := ownStrings(resp); err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	return resp, nil
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

// Admit calls the plugin's admit hook, as Module.Admit does, on instances
// of the hook's own pool, and holds the answer to the same checks
// (callHook).
func (p *Plugin) Admit(ctx context.Context, req *abi.AdmitRequest) (*abi.AdmitResponse, error) {
	if req == nil {
		return nil, &CallError{Module: p.name, Hook: abi.HookAdmit, Kind: KindInput, Err: errors.New("nil request")}
	}
	key := admitKey(req)
	resp, err := callHook(ctx, p, hookAdmit, key,
		jsonAdmitRequest{req, asJSONAdmitObject(req.Object), asJSONAdmitObject(req.OldObject), json.RawMessage(req.Config)},
		req, (*jsonAdmitAnswer).response)
	if err != nil {
		return nil, err
	}
	return resp.Admit, nil
}

// HasHook reports whether the plugin implements hook.
func (p *Plugin) HasHook(hook string) bool {
	h, ok := hookNamed(hook)
	return ok && p.pools[h] != nil
}
