#!/usr/bin/env python3
"""test_api.py - galaxyd's REST API against real halleyd and PostgreSQL.

Login and sessions, tasks and versions, backfill and instance actions,
schedules, pools, users, data sources, bad input (never a crash, never a
half-applied change), the operational endpoints. The role x team x action
matrix lives in test_authz.py.

usage: test_api.py BUILD_DIR
"""
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
    # Failed logins wait 5 s past the free ones: long next to a request, so
    # an attempt made right after a heard failure is surely within it.
    os.environ["ORRERY_GALAXY_LOGIN_DELAY"] = "5s"
    P = orrery_it.Platform(BUILD).__enter__()
    P.add_user("root", "root-password-1", "admin")
    P.add_user("ann", "ann-password-1", "developer", teams=["etl"])
    P.add_user("bob", "bob-password-1", "developer", teams=["ads"])
    P.add_user("vic", "vic-password-1", "viewer", teams=["etl"])
    for u in ("root", "ann", "bob", "vic"):
        TOK[u] = P.login(u, f"{u}-password-1")


def tearDownModule():
    if P:
        P.__exit__(None, None, None)


class Auth(unittest.TestCase):
    def test_login_sets_strict_httponly_cookie(self):
        r = P.http("POST", "/api/v1/auth/login", {"name": "ann", "password": "ann-password-1"})
        self.assertEqual(r.status, 200, r)
        body = r.json()
        self.assertEqual(body["user"]["name"], "ann")
        self.assertEqual(body["user"]["role"], "developer")
        cookie = r.headers["Set-Cookie"]
        self.assertIn("orrery_session=" + body["token"], cookie)
        self.assertIn("HttpOnly", cookie)
        self.assertIn("SameSite=Strict", cookie)
        # The cookie alone authenticates.
        me = P.http("GET", "/api/v1/auth/me", headers={"Cookie": "orrery_session=" + body["token"]})
        self.assertEqual(me.status, 200, me)
        self.assertEqual(me.json()["teams"], ["etl"])

    def test_wrong_password_and_unknown_user_look_the_same(self):
        a = P.http("POST", "/api/v1/auth/login", {"name": "vic", "password": "nope"})
        b = P.http("POST", "/api/v1/auth/login", {"name": "nobody", "password": "nope"})
        self.assertEqual(a.status, 401)
        self.assertEqual(b.status, 401)
        self.assertEqual(a.json()["error"]["message"], b.json()["error"]["message"])

    def test_failed_logins_are_rate_limited(self):
        P.add_user("rl_user", "rl-password-1", "viewer")
        # Three free failures, then one that is heard and says when the next
        # attempt will be: before then even the right password is a 429.
        for i in range(4):
            r = P.http("POST", "/api/v1/auth/login", {"name": "rl_user", "password": "bad"})
            self.assertEqual(r.status, 401)
            self.assertEqual(r.headers.get("Retry-After") is not None, i == 3, (i, r.headers))
        r = P.http("POST", "/api/v1/auth/login", {"name": "rl_user", "password": "rl-password-1"})
        self.assertEqual(r.status, 429, r)
        self.assertTrue(int(r.headers["Retry-After"]) > 0)
        # Another user is not affected.
        r = P.http("POST", "/api/v1/auth/login", {"name": "vic", "password": "vic-password-1"})
        self.assertEqual(r.status, 200)

    def test_tokens_are_checked(self):
        self.assertEqual(P.http("GET", "/api/v1/tasks").status, 401)
        self.assertEqual(P.http("GET", "/api/v1/tasks", token="garbage").status, 401)
        t = TOK["vic"]
        tampered = t[:-3] + ("AAA" if not t.endswith("AAA") else "BBB")
        r = P.http("GET", "/api/v1/tasks", token=tampered)
        self.assertEqual(r.status, 401)
        self.assertEqual(r.json()["error"]["code"], "EAUTH")

    def test_login_bad_input(self):
        for body in ({"name": "ann"}, {"name": 5, "password": "x"},
                     {"name": "ann", "password": "x", "extra": 1}):
            r = P.http("POST", "/api/v1/auth/login", body)
            self.assertEqual(r.status, 400, (body, r))
            self.assertIn("field", r.json()["error"])
        r = P.http("POST", "/api/v1/auth/login", raw=b"{not json",
                   headers={"Content-Type": "application/json"})
        self.assertEqual(r.status, 400)


