// Client side of the conformance kit (conformance/README.md) through the client
// openapi-generator's `typescript-fetch` generator made, the way smithy-rs runs its protocol
// tests: every case whose `appliesTo` holds "client", of kind `request` or `response`, goes
// through the generated API with a captured transport (Configuration.fetchApi) instead of a
// network.
//
//   request   the case's params (wire JSON) become the SDK's input types (bodies through the
//             generated XxxFromJSON, so a `format: date` becomes a Date), the SDK is called,
//             and the Request it hands fetchApi is compared with the case's wire request;
//   response  the operation is called with the params of its first request case, fetchApi
//             answers the canned response, and what the SDK surfaces (a value, through the
//             generated XxxToJSON; or a rejected ResponseError whose status and Problem
//             `code` are read) is compared with `expect`.
//
// Every case runs in three time zones (UTC, UTC-10 and UTC+14): a calendar date that goes
// through a Date must come back as the same day wherever the SDK runs.
//
// Usage: node conformance.js KIT_DIR DOCUMENT_JSON [-v]
//   KIT_DIR        the kit: a directory holding index.json and cases/ (the repository's
//                  conformance/, or a copy of a server's /conformance/); or $WPDS_CONFORMANCE_KIT
//   DOCUMENT_JSON  the document the client was generated from (a server's /openapi.json);
//                  or $WPDS_OPENAPI_JSON
//   -v             also print each expected failure's difference
// Exit 0: every case passed or failed as EXPECT_FAIL says; 1: a case failed unexpectedly, an
// expected failure passed, or EXPECT_FAIL names a case the kit does not hold; 2: bad usage
// or a kit/document the harness cannot read.

import * as fs from 'node:fs';
import * as path from 'node:path';
import * as client from './client';

const NAME = 'typescript conformance';

// Cases this generator cannot pass: case id -> what the SDK does instead. A case on this list
// that passes fails the run (so the list cannot rot), as does an id the kit does not hold.
// (None in 1.0.0. `CreditResetResult` declares no properties, so typescript-fetch makes no
// model of it and passes the parsed body through, `memberAddedLater` included: the kit's rule
// for undeclared members, `withoutUndeclared`, removes it, as it should.)
const EXPECT_FAIL: Record<string, string> = {};

// Each with its offset in 2026 (Date.getTimezoneOffset, minutes), checked before the run: a
// Node without the zone's data would fall back to UTC and test nothing.
const TIME_ZONES: Array<[string, number]> = [['UTC', 0], ['Pacific/Honolulu', 600], ['Pacific/Kiritimati', -840]];
const BASE_PATH = 'http://conformance.invalid';

// ---- the kit's and the document's shapes (only what the harness reads) --------------------

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

interface WireRequest {
  method: string;
  path: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  requireHeaders?: string[];
  forbidHeaders?: string[];
  body?: Json;
  bodyMediaType?: string;
}

interface Case {
  id: string;
  operationId: string;
  kind: 'request' | 'response' | 'malformed';
  appliesTo: string[];
  auth?: string;
  params?: { path?: Record<string, Json>; query?: Record<string, Json>; header?: Record<string, Json>; body?: Json };
  request?: WireRequest;
  response?: { status: number; headers?: Record<string, string>; body?: { match: string; value?: Json } };
  undeclared?: string[];
  expect?: { value?: Json; error?: { status: number; code?: string | null } };
}

interface Operation {
  operationId: string;
  tags?: string[];
  parameters?: JsonObject[];
  requestBody?: JsonObject;
  responses: Record<string, JsonObject>;
}

