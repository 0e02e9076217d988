#!/usr/bin/env python3
"""test_calendars.py - galaxyd's business calendar routes against real
halleyd and PostgreSQL.

A calendar's life: created with days, read back, changed (fields, days
added and removed, all days replaced), an .ics file imported (all-day and
recurring events; a broken file is a 400 naming the line and adds
nothing), the month view of business days, the schedule preview marking
fire times kept, skipped and moved, a task naming it (an unknown calendar
is a 400 at save), a delete refused while a task uses it; team rules
(another team's developer and a viewer are refused) and bad input on every
route (400 naming the field, 404, 409).

usage: test_calendars.py BUILD_DIR
"""
import datetime
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = None
P = None
TOK = {}

ICS = ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n"
       "BEGIN:VEVENT\r\nUID:a\r\nDTSTART;VALUE=DATE:20261225\r\n"
       "DTEND;VALUE=DATE:20261227\r\nSUMMARY:Christmas\r\nEND:VEVENT\r\n"
       "BEGIN:VEVENT\r\nUID:b\r\nDTSTART;VALUE=DATE:20200101\r\nRRULE:FREQ=YEARLY\r\n"
       "SUMMARY:New year\r\nEND:VEVENT\r\n"
       "END:VCALENDAR\r\n")


def setUpModule():
    global P
    P = orrery_it.Platform(BUILD).__enter__()
    P.add_user("root", "root-password-1", "admin")
    P.add_user("cal", "cal-password-1", "developer", teams=["calt"])
    P.add_user("oth", "oth-password-1", "developer", teams=["othert"])
    P.add_user("vic", "vic-password-1", "viewer", teams=["calt"])
    for u in ("root", "cal", "oth", "vic"):
        TOK[u] = P.login(u, f"{u}-password-1")


def tearDownModule():
    if P:
        P.__exit__(None, None, None)


