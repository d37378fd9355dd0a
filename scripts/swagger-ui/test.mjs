// Drives the vendored Swagger UI at $WPDS_BASE_URL/docs/ in Debian's Chromium, as a person
// would: every operation of the contract is listed, the Authorize dialog takes the bearer
// token, and "Try it out" / "Execute" on one operation shows a 200 with the expected body.
// Every request that does not go to the loopback server is blocked and reported: the UI
// must need nothing from outside. Run by scripts/check-swagger-ui, which starts the demo
// server and passes:
//   WPDS_BASE_URL, WPDS_TOKEN       the demo server and user 9's access token, as printed
//   WPDS_REFRESH_TOKEN              the refresh token the demo printed (for refreshToken)
//   SWAGGER_UI_PLAYWRIGHT           directory holding node_modules/playwright-core
//   SWAGGER_UI_EXPECTED_OPERATIONS  the contract's operationIds, one per line
//   SWAGGER_UI_SCREENSHOT           where to save the screenshot
//   SWAGGER_UI_SKIP_CROSS_ORIGIN    set: skip the cross-origin part (the second walk)
//   SWAGGER_UI_DROP_OPERATION       (to prove the check fails) drop this operation from the
//                                   /docs/openapi.json that the browser receives
//   CORS_ALLOWED_PORT, CORS_OTHER_PORT  two free loopback ports: a page served from the
//                                   first (an origin on the server's WPDS_CORS_ORIGINS) must
//                                   be able to call an operation with a bearer token and read
//                                   the answer and its X-Request-Id; one from the second (not
//                                   on the list) must not
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const baseUrl = env('WPDS_BASE_URL');
const token = env('WPDS_TOKEN');
const refreshToken = env('WPDS_REFRESH_TOKEN');
const screenshot = env('SWAGGER_UI_SCREENSHOT');
const expected = readFileSync(env('SWAGGER_UI_EXPECTED_OPERATIONS'), 'utf8').split('\n').filter(Boolean);
const dropOperation = process.env.SWAGGER_UI_DROP_OPERATION || '';
const { chromium } = createRequire(join(env('SWAGGER_UI_PLAYWRIGHT'), 'package.json'))('playwright-core');

// The operation exercised end to end, with the request example Swagger UI pre-fills
// (`firstWrite`: project 7, 2026-11-20, 7.5 hours, expectedVersion 1, in workspace 1).
const OPERATION = 'setOwnTimeLogCell';
const EXPECTED_BODY = ['"projectId": "7"', '"date": "2026-11-20"', '"hours": "7.50"', '"version": 2'];

const failures = [];
const fail = (message) => failures.push(message);
const step = (message) => process.env.SWAGGER_UI_VERBOSE && console.log(`  ${message}`);

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);
const blocked = [];
const apiCalls = [];

const userDataDir = mkdtempSync(join(tmpdir(), 'check-swagger-ui-'));
const watchdog = setTimeout(() => {
  console.error('check-swagger-ui: FAILED: the browser test did not finish within 90 s');
  process.exit(1);
}, 90_000);

// A page on http://127.0.0.1:PORT that calls the API with a bearer token from the browser
// (fetch, so CORS applies) and reports what it could read.
const CALLER_PAGE = `<!doctype html><meta charset="utf-8"><title>caller</title><script>
  window.called = fetch(${JSON.stringify(`${baseUrl}/v1/workspaces/1/projects/7/sync-updates/commercial-receipts?limit=1`)}, {
    headers: { Authorization: ${JSON.stringify(`Bearer ${token}`)} },
  }).then(async (r) => ({ ok: true, status: r.status, requestId: r.headers.get('x-request-id'), items: (await r.json()).items.length }),
          (e) => ({ ok: false, error: String(e) }));
</script>`;

/// Serves CALLER_PAGE on 127.0.0.1:port; resolves to the server.
function servePage(port) {
  return new Promise((resolve) => {
    const server = createServer((_, response) => {
      response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      response.end(CALLER_PAGE);
    });
    server.listen(Number(port), '127.0.0.1', () => resolve(server));
  });
}