class Usage extends Error {}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function readJson(file: string): Json {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as Json;
  } catch (e) {
    throw new Usage(`cannot read ${file}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

// ---- the kit -----------------------------------------------------------------------------

function loadKit(dir: string): Case[] {
  if (!fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory()) throw new Usage(`${dir}: not a directory`);
  let files: string[];
  const index = path.join(dir, 'index.json');
  if (fs.existsSync(index)) {
    const idx = readJson(index);
    if (!isObject(idx) || !Array.isArray(idx.files)) throw new Usage(`${index}: no "files" list`);
    files = idx.files.filter((f): f is string => typeof f === 'string' && /^cases\/[^/]+\.json$/.test(f));
  } else {
    files = fs.readdirSync(path.join(dir, 'cases')).filter((f) => f.endsWith('.json')).map((f) => `cases/${f}`);
  }
  if (files.length === 0) throw new Usage(`${dir}: the kit holds no case file`);
  const cases: Case[] = [];
  const seen = new Set<string>();
  for (const f of files.sort()) {
    const doc = readJson(path.join(dir, f));
    if (!isObject(doc) || !Array.isArray(doc.cases)) throw new Usage(`${f}: not {"cases": [...]}`);
    doc.cases.forEach((c, i) => {
      if (!isObject(c) || typeof c.id !== 'string' || typeof c.operationId !== 'string'
        || typeof c.kind !== 'string' || !Array.isArray(c.appliesTo)) {
        throw new Usage(`${f}: /cases/${i} is not a case`);
      }
      if (seen.has(c.id)) throw new Usage(`${f}: case id ${c.id} is not unique`);
      seen.add(c.id);
      cases.push(c as unknown as Case);
    });
  }
  return cases;
}

function clientCase(c: Case): boolean {
  return c.appliesTo.includes('client') && (c.kind === 'request' || c.kind === 'response');
}

// ---- the document and typescript-fetch's naming rules --------------------------------------

class Document {
  readonly operations = new Map<string, Operation>();

  constructor(readonly doc: JsonObject) {
    const paths = doc.paths;
    if (!isObject(paths)) throw new Usage('the document has no paths');
    for (const item of Object.values(paths)) {
      if (!isObject(item)) continue;
      for (const [method, op] of Object.entries(item)) {
        if (!['get', 'put', 'post', 'patch', 'delete', 'head', 'options'].includes(method)) continue;
        if (isObject(op) && typeof op.operationId === 'string') {
          this.operations.set(op.operationId, op as unknown as Operation);
        }
      }
    }
  }

  // Follows local $refs; returns the object and the name of the last components/schemas ref.
  resolve(node: Json | undefined): { node: JsonObject; schemaName?: string } {
    let schemaName: string | undefined;
    let cur = node;
    for (let hops = 0; isObject(cur) && typeof cur.$ref === 'string'; hops++) {
      const ref = cur.$ref;
      if (!ref.startsWith('#/') || hops > 20) throw new Usage(`cannot follow $ref ${ref}`);
      const m = /^#\/components\/schemas\/([^/]+)$/.exec(ref);
      if (m) schemaName = m[1];
      cur = ref.slice(2).split('/').reduce<Json | undefined>(
        (o, k) => (isObject(o) ? o[k.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined), this.doc);
    }
    if (!isObject(cur)) throw new Usage(`a reference leads nowhere: ${JSON.stringify(node)}`);
    return { node: cur, schemaName };
  }
}

// openapi-generator's camelize: words split at what is not a letter or digit, each one
// capitalised (`Time log` -> `TimeLog`), then the first letter lowered for a variable.
function pascal(name: string): string {
  return name.split(/[^A-Za-z0-9]+/).filter(Boolean).map((w) => w[0].toUpperCase() + w.slice(1)).join('');
}
function camel(name: string): string {
  const p = pascal(name);
  return p && p[0].toLowerCase() + p.slice(1);
}

type Exports = Record<string, unknown>;
const exported = client as unknown as Exports;
type ApiMethod = (this: client.BaseAPI, params?: Record<string, unknown>) => Promise<unknown>;
type Converter = (json: unknown) => unknown;

function converter(name: string): Converter | undefined {
  const f = exported[name];
  return typeof f === 'function' ? (f as Converter) : undefined;
}

// How one operation is called through the generated client, derived from the document with
// typescript-fetch's rules:
//  - the operation is a method named camel(operationId) of the class pascal(first tag) + "Api"
//    (DefaultApi without a tag), a runtime.BaseAPI;
//  - it takes one requestParameters object: every path, query and header parameter under
//    camel(its name), and the JSON body under camel(its schema's name) (or the body's
//    x-codegen-request-body-name), typed as that schema's model (its FromJSON makes one);
//  - it resolves to the success schema's model (its ToJSON gives the wire JSON back); a
//    schema with no model (an object without properties) is answered as the parsed body.
class Binding {
  readonly api: new (config: client.Configuration) => client.BaseAPI;
  readonly method: string;
  readonly params = new Map<string, { key: string; format?: string }>();
  readonly bodyKey?: string;
  readonly bodyFromJson?: Converter;

  constructor(private readonly document: Document, readonly op: Operation) {
    const className = `${op.tags?.length ? pascal(op.tags[0]) : 'Default'}Api`;
    const ctor = exported[className];
    if (typeof ctor !== 'function' || !(ctor.prototype instanceof client.BaseAPI)) {
      throw new Usage(`${op.operationId}: the client has no class ${className}`);
    }
    this.api = ctor as new (config: client.Configuration) => client.BaseAPI;
    this.method = camel(op.operationId);
    if (typeof (ctor.prototype as unknown as Exports)[this.method] !== 'function') {
      throw new Usage(`${op.operationId}: ${className} has no method ${this.method}`);
    }
    for (const p of op.parameters ?? []) {
      const param = document.resolve(p).node;
      if (typeof param.name !== 'string' || typeof param.in !== 'string') continue;
      const schema = param.schema === undefined ? undefined : document.resolve(param.schema).node;
      const format = typeof schema?.format === 'string' ? schema.format : undefined;
      this.params.set(`${param.in}:${param.name}`, { key: camel(param.name), format });
    }
    if (op.requestBody !== undefined) {
      const body = document.resolve(op.requestBody).node;
      const content = isObject(body.content) ? body.content['application/json'] : undefined;
      const schemaName = isObject(content) ? document.resolve(content.schema).schemaName : undefined;
      if (schemaName === undefined) {
        throw new Usage(`${op.operationId}: the JSON body is not a named schema, which this harness has no rule for`);
      }
      const named = body['x-codegen-request-body-name'];
      this.bodyKey = typeof named === 'string' ? camel(named) : camel(schemaName);
      this.bodyFromJson = converter(`${pascal(schemaName)}FromJSON`);
      if (this.bodyFromJson === undefined) throw new Usage(`${op.operationId}: no ${pascal(schemaName)}FromJSON`);
    }
  }

  // The case's wire-JSON params as the SDK's requestParameters.
  input(c: Case): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const where of ['path', 'query', 'header'] as const) {
      for (const [name, value] of Object.entries(c.params?.[where] ?? {})) {
        const p = this.params.get(`${where}:${name}`);
        if (p === undefined) throw new Usage(`${c.id}: the operation has no ${where} parameter ${name}`);
        out[p.key] = p.format === 'date' && typeof value === 'string' ? client.parseDate(value)
          : p.format === 'date-time' && typeof value === 'string' ? new Date(value) : value;
      }
    }
    if (c.params?.body !== undefined) {
      if (this.bodyKey === undefined || this.bodyFromJson === undefined) {
        throw new Usage(`${c.id}: a body for an operation without one`);
      }
      out[this.bodyKey] = this.bodyFromJson(c.params.body);
    }
    return out;
  }

  // The surfaced value as wire JSON, through the model of the status's schema.
  toJson(status: number, value: unknown): unknown {
    const response = this.op.responses[String(status)];
    const { node } = this.document.resolve(response);
    const content = isObject(node.content) ? node.content['application/json'] : undefined;
    const schemaName = isObject(content) && content.schema !== undefined
      ? this.document.resolve(content.schema).schemaName : undefined;
    const toJson = schemaName === undefined ? undefined : converter(`${pascal(schemaName)}ToJSON`);
    return toJson === undefined ? value : toJson(value);
  }

  call(config: client.Configuration, input: Record<string, unknown>): Promise<unknown> {
    const api = new this.api(config);
    const method = (api as unknown as Record<string, ApiMethod>)[this.method];
    // typescript-fetch leaves the requestParameters argument out of an operation without any.
    return this.params.size === 0 && this.bodyKey === undefined ? method.call(api) : method.call(api, input);
  }
}

// ---- comparing ---------------------------------------------------------------------------

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

// The first difference between two JSON values, or undefined. With `instants`, two RFC 3339
// date-times naming the same instant are equal (a surfaced Date has its own spelling).
function difference(expected: unknown, actual: unknown, pointer = '', instants = false): string | undefined {
  const at = pointer || '/';
  const show = (v: unknown) => (v === undefined ? 'nothing' : JSON.stringify(v));
  if (instants && typeof expected === 'string' && typeof actual === 'string'
    && DATE_TIME.test(expected) && DATE_TIME.test(actual)) {
    return Date.parse(expected) === Date.parse(actual) ? undefined
      : `${at}: expected ${show(expected)}, got ${show(actual)}`;
  }
  if (Array.isArray(expected) || Array.isArray(actual)) {
    if (!Array.isArray(expected) || !Array.isArray(actual)) return `${at}: expected ${show(expected)}, got ${show(actual)}`;
    for (let i = 0; i < Math.max(expected.length, actual.length); i++) {
      const d = difference(expected[i], actual[i], `${pointer}/${i}`, instants);
      if (d !== undefined) return d;
    }
    return undefined;
  }
  if (isObject(expected) && isObject(actual)) {
    for (const k of new Set([...Object.keys(expected), ...Object.keys(actual)])) {
      const d = difference(expected[k], actual[k], `${pointer}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`, instants);
      if (d !== undefined) return d;
    }
    return undefined;
  }
  return expected === actual ? undefined : `${at}: expected ${show(expected)}, got ${show(actual)}`;
}

// `surfaced` without the members the document does not declare, by the kit's rule (its
// README, "response"): each of the case's `undeclared` pointers is removed, wherever the SDK
// kept it, so an SDK that passes an unknown member through passes as one that drops it
// does. Any other member stays, and fails the case.
function withoutUndeclared(surfaced: unknown, pointers: string[]): unknown {
  const copy = structuredClone(surfaced);
  for (const pointer of pointers) {
    const path = pointer.split('/').slice(1).map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
    let at: unknown = copy;
    for (const token of path.slice(0, -1)) at = isObject(at) ? at[token] : Array.isArray(at) ? at[Number(token)] : undefined;
    if (isObject(at)) delete at[path[path.length - 1]];
  }
  return copy;
}

// The value as JSON text would carry it (undefined members dropped, Dates as strings).
function asJson(value: unknown): unknown {
  const text = JSON.stringify(value);
  return text === undefined ? undefined : JSON.parse(text);
}

interface Sent {
  url: string;
  method: string;
  headers: Headers;
  body: string | undefined;
}

function checkRequest(want: WireRequest, sent: Sent, token: string | undefined): string | undefined {
  if (sent.method.toUpperCase() !== want.method) return `method: expected ${want.method}, sent ${sent.method}`;
  if (!sent.url.startsWith(BASE_PATH)) return `url ${sent.url} is not under ${BASE_PATH}`;
  const target = sent.url.slice(BASE_PATH.length);
  const mark = target.indexOf('?');
  const [rawPath, rawQuery] = mark < 0 ? [target, ''] : [target.slice(0, mark), target.slice(mark + 1)];
  if (rawPath !== want.path) return `path: expected ${want.path}, sent ${rawPath}`;
  const query: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(rawQuery)) {
    if (k in query) return `query: ${k} sent more than once`;
    query[k] = v;
  }
  const q = difference(want.query ?? {}, query);
  if (q !== undefined) return `query ${q}`;
  for (const [name, value] of Object.entries(want.headers ?? {})) {
    const got = sent.headers.get(name);
    if (got !== value) return `header ${name}: expected ${JSON.stringify(value)}, sent ${JSON.stringify(got)}`;
  }
  for (const name of want.requireHeaders ?? []) {
    const got = sent.headers.get(name);
    if (got === null) return `header ${name}: required, not sent`;
    if (name.toLowerCase() === 'authorization' && token !== undefined && got !== `Bearer ${token}`) {
      return `header Authorization: expected "Bearer ${token}", sent ${JSON.stringify(got)}`;
    }
  }
  for (const name of want.forbidHeaders ?? []) {
    const got = sent.headers.get(name);
    if (got !== null) return `header ${name}: forbidden, sent ${JSON.stringify(got)}`;
  }
  if (want.bodyMediaType !== undefined) {
    const type = sent.headers.get('content-type')?.split(';')[0].trim().toLowerCase();
    if (type !== want.bodyMediaType.toLowerCase()) {
      return `body media type: expected ${want.bodyMediaType}, sent ${JSON.stringify(type ?? null)}`;
    }
  }
  if (want.body === undefined) {
    return sent.body === undefined || sent.body === '' ? undefined : `body: expected none, sent ${sent.body}`;
  }
  if (sent.body === undefined) return 'body: expected one, sent none';
  let body: unknown;
  try {
    body = JSON.parse(sent.body);
  } catch {
    return `body: not JSON: ${sent.body}`;
  }
  const d = difference(want.body, body);
  return d === undefined ? undefined : `body ${d}`;
}

// ---- running a case ----------------------------------------------------------------------

function tokenFor(auth: string | undefined): string | undefined {
  return auth === undefined || auth === 'none' ? undefined : `${auth}-token`;
}

// A captured transport: records what the SDK sends and answers `answer` (a bare 204 without one).
function transport(sent: Sent[], answer?: Case['response']): client.FetchAPI {
  return async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const body = init?.body;
    sent.push({
      url: input instanceof Request ? input.url : String(input),
      method: init?.method ?? 'GET',
      headers: new Headers(init?.headers),
      body: body === undefined || body === null ? undefined : typeof body === 'string' ? body : `<${typeof body}>`,
    });
    if (answer === undefined) return new Response(null, { status: 204 });
    const noBody = [204, 205, 304].includes(answer.status) || answer.body?.value === undefined;
    return new Response(noBody ? null : JSON.stringify(answer.body?.value), {
      status: answer.status,
      headers: answer.headers ?? {},
    });
  };
}

async function runCase(c: Case, binding: Binding, first: Map<string, Case>): Promise<string | undefined> {
  const sent: Sent[] = [];
  if (c.kind === 'request') {
    const token = tokenFor(c.auth);
    const config = new client.Configuration({ basePath: BASE_PATH, accessToken: token, fetchApi: transport(sent) });
    // The transport answers 204 without a body: what the SDK makes of it is not this case's
    // concern, unless it threw before sending anything.
    let thrown: unknown;
    await binding.call(config, binding.input(c)).catch((e: unknown) => { thrown = e; });
    if (sent.length !== 1) {
      return `the SDK sent ${sent.length} requests${thrown === undefined ? '' : ` (it threw ${String(thrown)})`}`;
    }
    if (c.request === undefined) return 'the case has no request';
    return checkRequest(c.request, sent[0], token);
  }
  const source = first.get(c.operationId);
  if (source === undefined) return `no request case of ${c.operationId} to take params from`;
  const config = new client.Configuration({
    basePath: BASE_PATH, accessToken: tokenFor(source.auth), fetchApi: transport(sent, c.response),
  });
  let value: unknown;
  let failure: unknown;
  let ok = false;
  try {
    value = await binding.call(config, binding.input(source));
    ok = true;
  } catch (e) {
    failure = e;
  }
  const expect = c.expect ?? {};
  if (expect.error !== undefined) {
    if (ok) {
      const shown = JSON.stringify(asJson(binding.toJson(c.response?.status ?? 0, value)));
      return `expected an error ${expect.error.status}, the SDK surfaced ${shown}`;
    }
    if (!(failure instanceof client.ResponseError)) return `expected a ResponseError, the SDK threw ${String(failure)}`;
    const status = failure.response.status;
    if (status !== expect.error.status) return `error status: expected ${expect.error.status}, surfaced ${status}`;
    if (expect.error.code !== undefined) {
      let problem: client.Problem;
      try {
        problem = client.ProblemFromJSON(await failure.response.json());
      } catch (e) {
        return `the error's body cannot be read as a Problem: ${String(e)}`;
      }
      if (problem.code !== expect.error.code) {
        return `error code: expected ${JSON.stringify(expect.error.code)}, surfaced ${JSON.stringify(problem.code)}`;
      }
    }
    return undefined;
  }
  if (!ok) {
    const detail = failure instanceof client.ResponseError ? `ResponseError ${failure.response.status}` : String(failure);
    return `expected a value, the SDK threw ${detail}`;
  }
  const surfaced = asJson(binding.toJson(c.response?.status ?? 0, value));
  const d = difference(expect.value, withoutUndeclared(surfaced, c.undeclared ?? []), '', true);
  return d === undefined ? undefined : `value ${d}`;
}

