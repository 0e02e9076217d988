#!/usr/bin/env python3
"""test_authz.py - the authorisation matrix of galaxyd: every route x
{anonymous, viewer, developer of the owning team, developer of another team,
admin}. The expectations are written here by hand; the test also fails when
galaxyd serves a route this matrix does not cover, so a new route cannot
ship without its authorisation test.

usage: test_authz.py BUILD_DIR
"""
import gzip
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = None
P = None
TOK = {}
WHO = ("anon", "vic", "ann", "bob", "root")  # viewer(etl), dev(etl), dev(ads), admin

# Outcome per caller: "ok" (2xx), or the refusal code.
PUBLIC = dict(anon="ok", vic="ok", ann="ok", bob="ok", root="ok")
READ = dict(anon=401, vic="ok", ann="ok", bob="ok", root="ok")
TEAM = dict(anon=401, vic=403, ann="ok", bob=403, root="ok")
ADMIN = dict(anon=401, vic=403, ann=403, bob=403, root="ok")
# This galaxyd has no ZooKeeper configured: logged-in callers get 503 (the
# executor tests cover the configured case), others 401.
EXECUTORS = dict(anon=401, vic=503, ann=503, bob=503, root=503)
# Readable by anyone logged in, but this galaxyd holds no log of the instance.
NO_LOG = dict(anon=401, vic=404, ann=404, bob=404, root=404)
# Any developer, whatever the team (code packages).
DEVELOPER = dict(anon=401, vic=403, ann="ok", bob="ok", root="ok")
# Admin routes that also need configuration this galaxyd lacks: an admin
# passes authorisation and gets 503 ([galaxy] zk / datasource_test_token).
ADMIN_UNCONFIGURED = dict(anon=401, vic=403, ann=403, bob=403, root=503)
# Any developer may ask, but no executor can answer here (no ZooKeeper).
DEVELOPER_UNCONFIGURED = dict(anon=401, vic=403, ann=503, bob=503, root=503)
GZIP_BODY = gzip.compress(b"")
ICS_BODY = (b"BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART;VALUE=DATE:20261225\r\n"
            b"END:VEVENT\r\nEND:VCALENDAR\r\n")


def spec(name, team="etl"):
    return {"name": name, "team": team, "type": "shell", "schedule": "0 * * * *",
            "timezone": "UTC", "config": {"command": "/bin/true"}}


