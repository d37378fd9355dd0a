"""The soak: the cluster of `scripts/cluster` under a schedule of faults, with the clients of
`clients.py` keeping histories, and the checker of `checker.py` reading them at the end.

Schedule: a steady minute (a sixth of the run, at most 60 s), then the faults in a repeating
order (`FAULTS`), each after a random gap (seeded; the seed is printed), every kind at least
once, then as long steady again. An upgrade soak (`upgrade`: the cluster started on an
earlier build) begins its faults with `UPGRADE`, once each: every instance replaced in turn by
this checkout's build (the first migrates the schema while the earlier build still serves),
one instance rolled back to the earlier build on the migrated schema, then forward again. A
soak with faults takes, before them, a backup while the clients write (`BACKUP`: `pg_dump`, as
`docs/operations.md` says); once the load has stopped it is restored into a database of its
own, a server is started on it, and the checker's verdicts are read again on the copy, of
the history the backup can hold (`checker.cut`), beside the cursors and the token handed out
before it. Each fault is injected and cleared by this module; the times of both
are kept, and after each the time to the first 2xx sent once it cleared (for a failover:
once the primary stopped) is its recovery.

`Cluster` is what `scripts/cluster` starts: it gives the operations each fault needs.
"""

import bisect
import collections
import http.client
import json
import random
import signal
import threading
import time

import checker
import clients

FAULTS = ["kill", "rolling", "pooler-kill", "pooler-pause", "freeze", "failover"]
# The upgrade soak's steps, each once, before the faults: restarts by draining, like "rolling".
UPGRADE = ["upgrade", "rollback", "forward"]
RESTARTS = ["rolling"] + UPGRADE
# Once, before the faults, in a soak that has them: a backup taken while the clients write.
BACKUP = ["backup"]
# What each kind must recover within once cleared (seconds), and what "cleared" is.
RECOVERY = {"kill": 1.0, "pooler-kill": 2.0, "pooler-pause": 2.0, "freeze": 1.0, "failover": 10.0}
FREEZE_SECONDS = 5.0
PAUSE_SECONDS = 3.0


