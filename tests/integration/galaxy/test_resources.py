#!/usr/bin/env python3
"""test_resources.py - galaxyd's "why is it waiting" and resource-limit
routes against real halleyd and PostgreSQL.

The blockers of an instance as the scheduler recorded them (a row written
the way keplerd's PutBlockers writes it), with the holders of a pool and
the schedule time of an upstream; a suspended instance says so. Executor
settings, team quotas and task type limits: their success paths, the hold
of type limits on task specs (400 naming the field, nothing saved;
defaults given), and bad input on every route (400 naming the field, 404
for an unknown team or instance).

usage: test_resources.py BUILD_DIR
"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = None
P = None
TOK = {}


def shell_task(name, team, **extra):
    spec = {"name": name, "team": team, "type": "shell", "schedule": "0 * * * *",
            "timezone": "UTC", "config": {"command": "/bin/true"}}
    spec.update(extra)
    return spec


def setUpModule():
    global P
    P = orrery_it.Platform(BUILD).__enter__()
    P.add_user("root", "root-password-1", "admin")
    P.add_user("ann", "ann-password-1", "developer", teams=["rsc"])
    P.add_user("vic", "vic-password-1", "viewer", teams=["rsc"])
    for u in ("root", "ann", "vic"):
        TOK[u] = P.login(u, f"{u}-password-1")


def tearDownModule():
    if P:
        P.__exit__(None, None, None)


class Resources(unittest.TestCase):
    def field(self, r, status, field):
        self.assertEqual(r.status, status, r)
        self.assertEqual(r.json()["error"]["field"], field, r)

    def test_blockers(self):
        r = P.http("POST", "/api/v1/tasks", shell_task("rsc.wait", "rsc"), token=TOK["ann"])
        self.assertEqual(r.status, 201, r)
        task = r.json()["id"]
        r = P.http("POST", f"/api/v1/tasks/{task}/backfill",
                   {"from": "2026-05-01T00:00:00Z", "to": "2026-05-01T02:00:00Z"},
                   token=TOK["ann"])
        self.assertEqual(r.status, 200, r)
        a, b = sorted(r.json()["created"])
        # nothing evaluated yet
        r = P.http("GET", f"/api/v1/instances/{a}/blockers", token=TOK["vic"])
        self.assertEqual(r.status, 200, r)
        got = r.json()
        self.assertEqual((got["state"], got["waiting"], got["evaluated_at"], got["blockers"]),
                         ("waiting", True, None, []))
        # what keplerd writes: an upstream and a pool; b holds the pool
        blockers = [{"kind": "upstream", "dependency": "strong", "task": "rsc.up",
                     "task_id": 99, "schedule_time_ms": 1777593600000, "instance_id": None,
                     "state": "not_created"},
                    {"kind": "pool", "pool": "rsc-pool", "tokens": 1}]
        orrery_it.psql(P.dsn, "INSERT INTO resource_pools (name, capacity) VALUES ('rsc-pool', 1);"
                       f" UPDATE instances SET state = 'running', executor = 'e1' WHERE id = {b};"
                       f" INSERT INTO pool_leases (pool, instance_id, tokens) VALUES"
                       f" ('rsc-pool', {b}, 1);"
                       " INSERT INTO instance_blockers (instance_id, attempt, blockers, evaluated_at)"
                       f" VALUES ({a}, 1, '{json.dumps(blockers)}', now())")
        r = P.http("GET", f"/api/v1/instances/{a}/blockers", token=TOK["vic"])
        got = r.json()
        self.assertTrue(got["current"] and got["evaluated_at"], got)
        up, pool = got["blockers"]
        self.assertEqual(up["schedule_time"], "2026-05-01T00:00:00Z")
        self.assertIsNone(up["instance_id"])
        self.assertEqual([(h["instance_id"], h["task"], h["state"]) for h in pool["holders"]],
                         [(b, "rsc.wait", "running")])
        # suspended: says so, whatever was evaluated before
        r = P.http("POST", f"/api/v1/instances/{a}/actions/suspend", {}, token=TOK["ann"])
        self.assertEqual(r.status, 200, r)
        got = P.http("GET", f"/api/v1/instances/{a}/blockers", token=TOK["vic"]).json()
        self.assertEqual(got["blockers"], [{"kind": "suspended"}])
        # a running instance has none
        got = P.http("GET", f"/api/v1/instances/{b}/blockers", token=TOK["vic"]).json()
        self.assertEqual((got["waiting"], got["blockers"]), (False, []))
        self.field(P.http("GET", "/api/v1/instances/0/blockers", token=TOK["vic"]), 400, "id")
        self.field(P.http("GET", "/api/v1/instances/x1/blockers", token=TOK["vic"]), 400, "id")
        r = P.http("GET", "/api/v1/instances/987654321/blockers", token=TOK["vic"])
        self.assertEqual(r.status, 404, r)

    def test_executor_settings(self):
        url = "/api/v1/executors/rsc-ex1"
        r = P.http("PATCH", url, {"drained": True, "slots": 2, "labels": {"zone": "a"}},
                   token=TOK["root"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json(), {"id": "rsc-ex1", "drained": True, "slots_override": 2,
                                    "labels_override": {"zone": "a"}})
        r = P.http("PATCH", url, {"drained": False, "slots": None}, token=TOK["root"])
        self.assertEqual(r.json(), {"id": "rsc-ex1", "drained": False, "slots_override": None,
                                    "labels_override": {"zone": "a"}})
        for body, field in (({}, "drained"), ({"drained": 1}, "drained"),
                            ({"slots": -1}, "slots"), ({"slots": 100001}, "slots"),
                            ({"slots": "2"}, "slots"), ({"labels": []}, "labels"),
                            ({"labels": {"zone": 1}}, "labels.zone"), ({"what": 1}, "what")):
            with self.subTest(body=body):
                self.field(P.http("PATCH", url, body, token=TOK["root"]), 400, field)
        self.field(P.http("PATCH", "/api/v1/executors/bad%20id", {"drained": True},
                          token=TOK["root"]), 400, "name")
        # the refusals changed nothing
        r = P.http("PATCH", url, {"labels": None}, token=TOK["root"])
        self.assertEqual(r.json(), {"id": "rsc-ex1", "drained": False, "slots_override": None,
                                    "labels_override": None})

    def test_quotas(self):
        r = P.http("PUT", "/api/v1/quotas/rsc", {"max_running": 3, "max_slots": 0},
                   token=TOK["root"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json()["team"], r.json()["max_running"], r.json()["max_slots"]),
                         ("rsc", 3, 0))
        r = P.http("GET", "/api/v1/quotas", token=TOK["vic"])
        self.assertIn(("rsc", 3, 0), [(q["team"], q["max_running"], q["max_slots"])
                                      for q in r.json()["items"]])
        self.field(P.http("PUT", "/api/v1/quotas/nobody", {"max_running": 1, "max_slots": 1},
                          token=TOK["root"]), 404, "team")
        for body, field in (({"max_running": -1, "max_slots": 0}, "max_running"),
                            ({"max_running": 1}, "max_slots"),
                            ({"max_running": 1, "max_slots": "x"}, "max_slots"),
                            ({"max_running": 1, "max_slots": 1, "x": 1}, "x")):
            with self.subTest(body=body):
                self.field(P.http("PUT", "/api/v1/quotas/rsc", body, token=TOK["root"]), 400,
                           field)
        r = P.http("GET", "/api/v1/quotas", token=TOK["vic"])
        self.assertIn(("rsc", 3, 0), [(q["team"], q["max_running"], q["max_slots"])
                                      for q in r.json()["items"]])

    def test_type_limits(self):
        for body, field in (({}, "limits"), ({"limits": []}, "limits"),
                            ({"limits": {"disk": {}}}, "limits.disk"),
                            ({"limits": {"memory": {"max": "lots"}}}, "limits.memory.max"),
                            ({"limits": {"cpu": {"default": 4, "max": 2}}}, "limits.cpu.default")):
            with self.subTest(body=body):
                self.field(P.http("PUT", "/api/v1/task-types/transfer/limits", body,
                                  token=TOK["root"]), 400, field)
        lim = {"memory": {"default": "256m", "max": "1g"}, "pids": {"max": 100},
               "run_time": {"default": "20m", "max": "1h"}}
        r = P.http("PUT", "/api/v1/task-types/shell/limits", {"limits": lim}, token=TOK["root"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["limits"], lim)
        r = P.http("GET", "/api/v1/task-types/limits", token=TOK["vic"])
        self.assertIn(("shell", lim), [(x["type"], x["limits"]) for x in r.json()["items"]])
        # a spec above a maximum: refused naming the field, nothing saved
        for extra, field in (({"limits": {"memory": "2g"}}, "spec.limits.memory"),
                             ({"limits": {"pids": 101}}, "spec.limits.pids"),
                             ({"timeout": "2h"}, "spec.timeout")):
            with self.subTest(extra=extra):
                self.field(P.http("POST", "/api/v1/tasks", shell_task("rsc.big", "rsc", **extra),
                                  token=TOK["ann"]), 400, field)
        r = P.http("GET", "/api/v1/tasks?limit=1000", token=TOK["vic"])
        self.assertNotIn("rsc.big", [t["name"] for t in r.json()["items"]])
        # within: saved, the defaults given to what it leaves out
        r = P.http("POST", "/api/v1/tasks", shell_task("rsc.small", "rsc",
                                                       limits={"pids": 50}), token=TOK["ann"])
        self.assertEqual(r.status, 201, r)
        spec = r.json()["spec"]
        self.assertEqual((spec["limits"], spec["timeout"]),
                         ({"pids": 50, "memory": "256m"}, "20m"))


if __name__ == "__main__":
    BUILD = sys.argv.pop(1)
    unittest.main(verbosity=2)