class Calendars(unittest.TestCase):
    def field(self, r, status, field):
        self.assertEqual(r.status, status, r)
        self.assertEqual(r.json()["error"]["field"], field, r)

    def create(self, name, **extra):
        body = {"name": name, "team": "calt", "timezone": "Europe/Berlin"}
        body.update(extra)
        r = P.http("POST", "/api/v1/calendars", body, token=TOK["cal"])
        self.assertEqual(r.status, 201, r)
        return r.json()

    def test_life(self):
        got = self.create("cal-life", description="shop days",
                          days=[{"day": "2026-12-24", "kind": "excluded", "note": "eve"},
                                {"day": "2026-12-27", "kind": "included"}])
        self.assertEqual((got["name"], got["team"], got["timezone"], got["weekdays"],
                          got["days_count"]),
                         ("cal-life", "calt", "Europe/Berlin", [1, 2, 3, 4, 5], 2))
        self.assertEqual(got["days"], [
            {"day": "2026-12-24", "kind": "excluded", "note": "eve"},
            {"day": "2026-12-27", "kind": "included", "note": ""}])
        r = P.http("GET", "/api/v1/calendars", token=TOK["vic"])
        self.assertEqual(r.status, 200, r)
        self.assertIn("cal-life", [c["name"] for c in r.json()["items"]])
        # fields and day edits
        r = P.http("PUT", "/api/v1/calendars/cal-life",
                   {"weekdays": [1, 2, 3, 4, 5, 6], "add": [{"day": "2026-12-31"}],
                    "remove": ["2026-12-24"]}, token=TOK["cal"])
        self.assertEqual(r.status, 200, r)
        got = r.json()
        self.assertEqual(got["weekdays"], [1, 2, 3, 4, 5, 6])
        self.assertEqual([d["day"] for d in got["days"]], ["2026-12-27", "2026-12-31"])
        self.assertEqual(got["description"], "shop days")
        # import: days added, notes from SUMMARY, the range bounded
        r = P.http("POST", "/api/v1/calendars/cal-life/import?from=2026-01-01&to=2027-12-31",
                   raw=ICS.encode(), headers={"Content-Type": "text/calendar"},
                   token=TOK["cal"])
        self.assertEqual(r.status, 200, r)
        imp = r.json()
        self.assertEqual(sorted(d["day"] for d in imp["days"]),
                         ["2026-01-01", "2026-12-25", "2026-12-26", "2027-01-01"])
        self.assertEqual(imp["added"], 4)
        r = P.http("GET", "/api/v1/calendars/cal-life", token=TOK["vic"])
        days = {d["day"]: d for d in r.json()["days"]}
        self.assertEqual(days["2026-12-25"]["note"], "Christmas")
        self.assertEqual(days["2026-12-25"]["kind"], "excluded")
        # the month view
        r = P.http("GET", "/api/v1/calendars/cal-life/days?from=2026-12-24&to=2026-12-28",
                   token=TOK["vic"])
        self.assertEqual(r.status, 200, r)
        view = [(d["day"], d["business"], d["kind"]) for d in r.json()["days"]]
        self.assertEqual(view, [("2026-12-24", True, None), ("2026-12-25", False, "excluded"),
                                ("2026-12-26", False, "excluded"),
                                ("2026-12-27", True, "included"), ("2026-12-28", True, None)])
        # replace every day
        r = P.http("PUT", "/api/v1/calendars/cal-life", {"days": [{"day": "2027-05-01"}]},
                   token=TOK["cal"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual([d["day"] for d in r.json()["days"]], ["2027-05-01"])

    def test_import_error_names_the_line(self):
        self.create("cal-bad-ics", days=[{"day": "2026-03-02"}])
        bad = ICS.replace("DTSTART;VALUE=DATE:20200101", "DTSTART;VALUE=DATE:2020-01-01")
        r = P.http("POST", "/api/v1/calendars/cal-bad-ics/import", raw=bad.encode(),
                   headers={"Content-Type": "text/calendar"}, token=TOK["cal"])
        self.field(r, 400, "body")
        self.assertTrue(r.json()["error"]["message"].startswith("line 12: DTSTART"), r)
        r = P.http("GET", "/api/v1/calendars/cal-bad-ics", token=TOK["cal"])
        self.assertEqual(r.json()["days_count"], 1)  # nothing added
        r = P.http("POST", "/api/v1/calendars/cal-bad-ics/import?kind=maybe", raw=ICS.encode(),
                   headers={"Content-Type": "text/calendar"}, token=TOK["cal"])
        self.field(r, 400, "kind")
        r = P.http("POST", "/api/v1/calendars/cal-bad-ics/import", raw=b"",
                   headers={"Content-Type": "text/calendar"}, token=TOK["cal"])
        self.field(r, 400, "body")
        r = P.http("POST", "/api/v1/calendars/cal-none/import", raw=ICS.encode(),
                   headers={"Content-Type": "text/calendar"}, token=TOK["cal"])
        self.field(r, 404, "name")

    def test_preview_and_tasks(self):
        self.create("cal-task", timezone="UTC", days=[{"day": "2026-12-25"}])
        q = "/api/v1/schedule/next?cron=0+6+*+*+*&from=2026-12-24T00:00:00Z&count=4"
        r = P.http("GET", q + "&calendar=cal-task&policy=next", token=TOK["vic"])
        self.assertEqual(r.status, 200, r)
        got = r.json()
        self.assertEqual(got["times"], ["2026-12-24T06:00:00Z", "2026-12-28T06:00:00Z",
                                        "2026-12-29T06:00:00Z", "2026-12-30T06:00:00Z"])
        self.assertEqual([(f["time"], f["outcome"], f["to"]) for f in got["fires"]], [
            ("2026-12-24T06:00:00Z", "kept", None),
            ("2026-12-25T06:00:00Z", "moved", "2026-12-28T06:00:00Z"),
            ("2026-12-26T06:00:00Z", "moved", "2026-12-28T06:00:00Z"),
            ("2026-12-27T06:00:00Z", "moved", "2026-12-28T06:00:00Z")])
        r = P.http("GET", q + "&calendar=cal-task", token=TOK["vic"])
        self.assertEqual([f["outcome"] for f in r.json()["fires"]],
                         ["kept", "skipped", "skipped", "skipped"])
        self.field(P.http("GET", q + "&calendar=cal-nope", token=TOK["vic"]), 400, "calendar")
        self.field(P.http("GET", q + "&calendar=cal-task&policy=later", token=TOK["vic"]), 400,
                   "policy")
        # a task names it; an unknown calendar or policy is refused at save
        spec = {"name": "cal.task", "team": "calt", "type": "shell", "schedule": "0 6 * * *",
                "config": {"command": "/bin/true"}, "calendar": "cal-nope"}
        self.field(P.http("POST", "/api/v1/tasks", spec, token=TOK["cal"]), 400, "spec.calendar")
        self.field(P.http("POST", "/api/v1/tasks/validate", spec, token=TOK["cal"]), 400,
                   "spec.calendar")
        r = P.http("POST", "/api/v1/tasks/validate", dict(spec, calendar="cal-task"),
                   token=TOK["cal"])
        self.assertEqual(r.status, 200, r)
        # the next fire times are business days of the calendar (Monday to Friday)
        days = [datetime.date.fromisoformat(x[:10]) for x in r.json()["next"]]
        self.assertEqual(len(days), 5, r)
        self.assertTrue(all(d.isoweekday() <= 5 for d in days), r)
        spec["calendar"] = "cal-task"
        spec["calendar_policy"] = "sideways"
        r = P.http("POST", "/api/v1/tasks", spec, token=TOK["cal"])
        self.assertEqual(r.status, 400, r)
        self.assertIn("calendar_policy", r.json()["error"]["field"])
        spec["calendar_policy"] = "previous"
        r = P.http("POST", "/api/v1/tasks", spec, token=TOK["cal"])
        self.assertEqual(r.status, 201, r)
        task = r.json()["id"]
        # a backfill makes the calendar's fire times: the 25th (excluded) and
        # the weekend move onto Thursday the 24th's own run
        r = P.http("POST", f"/api/v1/tasks/{task}/backfill",
                   {"from": "2026-12-24T00:00:00Z", "to": "2026-12-29T00:00:00Z"},
                   token=TOK["cal"])
        self.assertEqual(r.status, 200, r)
        times = sorted(P.http("GET", f"/api/v1/instances/{i}", token=TOK["cal"]).json()
                       ["schedule_time"] for i in r.json()["created"])
        self.assertEqual(times, ["2026-12-24T06:00:00Z", "2026-12-28T06:00:00Z"])
        # run now takes a fire time of the calendar; a moved-away one is
        # refused naming the calendar's next
        r = P.http("POST", f"/api/v1/tasks/{task}/run",
                   {"schedule_time": "2026-12-28T06:00:00Z"}, token=TOK["cal"])
        self.assertEqual(r.status, 200, r)
        r = P.http("POST", f"/api/v1/tasks/{task}/run",
                   {"schedule_time": "2026-12-31T07:00:00Z"}, token=TOK["cal"])
        self.field(r, 400, "schedule_time")
        # in use: no delete
        self.field(P.http("DELETE", "/api/v1/calendars/cal-task", token=TOK["cal"]), 409, "name")
        self.assertEqual(P.http("DELETE", f"/api/v1/tasks/{task}", token=TOK["cal"]).status, 200)
        r = P.http("DELETE", "/api/v1/calendars/cal-task", token=TOK["cal"])
        self.assertEqual(r.status, 204, r)
        self.field(P.http("GET", "/api/v1/calendars/cal-task", token=TOK["cal"]), 404, "name")

    def test_team_rules(self):
        self.create("cal-team")
        for tok in ("oth", "vic"):
            r = P.http("PUT", "/api/v1/calendars/cal-team", {"description": "x"}, token=TOK[tok])
            self.assertEqual(r.status, 403, r)
            r = P.http("DELETE", "/api/v1/calendars/cal-team", token=TOK[tok])
            self.assertEqual(r.status, 403, r)
        r = P.http("POST", "/api/v1/calendars", {"name": "cal-oth", "team": "calt"},
                   token=TOK["oth"])
        self.assertEqual(r.status, 403, r)
        # moving it to a team the caller is not in
        r = P.http("PUT", "/api/v1/calendars/cal-team", {"team": "othert"}, token=TOK["cal"])
        self.assertEqual(r.status, 403, r)
        r = P.http("PUT", "/api/v1/calendars/cal-team", {"description": "by admin"},
                   token=TOK["root"])
        self.assertEqual(r.status, 200, r)

    def test_bad_input(self):
        self.create("cal-dup")
        self.field(P.http("POST", "/api/v1/calendars", {"name": "cal-dup", "team": "calt"},
                          token=TOK["cal"]), 409, "name")
        cases = [
            ({"team": "calt"}, "name"),
            ({"name": "bad name", "team": "calt"}, "name"),
            ({"name": "cal-x"}, "team"),
            ({"name": "cal-x", "team": "calt", "timezone": "Mars/Base"}, "timezone"),
            ({"name": "cal-x", "team": "calt", "weekdays": [0]}, "weekdays"),
            ({"name": "cal-x", "team": "calt", "weekdays": [1, 1]}, "weekdays"),
            ({"name": "cal-x", "team": "calt", "days": [{"day": "2026-02-30"}]}, "days[0].day"),
            ({"name": "cal-x", "team": "calt",
              "days": [{"day": "2026-02-03"}, {"day": "2026-02-04", "kind": "holiday"}]},
             "days[1].kind"),
            ({"name": "cal-x", "team": "calt", "colour": "red"}, "colour"),
        ]
        for body, field in cases:
            with self.subTest(body=body):
                self.field(P.http("POST", "/api/v1/calendars", body, token=TOK["root"]), 400,
                           field)
        self.field(P.http("POST", "/api/v1/calendars", {"name": "cal-x", "team": "noteam"},
                          token=TOK["root"]), 404, "team")
        self.field(P.http("PUT", "/api/v1/calendars/cal-dup", {"remove": ["yesterday"]},
                          token=TOK["cal"]), 400, "remove[0]")
        self.field(P.http("PUT", "/api/v1/calendars/cal-dup",
                          {"days": [], "add": [{"day": "2026-01-01"}]}, token=TOK["cal"]), 400,
                   "days")
        self.field(P.http("PUT", "/api/v1/calendars/cal-none", {"description": "x"},
                          token=TOK["cal"]), 404, "name")
        self.field(P.http("GET", "/api/v1/calendars/cal-dup/days?from=2026-01-01&to=2027-06-01",
                          token=TOK["cal"]), 400, "to")
        self.field(P.http("GET", "/api/v1/calendars/cal-dup/days?from=01/01/2026",
                          token=TOK["cal"]), 400, "from")
        self.field(P.http("DELETE", "/api/v1/calendars/cal-none", token=TOK["cal"]), 404, "name")
        # nothing half-applied: the refused calls left cal-dup as it was
        r = P.http("GET", "/api/v1/calendars/cal-dup", token=TOK["cal"])
        self.assertEqual((r.json()["days_count"], r.json()["weekdays"]), (0, [1, 2, 3, 4, 5]))


if __name__ == "__main__":
    BUILD = sys.argv.pop(1)
    unittest.main(verbosity=2)