class Soak:
    """One run: clients, faults, and what they saw."""

    def __init__(self, cluster, token, seconds, seed, faults=True, upgrade=None, cells=4, writers_per_cell=3, fresh=2,
                 exporters=2, walkers=2):
        """`upgrade`: an `Upgrade` when the cluster runs an earlier build to be rolled to this one."""
        self.cluster, self.token, self.seconds, self.seed = cluster, token, seconds, seed
        self.upgrade = upgrade
        self.once = (UPGRADE if upgrade else []) + (BACKUP if faults else [])
        self.kinds = FAULTS if faults else []
        self.random = random.Random(seed)
        self.stop = threading.Event()
        self.faults = []  # {"kind", "injected", "cleared", "stopped"}
        self.memory = collections.defaultdict(list)  # instance -> [(lifetime, seconds since start, rss kB)]
        self.cells = {f"1800-01-{day:02d}": cluster.cell_version(f"1800-01-{day:02d}") for day in range(1, cells + 1)}
        port = cluster.proxy_port
        self.clients = [clients.CellWriter(f"cell-{c}/{w}", port, token, self.stop, date, version)
                        for c, (date, version) in enumerate(self.cells.items()) for w in range(writers_per_cell)]
        # Day 100 000 is in 2173; each writer takes every `fresh`-th day from there.
        self.clients += [clients.FreshWriter(f"fresh-{i}", port, token, self.stop, 100_000 + i, fresh)
                         for i in range(fresh)]
        self.clients += [clients.Exporter(f"export-{i}", port, token, self.stop) for i in range(exporters)]
        self.clients += [clients.CursorWalker(f"cursor-{i}", port, token, self.stop) for i in range(walkers)]

    def run(self):
        steady = min(60.0, self.seconds / 6)
        started = time.monotonic()
        self.started = started
        for client in self.clients:
            client.start()
        sampler = threading.Thread(target=self.sample_memory, daemon=True)
        sampler.start()
        time.sleep(steady)
        order = 0
        end = started + self.seconds - steady
        # Every kind at least once, however short the run; then a steady stretch as long as
        # the first, whatever the last fault took.
        while order < len(self.once) or (self.kinds and (time.monotonic() < end or
                                                         order < len(self.once) + len(self.kinds))):
            kind = self.once[order] if order < len(self.once) else \
                self.kinds[(order - len(self.once)) % len(self.kinds)]
            order += 1
            fault = {"kind": kind, "wall": time.strftime("%H:%M:%S", time.gmtime())}
            getattr(self, "inject_" + kind.replace("-", "_"))(fault)
            self.faults.append(fault)
            print(f"  {fault['injected'] - started:6.1f} s ({fault['wall']} UTC)  {kind}: cleared after "
                  f"{fault['cleared'] - fault['injected']:.1f} s, done after {time.monotonic() - fault['injected']:.1f} s",
                  flush=True)
            gap = self.random.uniform(4.0, 12.0) if self.seconds < 600 else self.random.uniform(10.0, 40.0)
            time.sleep(max(0.0, min(gap, end - time.monotonic())))
        self.steady = steady
        time.sleep(steady if self.kinds or self.once else max(0.0, started + self.seconds - time.monotonic()))
        self.ended = time.monotonic()
        self.stop.set()
        for client in self.clients:
            client.join(timeout=15)

    # --- faults: each sets "injected" and "cleared" (monotonic seconds) -----------------

    def inject_kill(self, fault):
        instance = self.cluster.instances[len(self.faults) % len(self.cluster.instances)]
        self.note_memory(instance, "end")
        fault["injected"] = time.monotonic()
        instance.signal(signal.SIGKILL)
        instance.wait()
        # The other instances serve at once (HAProxy sends a refused connection elsewhere):
        # the fault is cleared when the instance is gone; it comes back meanwhile.
        fault["cleared"] = time.monotonic()
        instance.start()

    def inject_rolling(self, fault):
        fault["injected"] = time.monotonic()
        for instance in self.cluster.instances:
            self.restart(instance, instance.binary)
        fault["cleared"] = time.monotonic()

    def restart(self, instance, binary):
        """`instance` drained (SIGTERM), then started again on `binary`."""
        self.note_memory(instance, "end")
        instance.signal(signal.SIGTERM)
        instance.wait()
        instance.binary = binary
        instance.start()
        time.sleep(1.0)  # two good health checks put it back in rotation

    def inject_upgrade(self, fault):
        up = self.upgrade
        fault["injected"] = time.monotonic()
        fault["migrations before"] = self.cluster.migrations()
        if up.plant:
            # The planted migration, applied as the new build's first instance would apply
            # it: the earlier build serves on the schema it leaves for a while, alone.
            self.cluster.execute(up.plant)
            fault["planted"] = up.plant
            time.sleep(2.0)
        for number, instance in enumerate(self.cluster.instances):
            self.restart(instance, up.new)
            if number == 0:
                fault["migrations after the first"] = self.cluster.migrations()
                fault["first new"] = time.monotonic()
        fault["cleared"] = time.monotonic()

    def inject_rollback(self, fault):
        fault["injected"] = time.monotonic()
        self.restart(self.cluster.instances[0], self.upgrade.old)
        fault["cleared"] = time.monotonic()

    def inject_forward(self, fault):
        fault["injected"] = time.monotonic()
        self.restart(self.cluster.instances[0], self.upgrade.new)
        fault["cleared"] = time.monotonic()

    def inject_backup(self, fault):
        fault["injected"] = time.monotonic()
        fault["dump"] = self.cluster.dump()
        fault["cleared"] = time.monotonic()

    def inject_pooler_kill(self, fault):
        fault["injected"] = time.monotonic()
        self.cluster.pooler_kill()
        self.cluster.pooler_start()
        fault["cleared"] = time.monotonic()

    def inject_pooler_pause(self, fault):
        fault["injected"] = time.monotonic()
        self.cluster.pooler_admin("PAUSE")
        time.sleep(PAUSE_SECONDS)
        self.cluster.pooler_admin("RESUME")
        fault["cleared"] = time.monotonic()

    def inject_freeze(self, fault):
        fault["injected"] = time.monotonic()
        self.cluster.primary_signal(signal.SIGSTOP)
        time.sleep(FREEZE_SECONDS)
        self.cluster.primary_signal(signal.SIGCONT)
        fault["cleared"] = time.monotonic()

    def inject_failover(self, fault):
        fault["injected"] = time.monotonic()
        # Measured from the moment the primary is down (a request sent before it may still
        # have been answered by it): the operator's promotion is part of the fault.
        fault["cleared"] = self.cluster.failover()
        fault["promoted"] = time.monotonic()
        self.cluster.new_replica()

    # --- memory -------------------------------------------------------------------------

    def note_memory(self, instance, when):
        rss = instance.rss_kb()
        if rss is not None:
            self.memory[instance.number].append((instance.lifetime, when, time.monotonic() - instance.started_at, rss))

    def sample_memory(self):
        noted = set()
        while not self.stop.is_set():
            for instance in self.cluster.instances:
                key = (instance.number, instance.lifetime)
                if key not in noted and time.monotonic() - instance.started_at >= 60:
                    noted.add(key)
                    self.note_memory(instance, "minute")
            self.stop.wait(1.0)
        for instance in self.cluster.instances:
            self.note_memory(instance, "end")

    # --- the report ---------------------------------------------------------------------

    def history(self):
        return sorted((a for c in self.clients for a in c.history), key=lambda a: a["t0"])

    def period_of(self, t):
        """The fault kind whose window (its injection to the next one's) holds time `t`."""
        at = bisect.bisect_right([f["injected"] for f in self.faults] if not hasattr(self, "_starts") else self._starts, t)
        return "steady" if at == 0 else self.faults[at - 1]["kind"]

    def restored_verdicts(self, port, snapshot, documented):
        """The verdicts on the copy restored from the soak's backup (`snapshot`: what it holds;
        `port`: a server started on it), each named so: the checker's, of the history the
        backup can hold, and one of the copy's own: each receipts cursor handed out before
        the backup began, read on the copy with the clients' token (issued before too), gives
        the page after the one that handed it out."""
        backup = next(f for f in self.faults if f["kind"] == "backup")
        history = checker.cut(self.history(), backup["injected"], backup["cleared"])
        verdicts = checker.check(history, snapshot, documented)
        for verdict in verdicts:
            verdict.name = f"on the restored backup: {verdict.name}"
        cursors = checker.Verdict("on the restored backup: cursors handed out before it that read a wrong page "
                                  "(or were refused)")
        handed_out = {a["next"]: a["ids"][-1] for a in history
                      if a["op"] == checker.RECEIPTS and a["status"] == 200 and a["next"] and a["ids"]}
        for cursor, last in list(handed_out.items())[:20]:
            cursors.checked += 1
            status, answer = get(port, self.token, "/v1/workspaces/1/projects/7/sync-updates/commercial-receipts"
                                                   f"?limit=4&cursor={cursor}")
            at = snapshot.receipts.index(last) + 1 if last in snapshot.receipts else None
            expected = None if at is None else snapshot.receipts[at:at + 4]
            ids = [receipt["id"] for receipt in answer["items"]] if status == 200 else None
            if ids != expected:
                cursors.add(f"cursor {cursor[:16]}…: {status} {ids}, expected {expected}")
        return verdicts + [cursors]

    def report(self, snapshot, documented, out, more=()):
        """Prints the tables and writes the histories to `out`; `more`: verdicts checked
        apart (the restored backup's). Returns (a verdict broken, a target missed)."""
        history = self.history()
        self._starts = [f["injected"] for f in self.faults]
        sent = [a["t0"] for a in history]
        verdicts = checker.check(history, snapshot, documented) + list(more)
        rows = collections.OrderedDict((kind, collections.Counter()) for kind in ["steady"] + self.once + self.kinds)
        latencies = collections.defaultdict(list)
        for a in history:
            period = self.period_of(a["t0"])
            row = rows[period]
            row["requests"] += 1
            status = a["status"]
            if status is None:
                row["cut"] += 1
            elif a.get("origin") == "proxy":
                row["proxy"] += 1
            elif 200 <= status < 300:
                row["2xx"] += 1
            elif status in (409, 503):
                row[str(status)] += 1
            else:
                row["other"] += 1
            latencies[period].append(a["t1"] - a["t0"])
        recovery = collections.defaultdict(float)
        injected = collections.Counter()
        late = []
        for fault in self.faults:
            injected[fault["kind"]] += 1
            # The first 2xx (by its answer) of the requests sent once the fault cleared: the
            # history is in sending order, and no request sent after the best answer so far
            # can answer before it.
            best = float("inf")
            for a in history[bisect.bisect_left(sent, fault["cleared"]):]:
                if a["t0"] > best:
                    break
                if a["status"] is not None and 200 <= a["status"] < 300:
                    best = min(best, a["t1"])
            took = best - fault["cleared"]
            fault["recovered"] = took
            recovery[fault["kind"]] = max(recovery[fault["kind"]], took)
            if fault["kind"] in RECOVERY and took > RECOVERY[fault["kind"]]:
                late.append(f"{fault['kind']} at {fault['injected'] - self.started:.1f} s: first 2xx "
                            f"{took:.2f} s after it cleared (at most {RECOVERY[fault['kind']]} s)")
        # A restart's failures (rolling, or a step of the upgrade): requests sent while it ran
        # and answered before the next fault came, with no answer, the proxy's, or a 5xx.
        failed = collections.defaultdict(list)
        for f, nxt in zip(self.faults, self.faults[1:] + [None]):
            if f["kind"] in RESTARTS:
                following = nxt["injected"] if nxt else float("inf")
                failed[f["kind"]] += [a for a in history if f["injected"] <= a["t0"] <= f["cleared"]
                                      and a["t1"] < following and (a["status"] is None or a.get("origin") == "proxy"
                                                                   or a["status"] >= 500)]
        rolling_failed = len(failed["rolling"])
        if self.upgrade:
            # Not a target but a verdict: the upgrade's promise, whatever the machine's load.
            during = [a for f in self.faults if f["kind"] in UPGRADE for a in history
                      if f["injected"] <= a["t0"] <= f["cleared"]]
            broken = [a for kind in UPGRADE for a in failed[kind]]
            first_new = next(f["first new"] for f in self.faults if f["kind"] == "upgrade")
            verdicts.append(checker.Verdict("requests failed across the upgrade, the rollback and forward again",
                                            checked=len(during), broken=len(broken),
                                            examples=[self.failed_example(a, first_new) for a in broken[:5]]))
        lines = ["", "| period | injected | requests | 2xx | 409 | 503 | cut | proxy's own | other | p99 (ms) | "
                 "longest recovery (s) |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for period, row in rows.items():
            took = "-" if period not in injected else f"{recovery[period]:.2f}"
            lines.append(f"| {period} | {injected.get(period, '-')} | {row['requests']} | {row['2xx']} | "
                         f"{row['409']} | {row['503']} | {row['cut']} | {row['proxy']} | {row['other']} | "
                         f"{p99(latencies[period]) * 1000:.0f} | {took} |")
        lines.append("")
        lines.append("| verdict | checked | broken |")
        lines.append("|---|---:|---:|")
        for v in verdicts:
            lines.append(f"| {v.name} | {v.checked} | {v.broken} |")
        extra = self.targets(history, rolling_failed, late)
        lines.append("")
        lines.append("| target | figure | met |")
        lines.append("|---|---|---|")
        for name, figure, met in extra:
            lines.append(f"| {name} | {figure} | {'yes' if met else 'NO'} |")
        for v in verdicts:
            for example in v.examples:
                lines.append(f"  {v.name}: {example}")
        for line in late:
            lines.append(f"  late: {line}")
        text = "\n".join(lines)
        print(text, flush=True)
        with open(out / "history.jsonl", "w") as f:
            for a in history:
                f.write(json.dumps(a) + "\n")
        with open(out / "faults.json", "w") as f:
            json.dump({"seed": self.seed, "faults": self.faults, "memory": self.memory}, f, indent=1, default=str)
        return any(v.broken for v in verdicts), any(not met for _, _, met in extra)

    def failed_example(self, a, first_new):
        """A request that failed during the upgrade's steps, said in a line."""
        answer = "no answer" if a["status"] is None else str(a["status"])
        if a.get("origin") == "proxy":
            answer += " (the proxy's own)"
        when = " (the earlier build alone served)" if a["t0"] < first_new else ""
        return f"{a['op']} sent {a['t0'] - self.started:.1f} s in, during {self.period_of(a['t0'])}{when}: {answer}"

    def targets(self, history, rolling_failed, late):
        """The run's targets beyond the verdicts: (name, figure, met)."""
        out = [("rolling restart: failed requests", str(rolling_failed), rolling_failed == 0),
               ("every fault recovered within its bound", f"{len(late)} late", not late)]
        freezes = [(f["injected"], f["cleared"] - 2.0) for f in self.faults if f["kind"] == "freeze"]
        frozen = [a["t1"] - a["t0"] for a in history if a["status"] == 503 and self.period_of(a["t0"]) == "freeze"
                  and any(start <= a["t0"] < end for start, end in freezes)]
        slowest = max(frozen, default=0.0)
        out.append(("503 within the request budget while the primary is frozen (slowest)",
                    f"{slowest:.2f} s", slowest <= 2.5))
        grows = []
        for number, notes in sorted(self.memory.items()):
            by_life = collections.defaultdict(dict)
            for life, when, age, rss in notes:
                by_life[life][when] = (age, rss)
            for life, seen in by_life.items():
                if "minute" in seen and "end" in seen and seen["end"][0] >= 120:
                    grows.append((number, life, seen["end"][1] / seen["minute"][1]))
        worst = max((g for _, _, g in grows), default=None)
        out.append(("each instance's memory at the end ÷ after its first minute (lives of 2 min or more)",
                    "no life that long" if worst is None else f"{worst * 100:.1f} % (worst of {len(grows)})",
                    worst is None or worst <= 1.10))
        first = self.write_rate(history, self.started, self.started + self.steady)
        last = self.write_rate(history, self.ended - self.steady, self.ended)
        out.append(("writes per second, the last steady minute ÷ the first", f"{last:.1f} ÷ {first:.1f} = "
                    f"{(last / first * 100) if first else 0:.1f} %", first > 0 and last >= 0.9 * first))
        return out

    @staticmethod
    def write_rate(history, start, end):
        done = sum(1 for a in history if a["op"] == checker.WRITE and start <= a["t1"] < end
                   and a["status"] is not None and 200 <= a["status"] < 300)
        return done / max(end - start, 1e-9)


def p99(values):
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def get(port, token, path):
    """GET `path` on 127.0.0.1:`port` with `token`: (status, parsed body or None)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}", "Accept": "application/json"})
        response = conn.getresponse()
        raw = response.read()
        return response.status, json.loads(raw) if raw else None
    finally:
        conn.close()


def documented_statuses(port):
    """operationId -> the statuses the document lists for it, from the document the cluster
    serves (`/openapi.json`)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/openapi.json")
    document = json.loads(conn.getresponse().read())
    conn.close()
    out = {}
    for path in document["paths"].values():
        for operation in path.values():
            if isinstance(operation, dict) and "operationId" in operation:
                out[operation["operationId"]] = {int(s) for s in operation["responses"] if s.isdigit()}
    return out
