// warnretain, written in AssemblyScript as an Extism plugin: the same policy
// as examples/warnretain (its README says what it does), in the Extism
// profile of the kubeplug ABI (abi/SPEC.md, "The Extism profile"). The host
// hands the request to `reconcile` in MessagePack (the manifest's encoding),
// which the plugin reads in one pass into the few fields it needs, and reads
// a MessagePack Response back.
import { Host, Memory } from "@extism/as-pdk";
import { JSON } from "assemblyscript-json/assembly";
import { Reader, Writer } from "./msgpack";

// The PDK reads and writes through these; error_set is not wrapped by it.
@external("extism:host/env", "error_set")
declare function error_set(offset: u64): void;

const REASON = "ClaimsRetainedForever";
const OPT_OUT_LABEL = "warnretain.example.com/ignore";

const CONFIG_SCHEMA = '{"type":"object","properties":{"ignoreNamespaces":{"type":"array","items":{"type":"string"},' +
  '"description":"namespaces whose StatefulSets are never warned about"}},"additionalProperties":false}';

// projection (ABI 1.3) lists what reconcile reads: the host sends the set
// with only these fields (and its name, namespace, uid, resourceVersion),
// and none of its pods, claims, classes and update. encoding msgpack: the
// messages are the native wire types (the manifest itself is JSON).
const MANIFEST = '{"name":"warnretain","version":"0.1.0","abiVersion":"1.5.0","encoding":"msgpack",' +
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

// StatefulSet is what reconcile reads of the request's set.
class StatefulSet {
  name: string = "";
  namespace: string = "";
  uid: string = "";
  deletionTimestamp: string = "";
  optedOut: bool = false; // labelled OPT_OUT_LABEL=true
  templates: string[] = []; // the claim templates' names
  hasPolicy: bool = false;
  whenDeleted: string = "";
}

export function reconcile(): i32 {
  // The request: config (bin: the configuration's JSON) and
  // statefulSet.set; every other key is skipped.
  const r = new Reader(Host.input());
  let config: Uint8Array | null = null;
  let set: StatefulSet | null = null;
  for (let n = r.mapLen(); n > 0; n--) {
    r.nextKey();
    if (r.is("config")) {
      config = r.bin();
    } else if (r.is("statefulSet")) {
      for (let m = r.mapLen(); m > 0; m--) { // nil: no pairs
        r.nextKey();
        if (!r.is("set")) r.skip();
        else if (!r.nil()) set = readSet(r);
      }
    } else {
      r.skip();
    }
  }
  const ignore = ignoredNamespaces(config == null || config.length == 0 ? null : JSON.parse(config));
  if (ignore == null) {
    return fail("config: " + configError + "; fix the module's config (in the host configuration, or the case file of kubeplug test)");
  }
  const w = new Writer();
  w.map(2).str("status").uint(0).str("result");
  if (set == null || !keepsClaimsForever(set) || isIgnored(set, ignore)) {
    w.map(0);
  } else {
    w.map(1).str("actions").array(1);
    w.map(3).str("type").str("event");
    w.str("target").map(4).str("kind").str("StatefulSet").str("namespace").str(set.namespace)
      .str("name").str(set.name).str("uid").str(set.uid);
    w.str("event").map(3).str("type").str("Warning").str("reason").str(REASON).str("message").str(message(set));
  }
  Host.output(w.bytes());
  return 0;
}

// readSet reads a StatefulSet: of its metadata the identity, the opt-out
// label and deletionTimestamp; of its spec the claim templates' names and
// the retention policy's whenDeleted.
function readSet(r: Reader): StatefulSet {
  const set = new StatefulSet();
  for (let n = r.mapLen(); n > 0; n--) {
    r.nextKey();
    if (r.is("metadata")) {
      for (let m = r.mapLen(); m > 0; m--) {
        r.nextKey();
        if (r.is("name")) set.name = r.str();
        else if (r.is("namespace")) set.namespace = r.str();
        else if (r.is("uid")) set.uid = r.str();
        else if (r.is("deletionTimestamp")) set.deletionTimestamp = r.str();
        else if (r.is("labels")) {
          for (let l = r.mapLen(); l > 0; l--) {
            r.nextKey();
            if (r.is(OPT_OUT_LABEL)) set.optedOut = r.str() == "true";
            else r.skip();
          }
        } else r.skip();
      }
    } else if (r.is("spec")) {
      for (let m = r.mapLen(); m > 0; m--) {
        r.nextKey();
        if (r.is("volumeClaimTemplates")) {
          for (let t = r.arrayLen(); t > 0; t--) set.templates.push(readTemplateName(r));
        } else if (r.is("persistentVolumeClaimRetentionPolicy")) {
          if (r.nil()) continue;
          set.hasPolicy = true;
          for (let p = r.mapLen(); p > 0; p--) {
            r.nextKey();
            if (r.is("whenDeleted")) set.whenDeleted = r.str();
            else r.skip();
          }
        } else r.skip();
      }
    } else {
      r.skip();
    }
  }
  return set;
}

// readTemplateName reads a claim template and returns its metadata.name.
function readTemplateName(r: Reader): string {
  let name = "";
  for (let n = r.mapLen(); n > 0; n--) {
    r.nextKey();
    if (r.is("metadata")) {
      for (let m = r.mapLen(); m > 0; m--) {
        r.nextKey();
        if (r.is("name")) name = r.str();
        else r.skip();
      }
    } else r.skip();
  }
  return name;
}

// keepsClaimsForever: the set has claim templates and whenDeleted is Retain,
// explicitly or by the API default; a set under deletion is left alone.
function keepsClaimsForever(set: StatefulSet): bool {
  if (set.deletionTimestamp != "" || set.templates.length == 0) return false;
  return !set.hasPolicy || set.whenDeleted != "Delete";
}

function isIgnored(set: StatefulSet, ignore: string[]): bool {
  return set.optedOut || ignore.includes(set.namespace);
}

function message(set: StatefulSet): string {
  const claims = new Array<string>(set.templates.length);
  for (let i = 0; i < set.templates.length; i++) claims[i] = set.templates[i] + "-" + set.name + "-*";
  return "claims " + claims.join(", ") + " are kept after the StatefulSet is deleted (persistentVolumeClaimRetentionPolicy.whenDeleted is Retain); " +
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
