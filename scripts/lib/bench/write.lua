-- wrk script for the write path of scripts/bench:
-- PUT /v1/workspaces/1/time-log/cells as optimistic updates that are (nearly) all current.
--
-- Arguments (after wrk's --): TOKENS_FILE USERS_PER_THREAD DATES START_VERSION.
-- Thread t (0-based) owns DATES cells: date d belongs to user t*USERS_PER_THREAD + d%USERS_PER_THREAD + 1
-- (line of TOKENS_FILE), so threads never share a cell and, within a thread, the date alone
-- names the cell. A cell is sent only while no request for it is in flight; its version
-- is taken from each 200 body (entry.date, entry.version) and, after a 409, from the
-- problem's currentVersion and current.entry.date. done() prints one line
-- "BENCH {json}": 200 answers, 409s, other statuses, socket errors, p50/p99.

local threads = {}
local next_id = 0

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

function init(args)
  local tokens = {}
  for line in io.lines(args[1]) do
    tokens[#tokens + 1] = line
  end
  local per_thread = tonumber(args[2])
  local dates = tonumber(args[3])
  local start_version = tonumber(args[4])
  cells, by_date = {}, {}
  -- Noon, so that adding whole days never crosses a date boundary.
  local first = os.time({ year = 2026, month = 1, day = 1, hour = 12 })
  for d = 0, dates - 1 do
    local user = id * per_thread + (d % per_thread) + 1
    if not tokens[user] then
      error("no token for user " .. user .. " in " .. args[1])
    end
    local date = os.date("%Y-%m-%d", first + d * 86400)
    local cell = { date = date, auth = "Bearer " .. tokens[user], version = start_version, busy = false }
    cells[#cells + 1] = cell
    by_date[date] = cell
  end
  cursor = 1
  ok, conflicts, other = 0, 0, 0
  path = "/v1/workspaces/1/time-log/cells"
end

function request()
  local n = #cells
  local cell = nil
  for _ = 1, n do
    local candidate = cells[cursor]
    cursor = cursor % n + 1
    if not candidate.busy then
      cell = candidate
      break
    end
  end
  if not cell then
    -- Every cell is in flight (answers lost to errors): send one anyway.
    cell = cells[cursor]
    cursor = cursor % n + 1
  end
  cell.busy = true
  local body = '{"projectId":"1","date":"' .. cell.date .. '","hours":"7.5","expectedVersion":' .. cell.version .. "}"
  return wrk.format("PUT", path, { ["Authorization"] = cell.auth, ["Content-Type"] = "application/json" }, body)
end

function response(status, headers, body)
  local date = body:match('"date":"([^"]+)"')
  local cell = date and by_date[date]
  if status == 200 then
    ok = ok + 1
    if cell then
      cell.version = tonumber(body:match('"version":(%d+)'))
      cell.busy = false
    end
  elseif status == 409 then
    conflicts = conflicts + 1
    local current = tonumber(body:match('"currentVersion":(%d+)') or "")
    if cell and current then
      cell.version = current
      cell.busy = false
    end
  else
    other = other + 1
  end
end

function done(summary, latency, requests)
  local total_ok, total_conflicts, total_other = 0, 0, 0
  for _, thread in ipairs(threads) do
    total_ok = total_ok + thread:get("ok")
    total_conflicts = total_conflicts + thread:get("conflicts")
    total_other = total_other + thread:get("other")
  end
  local e = summary.errors
  local seconds = summary.duration / 1e6
  io.write(string.format(
    'BENCH {"ok":%d,"conflicts":%d,"other":%d,"requests":%d,"non2xx":%d,"socketErrors":%d,'
      .. '"seconds":%.3f,"okPerSecond":%.1f,"p50Ms":%.3f,"p99Ms":%.3f}\n',
    total_ok, total_conflicts, total_other, summary.requests, e.status,
    e.connect + e.read + e.write + e.timeout, seconds, total_ok / seconds,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
