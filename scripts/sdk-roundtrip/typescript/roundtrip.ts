// Round trip through the client openapi-generator's `typescript-fetch` generator made
// (compiled with the pinned tsc and run by scripts/check-sdks from target/check-sdks/).
// Environment: WPDS_BASE_URL, WPDS_TOKEN, SDK_CELL_DATE (the time-log cell this client owns).

import {
  Configuration,
  ResponseError,
  SyncUpdatesApi,
  TimeLogApi,
  instanceOfProblem,
  ProblemFromJSON,
  type CommercialReceiptPage,
  type Problem,
  type SetTimeLogCellRequest,
} from './client';

const NAME = 'typescript';

function check(ok: unknown, what: string): asserts ok {
  if (!ok) {
    console.error(`${NAME}: FAILED: ${what}`);
    process.exit(1);
  }
}

function env(name: string): string {
  const v = process.env[name];
  check(v, `${name} is not set`);
  return v;
}

async function main(): Promise<void> {
  const config = new Configuration({ basePath: env('WPDS_BASE_URL'), accessToken: env('WPDS_TOKEN') });
  const timeLog = new TimeLogApi(config);
  const receipts = new SyncUpdatesApi(config);
  const day = env('SDK_CELL_DATE');

  // (a) The first write of a cell: expectedVersion 1 creates version 2.
  const cell: SetTimeLogCellRequest = {
    projectId: '7',
    date: new Date(`${day}T00:00:00Z`),
    hours: '7.5',
    expectedVersion: 1,
  };
  const { entry } = await timeLog.setOwnTimeLogCell({ workspaceId: '1', setTimeLogCellRequest: cell });
  check(entry.version === 2, `entry.version ${entry.version}, expected 2`);
  check(entry.hours === '7.50', `entry.hours ${JSON.stringify(entry.hours)}, expected "7.50"`);
  check(entry.date.toISOString().slice(0, 10) === day && entry.projectId === '7',
    `entry is for ${entry.projectId} ${entry.date.toISOString()}`);

  // (b) Receipts of project 7, ten at a time, following nextCursor to the end.
  const seen = new Set<string>();
  let pages = 0;
  let cursor: string | undefined;
  for (;;) {
    const page: CommercialReceiptPage = await receipts.listCommercialReceipts({
      workspaceId: '1', projectId: '7', limit: 10, cursor,
    });
    pages += 1;
    const ids = page.items.map((r) => r.id);
    check((ids.length > 0 && ids.length <= 10) || !page.hasMore, `page ${pages} holds ${ids.length} receipts`);
    const repeated = ids.filter((id) => seen.has(id));
    check(repeated.length === 0, `page ${pages} repeats ${repeated.join(', ')}`);
    for (let i = 1; i < page.items.length; i++) {
      const [a, b] = [page.items[i - 1], page.items[i]];
      const newerFirst = a.createdAt.getTime() > b.createdAt.getTime()
        || (a.createdAt.getTime() === b.createdAt.getTime() && BigInt(a.id) > BigInt(b.id));
      check(newerFirst, `page ${pages} is not newest first at ${a.id}, ${b.id}`);
    }
    ids.forEach((id) => seen.add(id));
    check(page.hasMore === (page.nextCursor !== ''),
      `page ${pages}: hasMore ${page.hasMore} with nextCursor ${JSON.stringify(page.nextCursor)}`);
    if (!page.hasMore) break;
    check(pages < 50, 'more than 50 pages');
    cursor = page.nextCursor;
  }
  check(pages >= 2, `only ${pages} page(s); the demo project has more than 10 receipts`);

  // (c) A stale expectedVersion: 409 version_conflict. typescript-fetch throws a
  // ResponseError for every non-2xx status and has no typed error bodies, so the body is
  // read with the client's own Problem model (instanceOfProblem + ProblemFromJSON).
  let problem: Problem | undefined;
  try {
    await timeLog.setOwnTimeLogCell({ workspaceId: '1', setTimeLogCellRequest: cell });
  } catch (e) {
    check(e instanceof ResponseError, `the stale write threw ${String(e)}`);
    check(e.response.status === 409, `the stale write answered ${e.response.status}`);
    const body: unknown = await e.response.json();
    check(typeof body === 'object' && body !== null && instanceOfProblem(body),
      `the 409 body is not a Problem: ${JSON.stringify(body)}`);
    problem = ProblemFromJSON(body);
  }
  check(problem, 'the stale write succeeded');
  check(problem.code === 'version_conflict', `problem.code ${JSON.stringify(problem.code)}`);
  check(problem.currentVersion === 2, `problem.currentVersion ${problem.currentVersion}`);
  check(problem.status === 409, `problem.status ${problem.status}`);
  const current = problem.current as { entry?: { version?: number } } | null | undefined;
  check(current?.entry?.version === 2, `problem.current ${JSON.stringify(problem.current)}`);

  console.log(`${NAME}: ok (cell ${day} v2 7.50; ${seen.size} receipts in ${pages} pages; `
    + `409 ${problem.code} currentVersion ${problem.currentVersion})`);
}

main().catch((e: unknown) => {
  console.error(`${NAME}: FAILED: ${e instanceof Error ? e.stack : String(e)}`);
  process.exit(1);
});
