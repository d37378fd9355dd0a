"""The soak's checker: reads what the clients were told (their histories) beside what the
database holds at the end, and says, verdict by verdict, whether the cluster kept its
promises while faults came and went.

A history is a list of attempts, one per request sent (a retry is an attempt of its own),
each a dict:

    client     who sent it ("cell-2/1", "fresh-0", "export-1", "cursor-0")
    op         the operationId
    t0, t1     when it was sent and when its answer (or failure) came, in seconds
    status     the HTTP status, or None for a connection cut before an answer
    origin     "wpds" for the service's own answer, "proxy" for HAProxy's (its 502/503/504
               carry no problem+json body), None for a cut
    and, by operation:
    setOwnTimeLogCell   cell (its date), expected (expectedVersion sent), version (a
                        200's entry.version), current (a 409's currentVersion), shared (True
                        for the cells several clients share, False for a fresh cell
                        written once)
    createCrossProjectReportExport
                        request_id, body (a 201's body), replayed (Idempotent-Replayed)
    listCommercialReceipts
                        walk (which walk of the listing), cursor (sent, "" for the first
                        page), ids (a 200's receipt ids), next (its nextCursor)

The database's side (`Snapshot`) is read once the load has stopped: each shared cell's
first and final version, the fresh cells that exist, the exports per requestId, and the
receipts in the listing's order.

Verdicts (each with its count; any count above 0 breaks it):
  - acknowledged writes missing: a fresh cell answered 200 that the database does not hold;
    a shared cell whose final version is below a version a 200 carried;
  - lost updates: a 200 whose version is not its expectedVersion + 1 (it overwrote a write
    it had not seen), or two 200s of one cell carrying the same version;
  - versions the answers do not explain: a shared cell's final version minus its first is
    below its 200s, or above its 200s plus the answers that left the outcome open (503, a
    cut connection, the proxy's 502/504);
  - 409s naming a version the cell did not hold: a currentVersion that is the version sent,
    outside the cell's first..final, or one the cell could not hold while the request was
    in flight (the write that made it started after the 409 came, or the write that
    replaced it had answered before the request was sent);
  - exports made twice: an export asked for (by its name, each requestId's own) stored more
    than once in the database;
  - replays that differ: two 201s of one requestId whose bodies differ;
  - cursors that skip or repeat: a walk whose pages, put together, are not the listing (a
    walk the soak's end cut short must be a prefix of it);
  - undocumented answers: a status of the service that the document does not list for the
    operation (500 is listed, and counted here all the same: no fault excuses it).
The proxy's own answers are counted apart, never as the service's.

On a copy restored from a backup taken while the clients wrote, the same verdicts hold of the
history the backup can hold (`cut`): every answer that came before the backup began, each
request still in flight while it ran left open, and nothing sent after it ended.
"""

import collections
import dataclasses

WRITE = "setOwnTimeLogCell"
EXPORT = "createCrossProjectReportExport"
RECEIPTS = "listCommercialReceipts"


@dataclasses.dataclass
class Snapshot:
    """What the database holds once the load has stopped."""

    cells: dict  # shared cell (date) -> (first version, final version)
    fresh: set  # dates of the fresh cells that exist
    exports: dict  # an export asked for (its name: one per requestId) -> exports stored
    receipts: list  # receipt ids in the listing's order


@dataclasses.dataclass
class Verdict:
    """One promise, how many times it was broken, and the first few cases."""

    name: str
    broken: int = 0
    examples: list = dataclasses.field(default_factory=list)
    checked: int = 0

    def add(self, example):
        self.broken += 1
        if len(self.examples) < 5:
            self.examples.append(example)


def is_open(attempt):
    """Whether an answer left the outcome of a write open: it may or may not have applied."""
    status = attempt["status"]
    return status is None or status == 503 or (attempt.get("origin") == "proxy" and status in (502, 504))


def cut(history, began, ended):
    """The history as a backup taken between `began` and `ended` (the seconds of `t0` and
    `t1`) holds it: an attempt answered before `began`, as it was (a 200 committed before the
    backup's snapshot was taken); one sent before `ended` and answered after `began`, open
    (its outcome at the snapshot, taken somewhere in between, is not known: no answer); one
    sent after `ended`, left out (the backup cannot hold it)."""
    held = []
    for attempt in history:
        if attempt["t1"] < began:
            held.append(attempt)
        elif attempt["t0"] < ended:
            held.append(dict(attempt, status=None, origin=None, error="in flight during the backup"))
    return held


def check(history, snapshot, documented):
    """The verdicts, in the order the module documentation lists them. `documented` maps
    each operationId to the statuses the document lists for it."""
    verdicts = {name: Verdict(name) for name in (
        "acknowledged writes missing", "lost updates", "versions the answers do not explain",
        "409s naming a version the cell did not hold", "exports made twice", "replays that differ",
        "cursors that skip or repeat", "undocumented answers")}
    writes = [a for a in history if a["op"] == WRITE]
    _fresh(writes, snapshot, verdicts)
    _shared(writes, snapshot, verdicts)
    _exports(history, snapshot, verdicts)
    _cursors(history, snapshot, verdicts)
    undocumented = verdicts["undocumented answers"]
    for attempt in history:
        if attempt["status"] is None or attempt.get("origin") == "proxy":
            continue
        undocumented.checked += 1
        if attempt["status"] == 500 or attempt["status"] not in documented.get(attempt["op"], ()):
            undocumented.add(f"{attempt['op']} answered {attempt['status']} ({attempt['client']} at {attempt['t0']:.3f})")
    return list(verdicts.values())


