// warnretain, written in AssemblyScript as an Extism plugin: the same policy
// as examples/warnretain (its README says what it does), in the Extism
// profile of the kubeplug ABI (abi/SPEC.md, "The Extism profile"). The host
// hands the request to `reconcile` as JSON and reads a JSON Response back.
import { Host, Memory } from "@extism/as-pdk";
import { JSON } from "assemblyscript-json/assembly";

// The PDK reads and writes through these; error_set is not wrapped by it.
@external("extism:host/env", "error_set")
declare function error_set(offset: u64): void;

const REASON = "ClaimsRetainedForever";
const OPT_OUT_LABEL = "warnretain.example.com/ignore";

const CONFIG_SCHEMA = '{"type":"object","properties":{"ignoreNamespaces":{"type":"array","items":{"type":"string"},' +
  '"description":"namespaces whose StatefulSets are never warned about"}},"additionalProperties":false}';

// projection (ABI 1.3) lists what reconcile reads: the host sends the set
// with only these fields (and its name, namespace, uid, resourceVersion),
// and none of its pods, claims, classes and update.
const MANIFEST = '{"name":"warnretain","version":"0.1.0","abiVersion":"1.3.0","encoding":"json",' +
  '"subject":"statefulset","hooks":["reconcile"],' +
  '"projection":[{"kind":"StatefulSet","fields":["metadata.labels","metadata.deletionTimestamp",' +
  '"spec.volumeClaimTemplates.metadata.name","spec.persistentVolumeClaimRetentionPolicy"]},' +
  '{"kind":"Pod","omit":true},{"kind":"PersistentVolumeClaim","omit":true},{"kind":"StorageClass","omit":true},' +
  '{"kind":"VolumeClaimUpdate","omit":true}],' +
  '"capabilities":[{"action":"event","resources":["statefulsets"]}],' +
  '"description":"Warns about StatefulSets whose PersistentVolumeClaims are kept after the StatefulSet is deleted.",' +
  '"configSchema":' + quote(CONFIG_SCHEMA) + '}';

// abort replaces AssemblyScript's default handler, which would import env.abort
// (the host refuses imports outside the profile): it ends the call with a trap.
function abort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  unreachable();
}

export function kubeplug_manifest(): i32 {
  output(MANIFEST);
  return 0;
}

export function reconcile(): i32 {
  const req = <JSON.Obj>JSON.parse(Host.input());
  const ignore = ignoredNamespaces(req.getValue("config"));
  if (ignore == null) {
    return fail("config: " + configError + "; fix the module's config (in the host configuration, or the case file of kubeplug test)");
  }
  const subject = req.getObj("statefulSet");
  let set: JSON.Obj | null = null;
  if (subject != null) set = subject.getObj("set");
  if (set == null || !keepsClaimsForever(set) || isIgnored(set, ignore)) {
    output('{"status":0,"result":{}}');
    return 0;
  }
  const meta = set.getObj("metadata")!;
  const target = '{"kind":"StatefulSet","namespace":' + quote(str(meta, "namespace")) +
    ',"name":' + quote(str(meta, "name")) + ',"uid":' + quote(str(meta, "uid")) + '}';
  const event = '{"type":"Warning","reason":' + quote(REASON) + ',"message":' + quote(message(set)) + '}';
  output('{"status":0,"result":{"actions":[{"type":"event","target":' + target + ',"event":' + event + '}]}}');
  return 0;
}

// keepsClaimsForever: the set has claim templates and whenDeleted is Retain,
// explicitly or by the API default; a set under deletion is left alone.
function keepsClaimsForever(set: JSON.Obj): bool {
  const meta = set.getObj("metadata");
  if (meta != null && str(meta, "deletionTimestamp") != "") return false;
  const spec = set.getObj("spec");
  if (spec == null) return false;
  const templates = spec.getArr("volumeClaimTemplates");
  if (templates == null || templates.valueOf().length == 0) return false;
  const policy = spec.getObj("persistentVolumeClaimRetentionPolicy");
  return policy == null || str(policy, "whenDeleted") != "Delete";
}

function isIgnored(set: JSON.Obj, ignore: string[]): bool {
  const meta = set.getObj("metadata");
  if (meta == null) return false;
  const labels = meta.getObj("labels");
  if (labels != null && str(labels, "warnretain.example.com/ignore") == "true") return true;
  return ignore.includes(str(meta, "namespace"));
}

function message(set: JSON.Obj): string {
  const name = str(set.getObj("metadata")!, "name");
  const templates = set.getObj("spec")!.getArr("volumeClaimTemplates")!.valueOf();
  let claims = "";
  for (let i = 0; i < templates.length; i++) {
    const t = <JSON.Obj>templates[i];
    const tmeta = t.getObj("metadata");
    if (i > 0) claims += ", ";
    claims += (tmeta == null ? "" : str(tmeta, "name")) + "-" + name + "-*";
  }
  return "claims " + claims + " are kept after the StatefulSet is deleted (persistentVolumeClaimRetentionPolicy.whenDeleted is Retain); " +
    "set whenDeleted to Delete, or label the StatefulSet " + OPT_OUT_LABEL + "=true to silence this warning";
}

// configError says why ignoredNamespaces returned null.
let configError = "";

// ignoredNamespaces reads the configuration: null (and configError) when it
// is not an object with at most ignoreNamespaces, a list of strings. Unknown
// fields are an error, as in the Go module, so a misspelt option is not
// silently ignored.
function ignoredNamespaces(config: JSON.Value | null): string[] | null {
  const out = new Array<string>();
  if (config == null || config.isNull) return out;
  if (!config.isObj) {
    configError = "not a JSON object";
    return null;
  }
  const obj = <JSON.Obj>config;
  const keys = obj.keys;
  for (let i = 0; i < keys.length; i++) {
    if (keys[i] != "ignoreNamespaces") {
      configError = "unknown field " + quote(keys[i]);
      return null;
    }
  }
  const list = obj.getValue("ignoreNamespaces");
  if (list == null || list.isNull) return out;
  configError = "ignoreNamespaces: not a list of strings";
  if (!list.isArr) return null;
  const items = (<JSON.Arr>list).valueOf();
  for (let i = 0; i < items.length; i++) {
    if (!items[i].isString) return null;
    out.push((<JSON.Str>items[i]).valueOf());
  }
  return out;
}

function str(obj: JSON.Obj, key: string): string {
  const v = obj.getString(key);
  return v == null ? "" : v.valueOf();
}

// quote writes s as a JSON string.
function quote(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c == 0x22) out += '\\"';
    else if (c == 0x5c) out += "\\\\";
    else if (c < 0x20) out += "\\u00" + (c < 0x10 ? "0" : "") + c.toString(16);
    else out += String.fromCharCode(c);
  }
  return out + '"';
}

// output sets the call's output to s, UTF-8 encoded (the PDK's outputString
// takes the length in UTF-16 units).
function output(s: string): void {
  Host.output(Uint8Array.wrap(String.UTF8.encode(s)));
}

// fail ends the call as failed, with message as the error (status 2).
function fail(message: string): i32 {
  error_set(Memory.allocateString(message).offset);
  return 1;
}
