"""The checker's own tests: a history as a correct cluster answers it passes every verdict,
and each defect a history can show breaks the verdict meant for it, and only that one.

    python3 -m unittest discover -s scripts/lib/soak -p 'test_*.py'

(`scripts/cluster --defects` shows the same with servers built with each defect.)
"""

import copy
import unittest

from checker import Snapshot, check, cut

DOCUMENTED = {
    "setOwnTimeLogCell": {200, 400, 401, 403, 406, 408, 409, 413, 415, 422, 429, 500, 503},
    "createCrossProjectReportExport": {201, 400, 401, 403, 406, 408, 413, 415, 422, 429, 500, 503},
    "listCommercialReceipts": {200, 400, 401, 403, 404, 406, 429, 500, 503},
}
RECEIPTS = ["9033", "9032", "9031", "9030", "9029"]


def write(client, t, expected, status, version=None, current=None, cell="1800-01-01", shared=True):
    return {"client": client, "op": "setOwnTimeLogCell", "t0": t, "t1": t + 0.01, "status": status,
            "origin": None if status is None else "wpds", "cell": cell, "expected": expected,
            "version": version, "current": current, "shared": shared}


def export(t, status, body=None, request_id="k1", replayed=False):
    return {"client": "export-0", "op": "createCrossProjectReportExport", "t0": t, "t1": t + 0.01,
            "status": status, "origin": None if status is None else "wpds", "request_id": request_id,
            "body": body, "replayed": replayed}


def page(t, cursor, ids, following, walk=0, status=200):
    return {"client": "cursor-0", "op": "listCommercialReceipts", "t0": t, "t1": t + 0.01, "status": status,
            "origin": None if status is None else "wpds", "walk": walk, "cursor": cursor, "ids": ids,
            "next": following}


def correct():
    """Two clients racing on one cell from version 1, an export retried after a cut, a
    fresh cell, and a walk of the listing retried after a cut: as a correct cluster answers."""
    history = [
        write("cell-0/0", 1.00, 1, 200, version=2),
        write("cell-0/1", 1.01, 1, 409, current=2),
        write("cell-0/1", 1.05, 2, 200, version=3),
        write("cell-0/0", 1.06, 2, 409, current=3),
        write("cell-0/0", 1.10, 3, None),  # cut: it may have applied
        write("cell-0/0", 1.20, 3, 409, current=4),  # it did
        write("cell-0/0", 1.30, 4, 200, version=5),
        write("fresh-0", 1.40, 1, 200, version=2, cell="1900-01-02", shared=False),
        export(2.0, None),
        export(2.1, 201, {"id": "40", "requestId": "k1"}),
        export(2.2, 201, {"id": "40", "requestId": "k1"}, replayed=True),
        page(3.0, "", RECEIPTS[:2], "c2"),
        page(3.1, "c2", None, None, status=None),
        page(3.2, "c2", RECEIPTS[2:4], "c4"),
        page(3.3, "c4", RECEIPTS[4:], ""),
    ]
    snapshot = Snapshot(cells={"1800-01-01": (1, 5)}, fresh={"1900-01-02"}, exports={"k1": 1}, receipts=RECEIPTS)
    return history, snapshot


def broken(verdicts):
    return {v.name: v.broken for v in verdicts if v.broken}