def _fresh(writes, snapshot, verdicts):
    missing = verdicts["acknowledged writes missing"]
    for attempt in writes:
        if not attempt.get("shared") and attempt["status"] == 200:
            missing.checked += 1
            if attempt["cell"] not in snapshot.fresh:
                missing.add(f"fresh cell {attempt['cell']} answered 200 at {attempt['t1']:.3f}, not in the database")


def _shared(writes, snapshot, verdicts):
    missing = verdicts["acknowledged writes missing"]
    lost = verdicts["lost updates"]
    unexplained = verdicts["versions the answers do not explain"]
    conflicts = verdicts["409s naming a version the cell did not hold"]
    by_cell = collections.defaultdict(list)
    for attempt in writes:
        if attempt.get("shared"):
            by_cell[attempt["cell"]].append(attempt)
    for cell, attempts in sorted(by_cell.items()):
        first, final = snapshot.cells.get(cell, (1, 1))
        done = [a for a in attempts if a["status"] == 200]
        opened = sum(1 for a in attempts if is_open(a))
        # Which write made each version, as far as the answers tell: (sent, answered).
        made = {a["version"]: (a["t0"], a["t1"]) for a in done}
        seen = collections.Counter(a["version"] for a in done)
        for a in done:
            lost.checked += 1
            missing.checked += 1
            if a["version"] != a["expected"] + 1:
                lost.add(f"cell {cell}: a write expecting {a['expected']} answered version {a['version']}")
            if a["version"] > final:
                missing.add(f"cell {cell}: a 200 carried version {a['version']}, the database holds {final}")
        for version, times in sorted(seen.items()):
            if times > 1:
                lost.add(f"cell {cell}: {times} answers 200 carried version {version}")
        unexplained.checked += 1
        if not len(done) <= final - first <= len(done) + opened:
            unexplained.add(f"cell {cell}: version {first} → {final} ({final - first} writes) against "
                            f"{len(done)} answered 200 and {opened} left open")
        for a in attempts:
            if a["status"] != 409 or a.get("current") is None:
                continue
            conflicts.checked += 1
            current = a["current"]
            if current == a["expected"]:
                conflicts.add(f"cell {cell}: a 409 to expectedVersion {current} named that very version")
            elif not first <= current <= final:
                conflicts.add(f"cell {cell}: a 409 named version {current}; the cell went from {first} to {final}")
            elif current in made and made[current][0] > a["t1"]:
                conflicts.add(f"cell {cell}: a 409 answered at {a['t1']:.3f} named version {current}, "
                              f"whose write was sent at {made[current][0]:.3f}")
            elif current + 1 in made and made[current + 1][1] < a["t0"]:
                conflicts.add(f"cell {cell}: a 409 sent at {a['t0']:.3f} named version {current}, "
                              f"replaced by a write answered at {made[current + 1][1]:.3f}")


def _exports(history, snapshot, verdicts):
    twice = verdicts["exports made twice"]
    differ = verdicts["replays that differ"]
    bodies = collections.defaultdict(list)
    for attempt in history:
        if attempt["op"] == EXPORT and attempt["status"] == 201:
            bodies[attempt["request_id"].lower()].append(attempt["body"])
    for request_id, answered in sorted(bodies.items()):
        differ.checked += 1
        if any(body != answered[0] for body in answered[1:]):
            differ.add(f"requestId {request_id}: {len(answered)} answers 201, not all the same body")
    for request_id, count in sorted(snapshot.exports.items()):
        twice.checked += 1
        if count > 1:
            twice.add(f"export {request_id}: {count} exports in the database")


def _cursors(history, snapshot, verdicts):
    broken = verdicts["cursors that skip or repeat"]
    walks = collections.defaultdict(list)
    for attempt in history:
        if attempt["op"] == RECEIPTS and attempt["status"] == 200:
            walks[(attempt["client"], attempt["walk"])].append(attempt)
    for (client, walk), pages in sorted(walks.items()):
        broken.checked += 1
        pages.sort(key=lambda a: a["t0"])
        ids, cursor, chained = [], "", True
        for page in pages:
            # A client asks again with the same cursor only when it got no page, so each page
            # of a walk must carry the cursor the page before it gave.
            if page["cursor"] != cursor:
                chained = False
                break
            ids.extend(page["ids"])
            cursor = page["next"]
        complete = cursor == "" and chained
        expected = snapshot.receipts if complete else snapshot.receipts[: len(ids)]
        if not chained or ids != expected or len(ids) != len(set(ids)):
            broken.add(f"{client} walk {walk}: {len(ids)} receipts over {len(pages)} pages"
                       f"{'' if chained else ', a page asked with a cursor no page gave'}, not the listing")