async function main(): Promise<number> {
  const args = process.argv.slice(2).filter((a) => a !== '-v');
  const verbose = process.argv.includes('-v');
  const kitDir = args[0] ?? process.env.WPDS_CONFORMANCE_KIT;
  const docFile = args[1] ?? process.env.WPDS_OPENAPI_JSON;
  if (!kitDir || !docFile || args.length > 2) {
    throw new Usage('usage: node conformance.js KIT_DIR DOCUMENT_JSON [-v]');
  }
  const docJson = readJson(docFile);
  if (!isObject(docJson)) throw new Usage(`${docFile}: not an OpenAPI document`);
  const document = new Document(docJson);
  const all = loadKit(kitDir);
  const cases = all.filter(clientCase);

  const problems: string[] = [];
  for (const id of Object.keys(EXPECT_FAIL)) {
    if (!cases.some((c) => c.id === id)) {
      problems.push(`EXPECT_FAIL names ${id}, which is not a client request or response case of the kit`);
    }
  }
  const first = new Map<string, Case>();
  for (const c of cases) if (c.kind === 'request' && !first.has(c.operationId)) first.set(c.operationId, c);
  const bindings = new Map<string, Binding>();
  for (const c of cases) {
    if (bindings.has(c.operationId)) continue;
    const op = document.operations.get(c.operationId);
    if (op === undefined) throw new Usage(`${c.id}: the document has no operation ${c.operationId}`);
    bindings.set(c.operationId, new Binding(document, op));
  }

  for (const [tz, offset] of TIME_ZONES) {
    process.env.TZ = tz;
    const got = new Date(2026, 10, 20).getTimezoneOffset();
    if (got !== offset) throw new Usage(`TZ=${tz} gives the offset ${got}, not ${offset}: no time-zone data?`);
  }

  let passed = 0;
  let expected = 0;
  for (const c of cases) {
    let diff: string | undefined;
    for (const [tz] of TIME_ZONES) {
      process.env.TZ = tz;
      try {
        diff = await runCase(c, bindings.get(c.operationId)!, first);
      } catch (e) {
        if (e instanceof Usage) throw e;
        diff = `threw ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`;
      }
      if (diff !== undefined) {
        if (tz !== 'UTC') diff = `TZ=${tz}: ${diff}`;
        break;
      }
    }
    const reason = EXPECT_FAIL[c.id];
    if (diff === undefined && reason === undefined) passed++;
    else if (diff === undefined) problems.push(`${c.id}: on EXPECT_FAIL but passes now; take it off the list`);
    else if (reason === undefined) problems.push(`${c.id}: ${diff}`);
    else {
      expected++;
      if (verbose) console.log(`  expected failure ${c.id}: ${diff}`);
    }
  }
  process.env.TZ = 'UTC';
  console.log(`${NAME}: ${cases.length} cases, ${passed} passed, ${expected} expected failures, `
    + `${problems.length} problems`);
  for (const p of problems) console.log(`  FAIL ${p}`);
  return problems.length === 0 ? 0 : 1;
}

main().then((code) => process.exit(code), (e: unknown) => {
  console.error(`${NAME}: ${e instanceof Error ? (e instanceof Usage ? e.message : e.stack) : String(e)}`);
  process.exit(2);
});