class CheckerTest(unittest.TestCase):
    def test_a_correct_cluster_breaks_no_verdict_and_every_verdict_checked_something(self):
        history, snapshot = correct()
        verdicts = check(history, snapshot, DOCUMENTED)
        self.assertEqual(broken(verdicts), {})
        self.assertTrue(all(v.checked > 0 for v in verdicts), [(v.name, v.checked) for v in verdicts])

    def test_a_lost_update_is_caught_where_a_stale_write_was_applied(self):
        # A server that writes without checking the version: the stale write of client 1
        # answers 200 over version 2, which it never saw.
        history, snapshot = correct()
        history[1] = write("cell-0/1", 1.01, 1, 200, version=3)
        history[2] = write("cell-0/1", 1.05, 3, 200, version=4)
        history[3] = write("cell-0/0", 1.06, 2, 200, version=5)
        history[5] = write("cell-0/0", 1.20, 5, 200, version=6)
        history[6] = write("cell-0/0", 1.30, 6, 200, version=7)
        snapshot.cells["1800-01-01"] = (1, 7)
        self.assertEqual(set(broken(check(history, snapshot, DOCUMENTED))), {"lost updates"})

    def test_two_answers_carrying_one_version_are_a_lost_update(self):
        history, snapshot = correct()
        history[1] = write("cell-0/1", 1.01, 1, 200, version=2)
        history[2] = write("cell-0/1", 1.05, 2, 409, current=2)
        self.assertIn("lost updates", broken(check(history, snapshot, DOCUMENTED)))

    def test_an_export_made_twice_for_one_request_id_is_caught(self):
        history, snapshot = correct()
        history[10] = export(2.2, 201, {"id": "41", "requestId": "k1"})
        snapshot.exports["k1"] = 2
        self.assertEqual(set(broken(check(history, snapshot, DOCUMENTED))),
                         {"exports made twice", "replays that differ"})

    def test_a_409_naming_a_version_the_cell_had_not_reached_is_caught(self):
        # A server that answers the current version plus one: 3 while the cell is at 2.
        history, snapshot = correct()
        history[1] = write("cell-0/1", 1.01, 1, 409, current=3)
        self.assertEqual(set(broken(check(history, snapshot, DOCUMENTED))),
                         {"409s naming a version the cell did not hold"})

    def test_a_409_naming_a_version_already_replaced_when_it_was_sent_is_caught(self):
        history, snapshot = correct()
        history[5] = write("cell-0/0", 1.20, 3, 409, current=2)
        self.assertEqual(set(broken(check(history, snapshot, DOCUMENTED))),
                         {"409s naming a version the cell did not hold"})

    def test_a_final_version_beyond_the_open_answers_is_caught(self):
        history, snapshot = correct()
        snapshot.cells["1800-01-01"] = (1, 7)
        self.assertEqual(set(broken(check(history, snapshot, DOCUMENTED))),
                         {"versions the answers do not explain"})

    def test_an_acknowledged_fresh_write_missing_from_the_database_is_caught(self):
        history, snapshot = correct()
        snapshot.fresh = set()
        self.assertEqual(set(broken(check(history, snapshot, DOCUMENTED))), {"acknowledged writes missing"})

    def test_a_cursor_that_skips_or_repeats_a_receipt_is_caught(self):
        for change in (RECEIPTS[3:4], RECEIPTS[1:3]):
            history, snapshot = correct()
            history[13] = page(3.2, "c2", change, "c4")
            self.assertEqual(set(broken(check(history, snapshot, DOCUMENTED))), {"cursors that skip or repeat"})

    def test_a_walk_cut_short_by_the_end_of_the_soak_is_checked_as_far_as_it_went(self):
        history, snapshot = correct()
        del history[14]
        self.assertEqual(broken(check(history, snapshot, DOCUMENTED)), {})

    def test_a_500_or_a_status_the_document_does_not_list_is_caught_but_the_proxys_are_not_the_services(self):
        history, snapshot = correct()
        history.append(write("fresh-0", 4.0, 1, 500, cell="1900-01-03", shared=False))
        history.append(export(4.1, 200, request_id="k2"))
        proxy = copy.deepcopy(history[-1])
        proxy.update(status=502, origin="proxy")
        history.append(proxy)
        verdicts = {v.name: v for v in check(history, snapshot, DOCUMENTED)}
        self.assertEqual(verdicts["undocumented answers"].broken, 2)

    def test_a_backup_taken_mid_history_holds_what_was_answered_before_it_and_leaves_the_rest_open(self):
        # A backup taken from 1.15 to 1.25: the cut write of 1.10 (answered at 1.11) and the
        # 409 of 1.20 are before and during it; what came after it is not in the copy.
        history, _ = correct()
        held = cut(history, 1.15, 1.25)
        self.assertEqual([a["t0"] for a in held], [1.00, 1.01, 1.05, 1.06, 1.10, 1.20])
        self.assertIsNone(held[-1]["status"])
        copy_of = Snapshot(cells={"1800-01-01": (1, 4)}, fresh=set(), exports={}, receipts=RECEIPTS)
        self.assertEqual(broken(check(held, copy_of, DOCUMENTED)), {})
        # The write in flight may not have applied; a 200 answered before the backup must have.
        copy_of.cells["1800-01-01"] = (1, 3)
        self.assertEqual(broken(check(held, copy_of, DOCUMENTED)), {})
        copy_of.cells["1800-01-01"] = (1, 2)
        self.assertEqual(set(broken(check(held, copy_of, DOCUMENTED))),
                         {"acknowledged writes missing", "versions the answers do not explain",
                          "409s naming a version the cell did not hold"})

    def test_an_acknowledged_fresh_write_missing_from_a_restored_copy_is_caught(self):
        history, _ = correct()
        copy_of = Snapshot(cells={"1800-01-01": (1, 5)}, fresh=set(), exports={"k1": 1}, receipts=RECEIPTS)
        self.assertEqual(set(broken(check(cut(history, 5.0, 5.1), copy_of, DOCUMENTED))),
                         {"acknowledged writes missing"})


if __name__ == "__main__":
    unittest.main()
