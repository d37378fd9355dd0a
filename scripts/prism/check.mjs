// Drives Prism's validating proxy (`prism proxy --errors`) in front of the demo server, as a
// client team would, and fails on any violation Prism reports. Run by scripts/check-prism,
// which starts the servers and passes:
//   PRISM_URL          Prism in front of the demo server, on the published document
//   CANARY_URL         Prism in front of a second, fresh demo server, on a scratch copy of
//                      the document where each operation's success response has one field
//                      retyped (CANARY_FIELDS: operationId -> the field)
//   DOC_JSON           the published document (JSON), for the operations and their examples
//   ADMIN, MEMBER, OUTSIDER, REFRESH           tokens of the first demo server
//   CANARY_ADMIN, CANARY_MEMBER, CANARY_REFRESH tokens of the second
//
// 1. Every operation's first request example (refresh with a real refresh token) gets its
//    documented success status, and every documented error a schema-valid request can
//    provoke gets its status (401, 403, 404, 409, 422, and 429 with the rate limit on):
//    Prism must report no violation on any of them (no `sl-violations` header). Which
//    operations get which case comes from the document (their `security` and `responses`);
//    only the 422 bodies are written here, and that table is checked against the document.
// 2. A schema-invalid request per operation is answered by Prism itself (it never reaches
//    the server); those are listed, not failed.
// 3. The canary: each operation's success request through the scratch document must be
//    flagged, proving Prism really validates that operation's responses.
import { readFileSync } from 'node:fs';

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const doc = JSON.parse(readFileSync(env('DOC_JSON'), 'utf8'));
const canaryFields = JSON.parse(env('CANARY_FIELDS'));
const deref = (node) => (node && node.$ref ? deref(node.$ref.split('/').slice(1).reduce((n, k) => n[k], doc)) : node);

// The operations, with their path filled from the parameters' examples (`pathWith` fills it
// with one of them replaced), their first request example, and who may call them (`access`:
// public, platform-admin, workspace-member, or any caller with a token).
const operations = {};
for (const [template, item] of Object.entries(doc.paths)) {
  for (const [method, op] of Object.entries(item)) {
    const pathParams = (op.parameters || []).map(deref).filter((p) => p.in === 'path');
    const pathWith = (replaced = {}) =>
      pathParams.reduce((path, p) => path.replace(`{${p.name}}`, replaced[p.name] ?? p.example), template);
    const examples = op.requestBody?.content?.['application/json']?.examples;
    const body = examples ? deref(Object.values(examples)[0]).value : undefined;
    const success = Number(Object.keys(op.responses).find((s) => s.startsWith('2')));
    const security = op.security ?? doc.security ?? [];
    const scopes = security.flatMap((requirement) => Object.values(requirement).flat());
    const access = security.length === 0 ? 'public' : ['platform-admin', 'workspace-member'].find((s) => scopes.includes(s)) ?? 'any';
    operations[op.operationId] = {
      method: method.toUpperCase(), path: pathWith(), pathWith, pathParams: pathParams.map((p) => p.name),
      body, success, access, statuses: Object.keys(op.responses).map(Number),
    };
  }
}
const documenting = (status) => Object.entries(operations).filter(([, op]) => op.statuses.includes(status));