class Tasks(unittest.TestCase):
    def test_create_read_update_versions_deactivate(self):
        r = P.http("POST", "/api/v1/tasks", shell_task("etl.orders", "etl"), token=TOK["ann"])
        self.assertEqual(r.status, 201, r)
        t = r.json()
        self.assertEqual(t["version"], 1)
        self.assertEqual(t["spec"]["config"]["command"], "/bin/true")
        tid = t["id"]
        self.assertEqual(r.headers["Location"], f"/api/v1/tasks/{tid}")
        spec2 = shell_task("etl.orders", "etl", config={"command": "/bin/echo", "args": ["v2"]})
        r = P.http("PUT", f"/api/v1/tasks/{tid}", spec2, token=TOK["ann"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["version"], 2)
        self.assertTrue(r.json()["changed"])
        # Version 1 is kept.
        r = P.http("GET", f"/api/v1/tasks/{tid}/versions/1", token=TOK["vic"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["spec"]["config"]["command"], "/bin/true")
        # Compare-and-set with If-Match.
        r = P.http("PUT", f"/api/v1/tasks/{tid}", spec2, token=TOK["ann"], headers={"If-Match": "1"})
        self.assertEqual(r.status, 409, r)
        # The same spec again (keys in another order): no new version.
        same = dict(reversed(list(spec2.items())))
        r = P.http("PUT", f"/api/v1/tasks/{tid}", same, token=TOK["ann"], headers={"If-Match": "2"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["version"], 2)
        self.assertEqual(r.json()["current_version"], 2)
        self.assertFalse(r.json()["changed"])
        r = P.http("GET", f"/api/v1/tasks/{tid}/versions/3", token=TOK["vic"])
        self.assertEqual(r.status, 404, r)
        spec3 = shell_task("etl.orders", "etl", config={"command": "/bin/echo", "args": ["v3"]})
        r = P.http("PUT", f"/api/v1/tasks/{tid}", spec3, token=TOK["ann"], headers={"If-Match": "2"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["version"], 3)
        self.assertTrue(r.json()["changed"])
        # Listing and filters.
        r = P.http("GET", "/api/v1/tasks?team=etl&q=etl.ord", token=TOK["vic"])
        self.assertEqual(r.status, 200)
        self.assertIn(tid, [x["id"] for x in r.json()["items"]])
        r = P.http("DELETE", f"/api/v1/tasks/{tid}", token=TOK["ann"])
        self.assertEqual(r.status, 200, r)
        self.assertFalse(r.json()["active"])
        r = P.http("GET", "/api/v1/tasks?team=etl", token=TOK["vic"])
        self.assertNotIn(tid, [x["id"] for x in r.json()["items"]])
        r = P.http("GET", "/api/v1/tasks?team=etl&active=any", token=TOK["vic"])
        self.assertIn(tid, [x["id"] for x in r.json()["items"]])

    def test_invalid_spec_names_the_field_and_saves_nothing(self):
        bad = shell_task("etl.bad", "etl", retries={"max": -1})
        r = P.http("POST", "/api/v1/tasks", bad, token=TOK["ann"])
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.json()["error"]["field"], "spec.retries.max")
        bad = shell_task("etl.bad", "etl", config={"command": "x", "bogus": 1})
        r = P.http("POST", "/api/v1/tasks", bad, token=TOK["ann"])
        self.assertEqual(r.status, 400, r)
        self.assertIn("bogus", r.json()["error"]["field"])
        # deadlines: a clock time out of range, start_by after finish_by
        for dl, field in (({"finish_by": "24:00"}, "spec.deadlines.finish_by"),
                          ({"start_by": "3h", "finish_by": "2h"}, "spec.deadlines.start_by")):
            bad = shell_task("etl.bad", "etl", deadlines=dl)
            r = P.http("POST", "/api/v1/tasks", bad, token=TOK["ann"])
            self.assertEqual(r.status, 400, r)
            self.assertEqual(r.json()["error"]["field"], field)
        r = P.http("GET", "/api/v1/tasks?q=etl.bad&active=any", token=TOK["ann"])
        self.assertEqual(r.json()["items"], [])

    def test_validate_without_saving(self):
        r = P.http("POST", "/api/v1/tasks/validate", shell_task("etl.v", "etl"), token=TOK["vic"])
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.json()["valid"])
        self.assertEqual(len(r.json()["next"]), 5)
        r = P.http("POST", "/api/v1/tasks/validate",
                   shell_task("etl.v", "etl", schedule="0 0 32 * *"), token=TOK["vic"])
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.json()["error"]["field"], "spec.schedule")
        self.assertIn("day-of-month", r.json()["error"]["message"])
        r = P.http("POST", "/api/v1/tasks/validate", shell_task("etl.v", "etl", slots=0),
                   token=TOK["vic"])
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.json()["error"]["field"], "spec.slots")
        r = P.http("GET", "/api/v1/tasks?q=etl.v&active=any", token=TOK["vic"])
        self.assertEqual(r.json()["items"], [])

    def test_schedule_preview(self):
        r = P.http("GET", "/api/v1/schedule/next?cron=0+30+2+*+*+%3F&tz=Europe/Berlin"
                   "&from=2026-03-28T00:00:00Z&count=2", token=TOK["vic"])
        self.assertEqual(r.status, 200, r)
        # 02:30 Berlin does not exist on 2026-03-29: it fires once at the end of the gap.
        self.assertEqual(r.json()["times"], ["2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z"])
        r = P.http("GET", "/api/v1/schedule/next?cron=61+*+*+*+*", token=TOK["vic"])
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json()["error"]["field"], "cron")

    def test_quartz_and_unix_schedules(self):
        for i, cron in enumerate(("0 30 2 * * ?", "0 0 12 ? * MON-FRI 2027", "15 3 * * *", "@daily")):
            r = P.http("POST", "/api/v1/tasks", shell_task(f"etl.cron{i}", "etl", schedule=cron),
                       token=TOK["ann"])
            self.assertEqual(r.status, 201, (cron, r))
        r = P.http("POST", "/api/v1/tasks", shell_task("etl.cronbad", "etl", schedule="* * *"),
                   token=TOK["ann"])
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.json()["error"]["field"], "spec.schedule")

    def test_duplicate_name_is_409(self):
        s = shell_task("etl.dup", "etl")
        self.assertEqual(P.http("POST", "/api/v1/tasks", s, token=TOK["ann"]).status, 201)
        r = P.http("POST", "/api/v1/tasks", s, token=TOK["ann"])
        self.assertEqual(r.status, 409, r)

    def test_not_found_and_bad_ids(self):
        self.assertEqual(P.http("GET", "/api/v1/tasks/999999", token=TOK["vic"]).status, 404)
        r = P.http("GET", "/api/v1/tasks/abc", token=TOK["vic"])
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json()["error"]["field"], "id")
        self.assertEqual(P.http("GET", "/api/v1/tasks?limit=0", token=TOK["vic"]).status, 400)


