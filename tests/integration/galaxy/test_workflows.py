#!/usr/bin/env python3
"""test_workflows.py - workflows as objects through galaxyd against the real
stack: a description and an owning team (PUT, PATCH), pause and resume (who
may, 404 for an unknown workflow, 409 twice in a row, the audit trail), the
pause shown on the workflow's tasks and instances, and bad input that
changes nothing.

usage: test_workflows.py BUILD_DIR
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = None
P = None
TOK = {}


def spec(name, team="etl"):
    return {"name": name, "team": team, "type": "shell", "schedule": "0 * * * *",
            "timezone": "UTC", "config": {"command": "/bin/true"}}


class Workflows(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        global P
        P = orrery_it.Platform(BUILD)
        P.__enter__()
        try:
            P.add_user("root", "root-password-1", "admin")
            P.add_user("ann", "ann-password-1", "developer", teams=["etl"])
            P.add_user("bob", "bob-password-1", "developer", teams=["ads"])
            P.add_user("vic", "vic-password-1", "viewer", teams=["etl"])
            for u in ("root", "ann", "bob", "vic"):
                TOK[u] = P.login(u, f"{u}-password-1")
            ids = []
            for n in ("wf.a", "wf.b"):
                r = P.http("POST", "/api/v1/tasks", spec(n), token=TOK["ann"])
                assert r.status == 201, r
                ids.append(r.json()["id"])
            r = P.http("POST", "/api/v1/tasks", spec("wf.other"), token=TOK["ann"])
            assert r.status == 201, r
            cls.other = r.json()["id"]
            cls.ids = ids
            r = P.http("POST", f"/api/v1/tasks/{ids[0]}/backfill",
                       {"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T02:00:00Z"},
                       token=TOK["ann"])
            assert r.status == 200, r
            cls.inst = r.json()["created"][0]
        except BaseException:
            P.__exit__(None, None, None)
            raise

    @classmethod
    def tearDownClass(cls):
        P.__exit__(None, None, None)

    def put(self, name, body, who="ann"):
        return P.http("PUT", f"/api/v1/workflows/{name}", body, token=TOK[who])

    def test_description_and_team(self):
        r = self.put("etl-day", {"team": "etl", "task_ids": self.ids,
                                 "description": "The nightly load."})
        self.assertEqual(r.status, 200, r)
        w = r.json()
        self.assertEqual((w["description"], w["team"], w["paused"], w["paused_by"]),
                         ("The nightly load.", "etl", False, None))
        # A PUT without a description keeps the stored one.
        r = self.put("etl-day", {"team": "etl", "task_ids": self.ids})
        self.assertEqual(r.json()["description"], "The nightly load.")
        r = P.http("PATCH", "/api/v1/workflows/etl-day", {"description": "Loads at night."},
                   token=TOK["ann"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["description"], "Loads at night.")
        self.assertEqual(r.json()["task_ids"], sorted(self.ids))
        # Another team's developer, a viewer: 403, nothing changed.
        for who in ("bob", "vic"):
            r = P.http("PATCH", "/api/v1/workflows/etl-day", {"description": "x"}, token=TOK[who])
            self.assertEqual(r.status, 403, r)
        # Moving it to a team the developer is not in: 403.
        r = P.http("PATCH", "/api/v1/workflows/etl-day", {"team": "ads"}, token=TOK["ann"])
        self.assertEqual(r.status, 403, r)
        self.assertEqual(r.json()["error"]["field"], "team")
        # Bad input names the field and stores nothing.
        for body, field in (({"description": "x" * 2001}, "description"),
                            ({"description": 3}, "description"),
                            ({}, "description"),
                            ({"colour": "red"}, "colour"),
                            ({"team": "no such team!"}, "team")):
            r = P.http("PATCH", "/api/v1/workflows/etl-day", body, token=TOK["ann"])
            self.assertEqual(r.status, 400, (body, r))
            self.assertEqual(r.json()["error"]["field"], field, (body, r))
        r = P.http("GET", "/api/v1/workflows/etl-day", token=TOK["vic"])
        self.assertEqual(r.json()["description"], "Loads at night.")
        self.assertEqual(r.json()["team"], "etl")
        r = P.http("PATCH", "/api/v1/workflows/nope", {"description": "x"}, token=TOK["ann"])
        self.assertEqual(r.status, 404, r)
        r = self.put("etl-day", {"team": "etl", "task_ids": self.ids, "description": "y" * 2001})
        self.assertEqual((r.status, r.json()["error"]["field"]), (400, "description"))

    def test_pause_and_resume(self):
        r = self.put("etl-hold", {"team": "etl", "task_ids": [self.ids[0]]})
        self.assertEqual(r.status, 200, r)
        # Who may: the owning team's developers and admins.
        for who, code in (("vic", 403), ("bob", 403)):
            r = P.http("POST", "/api/v1/workflows/etl-hold/pause", {}, token=TOK[who])
            self.assertEqual(r.status, code, (who, r))
        r = P.http("GET", "/api/v1/workflows/etl-hold", token=TOK["vic"])
        self.assertFalse(r.json()["paused"], "a refused pause changed nothing")
        r = P.http("POST", "/api/v1/workflows/nope/pause", {}, token=TOK["root"])
        self.assertEqual(r.status, 404, r)
        r = P.http("POST", "/api/v1/workflows/bad%20name/pause", {}, token=TOK["root"])
        self.assertEqual((r.status, r.json()["error"]["field"]), (400, "name"))
        r = P.http("POST", "/api/v1/workflows/etl-hold/resume", {}, token=TOK["ann"])
        self.assertEqual(r.status, 409, "resuming a workflow that is not paused")
        r = P.http("POST", "/api/v1/workflows/etl-hold/pause", {}, token=TOK["ann"])
        self.assertEqual(r.status, 200, r)
        w = r.json()
        self.assertTrue(w["paused"])
        self.assertEqual(w["paused_by"], "user:ann")
        self.assertIsNotNone(w["paused_at"])
        r = P.http("POST", "/api/v1/workflows/etl-hold/pause", {}, token=TOK["ann"])
        self.assertEqual(r.status, 409, "pausing twice")
        # Shown wherever the task appears: the task list, the instance list,
        # the instance, the workflow's tasks; other tasks are not held.
        tasks = P.http("GET", "/api/v1/tasks?limit=1000", token=TOK["vic"]).json()["items"]
        held = {t["id"]: t["paused"] for t in tasks}
        self.assertEqual(held[self.ids[0]]["workflow"], "etl-hold")
        self.assertEqual(held[self.ids[0]]["by"], "user:ann")
        self.assertIsNone(held[self.other])
        r = P.http("GET", f"/api/v1/tasks/{self.ids[0]}", token=TOK["vic"])
        self.assertEqual(r.json()["paused"]["workflow"], "etl-hold")
        r = P.http("GET", f"/api/v1/instances/{self.inst}", token=TOK["vic"])
        self.assertEqual(r.json()["paused"]["workflow"], "etl-hold")
        items = P.http("GET", f"/api/v1/instances?task_id={self.ids[0]}",
                       token=TOK["vic"]).json()["items"]
        self.assertTrue(items and all(i["paused"]["workflow"] == "etl-hold" for i in items))
        r = P.http("GET", "/api/v1/workflows/etl-hold", token=TOK["vic"])
        self.assertEqual(r.json()["tasks"][0]["paused"]["workflow"], "etl-hold")
        lst = P.http("GET", "/api/v1/workflows", token=TOK["vic"]).json()["items"]
        self.assertTrue(any(x["name"] == "etl-hold" and x["paused"] for x in lst))
        # An admin resumes it; the trail names both.
        r = P.http("POST", "/api/v1/workflows/etl-hold/resume", {}, token=TOK["root"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json()["paused"], r.json()["paused_by"]), (False, None))
        r = P.http("GET", f"/api/v1/instances/{self.inst}", token=TOK["vic"])
        self.assertIsNone(r.json()["paused"])
        r = P.http("GET", f"/api/v1/tasks/{self.ids[0]}", token=TOK["vic"])
        self.assertIsNone(r.json()["paused"], "the task page is not served from before the resume")
        audit = P.http("GET", "/api/v1/audit?object=workflow:etl-hold",
                       token=TOK["root"]).json()["items"]
        acts = [(a["action"], a["actor"]) for a in audit]
        self.assertIn(("workflow.pause", "user:ann"), acts)
        self.assertIn(("workflow.resume", "user:root"), acts)
        self.assertEqual(len([a for a in acts if a[0] == "workflow.pause"]), 1,
                         "refused pauses leave no audit record")


if __name__ == "__main__":
    BUILD = sys.argv.pop(1)
    unittest.main()
