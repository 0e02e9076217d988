#!/usr/bin/env python3
"""test_runs.py - operators' runs over galaxyd's REST API against real halleyd
and PostgreSQL: run now (created, released, refused while running), rerun of
an instance with its downstreams or upstreams of the same cycle (dry run,
one transaction: a running member refuses the whole set), rerun of the
failed ones of a workflow's cycle, and backfill with downstream tasks and
pacing. Bad input: 400 naming the field, 404 and 409 as documented, nothing
half applied. States no REST call can make (running) are set in the
database, so each test makes the condition it checks.

usage: test_runs.py BUILD_DIR
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


def hourly(name, team="etl", ups=()):
    return {"name": name, "team": team, "type": "shell", "schedule": "0 * * * *",
            "timezone": "UTC", "config": {"command": "/bin/true"},
            "upstreams": [{"task": u, "kind": "strong"} for u in ups]}


def sql(q):
    return subprocess.run(["psql", P.dsn, "-v", "ON_ERROR_STOP=1", "-qAtc", q], check=True,
                          capture_output=True, text=True).stdout.strip()


def setUpModule():
    global P
    P = orrery_it.Platform(BUILD).__enter__()
    P.add_user("root", "root-password-1", "admin")
    P.add_user("ann", "ann-password-1", "developer", teams=["etl"])
    P.add_user("bob", "bob-password-1", "developer", teams=["ads"])
    for u in ("root", "ann", "bob"):
        TOK[u] = P.login(u, f"{u}-password-1")


def tearDownModule():
    if P:
        P.__exit__(None, None, None)


def post(path, body, who="ann"):
    return P.http("POST", path, body, token=TOK[who])


def get(path, who="ann"):
    r = P.http("GET", path, token=TOK[who])
    assert r.status == 200, r
    return r.json()


class Chain:
    """Tasks a -> b -> c (hourly, strong) of team etl, named after prefix."""

    def __init__(self, prefix):
        self.ids = {}
        for n, ups in (("a", ()), ("b", ("a",)), ("c", ("b",))):
            r = post("/api/v1/tasks", hourly(f"{prefix}.{n}", ups=[f"{prefix}.{u}" for u in ups]),
                     "root")
            assert r.status == 201, r
            self.ids[n] = r.json()["id"]

    def instance(self, n, when):
        items = get(f"/api/v1/instances?task_id={self.ids[n]}&from={when}&limit=5")["items"]
        return next(i for i in items if i["schedule_time"] == when)


class RunNow(unittest.TestCase):
    def test_run_now_creates_then_releases_and_records_who(self):
        r = post("/api/v1/tasks", hourly("runs.now"), "root")
        self.assertEqual(r.status, 201, r)
        tid = r.json()["id"]
        when = "2026-04-01T05:00:00Z"
        r = post(f"/api/v1/tasks/{tid}/run", {"schedule_time": when})
        self.assertEqual(r.status, 201, r)
        inst = r.json()["instance"]
        self.assertTrue(r.json()["created"])
        self.assertEqual(inst["state"], "waiting")
        self.assertTrue(inst["run_now"])
        self.assertFalse(inst["ignore_upstreams"])
        self.assertEqual(inst["schedule_time"], when)
        # again, ignoring upstreams: the same instance, released with the flag
        r = post(f"/api/v1/tasks/{tid}/run",
                 {"schedule_time": when, "ignore_upstreams": True, "reason": "hotfix"})
        self.assertEqual(r.status, 200, r)
        self.assertFalse(r.json()["created"])
        self.assertEqual(r.json()["instance"]["id"], inst["id"])
        self.assertTrue(r.json()["instance"]["ignore_upstreams"])
        detail = get(f"/api/v1/instances/{inst['id']}")
        runs = [t for t in detail["transitions"] if t["reason"].startswith("run now")]
        self.assertEqual(len(runs), 2, detail["transitions"])
        self.assertEqual(runs[1]["actor"], "user:ann")
        self.assertEqual(runs[1]["reason"], "run now, ignoring upstreams: hotfix")
        audit = get("/api/v1/audit?limit=20", "root")["items"]
        mine = [a for a in audit if a["action"] == "instance.run_now"
                and a["object"] == f"instance:{inst['id']}"]
        self.assertEqual(len(mine), 2, audit)
        # running: 409, and nothing changes
        sql(f"UPDATE instances SET state = 'running' WHERE id = {inst['id']}")
        r = post(f"/api/v1/tasks/{tid}/run", {"schedule_time": when})
        self.assertEqual(r.status, 409, r)
        self.assertEqual(r.json()["error"]["field"], "schedule_time")
        self.assertIn("running", r.json()["error"]["message"])
        # finished: back to waiting with a new attempt
        sql(f"UPDATE instances SET state = 'failed' WHERE id = {inst['id']}")
        r = post(f"/api/v1/tasks/{tid}/run", {"schedule_time": when})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["instance"]["state"], "waiting")
        self.assertEqual(r.json()["instance"]["attempt"], inst["attempt"] + 1)
        self.assertFalse(r.json()["instance"]["ignore_upstreams"])

    def test_run_now_bad_input(self):
        r = post("/api/v1/tasks", hourly("runs.bad"), "root")
        tid = r.json()["id"]
        for body, field in (({}, "schedule_time"),
                            ({"schedule_time": "yesterday"}, "schedule_time"),
                            ({"schedule_time": "2026-04-01T05:30:00Z"}, "schedule_time"),
                            ({"schedule_time": "2026-04-01T05:00:00Z", "ignore_upstreams": 1},
                             "ignore_upstreams"),
                            ({"schedule_time": "2026-04-01T05:00:00Z", "when": 1}, "when")):
            r = post(f"/api/v1/tasks/{tid}/run", body)
            self.assertEqual(r.status, 400, (body, r))
            self.assertEqual(r.json()["error"]["field"], field, (body, r))
        self.assertEqual(get(f"/api/v1/instances?task_id={tid}")["items"], [])
        r = post("/api/v1/tasks/999999/run", {"schedule_time": "2026-04-01T05:00:00Z"})
        self.assertEqual(r.status, 404, r)
        r = post(f"/api/v1/tasks/{tid}/run", {"schedule_time": "2026-04-01T05:00:00Z"}, "bob")
        self.assertEqual(r.status, 403, r)
        self.assertEqual(get(f"/api/v1/instances?task_id={tid}")["items"], [])
        self.assertEqual(P.http("DELETE", f"/api/v1/tasks/{tid}", token=TOK["root"]).status, 200)
        r = post(f"/api/v1/tasks/{tid}/run", {"schedule_time": "2026-04-01T05:00:00Z"})
        self.assertEqual(r.status, 409, r)

    def test_run_now_sets_parameter_values(self):
        spec = dict(hourly("runs.param"), parameters={"region": {"default": "eu"}})
        r = post("/api/v1/tasks", spec, "root")
        self.assertEqual(r.status, 201, r)
        tid = r.json()["id"]
        when = "2026-04-01T05:00:00Z"
        for params, field in (({"nosuch": "x"}, "params.nosuch"), ({"region": 1}, "params.region"),
                              ("eu", "params")):
            r = post(f"/api/v1/tasks/{tid}/run", {"schedule_time": when, "params": params})
            self.assertEqual(r.status, 400, (params, r))
            self.assertEqual(r.json()["error"]["field"], field, (params, r))
        self.assertEqual(get(f"/api/v1/instances?task_id={tid}")["items"], [])
        r = post(f"/api/v1/tasks/{tid}/run", {"schedule_time": when, "params": {"region": "us"}})
        self.assertEqual(r.status, 201, r)
        iid = r.json()["instance"]["id"]
        stored = lambda: sql(f"SELECT params::text FROM instances WHERE id = {iid}")  # noqa: E731
        self.assertEqual(stored(), '{"region": "us"}')
        # again without params: the values stay; an undeclared one changes nothing
        self.assertEqual(post(f"/api/v1/tasks/{tid}/run", {"schedule_time": when}).status, 200)
        self.assertEqual(stored(), '{"region": "us"}')
        r = post(f"/api/v1/tasks/{tid}/run", {"schedule_time": when, "params": {"zone": "a"}})
        self.assertEqual(r.status, 400, r)
        self.assertEqual(stored(), '{"region": "us"}')
        r = post(f"/api/v1/tasks/{tid}/run", {"schedule_time": when, "params": {"region": "ap"}})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(stored(), '{"region": "ap"}')


class Rerun(unittest.TestCase):
    def setUp(self):
        self.c = Chain(f"runs.{self._testMethodName}")
        r = post(f"/api/v1/tasks/{self.c.ids['a']}/backfill",
                 {"from": "2026-04-02T00:00:00Z", "to": "2026-04-02T02:00:00Z",
                  "include_downstream": True})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["fire_times"], 2)
        self.assertEqual(len(r.json()["created"]), 6)
        self.all = r.json()["created"]
        r = post("/api/v1/instances/actions", {"ids": self.all, "action": "mark-success"})
        self.assertEqual(r.json()["succeeded"], 6, r)

    def states(self):
        return {i: get(f"/api/v1/instances/{i}")["state"] for i in self.all}

    def test_downstream_dry_run_then_rerun(self):
        a0 = self.c.instance("a", "2026-04-02T00:00:00Z")
        b0 = self.c.instance("b", "2026-04-02T00:00:00Z")
        c0 = self.c.instance("c", "2026-04-02T00:00:00Z")
        before = self.states()
        r = post(f"/api/v1/instances/{a0['id']}/rerun", {"scope": "downstream", "dry_run": True})
        self.assertEqual(r.status, 200, r)
        body = r.json()
        self.assertTrue(body["dry_run"])
        self.assertEqual([m["instance"]["id"] for m in body["members"]],
                         [a0["id"], b0["id"], c0["id"]])
        self.assertEqual(body["rerun"], 3)
        self.assertEqual(body["members"][1]["why"], f"downstream of {a0['id']}")
        self.assertEqual(self.states(), before)  # a dry run changes nothing
        r = post(f"/api/v1/instances/{a0['id']}/rerun", {"scope": "downstream", "reason": "fix"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["rerun"], 3)
        after = self.states()
        for i in self.all:
            want = "waiting" if i in (a0["id"], b0["id"], c0["id"]) else "marked_success"
            self.assertEqual(after[i], want, i)
        d = get(f"/api/v1/instances/{c0['id']}")
        self.assertEqual(d["attempt"], 2)
        self.assertEqual(d["transitions"][-1]["reason"], f"rerun (downstream of {b0['id']}): fix")

    def test_a_running_member_refuses_the_whole_set(self):
        a1 = self.c.instance("a", "2026-04-02T01:00:00Z")
        b1 = self.c.instance("b", "2026-04-02T01:00:00Z")
        sql(f"UPDATE instances SET state = 'running' WHERE id = {b1['id']}")
        before = self.states()
        r = post(f"/api/v1/instances/{a1['id']}/rerun", {"scope": "downstream"})
        self.assertEqual(r.status, 409, r)
        self.assertIn(f"instance {b1['id']}", r.json()["error"]["message"])
        self.assertIn("running", r.json()["error"]["message"])
        self.assertEqual(self.states(), before)
        # the instance alone is fine
        r = post(f"/api/v1/instances/{a1['id']}/rerun", {})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["rerun"], 1)

    def test_upstream_scope(self):
        c1 = self.c.instance("c", "2026-04-02T01:00:00Z")
        r = post(f"/api/v1/instances/{c1['id']}/rerun", {"scope": "upstream", "dry_run": True})
        self.assertEqual(r.status, 200, r)
        names = [m["instance"]["task_name"] for m in r.json()["members"]]
        prefix = f"runs.{self._testMethodName}"
        self.assertEqual(names, [f"{prefix}.c", f"{prefix}.b", f"{prefix}.a"])
        self.assertTrue(all(m["instance"]["schedule_time"] == "2026-04-02T01:00:00Z"
                            for m in r.json()["members"]))

    def test_another_teams_member_refuses_the_whole_set(self):
        a0 = self.c.instance("a", "2026-04-02T00:00:00Z")
        before = self.states()
        r = post(f"/api/v1/instances/{a0['id']}/rerun", {"scope": "downstream"}, "bob")
        self.assertEqual(r.status, 403, r)
        self.assertEqual(self.states(), before)

    def test_rerun_from_scratch_marks_the_new_attempt_only(self):
        a0 = self.c.instance("a", "2026-04-02T00:00:00Z")
        self.assertFalse(get(f"/api/v1/instances/{a0['id']}")["from_scratch"])
        r = post(f"/api/v1/instances/{a0['id']}/rerun", {"from_scratch": True})
        self.assertEqual(r.status, 200, r)
        d = get(f"/api/v1/instances/{a0['id']}")
        self.assertEqual((d["attempt"], d["from_scratch"]), (2, True))
        # the next attempt (a retry, or a rerun without it) resumes again
        sql(f"UPDATE instances SET state = 'failed' WHERE id = {a0['id']}")
        r = post(f"/api/v1/instances/{a0['id']}/rerun", {})
        self.assertEqual(r.status, 200, r)
        d = get(f"/api/v1/instances/{a0['id']}")
        self.assertEqual((d["attempt"], d["from_scratch"]), (3, False))

    def test_rerun_bad_input(self):
        a0 = self.c.instance("a", "2026-04-02T00:00:00Z")
        for body, field in (({"scope": "sideways"}, "scope"), ({"dry_run": "yes"}, "dry_run"),
                            ({"from_scratch": 1}, "from_scratch"),
                            ({"scope": "downstream", "extra": 1}, "extra")):
            r = post(f"/api/v1/instances/{a0['id']}/rerun", body)
            self.assertEqual(r.status, 400, (body, r))
            self.assertEqual(r.json()["error"]["field"], field)
        r = post("/api/v1/instances/0/rerun", {})
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.json()["error"]["field"], "id")
        r = post("/api/v1/instances/99999999/rerun", {})
        self.assertEqual(r.status, 404, r)

    def test_rerun_the_failed_ones_of_a_workflow_run(self):
        prefix = f"runs.{self._testMethodName}"
        r = P.http("PUT", f"/api/v1/workflows/{prefix}.wf",
                   {"team": "etl", "task_ids": list(self.c.ids.values())}, token=TOK["ann"])
        self.assertEqual(r.status, 200, r)
        b1 = self.c.instance("b", "2026-04-02T01:00:00Z")
        c1 = self.c.instance("c", "2026-04-02T01:00:00Z")
        sql(f"UPDATE instances SET state = 'failed' WHERE id = {b1['id']}")
        sql(f"UPDATE instances SET state = 'timed_out' WHERE id = {c1['id']}")
        path = f"/api/v1/workflows/{prefix}.wf/rerun-failed"
        r = post(path, {"schedule_time": "2026-04-02T01:00:00Z", "dry_run": True})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(sorted(m["instance"]["id"] for m in r.json()["members"]),
                         sorted([b1["id"], c1["id"]]))
        self.assertEqual(get(f"/api/v1/instances/{b1['id']}")["state"], "failed")
        r = post(path, {"schedule_time": "2026-04-02T01:00:00Z"}, "bob")
        self.assertEqual(r.status, 403, r)
        r = post(path, {"schedule_time": "2026-04-02T01:00:00Z"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["rerun"], 2)
        self.assertEqual(get(f"/api/v1/instances/{b1['id']}")["state"], "waiting")
        self.assertEqual(get(f"/api/v1/instances/{c1['id']}")["state"], "waiting")
        # the other cycle has none
        r = post(path, {"schedule_time": "2026-04-02T00:00:00Z"})
        self.assertEqual((r.status, r.json()["rerun"]), (200, 0))
        r = post(path, {"schedule_time": "soon"})
        self.assertEqual((r.status, r.json()["error"]["field"]), (400, "schedule_time"))
        r = post("/api/v1/workflows/no-such-wf/rerun-failed",
                 {"schedule_time": "2026-04-02T00:00:00Z"})
        self.assertEqual(r.status, 404, r)


class Backfill(unittest.TestCase):
    def test_downstream_dry_run_and_pacing(self):
        c = Chain("runs.bf")
        path = f"/api/v1/tasks/{c.ids['a']}/backfill"
        rng = {"from": "2026-04-03T00:00:00Z", "to": "2026-04-03T03:00:00Z"}
        r = post(path, dict(rng, include_downstream=True, mode="serial", dry_run=True))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["created"], [])
        planned = r.json()["planned"]
        self.assertEqual(len(planned), 9)
        self.assertEqual(sum(1 for p in planned if p["downstream"]), 6)
        self.assertEqual(get(f"/api/v1/instances?task_id={c.ids['b']}")["items"], [])
        r = post(path, dict(rng, include_downstream=True, mode="serial"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(len(r.json()["created"]), 9)
        self.assertEqual(r.json()["mode"], "serial")
        bid = r.json()["backfill_id"]
        b2 = c.instance("b", "2026-04-03T02:00:00Z")
        self.assertEqual(b2["backfill"], {"id": bid, "cycle": "2026-04-03T02:00:00Z",
                                          "max_cycles": 1})
        # the same range again: everything exists, nothing is created
        r = post(path, dict(rng, include_downstream=True, mode="parallel", max_cycles=2))
        self.assertEqual((len(r.json()["created"]), len(r.json()["existing"])), (0, 9))

    def test_backfill_bad_input(self):
        r = post("/api/v1/tasks", hourly("runs.bfbad"), "root")
        path = f"/api/v1/tasks/{r.json()['id']}/backfill"
        rng = {"from": "2026-04-03T00:00:00Z", "to": "2026-04-03T03:00:00Z"}
        for extra, field in (({"mode": "sometimes"}, "mode"),
                             ({"mode": "parallel"}, "max_cycles"),
                             ({"mode": "parallel", "max_cycles": 0}, "max_cycles"),
                             ({"mode": "serial", "max_cycles": 2}, "max_cycles"),
                             ({"include_downstream": "yes"}, "include_downstream")):
            r = post(path, dict(rng, **extra))
            self.assertEqual(r.status, 400, (extra, r))
            self.assertEqual(r.json()["error"]["field"], field, (extra, r))
        self.assertEqual(get(f"/api/v1/instances?task_id={path.split('/')[4]}")["items"], [])


if __name__ == "__main__":
    BUILD = sys.argv.pop(1)
    unittest.main(verbosity=2)