const failures = [];
const rows = [];
async function send(base, { method, path, body, token, raw }) {
  const headers = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined || raw !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${base}${path}`, { method, headers, body: raw ?? (body === undefined ? undefined : JSON.stringify(body)) });
  const text = await response.text();
  return { status: response.status, violations: response.headers.get('sl-violations'), text };
}

// One case through the validating proxy: the status it must get, and no violation.
async function expect(id, what, expected, request) {
  const op = operations[id];
  const answer = await send(env('PRISM_URL'), { method: op.method, path: op.path, body: op.body, ...request });
  const ok = answer.status === expected && !answer.violations;
  rows.push(`${ok ? 'ok  ' : 'FAIL'} ${id} ${what}: ${answer.status}${answer.violations ? ` violations ${answer.violations}` : ''}`);
  if (!ok) failures.push(`${id} ${what}: expected ${expected} without violations, got ${answer.status} ${answer.violations || ''} ${answer.text.slice(0, 300)}`);
  if (!op.statuses.includes(expected)) failures.push(`${id} ${what}: ${expected} is not documented for it`);
}

const ADMIN = env('ADMIN');
const MEMBER = env('MEMBER');
const OUTSIDER = env('OUTSIDER');
const with_ = (id, patch) => ({ ...operations[id]?.body, ...patch });

// 1a. Successes, each once on the fresh demo.
const body = (id) => (id === 'refreshToken' ? { refreshToken: env('REFRESH') } : operations[id].body);
for (const [id, op] of Object.entries(operations)) {
  await expect(id, 'its first example', op.success, { token: ADMIN, body: body(id) });
}
// 1b. Documented errors of schema-valid requests.
// 401 and 403: by the operation's `security`. An operation without one (refresh) takes its
// credential in the body, spent by its success above.
for (const [id, op] of Object.entries(operations)) {
  if (op.access === 'public') {
    if (op.statuses.includes(401)) await expect(id, 'its credential again (spent)', 401, { body: body(id) });
    continue;
  }
  await expect(id, 'no token', 401, { token: undefined });
  if (op.access === 'platform-admin') await expect(id, 'not an administrator', 403, { token: MEMBER });
  if (op.access === 'workspace-member') await expect(id, 'not a member', 403, { token: OUTSIDER });
}
// 404 wherever documented: the example path with its last id (a path parameter named
// `…Id`) naming nothing, never the workspace of a member operation (an unknown workspace is
// 403 there). An operation whose 404 this cannot reach gets a path of its own in
// `missingPaths`.
const missingPaths = {};
for (const id of Object.keys(missingPaths)) {
  if (!operations[id]?.statuses.includes(404)) failures.push(`scripts/prism/check.mjs \`missingPaths\` names ${id}, which documents no 404`);
}
for (const [id, op] of documenting(404)) {
  const ids = op.pathParams.filter((name) => name.endsWith('Id') && !(op.access === 'workspace-member' && name === 'workspaceId'));
  const path = missingPaths[id] ?? (ids.length ? op.pathWith({ [ids.at(-1)]: '99999' }) : undefined);
  if (!path) {
    failures.push(`${id} documents 404 but its path has no id to name nothing with: give it a path in \`missingPaths\` of scripts/prism/check.mjs`);
    continue;
  }
  await expect(id, 'a record the path names does not exist', 404, { token: ADMIN, path });
}
// 409 wherever documented: the success request again, now stale (or already done). An
// operation whose repeat is not a conflict needs a request of its own here.
for (const [id] of documenting(409)) {
  await expect(id, 'the same request again (stale, or done)', 409, { token: ADMIN });
}
// 422: a body that breaks a business rule the operation documents. A schema cannot say
// which ids exist or which values a rule refuses, so these bodies are written here, one per
// operation documenting 422; the table is checked against the document both ways below.
const rules = {
  assignDocumentType: with_('assignDocumentType', { typeId: '99', expectedVersion: 5 }),
  bulkEditCatalogFamilies: { targets: [{ familyId: '99999', familyVersion: 1 }], fieldKey: 'notes', value: 'x' },
  createCrossProjectReportExport: with_('createCrossProjectReportExport', { requestId: '0b1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d', configuration: { version: 1, projectScope: { mode: 'fixed', projectIds: ['99999'] } } }),
  replaceTakeoffMappings: with_('replaceTakeoffMappings', { projectId: '12' }),
  patchCategorySettings: { expectedRevision: 8, ops: [{ productTypeId: '99999', itemColumnId: '8', isActive: true }] },
  createCompanyLink: { mainCompanyId: '61', repCompanyId: '61' },
  setOwnTimeLogCell: with_('setOwnTimeLogCell', { date: '2026-11-21', hours: '25' }),
  resetAssistantCreditAllowance: with_('resetAssistantCreditAllowance', { userId: '99999' }),
  retireGlobalCompany: { reason: 'merged\u0000' },
};
for (const [id] of documenting(422)) {
  if (!(id in rules)) failures.push(`${id} documents 422 but scripts/prism/check.mjs has no body for it in \`rules\`: add one that breaks a rule it documents`);
}
for (const [id, ruleBody] of Object.entries(rules)) {
  if (!operations[id]) {
    failures.push(`scripts/prism/check.mjs \`rules\` names ${id}, which is not an operation of the document`);
    continue;
  }
  await expect(id, 'a rule it documents (422)', 422, { token: ADMIN, body: ruleBody });
}
// 429: the demo server runs with a rate limit; the member reads (the first member read of
// the document) until it is reached.
{
  const [readId, read] = Object.entries(operations).find(([, op]) => op.method === 'GET' && op.access === 'workspace-member');
  let answer;
  for (let i = 0; i < 200; i++) {
    answer = await send(env('PRISM_URL'), { method: 'GET', path: read.path, token: MEMBER });
    if (answer.status === 429 || answer.violations) break;
  }
  const ok = answer.status === 429 && !answer.violations;
  rows.push(`${ok ? 'ok  ' : 'FAIL'} ${readId} beyond the rate limit: ${answer.status}`);
  if (!ok) failures.push(`${readId} beyond the rate limit: ${answer.status} ${answer.violations || ''}`);
}

// 2. Schema-invalid requests: Prism answers them itself.
const invalid = [];
for (const [id, op] of Object.entries(operations)) {
  const request = op.body === undefined ? { path: `${op.path}?limit=0` } : { raw: '{"unknown": true}' };
  const answer = await send(env('PRISM_URL'), { method: op.method, path: op.path, token: ADMIN, ...request });
  invalid.push(`${id}: ${answer.status}${answer.text.includes('stoplight.io/prism') ? ' (answered by Prism)' : ' (answered by the server)'}`);
}

// 3. Canaries.
const canaryTokens = { admin: env('CANARY_ADMIN'), refresh: env('CANARY_REFRESH') };
for (const [id, op] of Object.entries(operations)) {
  const canaryBody = id === 'refreshToken' ? { refreshToken: canaryTokens.refresh } : op.body;
  const answer = await send(env('CANARY_URL'), { method: op.method, path: op.path, body: canaryBody, token: canaryTokens.admin });
  const flagged = Boolean(answer.violations);
  rows.push(`${flagged ? 'ok  ' : 'FAIL'} canary ${id} (${canaryFields[id]} retyped): ${flagged ? 'flagged' : `NOT flagged (${answer.status})`}`);
  if (!flagged) failures.push(`canary ${id}: Prism did not flag ${canaryFields[id]} retyped (${answer.status} ${answer.text.slice(0, 200)})`);
}

console.log(rows.join('\n'));
console.log(`schema-invalid requests:\n  ${invalid.join('\n  ')}`);
if (failures.length) {
  console.error(`check-prism: FAILED\n  - ${failures.join('\n  - ')}`);
  process.exit(1);
}
console.log(`check-prism: ${rows.length} checks, 0 violations; every canary flagged`);
