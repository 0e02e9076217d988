#!/usr/bin/env python3
"""test_task_specs.py - galaxyd refuses a task whose schedule or time zone the
scheduler could not use, through the REST API, against real halleyd.

POST /api/v1/tasks, PUT /api/v1/tasks/{id} and POST /api/v1/tasks/validate
answer 400 naming spec.schedule or spec.timezone, with the cron parser's or
the zone reader's message, for the same inputs; nothing is saved and the
current version stays. Good schedules in DST zones are saved, and validate
previews their fire times. The full class of bad inputs is exercised against
halleyd directly (tests/integration/halley/it_task_specs.c).

usage: test_task_specs.py BUILD_DIR
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = None
P = None
TOK = {}

# (schedule, timezone, field, words the message must hold)
BAD = [
    ("61 * * * *", "UTC", "spec.schedule", 'minute: "61" out of range 0-59'),
    ("0 0 0 1 1 ? 1800-2030", "UTC", "spec.schedule", 'year: "1800" out of range'),
    ("0 0 12 * * *", "UTC", "spec.schedule", "must be \"?\""),
    ("0 0 0 30 2 ?", "Europe/Berlin", "spec.schedule", "never fires"),
    ("0 * * * *", "Mars/Olympus_Mons", "spec.timezone", 'unknown time zone "Mars/Olympus_Mons"'),
    ("0 * * * *", "/etc/passwd", "spec.timezone", "invalid time zone name"),
    ("0 * * * *", "../../etc/passwd", "spec.timezone", "pattern"),
]


def spec(name, schedule, zone):
    return {"name": name, "team": "etl", "type": "shell", "schedule": schedule,
            "timezone": zone, "config": {"command": "/bin/true"}}


def setUpModule():
    global P
    P = orrery_it.Platform(BUILD).__enter__()
    P.add_user("ann", "ann-password-1", "developer", teams=["etl"])
    TOK["ann"] = P.login("ann", "ann-password-1")


def tearDownModule():
    if P:
        P.__exit__(None, None, None)


class TaskSpecs(unittest.TestCase):
    def assert_refused(self, r, field, words, what):
        self.assertEqual(r.status, 400, (what, r))
        err = r.json()["error"]
        self.assertEqual(err["code"], "EINVAL", (what, err))
        self.assertEqual(err["field"], field, (what, err))
        self.assertIn(words, err["message"], (what, err))

    def test_create_and_validate_refuse_naming_the_field(self):
        for i, (sched, zone, field, words) in enumerate(BAD):
            name = f"etl.bad{i}"
            what = f"{sched!r} in {zone!r}"
            r = P.http("POST", "/api/v1/tasks/validate", spec(name, sched, zone), token=TOK["ann"])
            self.assert_refused(r, field, words, "validate " + what)
            r = P.http("POST", "/api/v1/tasks", spec(name, sched, zone), token=TOK["ann"])
            self.assert_refused(r, field, words, "create " + what)
            r = P.http("GET", f"/api/v1/tasks?q={name}&active=any", token=TOK["ann"])
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json()["items"], [], what)

    def test_update_refuses_and_keeps_the_version(self):
        good = spec("etl.dst", "0 30 2 * * ?", "Europe/Berlin")
        r = P.http("POST", "/api/v1/tasks/validate", good, token=TOK["ann"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(len(r.json()["next"]), 5, r)
        r = P.http("POST", "/api/v1/tasks", good, token=TOK["ann"])
        self.assertEqual(r.status, 201, r)
        tid = r.json()["id"]
        for sched, zone, field, words in BAD:
            r = P.http("PUT", f"/api/v1/tasks/{tid}", spec("etl.dst", sched, zone),
                       token=TOK["ann"])
            self.assert_refused(r, field, words, f"update {sched!r} in {zone!r}")
        r = P.http("GET", f"/api/v1/tasks/{tid}", token=TOK["ann"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["version"], 1, r)
        r = P.http("PUT", f"/api/v1/tasks/{tid}", spec("etl.dst", "@daily", "America/New_York"),
                   token=TOK["ann"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["version"], 2, r)


if __name__ == "__main__":
    BUILD = sys.argv.pop(1)
    unittest.main(verbosity=2)