class Instances(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        r = P.http("POST", "/api/v1/tasks", shell_task("etl.hourly", "etl"), token=TOK["ann"])
        assert r.status == 201, r
        cls.task = r.json()["id"]

    def backfill(self, frm, to):
        r = P.http("POST", f"/api/v1/tasks/{self.task}/backfill", {"from": frm, "to": to},
                   token=TOK["ann"])
        self.assertEqual(r.status, 200, r)
        return r.json()

    def test_backfill_is_idempotent(self):
        a = self.backfill("2026-05-01T00:00:00Z", "2026-05-01T06:00:00Z")
        self.assertEqual(a["fire_times"], 6)
        self.assertEqual(len(a["created"]), 6)
        b = self.backfill("2026-05-01T03:00:00Z", "2026-05-01T09:00:00Z")
        self.assertEqual(sorted(b["existing"]), sorted(a["created"][3:]))
        self.assertEqual(len(b["created"]), 3)
        r = P.http("GET", f"/api/v1/instances?task_id={self.task}&from=2026-05-01T00:00:00Z"
                   "&to=2026-05-01T09:00:00Z&limit=100", token=TOK["vic"])
        self.assertEqual(r.status, 200, r)
        items = r.json()["items"]
        self.assertEqual(len(items), 9)
        self.assertTrue(all(i["state"] == "waiting" for i in items))
        r = P.http("POST", f"/api/v1/tasks/{self.task}/backfill",
                   {"from": "2026-05-02T00:00:00Z", "to": "2026-05-01T00:00:00Z"}, token=TOK["ann"])
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json()["error"]["field"], "to")
        r = P.http("POST", f"/api/v1/tasks/{self.task}/backfill",
                   {"from": "2026-01-01T00:00:00Z", "to": "2027-01-01T00:00:00Z"}, token=TOK["ann"])
        self.assertEqual(r.status, 400, r)  # more than 1000 fire times
        self.assertEqual(r.json()["error"]["field"], "to")

    def test_actions_follow_the_state_machine(self):
        ids = self.backfill("2026-06-01T00:00:00Z", "2026-06-01T02:00:00Z")["created"]
        i = ids[0]
        act = lambda a: P.http("POST", f"/api/v1/instances/{i}/actions/{a}",
                               {"reason": f"test {a}"}, token=TOK["ann"])
        r = act("resume")
        self.assertEqual(r.status, 409, r)  # not suspended
        r = act("suspend")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["state"], "suspended")
        r = act("rerun")
        self.assertEqual(r.status, 409, r)  # not finished
        r = act("resume")
        self.assertEqual(r.json()["state"], "waiting")
        r = act("kill")
        self.assertEqual(r.json()["state"], "killed")
        r = act("rerun")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["state"], "waiting")
        self.assertEqual(r.json()["attempt"], 2)
        r = P.http("POST", f"/api/v1/instances/{i}/actions/explode", {}, token=TOK["ann"])
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json()["error"]["field"], "action")
        r = P.http("GET", f"/api/v1/instances/{i}", token=TOK["vic"])
        self.assertEqual(r.status, 200)
        trs = r.json()["transitions"]
        self.assertEqual([t["to"] for t in trs][-4:], ["suspended", "waiting", "killed", "waiting"])
        self.assertIn("test kill", [t["reason"] for t in trs])
        self.assertIn("user:ann", [t["actor"] for t in trs])

    def test_log_routes_check_their_input(self):
        b = self.backfill("2026-10-15T00:00:00Z", "2026-10-15T01:00:00Z")
        i = (b["created"] + b["existing"])[0]
        base = f"/api/v1/instances/{i}/log"
        # Never ran: an empty chunk (nowhere yet), and no file to download.
        r = P.http("GET", base + "?timestamps=1", token=TOK["vic"])
        self.assertEqual(r.status, 200, r)
        body = r.json()
        self.assertEqual((body["attempt"], body["data"], body["source"]), (1, "", "none"))
        self.assertEqual(body["lines"], [])
        r = P.http("GET", base + "/download", token=TOK["vic"])
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.json()["error"]["field"], "attempt")
        for path, status, field in ((base + "?attempt=2", 404, "attempt"),
                                    (base + "/download?attempt=2", 404, "attempt"),
                                    (base + "?attempt=x", 400, "attempt"),
                                    (base + "?offset=-1", 400, "offset"),
                                    (base + "?offset=1.5", 400, "offset"),
                                    (base + "?follow=2", 400, "follow"),
                                    (base + "?timestamps=yes", 400, "timestamps"),
                                    (base + "/download?timestamps=2", 400, "timestamps"),
                                    ("/api/v1/instances/999999/log", 404, None),
                                    ("/api/v1/instances/999999/log/download", 404, None),
                                    ("/api/v1/instances/abc/log/download", 400, "id")):
            r = P.http("GET", path, token=TOK["vic"])
            self.assertEqual(r.status, status, path)
            if field:
                self.assertEqual(r.json()["error"]["field"], field, path)

    def test_bulk_reports_each_item(self):
        ids = self.backfill("2026-07-01T00:00:00Z", "2026-07-01T03:00:00Z")["created"]
        P.http("POST", f"/api/v1/instances/{ids[0]}/actions/suspend", {}, token=TOK["ann"])
        r = P.http("POST", "/api/v1/instances/actions", {"ids": ids, "action": "resume"},
                   token=TOK["ann"])
        self.assertEqual(r.status, 200, r)
        body = r.json()
        self.assertEqual((body["succeeded"], body["failed"]), (1, 2))
        self.assertEqual(body["results"][1]["error"]["code"], "ESTATE")
        r = P.http("POST", "/api/v1/instances/actions", {"ids": [], "action": "kill"},
                   token=TOK["ann"])
        self.assertEqual(r.status, 400)
        r = P.http("POST", "/api/v1/instances/actions", {"ids": [1, "x"], "action": "kill"},
                   token=TOK["ann"])
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json()["error"]["field"], "ids[1]")

    def test_newest_first_last_run_and_stats(self):
        ids = self.backfill("2026-09-01T00:00:00Z", "2026-09-01T04:00:00Z")["created"]
        r = P.http("GET", f"/api/v1/instances?task_id={self.task}&order=desc&limit=3"
                   "&from=2026-09-01T00:00:00Z&to=2026-09-02T00:00:00Z", token=TOK["vic"])
        self.assertEqual(r.status, 200, r)
        times = [i["schedule_time"] for i in r.json()["items"]]
        self.assertEqual(times, ["2026-09-01T03:00:00Z", "2026-09-01T02:00:00Z",
                                 "2026-09-01T01:00:00Z"])
        r = P.http("GET", "/api/v1/instances?order=sideways", token=TOK["vic"])
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json()["error"]["field"], "order")
        P.http("POST", f"/api/v1/instances/{ids[0]}/actions/mark-success", {}, token=TOK["ann"])
        P.http("POST", f"/api/v1/instances/{ids[1]}/actions/kill", {}, token=TOK["ann"])
        r = P.http("GET", "/api/v1/tasks?q=etl.hourly&with_last_run=1", token=TOK["vic"])
        self.assertEqual(r.status, 200, r)
        task = [t for t in r.json()["items"] if t["id"] == self.task][0]
        self.assertIn("last_run", task)
        # When it last changed state (now), besides the slot it ran for.
        lr = task["last_run"]
        self.assertRegex(lr["schedule_time"], r"^\d{4}-")
        self.assertRegex(lr.get("updated_at") or "", r"^20\d\d-")
        self.assertNotEqual(lr["updated_at"], lr["schedule_time"])
        r = P.http("GET", "/api/v1/stats/instances?step=3600", token=TOK["vic"])
        self.assertEqual(r.status, 200, r)
        body = r.json()
        self.assertEqual(len(body["buckets"]), 24)
        self.assertGreaterEqual(sum(b["marked_success"] for b in body["buckets"]), 1)
        self.assertGreaterEqual(sum(b["killed"] for b in body["buckets"]), 1)
        self.assertGreaterEqual(body["now"]["waiting"], 2)
        # the active tasks are counted, as many as the task list holds
        active = P.http("GET", "/api/v1/tasks?limit=1000", token=TOK["vic"]).json()
        self.assertIsNone(active["next_page_token"])
        self.assertEqual(body["now"]["active_tasks"], len(active["items"]))
        self.assertGreater(body["now"]["active_tasks"], 0)
        r = P.http("GET", "/api/v1/stats/instances?step=10", token=TOK["vic"])
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json()["error"]["field"], "step")
        r = P.http("GET", f"/api/v1/instances/{ids[1]}", token=TOK["vic"])
        self.assertEqual([a["attempt"] for a in r.json()["attempts"]], [1])

    def test_list_filters(self):
        r = P.http("GET", "/api/v1/instances?state=waiting,bogus", token=TOK["vic"])
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json()["error"]["field"], "state")
        r = P.http("GET", "/api/v1/instances?from=yesterday", token=TOK["vic"])
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json()["error"]["field"], "from")
        # Keyset pagination walks every instance exactly once.
        self.backfill("2026-08-01T00:00:00Z", "2026-08-01T12:00:00Z")
        seen, token = [], None
        while True:
            q = f"/api/v1/instances?task_id={self.task}&limit=5"
            if token:
                q += f"&page_token={token}"
            page = P.http("GET", q, token=TOK["vic"]).json()
            seen += [i["id"] for i in page["items"]]
            token = page["next_page_token"]
            if not token:
                break
        self.assertEqual(len(seen), len(set(seen)))
        self.assertGreaterEqual(len(seen), 12)


