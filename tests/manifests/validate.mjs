#!/usr/bin/env node
// Offline check of rendered Kubernetes manifests (multi-document YAML, from
// files or stdin): every object must be a kind kubernetes-models or
// @kubernetes-models/prometheus-operator knows, pass its schema, and use no
// field its schema does not define.
//
//   kubectl kustomize deploy/kubernetes/overlays/sidecar | node validate.mjs
//   node validate.mjs rendered.yaml [more.yaml ...]
//   ... | node validate.mjs --as overlays/sidecar     (a name for stdin)
//
// Prints one line per problem and exits 1 if there is any; 2 for bad usage
// or unreadable input.
//
// Unknown fields: the schemas reject nothing they do not define, so a typo
// such as `readinesProbe` passes `.validate()` and is dropped by the API
// server. kubernetes-models 5 ships its schemas only as compiled (ajv
// standalone) validators, one module per definition under _schemas/, a $ref
// being an import of another module. Such a validator reads exactly the
// properties its schema lists (`data.<name> !== undefined`) and enumerates
// the keys of a map (additionalProperties). So the check runs the library's
// own validator over a Proxy of the object that records, for every object
// it reaches, which keys it read and whether it enumerated them: a key that
// was never read, in an object whose keys were not enumerated, is not in
// the schema. An object whose validator read no key at all is free-form
// (`type: object` with no properties, e.g. x-kubernetes-preserve-unknown-
// fields) and is not checked.

import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

const PACKAGES = ["kubernetes-models", "@kubernetes-models/prometheus-operator"];

const problems = [];
const problem = (where, text) => problems.push(`${where}: ${text}`);

// The model class for an apiVersion/kind: the packages export one module per
// group/version ("v1", "apps/v1", "monitoring.coreos.com/v1").
const moduleCache = new Map();
async function modelClass(apiVersion, kind) {
  for (const pkg of PACKAGES) {
    const spec = `${pkg}/${apiVersion}`;
    if (!moduleCache.has(spec)) {
      let mod = null;
      try {
        mod = await import(spec);
      } catch (e) {
        if (e.code !== "ERR_PACKAGE_PATH_NOT_EXPORTED" && e.code !== "ERR_MODULE_NOT_FOUND") throw e;
      }
      moduleCache.set(spec, mod);
    }
    const mod = moduleCache.get(spec);
    const cls = mod && Object.hasOwn(mod, kind) ? mod[kind] : null;
    if (typeof cls === "function" && cls.apiVersion === apiVersion && cls.kind === kind) return cls;
  }
  return null;
}

function isPlainObject(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

// A Proxy over `value` (and, lazily, over everything reachable from it) that
// records what a validator does with each object.
function tracked(value, node) {
  return new Proxy(value, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (typeof prop !== "string") return v;
      node.read.add(prop);
      if (!Object.hasOwn(target, prop) || v === null || typeof v !== "object") return v;
      let child = node.children.get(prop);
      if (!child) {
        child = { read: new Set(), enumerated: false, children: new Map() };
        child.proxy = tracked(v, child);
        node.children.set(prop, child);
      }
      return child.proxy;
    },
    has(target, prop) {
      if (typeof prop === "string") node.read.add(prop);
      return Reflect.has(target, prop);
    },
    ownKeys(target) {
      node.enumerated = true;
      return Reflect.ownKeys(target);
    },
  });
}

function pathJoin(path, key) {
  if (/^[A-Za-z_$][\w$-]*$/.test(key)) return path ? `${path}.${key}` : key;
  return `${path}[${JSON.stringify(key)}]`;
}

// Walks the object beside what the validator recorded.
function unknownFields(value, node, path, out) {
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      const child = node && node.children.get(String(i));
      if (item !== null && typeof item === "object") unknownFields(item, child, `${path}[${i}]`, out);
    });
    return;
  }
  if (!isPlainObject(value) || !node) return;
  const checked = !node.enumerated && node.read.size > 0;
  for (const key of Object.keys(value)) {
    if (checked && !node.read.has(key)) {
      out.push(pathJoin(path, key));
      continue;
    }
    const v = value[key];
    if (v !== null && typeof v === "object") unknownFields(v, node.children.get(key), pathJoin(path, key), out);
  }
}

async function checkObject(obj, where) {
  if (!isPlainObject(obj)) {
    problem(where, "not a YAML mapping");
    return;
  }
  const { apiVersion, kind } = obj;
  if (typeof apiVersion !== "string" || typeof kind !== "string") {
    problem(where, "no apiVersion or kind");
    return;
  }
  const name = isPlainObject(obj.metadata) && obj.metadata.name ? obj.metadata.name : "(no name)";
  const label = `${where} ${kind}/${name}`;
  const cls = await modelClass(apiVersion, kind);
  if (!cls) {
    problem(label, `unknown kind ${kind} in ${apiVersion} (not in ${PACKAGES.join(" or ")})`);
    return;
  }

  try {
    new cls(obj).validate();
  } catch (e) {
    if (!Array.isArray(e.errors)) throw e;
    for (const err of e.errors) {
      const at = err.instancePath ? err.instancePath.slice(1).split("/").join(".") : "(object)";
      const extra = err.params && err.params.allowedValues ? ` (${err.params.allowedValues.join(", ")})` : "";
      problem(label, `${at}: ${err.message}${extra}`);
    }
  }

  const root = { read: new Set(), enumerated: false, children: new Map() };
  try {
    cls.prototype.validate.call(tracked(obj, root));
  } catch (e) {
    if (!Array.isArray(e.errors)) throw e; // schema errors: reported above
  }
  const unknown = [];
  unknownFields(obj, root, "", unknown);
  for (const path of unknown) problem(label, `unknown field ${path}`);
}

async function main() {
  const args = process.argv.slice(2);
  let stdinName = "<stdin>";
  const asAt = args.indexOf("--as");
  if (asAt >= 0) {
    if (asAt + 1 >= args.length) {
      console.error("validate.mjs: --as needs a name");
      return 2;
    }
    stdinName = args[asAt + 1];
    args.splice(asAt, 2);
  }
  if (args.includes("-h") || args.includes("--help")) {
    console.log("usage: node validate.mjs [--as NAME] [FILE|-]...   (stdin when no file is given)");
    return 0;
  }
  let objects = 0;
  for (const source of args.length ? args : ["-"]) {
    const display = source === "-" ? stdinName : source;
    let text;
    try {
      text = readFileSync(source === "-" ? 0 : source, "utf8");
    } catch (e) {
      console.error(`validate.mjs: ${display}: ${e.message}`);
      return 2;
    }
    const docs = parseAllDocuments(text);
    if (!Array.isArray(docs)) {
      problem(display, "not a YAML stream");
      continue;
    }
    for (const [i, doc] of docs.entries()) {
      const where = `${display}#${i + 1}`;
      if (doc.errors.length) {
        for (const err of doc.errors) problem(where, `YAML: ${err.message.split("\n")[0]}`);
        continue;
      }
      const obj = doc.toJS();
      if (obj === null || obj === undefined) continue; // an empty document
      objects++;
      await checkObject(obj, where);
    }
  }
  for (const p of problems) console.log(p);
  if (problems.length) {
    console.log(`validate.mjs: ${problems.length} problem(s) in ${objects} object(s)`);
    return 1;
  }
  if (objects === 0) {
    console.log("validate.mjs: no objects in the input");
    return 1;
  }
  console.log(`validate.mjs: ${objects} object(s) OK`);
  return 0;
}

process.exitCode = await main();
