"""Round trip through the client openapi-generator's `python` generator made (run by
scripts/check-sdks).

Environment: WPDS_BASE_URL, WPDS_TOKEN, SDK_CELL_DATE (the time-log cell this client owns).
"""

import datetime
import os
import sys
import traceback

# The shared step (b), one directory up.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from receipt_pages import walk_receipt_pages  # noqa: E402

import wpds_oag
from wpds_oag.exceptions import ConflictException
from wpds_oag.models import CommercialReceiptPage, Problem, SetTimeLogCellRequest, TimeLogCellResult

NAME = "python-oag"


def check(ok, what):
    if not ok:
        sys.exit(f"{NAME}: FAILED: {what}")


def main():
    config = wpds_oag.Configuration(host=os.environ["WPDS_BASE_URL"], access_token=os.environ["WPDS_TOKEN"])
    with wpds_oag.ApiClient(config) as api_client:
        roundtrip(api_client)


def roundtrip(api_client):
    time_log = wpds_oag.TimeLogApi(api_client)
    receipts = wpds_oag.SyncUpdatesApi(api_client)
    day = datetime.date.fromisoformat(os.environ["SDK_CELL_DATE"])

    # (a) The first write of a cell: expectedVersion 1 creates version 2.
    cell = SetTimeLogCellRequest(project_id="7", date=day, hours="7.5", expected_version=1)
    res = time_log.set_own_time_log_cell_with_http_info("1", cell)
    check(res.status_code == 200, f"first write answered {res.status_code}")
    check(isinstance(res.data, TimeLogCellResult), f"first write parsed as {type(res.data).__name__}")
    entry = res.data.entry
    check(entry.version == 2, f"entry.version {entry.version!r}, expected 2")
    check(entry.hours == "7.50", f"entry.hours {entry.hours!r}, expected '7.50'")
    check(entry.var_date == day and entry.project_id == "7", f"entry is for {entry.project_id} {entry.var_date}")

    # (b) Receipts of project 7, ten at a time, following nextCursor to the end.
    seen, pages = walk_receipt_pages(
        lambda cursor: receipts.list_commercial_receipts("1", "7", limit=10, cursor=cursor),
        CommercialReceiptPage, None, check)

    # (c) A stale expectedVersion: 409 version_conflict, raised as the client's
    # ConflictException carrying the body parsed into its Problem model.
    try:
        time_log.set_own_time_log_cell("1", cell)
        check(False, "the stale write succeeded")
    except ConflictException as e:
        problem, body = e.data, e.body
    check(isinstance(problem, Problem), f"409 parsed as {type(problem).__name__}: {body}")
    check(problem.code == "version_conflict", f"problem.code {problem.code!r}")
    check(problem.current_version == 2, f"problem.current_version {problem.current_version!r}")
    check(problem.status == 409, f"problem.status {problem.status!r}")
    check(problem.current and problem.current["entry"]["version"] == 2, f"problem.current {problem.current!r}")

    print(f"{NAME}: ok (cell {day} v2 7.50; {len(seen)} receipts in {pages} pages; "
          f"409 {problem.code} currentVersion {problem.current_version})")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # an exception inside the client: show where, then fail
        traceback.print_exc()
        sys.exit(f"{NAME}: FAILED: {type(e).__name__}: {e}")
