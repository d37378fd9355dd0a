"""The soak's clients: what an integration of the service runs, each keeping the history of
every request it sent and what it was told (the records `checker.py` reads).

They retry as a generated SDK would (`Client.retries`, one rule for every client): after
`Retry-After` on a 503 or a 429, after a short pause on HAProxy's own 502 or 504, at once on a
connection cut before an answer, with the same body (the same `expectedVersion`, the same
`requestId`, the same cursor). Every request goes through HAProxy on a keep-alive
connection of the client's own, and has 10 s to be answered.

- `CellWriter`: several share one time-log cell. Each sends `expectedVersion` from the last
  answer it had: a 200's version, or a 409's `currentVersion`.
- `FreshWriter`: writes cells no one else writes, each once (the acknowledged writes that
  must all be in the database at the end).
- `Exporter`: report exports, each with a `requestId` of its own, sent again after a cut or
  a 503 and once more after its 201 (as a client that lost the answer would), so that every
  key is replayed.
- `CursorWalker`: the receipts of project 7, page after page by `nextCursor`, from the first
  page to the last, again and again.
"""

import datetime
import http.client
import json
import threading
import time
import uuid

WORKSPACE = "/v1/workspaces/1"
TIMEOUT = 10.0


class Client(threading.Thread):
    """A thread with a connection through the proxy and a history of its own."""

    # How much longer than by default each client pauses between its requests (CI's short
    # soak runs lighter, beside the other checks).
    pace = 1.0

    def __init__(self, name, port, token, stop):
        super().__init__(name=name, daemon=True)
        self.port, self.token, self.stop = port, token, stop
        self.history = []
        self.conn = None

    def send(self, op, method, path, body=None, **fields):
        """One attempt: sends it, records it, and returns (record, parsed body or None)."""
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        record = dict(client=self.name, op=op, t0=time.monotonic(), **fields)
        parsed, retry_after = None, None
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
            self.conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
            response = self.conn.getresponse()
            raw = response.read()
            kind = (response.getheader("Content-Type") or "").split(";")[0].strip()
            record["status"] = response.status
            # HAProxy's own answers: its 503 while no instance is ready says `Via: 1.1 haproxy`
            # (scripts/cluster's configuration gives it the contract's shape), its others
            # are not JSON.
            via = (response.getheader("Via") or "").lower()
            json_body = kind in ("application/json", "application/problem+json")
            record["origin"] = "proxy" if "haproxy" in via or not json_body else "wpds"
            record["replayed"] = response.getheader("Idempotent-Replayed") == "true"
            retry_after = response.getheader("Retry-After")
            if record["origin"] == "wpds" and raw:
                parsed = json.loads(raw)
            if (response.getheader("Connection") or "").lower() == "close":
                self.conn.close()
                self.conn = None
        except (OSError, http.client.HTTPException, ValueError) as error:
            record["status"], record["origin"], record["error"] = None, None, type(error).__name__
            if self.conn is not None:
                self.conn.close()
            self.conn = None
        record["t1"] = time.monotonic()
        self.history.append(record)
        if record["status"] in (429, 503):
            # As an SDK does: wait what the answer says (at most 5 s), then the same request.
            try:
                pause = min(float(retry_after), 5.0) if retry_after else 1.0
            except ValueError:
                pause = 1.0
            self.stop.wait(pause)
        elif record["status"] is not None and record["status"] >= 500:
            self.stop.wait(0.2)
        return record, parsed

    @staticmethod
    def retries(record):
        """Whether an SDK sends this attempt again: a cut connection, a 429 or a 503 (the
        contract's "try again"), and the proxy's own 502 or 504 (no instance answered). Any
        other answer, a 500 included, is final."""
        status = record["status"]
        if status is None or status in (429, 503):
            return True
        return status in (502, 504) and record["origin"] == "proxy"

    def closed(self):
        if self.conn is not None:
            self.conn.close()


