#!/usr/bin/env python3
"""test_admin_lists.py - the admin lists through galaxyd against the real
stack: users searched and edited (role, teams), a disabled user (sessions
end at once, the login and the API token are refused with 401, on a second
galaxyd too, within the event stream's delay; enabling again lets them
back), teams with their members, task name completion for
type-ahead filters, and the instance list's text search; bad input named.

usage: test_admin_lists.py BUILD_DIR
"""
import os
import sys
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = None
P = None
TOK = {}


def spec(name, team="etl"):
    return {"name": name, "team": team, "type": "shell", "schedule": "0 * * * *",
            "timezone": "UTC", "config": {"command": "/bin/true"}}


class AdminLists(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        global P
        P = orrery_it.Platform(BUILD)
        P.__enter__()
        try:
            P.add_user("root", "root-password-1", "admin")
            P.add_user("ann", "ann-password-1", "developer", teams=["etl"])
            P.add_user("anna", "anna-password-1", "viewer", teams=["etl", "ads"])
            P.add_user("bob", "bob-password-1", "developer", teams=["ads"])
            for u in ("root", "ann", "bob"):
                TOK[u] = P.login(u, f"{u}-password-1")
        except BaseException:
            P.__exit__(None, None, None)
            raise

    @classmethod
    def tearDownClass(cls):
        P.__exit__(None, None, None)

    def test_teams_with_members(self):
        items = P.http("GET", "/api/v1/teams", token=TOK["bob"]).json()["items"]
        members = {t["name"]: t["members"] for t in items}
        self.assertEqual(members["etl"], ["ann", "anna"])
        self.assertEqual(members["ads"], ["anna", "bob"])

    def test_users_search_and_edit(self):
        names = [u["name"] for u in
                 P.http("GET", "/api/v1/users?q=ann", token=TOK["bob"]).json()["items"]]
        self.assertEqual(names, ["ann", "anna"])
        r = P.http("GET", "/api/v1/users?role=boss", token=TOK["bob"])
        self.assertEqual((r.status, r.json()["error"]["field"]), (400, "role"))
        r = P.http("PATCH", "/api/v1/users/anna", {"role": "developer", "teams": ["ads"]},
                   token=TOK["root"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json()["role"], r.json()["teams"]), ("developer", ["ads"]))
        # A developer may not edit users; bad input names the field and changes nothing.
        r = P.http("PATCH", "/api/v1/users/anna", {"role": "admin"}, token=TOK["bob"])
        self.assertEqual(r.status, 403, r)
        for body, field in (({"role": "boss"}, "role"), ({"teams": ["nosuch"]}, "teams[0]"),
                            ({"active": "no"}, "active")):
            r = P.http("PATCH", "/api/v1/users/anna", body, token=TOK["root"])
            self.assertEqual((r.status, r.json()["error"]["field"]), (400, field), (body, r))
        r = P.http("GET", "/api/v1/users/anna", token=TOK["root"]).json()
        self.assertEqual((r["role"], r["teams"], r["active"]), ("developer", ["ads"], True))
        r = P.http("PATCH", "/api/v1/users/nobody", {"role": "viewer"}, token=TOK["root"])
        self.assertEqual(r.status, 404, r)

    def test_disabled_user_is_out_at_once(self):
        P.add_user("dave", "dave-password-1", "developer")
        session = P.login("dave", "dave-password-1")
        r = P.http("POST", "/api/v1/tokens", {"name": "dave-ci"}, token=session)
        self.assertEqual(r.status, 201, r)
        api_token = r.json()["secret"]
        self.assertEqual(P.http("GET", "/api/v1/auth/me", token=api_token).status, 200)
        # A second galaxyd has checked (and cached) the token too, once it
        # follows halleyd's events (its /healthz says so): what is timed below
        # is the event's way, not this galaxyd's start.
        other = f"http://127.0.0.1:{P.start_galaxy()}"
        deadline = time.time() + 60
        while orrery_it.http(other, "GET", "/healthz").json().get("sessions") != "events":
            self.assertLess(time.time(), deadline, "the other galaxyd follows the events")
            time.sleep(0.05)
        self.assertEqual(orrery_it.http(other, "GET", "/api/v1/auth/me", token=api_token).status,
                         200)
        r = P.http("PATCH", "/api/v1/users/dave", {"active": False}, token=TOK["root"])
        self.assertEqual((r.status, r.json()["active"]), (200, False))
        # Every galaxyd learns of the ended session from halleyd's event stream.
        deadline = time.time() + 10
        while P.http("GET", "/api/v1/auth/me", token=session).status != 401:
            self.assertLess(time.time(), deadline, "the session ended")
            time.sleep(0.05)
        self.assertEqual(P.http("GET", "/api/v1/auth/me", token=api_token).status, 401,
                         "the API token stopped")
        # The other galaxyd forgets it on halleyd's user.updated event, well
        # before its token cache's 30 s would have run out.
        deadline = time.time() + 10
        while orrery_it.http(other, "GET", "/api/v1/auth/me", token=api_token).status != 401:
            self.assertLess(time.time(), deadline, "the other galaxyd refuses the token")
            time.sleep(0.05)
        r = P.http("POST", "/api/v1/auth/login", {"name": "dave", "password": "dave-password-1"})
        self.assertEqual(r.status, 401, r)
        listed = {u["name"]: u["active"] for u in
                  P.http("GET", "/api/v1/users?q=dave", token=TOK["root"]).json()["items"]}
        self.assertEqual(listed, {"dave": False})
        r = P.http("PATCH", "/api/v1/users/dave", {"active": True}, token=TOK["root"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(P.http("GET", "/api/v1/auth/me", token=api_token).status, 200,
                         "enabled again, the token works")
        P.login("dave", "dave-password-1")

    def test_task_suggestions(self):
        for n in ("sales.load", "sales.report", "crm.sales_sync", "crm.other"):
            r = P.http("POST", "/api/v1/tasks", spec(n), token=TOK["ann"])
            self.assertEqual(r.status, 201, r)
        r = P.http("GET", "/api/v1/tasks/suggest?q=SALES", token=TOK["bob"])
        self.assertEqual(r.status, 200, r)
        names = [t["name"] for t in r.json()["items"]]
        self.assertEqual(names, ["sales.load", "sales.report", "crm.sales_sync"],
                         "prefix matches first, then the names that contain it")
        self.assertEqual(r.json()["items"][0]["team"], "etl")
        r = P.http("GET", "/api/v1/tasks/suggest?q=sales&limit=1", token=TOK["bob"])
        self.assertEqual([t["name"] for t in r.json()["items"]], ["sales.load"])
        # LIKE's wildcards are plain text.
        r = P.http("GET", "/api/v1/tasks/suggest?q=s_l", token=TOK["bob"])
        self.assertEqual(r.json()["items"], [])
        for q, field in (("limit=0", "limit"), ("limit=101", "limit"), ("limit=x", "limit"),
                         ("q=" + "a" * 129, "q")):
            r = P.http("GET", f"/api/v1/tasks/suggest?{q}", token=TOK["bob"])
            self.assertEqual((r.status, r.json()["error"]["field"]), (400, field), q)

    def test_instance_search(self):
        ids = {}
        for n in ("search.alpha", "search.beta"):
            r = P.http("POST", "/api/v1/tasks", spec(n), token=TOK["ann"])
            self.assertEqual(r.status, 201, r)
            ids[n] = r.json()["id"]
            r = P.http("POST", f"/api/v1/tasks/{ids[n]}/backfill",
                       {"from": "2026-03-01T00:00:00Z", "to": "2026-03-01T02:00:00Z"},
                       token=TOK["ann"])
            self.assertEqual(r.status, 200, r)
        for order in ("asc", "desc"):
            items = P.http("GET", f"/api/v1/instances?q=ALPHA&order={order}",
                           token=TOK["bob"]).json()["items"]
            self.assertEqual({i["task_name"] for i in items}, {"search.alpha"}, order)
            self.assertEqual(len(items), 2, order)
            for i in items:
                self.assertIn("started_at", i)
                self.assertIn("finished_at", i)
            # a page at a time, in the list's order, through the matches only
            seen, tokq = [], ""
            for _ in range(4):
                r = P.http("GET", f"/api/v1/instances?q=alpha&order={order}&limit=1{tokq}",
                           token=TOK["bob"]).json()
                seen += [i["id"] for i in r["items"]]
                if not r["next_page_token"]:
                    break
                tokq = "&page_token=" + urllib.parse.quote(r["next_page_token"])
            self.assertEqual(seen, [i["id"] for i in items], order)
        one = items[0]["id"]
        items = P.http("GET", f"/api/v1/instances?q={one}", token=TOK["bob"]).json()["items"]
        self.assertEqual([i["id"] for i in items], [one], "by id")
        items = P.http("GET", "/api/v1/instances?q=%25", token=TOK["bob"]).json()["items"]
        self.assertEqual(items, [], "% is plain text")
        r = P.http("GET", "/api/v1/instances?q=" + "a" * 129, token=TOK["bob"])
        self.assertEqual((r.status, r.json()["error"]["field"]), (400, "q"))


if __name__ == "__main__":
    BUILD = sys.argv.pop(1)
    unittest.main()
