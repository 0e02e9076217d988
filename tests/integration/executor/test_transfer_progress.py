#!/usr/bin/python3
"""test_transfer_progress.py - live progress of a running transfer, end to
end: real PostgreSQL, halleyd, galaxyd, executord running the real wormhole
(the platform of test_executor_transfer.py, whose helpers it shares; the
test plays keplerd's part).

Checks:
- a transfer of a table list is held in the middle by construction: the
  second table is locked (ACCESS EXCLUSIVE in an open transaction), so the
  run has read the first table (3000 rows, one shard of two) and waits.
  While held, GET /instances/{id}/progress answers the figures executord
  recorded from wormhole's progress line: rows read and written, the split
  plan (1 of 2 shards), the planner's row estimate (5000, both tables
  analysed), an estimated end, running=true, no final figures yet; points
  come at most one a second;
- released, the run succeeds: the final figures (5000 rows read and
  written) are the attempt's, the series stays, running=false;
- bad input: a bad or too high attempt is a 400 naming attempt, an unknown
  instance a 404; RecordTransferProgress refuses a negative count naming
  the field and an unknown instance; a series is bounded at 600 points
  (the older half thinned, the first point kept).

usage: test_transfer_progress.py BUILD_DIR HALLEY_PROTO
Needs ORRERY_PG_DSN and ORRERY_ZK, root and writable cgroups.
"""
import os
import sys
import time
import unittest
from datetime import datetime

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import orrery_it  # noqa: E402
import test_executor as tx  # noqa: E402
import test_executor_transfer as xt  # noqa: E402


def setUpModule():
    xt.setUpModule()


def tearDownModule():
    xt.tearDownModule()


def progress(iid, query=""):
    return tx.P.http("GET", f"/api/v1/instances/{iid}/progress{query}", token=tx.TOKEN)