def cell_body(date, hours, note, expected):
    return {"projectId": "7", "phase": "general", "date": date, "hours": hours, "note": note,
            "billable": True, "expectedVersion": expected}


class CellWriter(Client):
    """Versioned writes of one shared cell."""

    def __init__(self, name, port, token, stop, date, first_version):
        super().__init__(name, port, token, stop)
        self.date, self.known = date, first_version

    def run(self):
        n = 0
        while not self.stop.is_set():
            n += 1
            body = cell_body(self.date, f"{n % 24}.25", f"{self.name} #{n}", self.known)
            record, answer = self.send("setOwnTimeLogCell", "PUT", f"{WORKSPACE}/time-log/cells", body,
                                       cell=self.date, expected=self.known, shared=True)
            if record["status"] == 200:
                record["version"] = self.known = answer["entry"]["version"]
            elif record["status"] == 409 and answer is not None:
                record["current"] = self.known = answer["currentVersion"]
            self.stop.wait(0.01 * self.pace)
        self.closed()


class FreshWriter(Client):
    """Cells written once each (dates of its own: every `stride`-th day from `days_from`, so
    that writers with their own `days_from` in one stride never meet), retried until
    answered."""

    def __init__(self, name, port, token, stop, days_from, stride):
        super().__init__(name, port, token, stop)
        self.next_day, self.stride = days_from, stride

    def run(self):
        while not self.stop.is_set():
            date = (datetime.date(1900, 1, 1) + datetime.timedelta(days=self.next_day)).isoformat()
            self.next_day += self.stride
            expected = 1
            while not self.stop.is_set():
                record, answer = self.send("setOwnTimeLogCell", "PUT", f"{WORKSPACE}/time-log/cells",
                                           cell_body(date, "1", self.name, expected),
                                           cell=date, expected=expected, shared=False)
                if record["status"] == 200:
                    record["version"] = answer["entry"]["version"]
                    break
                if record["status"] == 409 and answer is not None:
                    # A retry after a cut that had applied: written, as the 409 says.
                    record["current"] = answer["currentVersion"]
                    break
                if not self.retries(record):
                    break
            self.stop.wait(0.01 * (self.pace - 1))
        self.closed()


class Exporter(Client):
    """Idempotent report exports."""

    def run(self):
        n = 0
        while not self.stop.is_set():
            n += 1
            request_id = str(uuid.uuid4())
            body = {"requestId": request_id, "name": f"{self.name} #{n}",
                    "configuration": {"version": 1, "projectScope": {"mode": "fixed", "projectIds": ["7"]},
                                      "groupBy": ["project"], "columns": ["project", "quantity"],
                                      "metrics": ["count"], "sort": {"key": "quantity", "direction": "desc"}}}
            answered = 0
            # Until a 201, then once more (the answer "lost"): every key is replayed.
            while not self.stop.is_set() and answered < 2:
                record, answer = self.send("createCrossProjectReportExport", "POST",
                                           f"{WORKSPACE}/cross-project-reports/exports", body, request_id=request_id)
                if record["status"] == 201:
                    record["body"] = answer
                    answered += 1
                elif not self.retries(record):
                    break
            self.stop.wait(0.2 * self.pace)
        self.closed()


class CursorWalker(Client):
    """Walks project 7's receipts, page after page."""

    def run(self):
        walk = 0
        while not self.stop.is_set():
            walk += 1
            cursor = ""
            while not self.stop.is_set():
                query = "limit=4" + (f"&cursor={cursor}" if cursor else "")
                record, answer = self.send("listCommercialReceipts", "GET",
                                           f"{WORKSPACE}/projects/7/sync-updates/commercial-receipts?{query}",
                                           walk=walk, cursor=cursor)
                if record["status"] == 200:
                    record["ids"] = [receipt["id"] for receipt in answer["items"]]
                    record["next"] = cursor = answer["nextCursor"]
                    if not answer["hasMore"]:
                        break
                elif not self.retries(record):
                    break
            self.stop.wait(0.05 * self.pace)
        self.closed()