/// Opens the caller page from the allowed origin and from the other one; fails unless the
/// first reads a 200 and its X-Request-Id and the second is refused by the browser.
async function crossOriginCalls(context) {
  const allowedPort = env('CORS_ALLOWED_PORT');
  const otherPort = env('CORS_OTHER_PORT');
  const servers = await Promise.all([servePage(allowedPort), servePage(otherPort)]);
  try {
    const outcome = async (port) => {
      const page = await context.newPage();
      await page.goto(`http://127.0.0.1:${port}/`);
      const result = await page.evaluate(() => window.called);
      await page.close();
      return result;
    };
    const allowed = await outcome(allowedPort);
    if (!allowed.ok || allowed.status !== 200 || !allowed.requestId || allowed.items !== 1) {
      fail(`a page of the allowed origin http://127.0.0.1:${allowedPort} could not call the API: ${JSON.stringify(allowed)}`);
    }
    const other = await outcome(otherPort);
    if (other.ok) fail(`a page of http://127.0.0.1:${otherPort}, not on WPDS_CORS_ORIGINS, read the answer: ${JSON.stringify(other)}`);
    step(`cross-origin: allowed ${JSON.stringify(allowed)}, other ${JSON.stringify(other)}`);
    return `allowed origin read ${allowed.status} (X-Request-Id ${allowed.requestId ? 'exposed' : 'hidden'}), other origin refused`;
  } finally {
    for (const server of servers) server.close();
  }
}