def until(fn, what, timeout=120.0):
    """fn() until it returns something true (the condition is made by the
    test; the deadline only bounds a failure)."""
    end = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def ts(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class TransferProgress(unittest.TestCase):
    def test_held_run_reports_progress_and_keeps_final_figures(self):
        xt.sql("CREATE TABLE tp_a (id bigint PRIMARY KEY, v text);"
               "CREATE TABLE tp_b (id bigint PRIMARY KEY, v text);"
               "CREATE TABLE tp_dst (id bigint PRIMARY KEY, v text);"
               "INSERT INTO tp_a SELECT g, md5(g::text) FROM generate_series(1, 3000) g;"
               "INSERT INTO tp_b SELECT g, md5(g::text) FROM generate_series(3001, 5000) g;"
               "ANALYZE tp_a; ANALYZE tp_b")
        tid = xt.new_task({"name": "tp_copy", "batch_rows": 100,
                           "reader": {"type": "postgres", "datasource": "xfer_pg",
                                      "tables": ["tp_a", "tp_b"], "channels": 1},
                           "writers": [xt.pg_endpoint("tp_dst", mode="truncate")]})
        gate = xt.TableGate("tp_b")
        try:
            iid = xt.dispatch(tid, 3)
            # The reader finished tp_a and waits for the lock on tp_b.
            until(lambda: gate.waiters() >= 1, "the reader to wait for tp_b")

            def held():
                r = progress(iid)
                self.assertEqual(r.status, 200, r.body)
                cur = r.json()["current"]
                return r.json() if cur and cur["rows_read"] == 3000 else None

            p = until(held, "a progress point with the first table read")
            self.assertTrue(p["running"])
            self.assertEqual(p["state"], "running")
            self.assertEqual(p["attempt"], 1)
            self.assertIsNone(p["final"])
            cur = p["current"]
            self.assertEqual(cur["shards_done"], 1)
            self.assertEqual(cur["shards_total"], 2)
            self.assertEqual(cur["rows_estimate"], 5000)
            self.assertLessEqual(cur["rows_written"], 3000)
            self.assertEqual(cur["dirty_rows"], 0)
            self.assertIsNotNone(cur["eta_s"])
            self.assertGreater(cur["eta_s"], 0)
            self.assertGreaterEqual(ts(cur["estimated_end"]), ts(cur["at"]))
            # While held, a new point comes with each progress line (one a
            # second: its elapsed time grows), none twice.
            p = until(lambda: (lambda j: j if len(j["series"]) >= 3 else None)(progress(iid).json()),
                      "three points")
            el = [x["elapsed_s"] for x in p["series"]]
            for a, b in zip(el, el[1:]):
                self.assertGreaterEqual(b - a, 0.9, el)
            self.assertEqual(p["series"][-1]["rows_read"], 3000)
            self.assertGreater(p["series"][-1]["eta_s"], 0)
        finally:
            gate.open()
        inst = tx.wait_state(iid, ("success", "failed", "timed_out"), timeout=120)
        self.assertEqual(tx.state_name(inst.state), "success", inst.reason)
        self.assertEqual(xt.sql("SELECT count(*) FROM tp_dst"), "5000")
        r = progress(iid)
        self.assertEqual(r.status, 200, r.body)
        p = r.json()
        self.assertFalse(p["running"])
        self.assertEqual(p["state"], "success")
        self.assertEqual(p["final"]["rows_read"], 5000)
        self.assertEqual(p["final"]["rows_written"], 5000)
        self.assertEqual(p["final"]["dirty_rows"], 0)
        self.assertGreaterEqual(len(p["series"]), 3)
        self.assertEqual(progress(iid, "?attempt=1").json()["final"]["rows_read"], 5000)

    def test_bad_input(self):
        tid = xt.new_task({"name": "tp_bad", "reader": xt.pg_endpoint("tp_none"),
                           "writers": [xt.pg_endpoint("tp_none2")]})
        iid = xt.dispatch(tid, 4)
        tx.wait_state(iid, ("success", "failed", "timed_out"), timeout=120)
        for q in ("?attempt=x", "?attempt=-1", "?attempt=9"):
            r = progress(iid, q)
            self.assertEqual(r.status, 400, (q, r.body))
            self.assertEqual(r.json()["error"]["field"], "attempt", q)
        r = progress(987654321)
        self.assertEqual(r.status, 404, r.body)
        # nothing reported for a run that never read: no current, no series
        p = progress(iid).json()
        self.assertIsNone(p["current"])
        self.assertEqual(p["series"], [])

        import grpc
        pt = tx.PB.TransferProgressPoint(rows_read=-1, eta_s=-1)
        with self.assertRaises(grpc.RpcError) as cm:
            tx.rpc("RecordTransferProgress", tx.PB.RecordTransferProgressRequest(
                instance_id=iid, point=pt), tx.PB.RecordTransferProgressResponse)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("point.rows_read", cm.exception.details())
        with self.assertRaises(grpc.RpcError) as cm:
            tx.rpc("RecordTransferProgress", tx.PB.RecordTransferProgressRequest(
                instance_id=987654321, point=tx.PB.TransferProgressPoint(eta_s=-1)),
                tx.PB.RecordTransferProgressResponse)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.NOT_FOUND)

        # bounded: the 601st point thins the older half to every second point
        # (the first 600 written straight into the table, to be quick)
        orrery_it.psql(tx.P.dsn, "INSERT INTO transfer_progress (instance_id, attempt, rows_read,"
                       " rows_written, dirty_rows, rows_per_sec, bytes_read, shards_done,"
                       " shards_total, rows_estimate, elapsed_s, eta_s)"
                       f" SELECT {iid}, 1, g, 0, 0, 0, 0, 0, 0, 0, g, -1"
                       " FROM generate_series(0, 599) g")
        got = tx.rpc("RecordTransferProgress", tx.PB.RecordTransferProgressRequest(
            instance_id=iid, point=tx.PB.TransferProgressPoint(rows_read=600, eta_s=-1)),
            tx.PB.RecordTransferProgressResponse)
        self.assertEqual(got.points, 601 - 150)
        s = tx.rpc("GetTransferProgress", tx.PB.GetTransferProgressRequest(instance_id=iid),
                   tx.PB.GetTransferProgressResponse)
        rows = [x.rows_read for x in s.points]
        self.assertEqual(len(rows), 451)
        self.assertEqual(rows[0], 0)
        self.assertEqual(rows[1], 2)
        self.assertEqual(rows[-1], 600)
        self.assertEqual(rows, sorted(rows))


if __name__ == "__main__":
    tx.BUILD = os.path.abspath(sys.argv[1])
    tx.PROTO = os.path.abspath(sys.argv[2])
    unittest.main(argv=sys.argv[:1], verbosity=2)
