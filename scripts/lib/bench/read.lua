-- wrk script for the read path of scripts/bench:
-- GET /v1/workspaces/1/projects/1/sync-updates/commercial-receipts, one page, repeatedly.
--
-- Arguments (after wrk's --): TOKEN LIMIT [CURSOR]. Without CURSOR it asks for page 1;
-- with it, for the page that cursor opens. done() prints one line "BENCH {json}":
-- requests, non-2xx answers, socket errors, requests per second, p50/p99 in ms.

function init(args)
  local path = "/v1/workspaces/1/projects/1/sync-updates/commercial-receipts?limit=" .. args[2]
  if args[3] and args[3] ~= "" then
    path = path .. "&cursor=" .. args[3]
  end
  req = wrk.format("GET", path, { ["Authorization"] = "Bearer " .. args[1] })
end

function request()
  return req
end

function done(summary, latency, requests)
  local e = summary.errors
  local seconds = summary.duration / 1e6
  io.write(string.format(
    'BENCH {"requests":%d,"non2xx":%d,"socketErrors":%d,"seconds":%.3f,"perSecond":%.1f,'
      .. '"p50Ms":%.3f,"p99Ms":%.3f}\n',
    summary.requests, e.status, e.connect + e.read + e.write + e.timeout, seconds,
    summary.requests / seconds, latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
