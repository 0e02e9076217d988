#!/usr/bin/env python3
"""test_versions.py - task versions and named parameters through the REST
API, against real halleyd.

Versions: a save with ?comment= keeps it; GET /tasks/{id}/versions lists
newest first with author and comment; /diff lists the changed fields with
both specs; /rollback saves the old spec as a NEW version (restored_from,
the audit says task.rollback) and a rollback to the current spec is "no
change"; /reactivate brings back a deactivated task; an instance's
task_version names the version it runs. Parameters: a bad substitution is
refused at save (and by validate) naming the field; backfill stores params
on the instances it creates and refuses an undeclared name naming it,
creating nothing; PUT /instances/{id}/params replaces them. Bad input:
unknown version 404, unknown task 404, missing or bad fields 400 naming
them, a developer of another team 403.

usage: test_versions.py BUILD_DIR
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = None
P = None
TOK = {}


def spec(name, command, params=None, team="etl"):
    s = {"name": name, "team": team, "type": "shell", "schedule": "0 * * * *",
         "timezone": "UTC", "config": {"command": command}}
    if params is not None:
        s["parameters"] = params
    return s


def setUpModule():
    global P
    P = orrery_it.Platform(BUILD).__enter__()
    P.add_user("ann", "ann-password-1", "developer", teams=["etl"])
    P.add_user("bob", "bob-password-1", "developer", teams=["ads"])
    P.add_user("root", "root-password-1", "admin")
    for u in ("ann", "bob", "root"):
        TOK[u] = P.login(u, f"{u}-password-1")


def tearDownModule():
    if P:
        P.__exit__(None, None, None)


class Versions(unittest.TestCase):
    def call(self, method, path, body=None, who="ann", want=200):
        r = P.http(method, path, body, token=TOK[who])
        self.assertEqual(r.status, want, (method, path, r))
        return r.json()

    def refused(self, r, status, field, words=""):
        self.assertEqual(r.status, status, r)
        err = r.json()["error"]
        self.assertEqual(err["field"], field, err)
        self.assertIn(words, err["message"], err)

    def test_list_diff_rollback_reactivate(self):
        p = {"region": {"default": "eu"}}
        t = self.call("POST", "/api/v1/tasks", spec("etl.ver", "echo one", p), want=201)
        tid = t["id"]
        v2 = self.call("PUT", f"/api/v1/tasks/{tid}?comment=louder",
                       spec("etl.ver", "echo TWO ${region}", p))
        self.assertEqual((v2["version"], v2["comment"], v2["changed"]), (2, "louder", True))

        ls = self.call("GET", f"/api/v1/tasks/{tid}/versions")
        self.assertEqual([v["version"] for v in ls["items"]], [2, 1])
        self.assertEqual(ls["items"][0]["comment"], "louder")
        self.assertEqual(ls["items"][0]["created_by"], "user:ann")
        self.assertTrue(ls["items"][0]["current"])
        self.assertFalse(ls["items"][1]["current"])
        self.assertEqual(ls["current_version"], 2)

        d = self.call("GET", f"/api/v1/tasks/{tid}/diff?from=1&to=2")
        self.assertEqual(d["changes"], [{"field": "config.command", "change": "changed",
                                         "from": "echo one", "to": "echo TWO ${region}"}])
        self.assertEqual(d["from"]["spec"]["config"]["command"], "echo one")
        self.assertEqual(d["to"]["version"], 2)

        # rollback to 1: a new version 3, audited as a rollback
        rb = self.call("POST", f"/api/v1/tasks/{tid}/rollback", {"version": 1})
        self.assertEqual((rb["version"], rb["restored_from"], rb["changed"]), (3, 1, True))
        self.assertEqual(rb["spec"]["config"]["command"], "echo one")
        self.assertIn("rollback to version 1", rb["comment"])
        again = self.call("POST", f"/api/v1/tasks/{tid}/rollback", {"version": 1})
        self.assertEqual((again["version"], again["changed"]), (3, False))
        d = self.call("GET", f"/api/v1/tasks/{tid}/diff?from=1&to=3")
        self.assertEqual(d["changes"], [])
        audit = self.call("GET", "/api/v1/audit?limit=50", who="root")
        acts = [e for e in audit["items"] if e.get("object") == "task:etl.ver"]
        self.assertIn("task.rollback", [e["action"] for e in acts], acts)

        # bad input
        self.refused(P.http("GET", f"/api/v1/tasks/{tid}/diff?from=1&to=9", token=TOK["ann"]),
                     404, "version")
        self.refused(P.http("GET", f"/api/v1/tasks/{tid}/diff?from=1", token=TOK["ann"]),
                     400, "to")
        self.refused(P.http("GET", f"/api/v1/tasks/{tid}/diff?from=x&to=1", token=TOK["ann"]),
                     400, "from")
        self.refused(P.http("POST", f"/api/v1/tasks/{tid}/rollback", {"version": 9},
                            token=TOK["ann"]), 404, "version")
        self.refused(P.http("POST", f"/api/v1/tasks/{tid}/rollback", {}, token=TOK["ann"]),
                     400, "version")
        self.refused(P.http("POST", f"/api/v1/tasks/{tid}/rollback", {"version": 1, "x": 1},
                            token=TOK["ann"]), 400, "x")
        self.refused(P.http("POST", f"/api/v1/tasks/{tid}/rollback", {"version": 1},
                            token=TOK["ann"], headers={"If-Match": "2"}), 409,
                     "expected_version")
        self.assertEqual(P.http("GET", "/api/v1/tasks/999999/versions", token=TOK["ann"]).status,
                         404)
        self.assertEqual(P.http("POST", f"/api/v1/tasks/{tid}/rollback", {"version": 1},
                                token=TOK["bob"]).status, 403)

        # deactivate, reactivate
        self.call("DELETE", f"/api/v1/tasks/{tid}")
        self.assertFalse(self.call("GET", f"/api/v1/tasks/{tid}")["active"])
        self.assertEqual(P.http("POST", f"/api/v1/tasks/{tid}/reactivate",
                                token=TOK["bob"]).status, 403)
        t = self.call("POST", f"/api/v1/tasks/{tid}/reactivate")
        self.assertTrue(t["active"])
        self.assertEqual(P.http("POST", "/api/v1/tasks/999999/reactivate",
                                token=TOK["ann"]).status, 404)

        # an instance names the version it runs
        bf = self.call("POST", f"/api/v1/tasks/{tid}/backfill",
                       {"from": "2026-03-01T00:00:00Z", "to": "2026-03-01T01:00:00Z"})
        inst = self.call("GET", f"/api/v1/instances/{bf['created'][0]}")
        self.assertEqual(inst["task_version"], 3)

    def test_parameters(self):
        p = {"region": {"default": "eu", "description": "where"}, "day": {}}
        # bad substitutions are refused at save and by validate, naming the field
        for cmd, words in (("echo ${regoin}", "unknown parameter \"regoin\""),
                           ("echo ${region", "no closing }"),
                           ("echo ${schedule_time:%Q}", "%Q"),
                           ("echo ${region:%Y}", "only schedule_time")):
            s = spec("etl.badsub", cmd, p)
            self.refused(P.http("POST", "/api/v1/tasks/validate", s, token=TOK["ann"]), 400,
                         "spec.config.command", words)
            self.refused(P.http("POST", "/api/v1/tasks", s, token=TOK["ann"]), 400,
                         "spec.config.command", words)
        self.refused(P.http("POST", "/api/v1/tasks",
                            spec("etl.badsub", "x", {"task": {"default": "y"}}),
                            token=TOK["ann"]), 400, "spec.parameters.task", "built-in")
        self.refused(P.http("POST", "/api/v1/tasks", spec("etl.badsub", "x", {"Bad": {}}),
                            token=TOK["ann"]), 400, "spec.parameters.Bad")

        cmd = "echo ${region} ${day} ${schedule_time:%Y%m%d} $${HOME}"
        t = self.call("POST", "/api/v1/tasks", spec("etl.params", cmd, p), want=201)
        tid = t["id"]
        self.call("POST", "/api/v1/tasks/validate", spec("etl.params", cmd, p))
        # an undeclared name: 400 naming it, nothing created
        r = P.http("POST", f"/api/v1/tasks/{tid}/backfill",
                   {"from": "2026-04-01T00:00:00Z", "to": "2026-04-01T03:00:00Z",
                    "params": {"regoin": "us"}}, token=TOK["ann"])
        self.refused(r, 400, "params.regoin", "unknown parameter")
        r = P.http("POST", f"/api/v1/tasks/{tid}/backfill",
                   {"from": "2026-04-01T00:00:00Z", "to": "2026-04-01T03:00:00Z",
                    "params": {"region": 5}}, token=TOK["ann"])
        self.refused(r, 400, "params.region")
        r = P.http("POST", f"/api/v1/tasks/{tid}/backfill",
                   {"from": "2026-04-01T00:00:00Z", "to": "2026-04-01T03:00:00Z",
                    "params": ["x"]}, token=TOK["ann"])
        self.refused(r, 400, "params")
        ls = self.call("GET", f"/api/v1/instances?task_id={tid}")
        self.assertEqual(ls["items"], [])
        # declared: stored with each instance created
        bf = self.call("POST", f"/api/v1/tasks/{tid}/backfill",
                       {"from": "2026-04-01T00:00:00Z", "to": "2026-04-01T03:00:00Z",
                        "params": {"region": "us"}})
        self.assertEqual(len(bf["created"]), 3)
        for i in bf["created"]:
            self.assertEqual(self.call("GET", f"/api/v1/instances/{i}")["params"],
                             {"region": "us"})
        # replace one instance's values
        i0 = bf["created"][0]
        out = self.call("PUT", f"/api/v1/instances/{i0}/params",
                        {"params": {"region": "ap", "day": "mon"}})
        self.assertEqual(out["params"], {"day": "mon", "region": "ap"})
        self.refused(P.http("PUT", f"/api/v1/instances/{i0}/params", {"params": {"zone": "x"}},
                            token=TOK["ann"]), 400, "params.zone", "unknown parameter")
        self.refused(P.http("PUT", f"/api/v1/instances/{i0}/params", {}, token=TOK["ann"]),
                     400, "params")
        self.refused(P.http("PUT", f"/api/v1/instances/{i0}/params", {"params": {"day": 1}},
                            token=TOK["ann"]), 400, "params.day")
        self.assertEqual(P.http("PUT", f"/api/v1/instances/{i0}/params", {"params": {}},
                                token=TOK["bob"]).status, 403)
        self.assertEqual(P.http("PUT", "/api/v1/instances/999999/params", {"params": {}},
                                token=TOK["ann"]).status, 404)
        self.assertEqual(self.call("GET", f"/api/v1/instances/{i0}")["params"],
                         {"day": "mon", "region": "ap"})


if __name__ == "__main__":
    BUILD = sys.argv.pop(1)
    unittest.main(verbosity=2)