let context;
try {
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1280, height: 900 },
    serviceWorkers: 'block',
  });
  context.setDefaultTimeout(15_000);

  await context.route('**/*', async (route) => {
    const request = route.request();
    const url = new URL(request.url());
    if (!LOOPBACK.has(url.hostname) && !LOOPBACK.has(`[${url.hostname}]`)) {
      blocked.push(`${request.method()} ${request.url()}`);
      return route.abort('blockedbyclient');
    }
    if (url.pathname.startsWith('/v1/') || url.pathname.startsWith('/admin/')) {
      apiCalls.push({ method: request.method(), origin: url.origin, path: url.pathname, auth: request.headers().authorization || '' });
    }
    if (dropOperation && url.pathname === '/docs/openapi.json') {
      const response = await route.fetch();
      const doc = await response.json();
      for (const item of Object.values(doc.paths || {})) {
        for (const [method, op] of Object.entries(item)) {
          if (op && op.operationId === dropOperation) delete item[method];
        }
      }
      return route.fulfill({ response, json: doc });
    }
    return route.continue();
  });

  const page = context.pages()[0] || (await context.newPage());
  const pageErrors = [];
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  // The page runs under the server's Content-Security-Policy: anything it blocks is a
  // failure (Chromium reports each refusal on the console).
  const policyViolations = [];
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) policyViolations.push(message.text());
  });

  // 1. The page loads and renders the document.
  const response = await page.goto(`${baseUrl}/docs/`, { waitUntil: 'load' });
  if (!response || response.status() !== 200) throw new Error(`GET /docs/ answered ${response?.status()}`);
  const policy = (await response.allHeaders())['content-security-policy'] || '';
  if (!policy.includes("frame-ancestors 'none'") || !policy.includes("script-src 'self'")) {
    fail(`/docs/ is served without its Content-Security-Policy: "${policy}"`);
  }
  await page.locator('.swagger-ui .information-container .title').first().waitFor();
  await page.locator('.swagger-ui .opblock').first().waitFor();
  const title = (await page.locator('.swagger-ui .information-container .title').first().innerText()).split('\n')[0];
  step(`UI rendered: ${title}`);
  const errorBox = page.locator('.swagger-ui .errors-wrapper');
  if (await errorBox.count()) fail(`Swagger UI shows errors: ${(await errorBox.innerText()).trim()}`);

  // 2. Every operation of the contract is listed, and nothing else.
  const listed = await page.locator('.swagger-ui .opblock .opblock-summary-operation-id').allInnerTexts();
  const listedSet = new Set(listed.map((text) => text.trim()));
  const missing = expected.filter((id) => !listedSet.has(id));
  const extra = [...listedSet].filter((id) => !expected.includes(id));
  if (missing.length) fail(`operations missing from Swagger UI: ${missing.join(', ')}`);
  if (extra.length) fail(`operations in Swagger UI that the contract does not have: ${extra.join(', ')}`);
  if (listed.length !== expected.length) {
    fail(`Swagger UI lists ${listed.length} operations; the contract has ${expected.length}`);
  }
  step(`operations listed: ${listed.length}/${expected.length}`);

  // 3. The UI calls the origin the page came from: its copy of the document has the one
  // relative server `/` (the published documents keep `{baseUrl}` for generators), so
  // nothing needs setting on a random port.
  const servers = await page.locator('.swagger-ui .servers select option').allInnerTexts();
  if (servers.length !== 1 || !servers[0].trim().startsWith('/')) fail(`Swagger UI's servers: ${JSON.stringify(servers)}; expected the relative /`);
  step(`server: ${servers.join(', ')}`);

  // 4. Authorize: type the token into the bearerAuth field of the dialog.
  await page.locator('.swagger-ui .scheme-container button.authorize').click();
  const dialog = page.locator('.swagger-ui .dialog-ux .modal-ux');
  await dialog.waitFor();
  const scheme = dialog.locator('.auth-container').filter({ hasText: 'bearerAuth' });
  if ((await scheme.count()) !== 1) throw new Error('the Authorize dialog has no bearerAuth section');
  await scheme.locator('input').fill(token);
  await scheme.locator('button.authorize').click();
  await scheme.locator('button', { hasText: 'Logout' }).waitFor();
  if (!(await scheme.innerText()).includes('Authorized')) fail('the bearerAuth section does not say "Authorized"');
  await dialog.locator('button.btn-done').click();
  await dialog.waitFor({ state: 'detached' });
  step('authorized with the bearer token');

  // 5. Expand one operation, "Try it out", "Execute".
  const block = page.locator('.swagger-ui .opblock').filter({
    has: page.locator('.opblock-summary-operation-id', { hasText: new RegExp(`^${OPERATION}$`) }),
  });
  if ((await block.count()) !== 1) throw new Error(`operation ${OPERATION} is not listed once`);
  await block.locator('.opblock-summary-control').click();
  await block.locator('.opblock-body').waitFor();
  const tryOut = block.locator('button.try-out__btn');
  if ((await tryOut.innerText()).trim() === 'Try it out') {
    await tryOut.click();
    step('clicked "Try it out"');
  } else {
    step('"Try it out" already enabled (tryItOutEnabled)');
  }
  await block.locator('button', { hasText: 'Cancel' }).first().waitFor();
  const workspace = block.locator('tr[data-param-name="workspaceId"] input');
  if ((await workspace.inputValue()) === '') await workspace.fill('1');
  const body = block.locator('.body-param textarea');
  const sentBody = await body.inputValue();
  if (!sentBody.includes('2026-11-20')) fail(`the request body is not the firstWrite example: ${sentBody}`);
  await block.locator('button.execute').click();

  // 6. The response the UI shows.
  const live = block.locator('.live-responses-table .response');
  await live.first().waitFor();
  const status = (await live.first().locator('.response-col_status').innerText()).trim();
  const details = live.first().locator('.response-col_description');
  const bodyBlock = details.locator('.response-col_description__inner pre, pre.microlight').first();
  const shownBody = (await bodyBlock.count()) ? await bodyBlock.innerText() : (await details.innerText()).trim();
  const requestUrl = (await block.locator('.request-url pre').innerText().catch(() => '')).trim();
  const oneLine = (text) => text.replace(/\s+/g, ' ').slice(0, 500);
  if (status !== '200') {
    fail(`Execute showed "${oneLine(status)}", not 200; details: ${oneLine(shownBody)}`);
  } else {
    const lacking = EXPECTED_BODY.filter((piece) => !shownBody.includes(piece));
    if (lacking.length) fail(`the response body shown lacks ${lacking.join(', ')}: ${oneLine(shownBody)}`);
  }
  const call = apiCalls.find(
    (c) => c.method === 'PUT' && c.origin === baseUrl && c.path === '/v1/workspaces/1/time-log/cells',
  );
  if (!call) fail(`the browser sent no PUT ${baseUrl}/v1/workspaces/1/time-log/cells (API calls: ${JSON.stringify(apiCalls.map(({ auth, ...c }) => c))})`);
  else if (call.auth !== `Bearer ${token}`) fail('the browser sent the PUT without the bearer token typed into Authorize');
  step(`Execute: PUT ${requestUrl} -> ${status}`);

  // 7. Every other operation: its first example through "Try it out" / "Execute" gets its
  // documented success status (the examples fit a fresh demo, each run once; the refresh
  // example's token is replaced by one the demo issued).
  const uiDoc = await (await fetch(`${baseUrl}/docs/openapi.json`)).json();
  const deref = (node) => (node && node.$ref ? deref(node.$ref.split('/').slice(1).reduce((n, k) => n[k], uiDoc)) : node);
  const executed = [`${OPERATION} ${status}`];
  for (const item of Object.values(uiDoc.paths)) {
    for (const op of Object.values(item)) {
      if (!op.operationId || op.operationId === OPERATION) continue;
      const success = Object.keys(op.responses).find((code) => code.startsWith('2'));
      const other = page.locator('.swagger-ui .opblock').filter({
        has: page.locator('.opblock-summary-operation-id', { hasText: new RegExp(`^${op.operationId}$`) }),
      });
      await other.locator('.opblock-summary-control').click();
      await other.locator('.opblock-body').waitFor();
      const tryIt = other.locator('button.try-out__btn');
      if ((await tryIt.innerText()).trim() === 'Try it out') await tryIt.click();
      for (const param of (op.parameters || []).map(deref).filter((p) => p.in === 'path')) {
        const input = other.locator(`tr[data-param-name="${param.name}"] input`);
        if ((await input.inputValue()) === '') await input.fill(String(param.example));
      }
      if (op.operationId === 'refreshToken') {
        await other.locator('.body-param textarea').fill(JSON.stringify({ refreshToken: refreshToken }));
      }
      await other.locator('button.execute').click();
      const answer = other.locator('.live-responses-table .response').first();
      await answer.waitFor();
      const got = (await answer.locator('.response-col_status').innerText()).trim();
      executed.push(`${op.operationId} ${got}`);
      if (got !== success) {
        const shown = (await answer.locator('.response-col_description').innerText()).replace(/\s+/g, ' ').slice(0, 300);
        fail(`${op.operationId}: Execute on its first example showed ${got}, not ${success}: ${shown}`);
      }
      await other.locator('.opblock-summary-control').click();
    }
  }
  step(`executed: ${executed.join(', ')}`);

  // Evidence: the operation from its summary down to the server response (not the
  // documented responses below it).
  await page.evaluate(() => window.scrollTo(0, 0));
  const from = await block.boundingBox();
  const to = await block.locator('.live-responses-table').boundingBox();
  const scrollY = await page.evaluate(() => window.scrollY);
  mkdirSync(dirname(screenshot), { recursive: true });
  await page.screenshot({
    path: screenshot,
    fullPage: true,
    clip: { x: from.x, y: from.y + scrollY, width: from.width, height: to.y + to.height - from.y + 8 },
  });
  // 5. Cross-origin: a page of another origin calls the API from the browser (once per
  // check: SWAGGER_UI_SKIP_CROSS_ORIGIN on the second walk).
  const cors = process.env.SWAGGER_UI_SKIP_CROSS_ORIGIN ? 'not repeated' : await crossOriginCalls(context);
  if (pageErrors.length) fail(`JavaScript errors on the page: ${pageErrors.join(' | ')}`);
  if (policyViolations.length) fail(`the Content-Security-Policy blocked: ${policyViolations.join(' | ')}`);
  // The pasted token lives in memory only, never in the browser's storage.
  const stored = await page.evaluate(() => JSON.stringify({ ...window.localStorage, ...window.sessionStorage }));
  if (stored.includes(token)) fail('Swagger UI kept the pasted token in browser storage');

  if (blocked.length) {
    fail(`${blocked.length} non-loopback request(s) blocked; the vendored UI must need none:\n    ${blocked.join('\n    ')}`);
  }
  if (!failures.length) {
    console.log(
      `check-swagger-ui: ${listed.length}/${expected.length} operations listed, authorized, ` +
        `all ${expected.length} executed with their first example (${OPERATION} -> ${status}); ` +
        `${blocked.length} non-loopback requests; cross-origin: ${cors}; screenshot ${screenshot}`,
    );
  }
} catch (error) {
  // Playwright's message: the failed call, then its call log (what it waited for).
  const lines = error.message.replace(/\u001b\[[0-9;]*m/g, '').split('\n').map((line) => line.trim());
  fail(lines.slice(0, 3).filter(Boolean).join(' '));
  if (context && context.pages()[0]) {
    const shot = screenshot.replace(/\.png$/, '-failure.png');
    mkdirSync(dirname(shot), { recursive: true });
    await context.pages()[0].screenshot({ path: shot, fullPage: true }).catch(() => {});
    const html = await context.pages()[0].content().catch(() => '');
    writeFileSync(shot.replace(/\.png$/, '.html'), html);
    fail(`page at the failure saved to ${shot} (and .html)`);
  }
  if (blocked.length) fail(`non-loopback requests blocked: ${blocked.join(', ')}`);
} finally {
  await context?.close().catch(() => {});
  rmSync(userDataDir, { recursive: true, force: true });
  clearTimeout(watchdog);
}

if (failures.length) {
  console.error('check-swagger-ui: FAILED');
  for (const message of failures) console.error(`  - ${message}`);
  process.exit(1);
}
