#!/usr/bin/env python3
"""test_history.py - the run history of a workflow against the real stack:
the grid of cycles x tasks (GET /api/v1/workflows/{name}/runs: cycles newest
first, one cell per instance, none where a task has no instance, paging with
before/next_before), one cycle with its queued and running spans and edges
(GET /api/v1/workflows/{name}/runs/{cycle}), and bad input (unknown workflow
404, bad limit/before/cycle 400 naming the field).

usage: test_history.py BUILD_DIR
"""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = None
P = None
TOK = {}

H0, H1, H2 = "2026-03-01T00:00:00Z", "2026-03-01T01:00:00Z", "2026-03-01T02:00:00Z"


def spec(name, upstreams=None):
    s = {"name": name, "team": "etl", "type": "shell", "schedule": "0 * * * *",
         "timezone": "UTC", "config": {"command": "/bin/true"}}
    if upstreams:
        s["upstreams"] = [{"kind": "strong", "task": u} for u in upstreams]
    return s


def rpc(*args):
    """Move instances as keplerd and executord would (see gx_it_rpc.c)."""
    r = subprocess.run([os.path.join(BUILD, "bin", "gx_it_rpc"), f"127.0.0.1:{P.halley_port}",
                        P.token, *map(str, args)], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise AssertionError(f"gx_it_rpc {args[0]}: {r.stderr}")


class History(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        global P
        P = orrery_it.Platform(BUILD).__enter__()
        try:
            P.add_user("ann", "ann-password-1", "developer", teams=["etl"])
            P.add_user("vic", "vic-password-1", "viewer", teams=["etl"])
            for u in ("ann", "vic"):
                TOK[u] = P.login(u, f"{u}-password-1")
            ids = {}
            for name, ups in (("h.a", None), ("h.b", ["h.a"]), ("h.c", ["h.b"])):
                r = cls.call("POST", "/api/v1/tasks", spec(name, ups))
                assert r.status == 201, r
                ids[name] = r.json()["id"]
            cls.ids = ids
            r = cls.call("PUT", "/api/v1/workflows/hist", {"team": "etl",
                                                           "task_ids": list(ids.values())})
            assert r.status == 200, r
            # a and b in three cycles, c only in the newest: two empty cells.
            cls.inst = {}
            for name, frm in (("h.a", H0), ("h.b", H0), ("h.c", H2)):
                r = cls.call("POST", f"/api/v1/tasks/{ids[name]}/backfill",
                             {"from": frm, "to": "2026-03-01T03:00:00Z"})
                assert r.status == 200, r
                cls.inst[name] = r.json()["created"]
            # a's oldest instance ran and succeeded; b's oldest was killed.
            a0 = cls.inst["h.a"][0]
            rpc("transition", a0, "waiting", "ready")
            rpc("transition", a0, "ready", "dispatched", "ex-1")
            rpc("transition", a0, "dispatched", "running")
            rpc("transition", a0, "running", "success")
            r = cls.call("POST", f"/api/v1/instances/{cls.inst['h.b'][0]}/actions/kill", {})
            assert r.status == 200, r
        except BaseException:
            P.__exit__(None, None, None)
            raise

    @classmethod
    def tearDownClass(cls):
        P.__exit__(None, None, None)

    @staticmethod
    def call(method, path, body=None, who="ann"):
        return P.http(method, path, body, token=TOK[who])

    def assertFieldError(self, r, status, field):
        self.assertEqual(r.status, status, r)
        self.assertEqual(r.json()["error"]["field"], field, r)

    def test_grid(self):
        r = self.call("GET", "/api/v1/workflows/hist/runs", who="vic")
        self.assertEqual(r.status, 200, r)
        g = r.json()
        self.assertEqual(g["workflow"], "hist")
        self.assertEqual([t["name"] for t in g["tasks"]], ["h.a", "h.b", "h.c"])
        self.assertEqual(g["cycles"], [H2, H1, H0])
        self.assertIsNone(g["next_before"])
        cells = {(g["tasks"][t]["name"], g["cycles"][c]): (iid, st)
                 for t, c, iid, st, _ in g["cells"]}
        self.assertEqual(len(cells), 7, g["cells"])
        self.assertEqual(cells[("h.a", H0)], (self.inst["h.a"][0], "success"))
        self.assertEqual(cells[("h.b", H0)], (self.inst["h.b"][0], "killed"))
        self.assertEqual(cells[("h.a", H2)], (self.inst["h.a"][2], "waiting"))
        self.assertEqual(cells[("h.c", H2)], (self.inst["h.c"][0], "waiting"))
        self.assertNotIn(("h.c", H1), cells)
        self.assertNotIn(("h.c", H0), cells)

    def test_grid_pages(self):
        r = self.call("GET", "/api/v1/workflows/hist/runs?limit=2")
        self.assertEqual(r.status, 200, r)
        g = r.json()
        self.assertEqual(g["cycles"], [H2, H1])
        self.assertEqual(g["next_before"], H1)
        self.assertTrue(all(c < 2 for _, c, _, _, _ in g["cells"]))
        self.assertEqual(len(g["cells"]), 3 + 2)
        r = self.call("GET", f"/api/v1/workflows/hist/runs?limit=2&before={H1}")
        g = r.json()
        self.assertEqual(g["cycles"], [H0])
        self.assertIsNone(g["next_before"])
        self.assertEqual(sorted(iid for _, _, iid, _, _ in g["cells"]),
                         sorted([self.inst["h.a"][0], self.inst["h.b"][0]]))

    def test_cycle(self):
        r = self.call("GET", f"/api/v1/workflows/hist/runs/{H0}", who="vic")
        self.assertEqual(r.status, 200, r)
        w = r.json()
        self.assertEqual(w["cycle"], H0)
        self.assertEqual([t["name"] for t in w["tasks"]], ["h.a", "h.b", "h.c"])
        a, b, c = (self.ids[n] for n in ("h.a", "h.b", "h.c"))
        self.assertEqual(sorted((e["upstream_task_id"], e["task_id"], e["kind"]) for e in w["edges"]),
                         sorted([(a, b, "strong"), (b, c, "strong")]))
        by_task = {i["task_id"]: i for i in w["instances"]}
        self.assertEqual(set(by_task), {a, b})  # c has no instance in this cycle
        ia = by_task[a]
        self.assertEqual((ia["id"], ia["state"], ia["attempt"]), (self.inst["h.a"][0], "success", 1))
        self.assertEqual(len(ia["spans"]), 1, ia)
        sp = ia["spans"][0]
        self.assertEqual(sp["state"], "success")
        for k in ("queued_at", "started_at", "ended_at"):
            self.assertIsNotNone(sp[k], sp)
        self.assertLessEqual(sp["queued_at"], sp["started_at"])
        self.assertLessEqual(sp["started_at"], sp["ended_at"])
        # Killed while waiting: never queued, never ran.
        sb = by_task[b]["spans"]
        self.assertEqual([(s["state"], s["queued_at"], s["started_at"]) for s in sb],
                         [("killed", None, None)])
        # A cycle without instances: the tasks, no instances.
        r = self.call("GET", "/api/v1/workflows/hist/runs/2025-01-01T00:00:00Z")
        self.assertEqual(r.status, 200, r)
        self.assertEqual((len(r.json()["tasks"]), r.json()["instances"]), (3, []))

    def test_bad_input(self):
        for q in ("limit=0", "limit=101", "limit=x", "limit=-1"):
            self.assertFieldError(self.call("GET", f"/api/v1/workflows/hist/runs?{q}"), 400, "limit")
        self.assertFieldError(self.call("GET", "/api/v1/workflows/hist/runs?before=yesterday"),
                              400, "before")
        self.assertFieldError(self.call("GET", "/api/v1/workflows/hist/runs/today"), 400, "cycle")
        self.assertFieldError(self.call("GET", "/api/v1/workflows/nope/runs"), 404, "name")
        self.assertFieldError(self.call("GET", f"/api/v1/workflows/nope/runs/{H0}"), 404, "name")
        self.assertFieldError(self.call("GET", "/api/v1/workflows/b%20d/runs"), 400, "name")
        self.assertEqual(P.http("GET", "/api/v1/workflows/hist/runs").status, 401)


if __name__ == "__main__":
    BUILD = sys.argv.pop(1)
    unittest.main(verbosity=2)