class Dependencies(unittest.TestCase):
    """An instance's upstreams and downstreams are the cycles the scheduler
    maps it to, with the cycles that have no instance yet."""

    @classmethod
    def setUpClass(cls):
        r = P.http("POST", "/api/v1/tasks", shell_task("etl.dep_up", "etl"), token=TOK["ann"])
        assert r.status == 201, r
        cls.up = r.json()["id"]
        spec = shell_task("etl.dep_down", "etl",
                          upstreams=[{"kind": "strong", "task": "etl.dep_up"}])
        r = P.http("POST", "/api/v1/tasks", spec, token=TOK["ann"])
        assert r.status == 201, r
        cls.down = r.json()["id"]
        r = P.http("POST", "/api/v1/tasks", shell_task("etl.dep_daily", "etl", schedule="0 0 * * *",
                   upstreams=[{"kind": "strong", "task": "etl.dep_up"}]), token=TOK["ann"])
        assert r.status == 201, r
        cls.daily = r.json()["id"]

    def backfill(self, task, frm, to):
        r = P.http("POST", f"/api/v1/tasks/{task}/backfill", {"from": frm, "to": to},
                   token=TOK["ann"])
        self.assertEqual(r.status, 200, r)
        return r.json()["created"]

    def get(self, iid):
        r = P.http("GET", f"/api/v1/instances/{iid}", token=TOK["vic"])
        self.assertEqual(r.status, 200, r)
        return r.json()

    def test_cycles_follow_the_scheduler_mapping(self):
        (u13,) = self.backfill(self.up, "2026-10-01T13:00:00Z", "2026-10-01T14:00:00Z")
        P.http("POST", f"/api/v1/instances/{u13}/actions/mark-success", {}, token=TOK["ann"])
        # No downstream instance yet: the downstream tasks are listed with the
        # cycles that wait for 13:00, not created yet.
        d = self.get(u13)
        downs = [(x["task_name"], x["schedule_time"], x["instance_id"]) for x in d["downstreams"]]
        self.assertEqual(downs, [("etl.dep_daily", "2026-10-01T00:00:00Z", None),
                                 ("etl.dep_down", "2026-10-01T13:00:00Z", None)])
        (d13, d14) = self.backfill(self.down, "2026-10-01T13:00:00Z", "2026-10-01T15:00:00Z")
        # The 14:00 downstream waits for the upstream's 14:00 cycle, which has
        # no instance yet: not the 13:00 one.
        ups = self.get(d14)["upstreams"]
        self.assertEqual(len(ups), 1, ups)
        self.assertEqual(ups[0]["task_name"], "etl.dep_up")
        self.assertEqual(ups[0]["schedule_time"], "2026-10-01T14:00:00Z")
        self.assertIsNone(ups[0]["instance_id"])
        self.assertIsNone(ups[0]["state"])
        ups = self.get(d13)["upstreams"]
        self.assertEqual([(x["instance_id"], x["state"]) for x in ups], [(u13, "marked_success")])
        # The 13:00 upstream is waited for by the 13:00 downstream alone.
        downs = [x for x in self.get(u13)["downstreams"] if x["task_name"] == "etl.dep_down"]
        self.assertEqual([(x["instance_id"], x["schedule_time"]) for x in downs],
                         [(d13, "2026-10-01T13:00:00Z")])

    def test_daily_on_hourly_waits_for_every_hour(self):
        (day,) = self.backfill(self.daily, "2026-11-02T00:00:00Z", "2026-11-02T00:00:01Z")
        ups = self.get(day)["upstreams"]
        self.assertEqual(len(ups), 24, ups)
        self.assertEqual(ups[0]["schedule_time"], "2026-11-02T00:00:00Z")
        self.assertEqual(ups[23]["schedule_time"], "2026-11-02T23:00:00Z")
        self.assertTrue(all(x["instance_id"] is None for x in ups))
        (h5,) = self.backfill(self.up, "2026-11-02T05:00:00Z", "2026-11-02T06:00:00Z")
        self.assertEqual(self.get(day)["upstreams"][5]["instance_id"], h5)
        downs = [x for x in self.get(h5)["downstreams"] if x["task_name"] == "etl.dep_daily"]
        self.assertEqual([(x["instance_id"], x["schedule_time"]) for x in downs],
                         [(day, "2026-11-02T00:00:00Z")])