class Matrix(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        global P
        P = orrery_it.Platform(BUILD)
        # Uploaded packages land in the fixture's folder, removed with it.
        os.environ["ORRERY_GALAXY_BLOB_ROOT"] = "file://" + os.path.join(P.tmp, "blob")
        P.__enter__()
        try:  # a failed set-up must not leave the servers running
            P.add_user("root", "root-password-1", "admin")
            P.add_user("ann", "ann-password-1", "developer", teams=["etl"])
            P.add_user("bob", "bob-password-1", "developer", teams=["ads"])
            P.add_user("vic", "vic-password-1", "viewer", teams=["etl"])
            P.add_user("patchme", "patchme-password-1", "viewer")
            TOK["anon"] = None
            for u in WHO[1:]:
                TOK[u] = P.login(u, f"{u}-password-1")
            r = P.http("POST", "/api/v1/tasks", spec("etl.base"), token=TOK["root"])
            assert r.status == 201, r
            cls.task = r.json()["id"]
            r = P.http("POST", f"/api/v1/tasks/{cls.task}/backfill",
                       {"from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z"},
                       token=TOK["root"])
            assert r.status == 200, r
            cls.instances = r.json()["created"]
            assert len(cls.instances) == 24, r
            P.http("PUT", "/api/v1/datasources/dw", {"kind": "postgresql", "params": {}},
                   token=TOK["root"])
            r = P.http("PUT", "/api/v1/workflows/wf-etl", {"team": "etl", "task_ids": [cls.task]},
                       token=TOK["root"])
            assert r.status == 200, r
            r = P.http("POST", "/api/v1/calendars", {"name": "cal-etl", "team": "etl"},
                       token=TOK["root"])
            assert r.status == 201, r
            # Streams are published to ZooKeeper: create one through a galaxyd that has it.
            zport = P.start_galaxy({"ORRERY_GALAXY_ZK": orrery_it.require_env("ORRERY_ZK")})
            r = orrery_it.http(f"http://127.0.0.1:{zport}", "PUT", "/api/v1/streams/st1",
                               {"spec": {"name": "st1", "business": "b1",
                                         "source": {"type": "redis", "key": "k1"},
                                         "format": {"type": "kv"}, "interface": {"field": "if"},
                                         "time": {"field": "t", "format": "epoch_s"},
                                         "bucket": "hour"}}, token=TOK["root"])
            assert r.status == 200, r
            r = P.http("POST", "/api/v1/alert-channels",
                       {"name": "ch-etl", "team": "etl", "kind": "chat",
                        "config": {"url": "https://chat.example/hook"}}, token=TOK["root"])
            assert r.status == 201, r
            cls.channel = r.json()["id"]
            r = P.http("POST", "/api/v1/alert-rules",
                       {"name": "rule-etl", "team": "etl", "scope_kind": "workflow",
                        "scope": "wf-etl", "events": ["failed"], "channels": [cls.channel]},
                       token=TOK["root"])
            assert r.status == 201, r
            cls.rule = r.json()["id"]
        except BaseException:
            P.__exit__(None, None, None)
            raise

    @classmethod
    def tearDownClass(cls):
        P.__exit__(None, None, None)

    def setUp(self):
        self.n = 0

    def fresh_task(self, who):
        """A new etl task for callers that change or delete one."""
        self.n += 1
        r = P.http("POST", "/api/v1/tasks", spec(f"etl.m.{who}.{self._testMethodName}.{self.n}"),
                   token=TOK["root"])
        self.assertEqual(r.status, 201, r)
        return r.json()["id"]

    def fresh_calendar(self, who):
        """A new etl calendar for callers that delete one."""
        self.n += 1
        name = f"cal-{who}-{self._testMethodName}-{self.n}"
        r = P.http("POST", "/api/v1/calendars", {"name": name, "team": "etl"}, token=TOK["root"])
        self.assertEqual(r.status, 201, r)
        return name

    def fresh_workflow(self, who, paused):
        """A new etl workflow (paused or not) for callers that pause or resume one."""
        self.n += 1
        name = f"wf-{who}-{self._testMethodName}-{self.n}"
        r = P.http("PUT", f"/api/v1/workflows/{name}", {"team": "etl", "task_ids": [Matrix.task]},
                   token=TOK["root"])
        self.assertEqual(r.status, 200, r)
        if paused:
            r = P.http("POST", f"/api/v1/workflows/{name}/pause", {}, token=TOK["root"])
            self.assertEqual(r.status, 200, r)
        return name

    def fresh_instance(self):
        """A finished instance (so rerun applies) of the shared etl task."""
        i = Matrix.instances.pop()
        r = P.http("POST", f"/api/v1/instances/{i}/actions/mark-success", {}, token=TOK["root"])
        self.assertEqual(r.status, 200, r)
        return i

    def fresh_channel(self, who):
        """A new etl alert channel for callers that delete one."""
        self.n += 1
        r = P.http("POST", "/api/v1/alert-channels",
                   {"name": f"ch-{who}-{self._testMethodName}-{self.n}", "team": "etl",
                    "kind": "chat", "config": {"url": "https://chat.example/x"}},
                   token=TOK["root"])
        self.assertEqual(r.status, 201, r)
        return r.json()["id"]

    def fresh_rule(self, who):
        """A new etl alert rule for callers that delete one."""
        self.n += 1
        r = P.http("POST", "/api/v1/alert-rules",
                   {"name": f"rule-{who}-{self._testMethodName}-{self.n}", "team": "etl",
                    "scope_kind": "task", "scope": "*", "events": ["failed"],
                    "channels": [Matrix.channel]}, token=TOK["root"])
        self.assertEqual(r.status, 201, r)
        return r.json()["id"]

    def fresh_silence(self, who):
        """A new silence of the etl rule for callers that end one."""
        r = P.http("POST", "/api/v1/alert-silences", {"rule_id": Matrix.rule, "duration": "1h"},
                   token=TOK["root"])
        self.assertEqual(r.status, 201, r)
        return r.json()["id"]

    def own_token(self, who):
        """A token of the caller (of root for anonymous callers) to revoke."""
        self.n += 1
        r = P.http("POST", "/api/v1/tokens",
                   {"name": f"rv-{who}-{self.n}", "user": "root" if who == "anon" else who},
                   token=TOK["root"])
        self.assertEqual(r.status, 201, r)
        return r.json()["token"]["id"]

    def cases(self):
        """(method, route pattern, path maker, body maker, expectations)."""
        t = Matrix.task
        return [
            ("GET", "/healthz", lambda w: "/healthz", None, PUBLIC),
            ("GET", "/metrics", lambda w: "/metrics", None, PUBLIC),
            ("GET", "/api/v1/openapi.json", lambda w: "/api/v1/openapi.json", None, PUBLIC),
            ("POST", "/api/v1/auth/logout", lambda w: "/api/v1/auth/logout", None, PUBLIC),
            ("POST", "/api/v1/auth/login", lambda w: "/api/v1/auth/login",
             lambda w: {"name": "vic", "password": "vic-password-1"}, PUBLIC),
            ("GET", "/api/v1/auth/me", lambda w: "/api/v1/auth/me", None, READ),
            ("GET", "/api/v1/tasks", lambda w: "/api/v1/tasks", None, READ),
            ("GET", "/api/v1/tasks/{id}", lambda w: f"/api/v1/tasks/{t}", None, READ),
            ("GET", "/api/v1/tasks/suggest", lambda w: "/api/v1/tasks/suggest?q=etl", None, READ),
            ("POST", "/api/v1/tasks/validate", lambda w: "/api/v1/tasks/validate",
             lambda w: spec("etl.check"), READ),
            ("GET", "/api/v1/tasks/{id}/versions/{version}",
             lambda w: f"/api/v1/tasks/{t}/versions/1", None, READ),
            ("POST", "/api/v1/tasks", lambda w: "/api/v1/tasks",
             lambda w: spec(f"etl.new.{w}"), TEAM),
            ("PUT", "/api/v1/tasks/{id}", lambda w: f"/api/v1/tasks/{self.fresh_task(w)}",
             lambda w: spec(f"etl.m.{w}.{self._testMethodName}.{self.n}"), TEAM),
            ("DELETE", "/api/v1/tasks/{id}", lambda w: f"/api/v1/tasks/{self.fresh_task(w)}",
             None, TEAM),
            ("POST", "/api/v1/tasks/{id}/backfill", lambda w: f"/api/v1/tasks/{t}/backfill",
             lambda w: {"from": "2026-02-01T00:00:00Z", "to": "2026-02-01T02:00:00Z"}, TEAM),
            ("GET", "/api/v1/tasks/{id}/versions", lambda w: f"/api/v1/tasks/{t}/versions",
             None, READ),
            ("GET", "/api/v1/tasks/{id}/watermark",
             lambda w: f"/api/v1/tasks/{t}/watermark?name=src.id", None, READ),
            ("GET", "/api/v1/tasks/{id}/diff", lambda w: f"/api/v1/tasks/{t}/diff?from=1&to=1",
             None, READ),
            ("POST", "/api/v1/tasks/{id}/rollback",
             lambda w: f"/api/v1/tasks/{self.fresh_task(w)}/rollback", lambda w: {"version": 1},
             TEAM),
            ("POST", "/api/v1/tasks/{id}/reactivate",
             lambda w: f"/api/v1/tasks/{self.fresh_task(w)}/reactivate", None, TEAM),
            ("PUT", "/api/v1/instances/{id}/params",
             lambda w: f"/api/v1/instances/{Matrix.instances[0]}/params", lambda w: {"params": {}},
             TEAM),
            ("GET", "/api/v1/schedule/next", lambda w: "/api/v1/schedule/next?cron=0+*+*+*+*",
             None, READ),
            ("GET", "/api/v1/instances", lambda w: "/api/v1/instances", None, READ),
            ("GET", "/api/v1/instances/{id}",
             lambda w: f"/api/v1/instances/{Matrix.instances[0]}", None, READ),
            ("POST", "/api/v1/instances/{id}/actions/{action}",
             lambda w: f"/api/v1/instances/{self.fresh_instance()}/actions/rerun",
             lambda w: {}, TEAM),
            ("POST", "/api/v1/instances/actions", lambda w: "/api/v1/instances/actions",
             lambda w: {"ids": [self.fresh_instance()], "action": "rerun"}, TEAM),
            ("GET", "/api/v1/instances/{id}/log",
             lambda w: f"/api/v1/instances/{Matrix.instances[0]}/log", None, READ),
            ("GET", "/api/v1/instances/{id}/log/download",
             lambda w: f"/api/v1/instances/{Matrix.instances[0]}/log/download", None, NO_LOG),
            ("GET", "/api/v1/executors", lambda w: "/api/v1/executors", None, EXECUTORS),
            ("GET", "/api/v1/instances/{id}/blockers",
             lambda w: f"/api/v1/instances/{Matrix.instances[0]}/blockers", None, READ),
            ("PATCH", "/api/v1/executors/{name}", lambda w: "/api/v1/executors/ex-authz",
             lambda w: {"drained": False}, ADMIN),
            ("GET", "/api/v1/calendars", lambda w: "/api/v1/calendars", None, READ),
            ("POST", "/api/v1/calendars", lambda w: "/api/v1/calendars",
             lambda w: {"name": f"cal-new-{w}-{self._testMethodName}", "team": "etl"}, TEAM),
            ("GET", "/api/v1/calendars/{name}", lambda w: "/api/v1/calendars/cal-etl", None,
             READ),
            ("PUT", "/api/v1/calendars/{name}", lambda w: "/api/v1/calendars/cal-etl",
             lambda w: {"description": f"changed by {w}"}, TEAM),
            ("DELETE", "/api/v1/calendars/{name}",
             lambda w: f"/api/v1/calendars/{self.fresh_calendar(w)}", None, TEAM),
            ("POST", "/api/v1/calendars/{name}/import",
             lambda w: "/api/v1/calendars/cal-etl/import", lambda w: ICS_BODY, TEAM),
            ("GET", "/api/v1/calendars/{name}/days", lambda w: "/api/v1/calendars/cal-etl/days",
             None, READ),
            ("GET", "/api/v1/quotas", lambda w: "/api/v1/quotas", None, READ),
            ("PUT", "/api/v1/quotas/{team}", lambda w: "/api/v1/quotas/etl",
             lambda w: {"max_running": 0, "max_slots": 0}, ADMIN),
            ("GET", "/api/v1/task-types/limits", lambda w: "/api/v1/task-types/limits", None,
             READ),
            ("PUT", "/api/v1/task-types/{type}/limits",
             lambda w: "/api/v1/task-types/transfer/limits", lambda w: {"limits": {}}, ADMIN),
            ("GET", "/api/v1/pools", lambda w: "/api/v1/pools", None, READ),
            ("PUT", "/api/v1/pools/{name}", lambda w: "/api/v1/pools/p1",
             lambda w: {"capacity": 3}, ADMIN),
            ("GET", "/api/v1/users", lambda w: "/api/v1/users", None, READ),
            ("GET", "/api/v1/teams", lambda w: "/api/v1/teams", None, READ),
            ("GET", "/api/v1/stats/instances", lambda w: "/api/v1/stats/instances", None, READ),
            ("POST", "/api/v1/users", lambda w: "/api/v1/users",
             lambda w: {"name": f"u-{w}", "password": "pw-123456", "role": "viewer"}, ADMIN),
            ("GET", "/api/v1/users/{name}", lambda w: "/api/v1/users/ann", None, READ),
            ("PATCH", "/api/v1/users/{name}", lambda w: "/api/v1/users/patchme",
             lambda w: {"active": True}, ADMIN),
            # Ends every session of the caller (a new one is answered and kept
            # below); the password stays the same.
            ("POST", "/api/v1/auth/password", lambda w: "/api/v1/auth/password",
             lambda w: {"old_password": f"{w}-password-1", "new_password": f"{w}-password-1"},
             READ),
            ("POST", "/api/v1/teams", lambda w: "/api/v1/teams", lambda w: {"name": f"t-{w}"},
             ADMIN),
            ("GET", "/api/v1/datasources/{name}", lambda w: "/api/v1/datasources/dw", None, READ),
            ("PUT", "/api/v1/datasources/{name}", lambda w: f"/api/v1/datasources/ds-{w}",
             lambda w: {"kind": "postgresql", "params": {"host": "h"}}, ADMIN),
            ("GET", "/api/v1/datasources", lambda w: "/api/v1/datasources", None, READ),
            # Data metadata: anyone logged in reads table names and columns;
            # nothing is cached and no executor can answer here.
            ("GET", "/api/v1/datasources/{name}/tables",
             lambda w: "/api/v1/datasources/dw/tables", None, EXECUTORS),
            ("GET", "/api/v1/datasources/{name}/tables/{table}",
             lambda w: "/api/v1/datasources/dw/tables/public.t", None, EXECUTORS),
            # The preview shows rows: developers and up.
            ("POST", "/api/v1/transfers/preview", lambda w: "/api/v1/transfers/preview",
             lambda w: {"config": {"reader": {"type": "postgres", "datasource": "dw",
                                              "table": "t"},
                                   "writers": [{"type": "postgres", "datasource": "dw",
                                                "table": "u"}]}}, DEVELOPER_UNCONFIGURED),
            ("POST", "/api/v1/datasources/{name}/test", lambda w: "/api/v1/datasources/dw/test",
             lambda w: {}, ADMIN_UNCONFIGURED),
            ("GET", "/api/v1/audit", lambda w: "/api/v1/audit", None, ADMIN),
            ("GET", "/api/v1/tokens", lambda w: "/api/v1/tokens", None, READ),
            ("POST", "/api/v1/tokens", lambda w: "/api/v1/tokens",
             lambda w: {"name": f"mx-{w}"}, READ),
            ("DELETE", "/api/v1/tokens/{id}", lambda w: f"/api/v1/tokens/{self.own_token(w)}",
             None, READ),
            ("GET", "/api/v1/instances/{id}/stats",
             lambda w: f"/api/v1/instances/{Matrix.instances[0]}/stats", None, READ),
            ("GET", "/api/v1/instances/{id}/progress",
             lambda w: f"/api/v1/instances/{Matrix.instances[0]}/progress", None, READ),
            ("GET", "/api/v1/tasks/{id}/stats", lambda w: f"/api/v1/tasks/{t}/stats", None, READ),
            ("GET", "/api/v1/workflows", lambda w: "/api/v1/workflows", None, READ),
            ("GET", "/api/v1/workflows/{name}", lambda w: "/api/v1/workflows/wf-etl", None, READ),
            ("PUT", "/api/v1/workflows/{name}", lambda w: "/api/v1/workflows/wf-etl",
             lambda w: {"team": "etl", "task_ids": [t]}, TEAM),
            ("GET", "/api/v1/workflows/{name}/runs", lambda w: "/api/v1/workflows/wf-etl/runs",
             None, READ),
            ("GET", "/api/v1/workflows/{name}/runs/{cycle}",
             lambda w: "/api/v1/workflows/wf-etl/runs/2026-01-01T00:00:00Z", None, READ),
            ("PATCH", "/api/v1/workflows/{name}", lambda w: "/api/v1/workflows/wf-etl",
             lambda w: {"description": f"changed by {w}"}, TEAM),
            ("POST", "/api/v1/workflows/{name}/pause",
             lambda w: f"/api/v1/workflows/{self.fresh_workflow(w, False)}/pause",
             lambda w: {}, TEAM),
            ("POST", "/api/v1/workflows/{name}/resume",
             lambda w: f"/api/v1/workflows/{self.fresh_workflow(w, True)}/resume",
             lambda w: {}, TEAM),
            ("GET", "/api/v1/packages", lambda w: "/api/v1/packages", None, READ),
            ("POST", "/api/v1/packages", lambda w: f"/api/v1/packages?name=pkg-{w}",
             lambda w: GZIP_BODY, DEVELOPER),
            ("GET", "/api/v1/streams", lambda w: "/api/v1/streams", None, READ),
            ("GET", "/api/v1/streams/{name}", lambda w: "/api/v1/streams/st1", None, READ),
            ("PUT", "/api/v1/streams/{name}", lambda w: "/api/v1/streams/st1",
             lambda w: {"spec": {}}, ADMIN_UNCONFIGURED),
            ("GET", "/api/v1/streams/{name}/units", lambda w: "/api/v1/streams/st1/units", None,
             READ),
            ("GET", "/api/v1/lineage", lambda w: "/api/v1/lineage?kind=table&name=dw.t", None,
             READ),
            ("GET", "/api/v1/lineage/names", lambda w: "/api/v1/lineage/names?q=dw", None,
             READ),
            ("POST", "/api/v1/tasks/{id}/run", lambda w: f"/api/v1/tasks/{t}/run",
             lambda w: {"schedule_time": f"2026-03-01T{WHO.index(w):02d}:00:00Z"}, TEAM),
            ("POST", "/api/v1/instances/{id}/rerun",
             lambda w: f"/api/v1/instances/{self.fresh_instance()}/rerun",
             lambda w: {"scope": "downstream"}, TEAM),
            ("POST", "/api/v1/workflows/{name}/rerun-failed",
             lambda w: "/api/v1/workflows/wf-etl/rerun-failed",
             lambda w: {"schedule_time": "2026-01-01T00:00:00Z"}, TEAM),
            ("GET", "/api/v1/alert-channels", lambda w: "/api/v1/alert-channels", None, READ),
            ("POST", "/api/v1/alert-channels", lambda w: "/api/v1/alert-channels",
             lambda w: {"name": f"ch-new-{w}", "team": "etl", "kind": "webhook",
                        "config": {"url": "https://hooks.example/in", "secret": "k"}}, TEAM),
            ("GET", "/api/v1/alert-channels/{id}",
             lambda w: f"/api/v1/alert-channels/{Matrix.channel}", None, READ),
            ("PUT", "/api/v1/alert-channels/{id}",
             lambda w: f"/api/v1/alert-channels/{Matrix.channel}",
             lambda w: {"config": {"url": f"https://chat.example/{w}"}}, TEAM),
            ("DELETE", "/api/v1/alert-channels/{id}",
             lambda w: f"/api/v1/alert-channels/{self.fresh_channel(w)}", None, TEAM),
            ("POST", "/api/v1/alert-channels/{id}/test",
             lambda w: f"/api/v1/alert-channels/{Matrix.channel}/test", lambda w: {}, TEAM),
            ("GET", "/api/v1/alert-rules", lambda w: "/api/v1/alert-rules", None, READ),
            ("POST", "/api/v1/alert-rules", lambda w: "/api/v1/alert-rules",
             lambda w: {"name": f"rule-new-{w}", "team": "etl", "scope_kind": "workflow",
                        "scope": "wf-etl", "events": ["failed", "killed"],
                        "channels": [Matrix.channel]}, TEAM),
            ("GET", "/api/v1/alert-rules/{id}", lambda w: f"/api/v1/alert-rules/{Matrix.rule}",
             None, READ),
            ("PUT", "/api/v1/alert-rules/{id}", lambda w: f"/api/v1/alert-rules/{Matrix.rule}",
             lambda w: {"severity": "critical"}, TEAM),
            ("DELETE", "/api/v1/alert-rules/{id}",
             lambda w: f"/api/v1/alert-rules/{self.fresh_rule(w)}", None, TEAM),
            ("GET", "/api/v1/alert-silences", lambda w: "/api/v1/alert-silences", None, READ),
            ("POST", "/api/v1/alert-silences", lambda w: "/api/v1/alert-silences",
             lambda w: {"rule_id": Matrix.rule, "duration": "2h", "reason": f"by {w}"}, TEAM),
            ("DELETE", "/api/v1/alert-silences/{id}",
             lambda w: f"/api/v1/alert-silences/{self.fresh_silence(w)}", None, TEAM),
            ("GET", "/api/v1/alerts", lambda w: "/api/v1/alerts", None, READ),
        ]

    def test_every_route_is_in_the_matrix(self):
        out = subprocess.run([os.path.join(BUILD, "bin", "galaxyd"), "routes"], check=True,
                             capture_output=True, text=True).stdout
        served = {tuple(line.split()[:2]) for line in out.splitlines()}
        covered = {(m, p) for m, p, _, _, _ in self.cases()}
        self.assertEqual(served - covered, set(), "routes without an authorisation test")

    def test_matrix(self):
        for method, pattern, path, body, expect in self.cases():
            for who in WHO:
                # A team refusal must leave nothing behind: the same request by
                # an allowed caller still succeeds afterwards (checked below).
                with self.subTest(route=f"{method} {pattern}", who=who):
                    url = path(who)  # before the body: some bodies use what path made
                    b = body(who) if body else None
                    if isinstance(b, bytes):
                        r = P.http(method, url, token=TOK[who], raw=b,
                                   headers={"Content-Type": "application/gzip"})
                    else:
                        r = P.http(method, url, b, token=TOK[who])
                    want = expect[who]
                    # Logout and a password change end the caller's session:
                    # log in again for the routes that follow.
                    if who != "anon" and pattern in ("/api/v1/auth/logout",
                                                     "/api/v1/auth/password"):
                        TOK[who] = P.login(who, f"{who}-password-1")
                    if want == "ok":
                        self.assertTrue(200 <= r.status < 300, r)
                    else:
                        self.assertEqual(r.status, want, r)
                        self.assertIn("error", r.json())

    def test_refused_create_saves_nothing(self):
        r = P.http("POST", "/api/v1/tasks", spec("ads.sneaky", team="etl"), token=TOK["bob"])
        self.assertEqual(r.status, 403)
        r = P.http("GET", "/api/v1/tasks?q=ads.sneaky&active=any", token=TOK["root"])
        self.assertEqual(r.json()["items"], [])
        # A developer cannot move a task into a team that is not theirs.
        tid = self.fresh_task("ann")
        r = P.http("PUT", f"/api/v1/tasks/{tid}", spec(f"etl.m.ann.{self._testMethodName}.1",
                                                        team="ads"), token=TOK["ann"])
        self.assertEqual(r.status, 403, r)
        self.assertEqual(P.http("GET", f"/api/v1/tasks/{tid}", token=TOK["ann"]).json()["team"],
                         "etl")


if __name__ == "__main__":
    BUILD = sys.argv.pop(1)
    unittest.main(verbosity=2)
