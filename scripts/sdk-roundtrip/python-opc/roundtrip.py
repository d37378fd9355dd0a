"""Round trip through the client openapi-python-client generated (run by scripts/check-sdks).

Environment: WPDS_BASE_URL, WPDS_TOKEN, SDK_CELL_DATE (the time-log cell this client owns).
"""

import datetime
import os
import sys
import traceback

# The shared step (b), one directory up.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from receipt_pages import walk_receipt_pages  # noqa: E402

from workspace_project_data_service_client import AuthenticatedClient
from workspace_project_data_service_client.api.sync_updates import list_commercial_receipts
from workspace_project_data_service_client.api.time_log import set_own_time_log_cell
from workspace_project_data_service_client.models import (
    CommercialReceiptPage,
    Problem,
    SetTimeLogCellRequest,
    TimeLogCellResult,
)
from workspace_project_data_service_client.types import UNSET

NAME = "python-opc"


def check(ok, what):
    if not ok:
        sys.exit(f"{NAME}: FAILED: {what}")


def main():
    with AuthenticatedClient(
        base_url=os.environ["WPDS_BASE_URL"],
        token=os.environ["WPDS_TOKEN"],
        raise_on_unexpected_status=True,
    ) as client:
        roundtrip(client)


def roundtrip(client):
    day = datetime.date.fromisoformat(os.environ["SDK_CELL_DATE"])

    # (a) The first write of a cell: expectedVersion 1 creates version 2.
    cell = SetTimeLogCellRequest(project_id="7", date=day, hours="7.5", expected_version=1)
    res = set_own_time_log_cell.sync_detailed("1", client=client, body=cell)
    check(res.status_code == 200, f"first write answered {res.status_code}: {res.content!r}")
    check(isinstance(res.parsed, TimeLogCellResult), f"first write parsed as {type(res.parsed).__name__}")
    entry = res.parsed.entry
    check(entry.version == 2, f"entry.version {entry.version!r}, expected 2")
    check(entry.hours == "7.50", f"entry.hours {entry.hours!r}, expected '7.50'")
    check(entry.date == day and entry.project_id == "7", f"entry is for {entry.project_id} {entry.date}")

    # (b) Receipts of project 7, ten at a time, following nextCursor to the end.
    def fetch(cursor):
        res = list_commercial_receipts.sync_detailed("1", "7", client=client, limit=10, cursor=cursor)
        check(res.status_code == 200, f"page answered {res.status_code}: {res.content!r}")
        return res.parsed

    seen, pages = walk_receipt_pages(fetch, CommercialReceiptPage, UNSET, check)

    # (c) A stale expectedVersion: 409 version_conflict, parsed into the client's Problem.
    res = set_own_time_log_cell.sync_detailed("1", client=client, body=cell)
    check(res.status_code == 409, f"stale write answered {res.status_code}: {res.content!r}")
    problem = res.parsed
    check(isinstance(problem, Problem), f"409 parsed as {type(problem).__name__}")
    check(problem.code == "version_conflict", f"problem.code {problem.code!r}")
    check(problem.current_version == 2, f"problem.current_version {problem.current_version!r}")
    check(problem.status == 409, f"problem.status {problem.status!r}")
    current = problem.current.to_dict() if problem.current else None
    check(current and current["entry"]["version"] == 2, f"problem.current {current!r}")

    print(f"{NAME}: ok (cell {day} v2 7.50; {len(seen)} receipts in {pages} pages; "
          f"409 {problem.code} currentVersion {problem.current_version})")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # an exception inside the client: show where, then fail
        traceback.print_exc()
        sys.exit(f"{NAME}: FAILED: {type(e).__name__}: {e}")