class BadInput(unittest.TestCase):
    def test_oversized_body_is_413(self):
        r = P.http("POST", "/api/v1/tasks", raw=b"{" + b" " * (2 << 20) + b"}",
                   headers={"Content-Type": "application/json"}, token=TOK["ann"])
        self.assertEqual(r.status, 413, r)
        self.assertEqual(r.json()["error"]["code"], "ETOOBIG")

    def test_wrong_types_and_shapes(self):
        cases = [b"[]", b"null", b"42", b"{\"name\": 1}", b"\xff\xfe"]
        for raw in cases:
            r = P.http("POST", "/api/v1/tasks", raw=raw, token=TOK["ann"],
                       headers={"Content-Type": "application/json"})
            self.assertEqual(r.status, 400, (raw, r))
            self.assertIn("error", r.json())
        r = P.http("POST", "/api/v1/tasks", raw=b"{}", token=TOK["ann"],
                   headers={"Content-Type": "text/plain"})
        self.assertEqual(r.status, 415)

    def test_unknown_route_and_method(self):
        self.assertEqual(P.http("GET", "/api/v1/nope", token=TOK["vic"]).status, 404)
        self.assertEqual(P.http("PATCH", "/api/v1/tasks", token=TOK["vic"]).status, 405)


class Admin(unittest.TestCase):
    def test_pools(self):
        r = P.http("PUT", "/api/v1/pools/mysql-main", {"capacity": 20}, token=TOK["root"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json(), {"name": "mysql-main", "capacity": 20, "used": 0})
        r = P.http("GET", "/api/v1/pools", token=TOK["vic"])
        self.assertIn({"name": "mysql-main", "capacity": 20, "used": 0}, r.json()["items"])
        r = P.http("PUT", "/api/v1/pools/mysql-main", {"capacity": "20"}, token=TOK["root"])
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json()["error"]["field"], "capacity")

    def test_users_and_teams(self):
        r = P.http("POST", "/api/v1/teams", {"name": "finance"}, token=TOK["root"])
        self.assertEqual(r.status, 201, r)
        r = P.http("POST", "/api/v1/users", {"name": "fay", "password": "fay-password-1",
                                              "role": "developer", "teams": ["finance"]},
                   token=TOK["root"])
        self.assertEqual(r.status, 201, r)
        self.assertNotIn("password", r.json())
        self.assertEqual(P.login("fay", "fay-password-1") != "", True)
        r = P.http("POST", "/api/v1/users", {"name": "x", "password": "p", "role": "god"},
                   token=TOK["root"])
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json()["error"]["field"], "role")

    def test_user_and_team_lists(self):
        r = P.http("GET", "/api/v1/users?team=etl", token=TOK["vic"])
        self.assertEqual(r.status, 200, r)
        names = [u["name"] for u in r.json()["items"]]
        self.assertIn("ann", names)
        self.assertNotIn("bob", names)
        self.assertNotIn(b"argon2", r.body)
        r = P.http("GET", "/api/v1/users?role=admin", token=TOK["vic"])
        self.assertEqual([u["name"] for u in r.json()["items"]], ["root"])
        r = P.http("GET", "/api/v1/teams", token=TOK["vic"])
        self.assertTrue({"etl", "ads"} <= {t["name"] for t in r.json()["items"]})

    def test_datasource_password_is_write_only(self):
        body = {"kind": "postgresql", "params": {"host": "127.0.0.1", "port": 5432, "user": "etl"},
                "password": "s3cret-pw"}
        r = P.http("PUT", "/api/v1/datasources/dw", body, token=TOK["root"])
        self.assertEqual(r.status, 200, r)
        self.assertNotIn(b"s3cret-pw", r.body)
        self.assertTrue(r.json()["has_password"])
        r = P.http("GET", "/api/v1/datasources/dw", token=TOK["vic"])
        self.assertEqual(r.status, 200)
        self.assertNotIn(b"s3cret-pw", r.body)
        r = P.http("PUT", "/api/v1/datasources/dw2",
                   {"kind": "postgresql", "params": {"password": "x"}}, token=TOK["root"])
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json()["error"]["field"], "params.password")


class Ops(unittest.TestCase):
    def test_healthz_metrics_openapi_headers(self):
        r = P.http("GET", "/healthz")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["status"], "ok")
        r = P.http("GET", "/metrics")
        self.assertEqual(r.status, 200)
        self.assertIn(b"galaxy_http_requests_total", r.body)
        self.assertIn(b"galaxy_http_request_seconds_bucket", r.body)
        r = P.http("GET", "/api/v1/openapi.json")
        self.assertEqual(r.status, 200)
        self.assertTrue(r.json()["openapi"].startswith("3."))
        self.assertEqual(r.headers["X-Content-Type-Options"], "nosniff")
        self.assertIn("frame-ancestors 'none'", r.headers["Content-Security-Policy"])


if __name__ == "__main__":
    BUILD = sys.argv.pop(1)
    unittest.main(verbosity=2)
