#!/usr/bin/env python3
"""test_registry.py - galaxyd's registry and data endpoints against the real stack:
API tokens (create, use, a viewer's token cannot write, revoke, expiry),
data-source connection tests against the stack's PostgreSQL and MariaDB,
code-package upload (same bytes twice, oversize, not gzip), sort streams
(saved and published to ZooKeeper) and their data units, workflows, process
statistics, lineage and the audit log.

usage: test_registry.py BUILD_DIR
"""
import gzip
import hashlib
import io
import os
import secrets
import subprocess
import sys
import tarfile
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = None
P = None
TOK = {}
WORKER_TOKEN = secrets.token_hex(16)
ZKCLI = "/usr/share/zookeeper/bin/zkCli.sh"


class Platform(orrery_it.Platform):
    """The fixture, with a worker token on halleyd (for data-source secrets)."""

    def halley_env(self):
        env = super().halley_env()
        env["ORRERY_HALLEY_WORKER_TOKEN"] = WORKER_TOKEN
        return env


def spec(name, team="etl", upstreams=None):
    s = {"name": name, "team": team, "type": "shell", "schedule": "0 * * * *",
         "timezone": "UTC", "config": {"command": "/bin/true"}}
    if upstreams:
        s["upstreams"] = upstreams
    return s


def stream_spec(name):
    return {"name": name, "business": "b1",
            "source": {"type": "redis", "key": f"k-{name}"},
            "format": {"type": "kv"}, "interface": {"field": "if"},
            "time": {"field": "t", "format": "epoch_s"}, "bucket": "hour"}


def archive(size_hint=0, seed=b"x"):
    """A real .tar.gz holding one file (random bytes when size_hint > 0)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        data = os.urandom(size_hint) if size_hint else b"#!/bin/sh\necho " + seed + b"\n"
        info = tarfile.TarInfo("bin/run.sh")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue())


def dsn_parts(dsn):
    u = urllib.parse.urlsplit(dsn)
    return {"host": u.hostname, "port": u.port, "database": u.path.lstrip("/"),
            "user": urllib.parse.unquote(u.username)}, urllib.parse.unquote(u.password or "")


def rpc(*args):
    """Write into halleyd what galaxyd only reads (see gx_it_rpc.c)."""
    r = subprocess.run([os.path.join(BUILD, "bin", "gx_it_rpc"), f"127.0.0.1:{P.halley_port}",
                        P.token, *map(str, args)], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise AssertionError(f"gx_it_rpc {args[0]}: {r.stderr}")


class Registry(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        global P
        P = Platform(BUILD).__enter__()
        try:
            cls.blob = os.path.join(P.tmp, "blob")
            # The main galaxyd: ZooKeeper, connection tests, an 8 MB body limit.
            P.galaxy_ports.clear()
            P.start_galaxy({"ORRERY_GALAXY_ZK": orrery_it.require_env("ORRERY_ZK"),
                            "ORRERY_GALAXY_DATASOURCE_TEST_TOKEN": WORKER_TOKEN,
                            "ORRERY_GALAXY_BLOB_ROOT": "file://" + cls.blob,
                            "ORRERY_GALAXY_MAX_PACKAGE": "8m"})
            P.add_user("root", "root-password-1", "admin")
            P.add_user("ann", "ann-password-1", "developer", teams=["etl"])
            P.add_user("bob", "bob-password-1", "developer", teams=["ads"])
            P.add_user("vic", "vic-password-1", "viewer", teams=["etl"])
            for u in ("root", "ann", "bob", "vic"):
                TOK[u] = P.login(u, f"{u}-password-1")
        except BaseException:
            P.__exit__(None, None, None)
            raise

    @classmethod
    def tearDownClass(cls):
        P.__exit__(None, None, None)

    def call(self, method, path, body=None, who="root", **kw):
        return P.http(method, path, body, token=TOK.get(who, who), **kw)

    def assertFieldError(self, r, status, field):
        self.assertEqual(r.status, status, r)
        self.assertEqual(r.json()["error"]["field"], field, r)

    # ------------------------------------------------------------ tokens

    def test_tokens(self):
        r = self.call("POST", "/api/v1/tokens", {"name": "ci", "expires_at": None}, who="vic")
        self.assertEqual(r.status, 201, r)
        secret, tok = r.json()["secret"], r.json()["token"]
        self.assertTrue(secret.startswith("orr_"))
        self.assertEqual((tok["user"], tok["name"], tok["expires_at"]), ("vic", "ci", None))
        # The token acts as vic: reads work, writes need a developer.
        r = P.http("GET", "/api/v1/auth/me", token=secret)
        self.assertEqual((r.status, r.json()["name"], r.json()["role"]), (200, "vic", "viewer"))
        r = P.http("POST", "/api/v1/tasks", spec("etl.by.token"), token=secret)
        self.assertEqual(r.status, 403, r)
        r = self.call("GET", "/api/v1/tasks?q=etl.by.token&active=any")
        self.assertEqual(r.json()["items"], [])
        # Listed without its secret; others' lists are admins' business.
        r = self.call("GET", "/api/v1/tokens", who="vic")
        self.assertEqual([t["name"] for t in r.json()["items"]], ["ci"])
        self.assertNotIn(secret, r.body.decode())
        self.assertIsNotNone(r.json()["items"][0]["last_used_at"])
        self.assertEqual(self.call("GET", "/api/v1/tokens?all=1", who="vic").status, 403)
        self.assertEqual(self.call("GET", "/api/v1/tokens?user=ann", who="vic").status, 403)
        r = self.call("GET", "/api/v1/tokens?user=vic")
        self.assertIn("ci", [t["name"] for t in r.json()["items"]])
        # Only its owner (or an admin) revokes it.
        self.assertEqual(self.call("DELETE", f"/api/v1/tokens/{tok['id']}", who="bob").status, 404)
        self.assertEqual(P.http("GET", "/api/v1/auth/me", token=secret).status, 200)
        r = self.call("DELETE", f"/api/v1/tokens/{tok['id']}", who="vic")
        self.assertEqual(r.status, 204, r)
        r = P.http("GET", "/api/v1/auth/me", token=secret)
        self.assertEqual(r.status, 401, r)
        # A made-up token is refused, and bad input names its field.
        self.assertEqual(P.http("GET", "/api/v1/auth/me", token="orr_" + "A" * 43).status, 401)
        self.assertFieldError(self.call("POST", "/api/v1/tokens", {"name": ""}), 400, "name")
        self.assertFieldError(self.call("POST", "/api/v1/tokens", {"name": "x", "expires_at": "soon"}),
                              400, "expires_at")
        self.assertFieldError(self.call("POST", "/api/v1/tokens",
                                        {"name": "x", "expires_at": "2001-01-01T00:00:00Z"}),
                              400, "expires_at")
        self.assertFieldError(self.call("POST", "/api/v1/tokens", {"name": "x", "user": "ann"},
                                        who="bob"), 403, "user")
        self.assertFieldError(self.call("DELETE", "/api/v1/tokens/abc"), 400, "id")

    def test_token_expiry_and_admin_issue(self):
        # Expires 8 s from now (room for a slow creation); the test then waits
        # until the clock has passed that second, not a fixed time.
        exp_at = int(time.time()) + 8
        exp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(exp_at))
        r = self.call("POST", "/api/v1/tokens", {"name": "short", "expires_at": exp, "user": "ann"})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json()["token"]["user"], "ann")
        secret = r.json()["secret"]
        while time.time() < exp_at + 1:
            time.sleep(0.1)
        # Never used before it expired, so no cache can hold it: refused.
        self.assertEqual(P.http("GET", "/api/v1/auth/me", token=secret).status, 401)
        # An admin's token for a developer writes as that developer.
        r = self.call("POST", "/api/v1/tokens", {"name": "deploy", "user": "ann"})
        secret = r.json()["secret"]
        r = P.http("POST", "/api/v1/tasks", spec("etl.by.ann.token"), token=secret)
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json()["created_by"], "user:ann")
        r = P.http("POST", "/api/v1/tasks", spec("ads.by.ann.token", team="ads"), token=secret)
        self.assertEqual(r.status, 403, r)

    # ------------------------------------------------------- data sources

    def test_datasource_connection_tests(self):
        pg, pg_pw = dsn_parts(orrery_it.require_env("ORRERY_PG_DSN"))
        my, my_pw = dsn_parts(orrery_it.require_env("ORRERY_MYSQL_DSN"))
        for name, kind, params, pw in (("pg-ok", "postgresql", pg, pg_pw),
                                       ("my-ok", "mysql", my, my_pw)):
            r = self.call("PUT", f"/api/v1/datasources/{name}",
                          {"kind": kind, "params": params, "password": pw})
            self.assertEqual(r.status, 200, r)
            r = self.call("POST", f"/api/v1/datasources/{name}/test", {})
            self.assertEqual(r.status, 200, r)
            self.assertTrue(r.json()["ok"], r)
            self.assertGreaterEqual(r.json()["elapsed_ms"], 0)
        wrong = "Wrong-" + secrets.token_hex(6)
        for name, kind, params in (("pg-bad", "postgresql", pg), ("my-bad", "mysql", my)):
            r = self.call("PUT", f"/api/v1/datasources/{name}",
                          {"kind": kind, "params": params, "password": wrong})
            self.assertEqual(r.status, 200, r)
            r = self.call("POST", f"/api/v1/datasources/{name}/test", {})
            self.assertEqual(r.status, 200, r)
            self.assertFalse(r.json()["ok"], r)
            self.assertTrue(r.json()["message"])
            self.assertNotIn(wrong, r.body.decode())
        galaxy_log = "".join(P.log(f) for f in os.listdir(P.tmp) if f.startswith("galaxyd"))
        self.assertNotIn(wrong, galaxy_log)
        # The list has them all, never a password.
        r = self.call("GET", "/api/v1/datasources", who="vic")
        self.assertEqual(r.status, 200, r)
        names = {d["name"] for d in r.json()["items"]}
        self.assertTrue({"pg-ok", "my-ok", "pg-bad", "my-bad"} <= names, names)
        self.assertNotIn(wrong, r.body.decode())
        self.assertTrue(all("password" not in d for d in r.json()["items"]))
        # Unknown source, unsupported kind, non-admin.
        self.assertEqual(self.call("POST", "/api/v1/datasources/nope/test", {}).status, 404)
        self.call("PUT", "/api/v1/datasources/hd", {"kind": "hdfs", "params": {}})
        self.assertFieldError(self.call("POST", "/api/v1/datasources/hd/test", {}), 400, "kind")
        self.assertEqual(self.call("POST", "/api/v1/datasources/pg-ok/test", {}, who="ann").status,
                         403)

    def test_datasource_test_needs_the_token(self):
        port = P.start_galaxy({})  # no datasource_test_token
        r = orrery_it.http(f"http://127.0.0.1:{port}", "POST", "/api/v1/datasources/pg-ok/test",
                           {}, token=TOK["root"])
        self.assertFieldError(r, 503, "datasource_test_token")

    # ---------------------------------------------------------- executors

    def test_executors_merge_inventory(self):
        ex = "inv-" + secrets.token_hex(4)
        rpc("put-executor", ex, "host-9", 6, '{"zone":"z9"}')
        r = self.call("GET", "/api/v1/executors", who="vic")
        self.assertEqual(r.status, 200, r)
        mine = [x for x in r.json()["items"] if x["id"] == ex]
        self.assertEqual(len(mine), 1, r)
        x = mine[0]
        # Known to Halley, no ZooKeeper session: listed, not alive.
        self.assertEqual((x["host"], x["slots"], x["labels"], x["active"], x["alive"]),
                         ("host-9", 6, {"zone": "z9"}, True, False))
        self.assertIsNotNone(x["last_seen"])

    # ----------------------------------------------------------- packages

    def test_package_upload(self):
        body = archive(seed=b"one")
        digest = hashlib.sha256(body).hexdigest()
        hdr = {"Content-Type": "application/gzip"}
        r = self.call("POST", "/api/v1/packages?name=jobs", raw=body, headers=hdr, who="ann")
        self.assertEqual(r.status, 201, r)
        pkg = r.json()
        self.assertEqual((pkg["name"], pkg["sha256"], pkg["size"]), ("jobs", digest, len(body)))
        stored = os.path.join(self.blob, "packages", digest + ".tar.gz")
        self.assertEqual(pkg["source"], "file://" + os.path.realpath(stored))
        with open(stored, "rb") as f:
            self.assertEqual(f.read(), body)
        # The same bytes again: the stored package, 200.
        r = self.call("POST", "/api/v1/packages?name=jobs", raw=body, headers=hdr, who="ann")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["id"], pkg["id"])
        r = self.call("GET", "/api/v1/packages", who="vic")
        self.assertEqual([p["id"] for p in r.json()["items"] if p["name"] == "jobs"], [pkg["id"]])
        # A bigger archive (2 MB) streams through too.
        big = archive(size_hint=2 << 20)
        r = self.call("POST", "/api/v1/packages?name=big", raw=big, headers=hdr, who="ann")
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json()["sha256"], hashlib.sha256(big).hexdigest())
        # Over the limit: 413 and nothing stored.
        before = sorted(os.listdir(os.path.join(self.blob, "packages")))
        r = self.call("POST", "/api/v1/packages?name=huge", raw=archive(size_hint=9 << 20),
                      headers=hdr, who="ann")
        self.assertEqual(r.status, 413, r)
        self.assertEqual(sorted(os.listdir(os.path.join(self.blob, "packages"))), before)
        # Not gzip, no name, a bad name, a viewer: refused, nothing stored.
        self.assertFieldError(self.call("POST", "/api/v1/packages?name=x", raw=b"plain text" * 4,
                                        headers=hdr, who="ann"), 400, "body")
        self.assertFieldError(self.call("POST", "/api/v1/packages", raw=body, headers=hdr,
                                        who="ann"), 400, "name")
        self.assertFieldError(self.call("POST", "/api/v1/packages?name=a/b", raw=body,
                                        headers=hdr, who="ann"), 400, "name")
        self.assertEqual(self.call("POST", "/api/v1/packages?name=v", raw=body, headers=hdr,
                                   who="vic").status, 403)
        # No credentials: refused before a byte of the body is stored.
        r = P.http("POST", "/api/v1/packages?name=anon", raw=big, headers=hdr)
        self.assertEqual(r.status, 401, r)
        self.assertEqual(sorted(os.listdir(os.path.join(self.blob, "packages"))), before)

    # ----------------------------------------------------- streams, units

    def zk_get(self, path):
        r = subprocess.run([ZKCLI, "-server", orrery_it.require_env("ORRERY_ZK"), "get", path],
                           capture_output=True, text=True, timeout=60)
        return r.stdout

    def test_streams_and_units(self):
        r = self.call("PUT", "/api/v1/streams/clicks", {"spec": stream_spec("clicks")})
        self.assertEqual(r.status, 200, r)
        v1 = r.json()["version"]
        r = self.call("PUT", "/api/v1/streams/clicks",
                      {"spec": stream_spec("clicks"), "active": False})
        self.assertEqual(r.status, 200, r)
        self.assertGreater(r.json()["version"], v1)
        self.assertFalse(r.json()["active"])
        v2 = r.json()["version"]
        out = self.zk_get("/orrery/streams/clicks")
        self.assertIn(f'"version":{v2}', out)
        self.assertIn('"business":"b1"', out)
        r = self.call("GET", "/api/v1/streams/clicks", who="vic")
        self.assertEqual((r.status, r.json()["version"], r.json()["spec"]["bucket"]),
                         (200, v2, "hour"))
        r = self.call("GET", "/api/v1/streams", who="vic")
        self.assertIn("clicks", [s["name"] for s in r.json()["items"]])
        # Bad input, refused callers: nothing saved.
        self.assertFieldError(self.call("PUT", "/api/v1/streams/clicks", {"spec": 3}), 400, "spec")
        self.assertFieldError(self.call("PUT", "/api/v1/streams/clicks",
                                        {"spec": stream_spec("clicks"), "extra": 1}), 400, "extra")
        self.assertEqual(self.call("PUT", "/api/v1/streams/clicks",
                                   {"spec": stream_spec("clicks")}, who="ann").status, 403)
        self.assertEqual(self.call("GET", "/api/v1/streams/clicks").json()["version"], v2)
        # Units, as the checker reports them.
        hour = 1764460800000  # 2025-11-30T00:00:00Z
        rpc("report-unit", "clicks", "b1", "pv", hour, 1000, 2, 65536, 7, 1, 1)
        rpc("report-unit", "clicks", "b1", "pv", hour + 3600000, 500, 1, 30000, 0, 1, 0)
        rpc("report-unit", "clicks", "b1", "uv", hour, 10, 1, 300, 0, 1, 1)
        r = self.call("GET", "/api/v1/streams/clicks/units?interface=pv", who="vic")
        self.assertEqual(r.status, 200, r)
        units = r.json()["items"]
        self.assertEqual([(u["bucket"], u["records"], u["late_records"], u["reconciled"])
                          for u in units],
                         [("2025-11-30T01:00:00Z", 500, 0, False),
                          ("2025-11-30T00:00:00Z", 1000, 7, True)])
        r = self.call("GET", "/api/v1/streams/clicks/units?reconciled=true")
        self.assertEqual(sorted(u["interface"] for u in r.json()["items"]), ["pv", "uv"])
        r = self.call("GET", "/api/v1/streams/clicks/units?from=2025-11-30T01:00:00Z")
        self.assertEqual([u["records"] for u in r.json()["items"]], [500])
        self.assertFieldError(self.call("GET", "/api/v1/streams/clicks/units?from=yesterday"),
                              400, "from")
        self.assertFieldError(self.call("GET", "/api/v1/streams/clicks/units?reconciled=maybe"),
                              400, "reconciled")

    def test_stream_put_without_zookeeper_saves_nothing(self):
        port = P.start_galaxy({"ORRERY_GALAXY_ZK": f"127.0.0.1:{orrery_it.free_port()}"})
        r = orrery_it.http(f"http://127.0.0.1:{port}", "PUT", "/api/v1/streams/lost",
                           {"spec": stream_spec("lost")}, token=TOK["root"])
        self.assertFieldError(r, 503, "zk")
        self.assertEqual(self.call("GET", "/api/v1/streams/lost").status, 404)

    # ---------------------------------------------- workflows, statistics

    def test_workflows_and_stats(self):
        a = self.call("POST", "/api/v1/tasks", spec("etl.wf.a"), who="ann").json()["id"]
        b = self.call("POST", "/api/v1/tasks",
                      spec("etl.wf.b", upstreams=[{"kind": "strong", "task": "etl.wf.a"}]),
                      who="ann").json()["id"]
        x = self.call("POST", "/api/v1/tasks", spec("ads.wf.x", team="ads"), who="bob").json()["id"]
        r = self.call("PUT", "/api/v1/workflows/etl-daily", {"team": "etl", "task_ids": [a, b]},
                      who="ann")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["task_ids"], [a, b])
        # Not someone else's tasks, not for another team, not a viewer.
        self.assertEqual(self.call("PUT", "/api/v1/workflows/etl-daily",
                                   {"team": "etl", "task_ids": [a, x]}, who="ann").status, 403)
        self.assertEqual(self.call("PUT", "/api/v1/workflows/etl-daily",
                                   {"team": "ads", "task_ids": [x]}, who="bob").status, 403)
        self.assertEqual(self.call("PUT", "/api/v1/workflows/etl-daily",
                                   {"team": "etl", "task_ids": [a]}, who="vic").status, 403)
        self.assertFieldError(self.call("PUT", "/api/v1/workflows/etl-daily",
                                        {"team": "etl", "task_ids": [a, "b"]}, who="ann"),
                              400, "task_ids[1]")
        r = self.call("GET", "/api/v1/workflows", who="vic")
        self.assertEqual([(w["name"], w["task_ids"]) for w in r.json()["items"]],
                         [("etl-daily", [a, b])])
        # The DAG view: tasks, the edge a -> b, the latest states.
        r = self.call("POST", f"/api/v1/tasks/{a}/backfill",
                      {"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T02:00:00Z"})
        self.assertEqual(r.status, 200, r)
        inst = r.json()["created"]
        r = self.call("GET", "/api/v1/workflows/etl-daily", who="vic")
        self.assertEqual(r.status, 200, r)
        dag = r.json()
        self.assertEqual([t["name"] for t in dag["tasks"]], ["etl.wf.a", "etl.wf.b"])
        self.assertEqual(dag["edges"], [{"from": "etl.wf.a", "to": "etl.wf.b", "kind": "strong"}])
        self.assertEqual(dag["tasks"][0]["latest_instance"]["schedule_time"],
                         "2026-01-01T01:00:00Z")
        self.assertIsNone(dag["tasks"][1]["latest_instance"])
        self.assertEqual(self.call("GET", "/api/v1/workflows/none").status, 404)
        # Process statistics, by instance and by task.
        rpc("record-stats", inst[0], 1, "rows_read=100", "rows_written=98")
        rpc("record-stats", inst[1], 1, "rows_read=200", "rows_written=200")
        r = self.call("GET", f"/api/v1/instances/{inst[0]}/stats", who="vic")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(sorted((s["key"], s["value"]) for s in r.json()["items"]),
                         [("rows_read", 100.0), ("rows_written", 98.0)])
        r = self.call("GET", f"/api/v1/tasks/{a}/stats", who="vic")
        self.assertEqual(r.status, 200, r)
        rows = r.json()["items"]
        self.assertEqual(sorted((x["instance_id"], x["stats"]["rows_read"]) for x in rows),
                         sorted([(inst[0], 100.0), (inst[1], 200.0)]))
        self.assertTrue(all(x["schedule_time"] for x in rows))
        self.assertFieldError(self.call("GET", "/api/v1/tasks/0/stats"), 400, "id")

    def test_lineage_recorded_at_save(self):
        r = self.call("PUT", "/api/v1/datasources/lin-pg",
                      {"kind": "postgresql", "params": {"host": "h", "database": "wh"}})
        self.assertEqual(r.status, 200, r)

        def transfer(name, src, dst, extra=None, **writer):
            s = {"name": name, "team": "etl", "type": "transfer",
                 "config": {"reader": {"type": "postgres", "datasource": "lin-pg", "table": src},
                            "writers": [{"type": "postgres", "datasource": "lin-pg",
                                         "table": dst, **writer}]}}
            s.update(extra or {})
            return s

        a = self.call("POST", "/api/v1/tasks", transfer(
            "etl.lin.a", "t1", "t2",
            mapping=[{"target": "id", "source": "id"},
                     {"target": "total", "source": "amount", "cast": "numeric"}]), who="ann")
        self.assertEqual(a.status, 201, a)
        b = self.call("POST", "/api/v1/tasks", transfer(
            "etl.lin.b", "t2", "t3", {"upstreams": [{"kind": "strong", "task": "etl.lin.a"}]}),
            who="ann")
        self.assertEqual(b.status, 201, b)
        r = self.call("GET", "/api/v1/lineage?kind=table&name=lin-pg.public.t2", who="vic")
        self.assertEqual(r.status, 200, r)
        got = {(e["source_name"], e["target_name"], e["task"]) for e in r.json()["edges"]}
        self.assertEqual(got, {("lin-pg.public.t1", "lin-pg.public.t2", "etl.lin.a"),
                               ("lin-pg.public.t2", "lin-pg.public.t3", "etl.lin.b"),
                               ("etl.lin.a", "etl.lin.b", "etl.lin.b")})
        self.assertTrue(all(e["origins"] == ["save"] for e in r.json()["edges"]))
        r = self.call("GET", "/api/v1/lineage?kind=table&name=lin-pg.public.t2&columns=true")
        self.assertEqual(r.status, 200, r)
        cols = {(e["source_name"], e["target_name"]): e["detail"] for e in r.json()["edges"]}
        self.assertEqual(cols, {("lin-pg.public.t1.id", "lin-pg.public.t2.id"): {},
                                ("lin-pg.public.t1.amount", "lin-pg.public.t2.total"):
                                    {"cast": "numeric"}})
        r = self.call("GET", "/api/v1/lineage/names?q=PUBLIC.T&kind=table", who="vic")
        self.assertEqual(r.status, 200, r)
        self.assertEqual([x["name"] for x in r.json()["items"]],
                         ["lin-pg.public.t1", "lin-pg.public.t2", "lin-pg.public.t3"])
        r = self.call("GET", "/api/v1/lineage/names?q=total")
        self.assertEqual(r.json()["items"], [{"kind": "column", "name": "lin-pg.public.t2.total"}])
        self.assertFieldError(self.call("GET", "/api/v1/lineage/names?q="), 400, "q")
        self.assertFieldError(self.call("GET", "/api/v1/lineage/names?q=t&kind=db"), 400, "kind")
        self.assertFieldError(self.call("GET", "/api/v1/lineage/names?q=t&limit=0"), 400, "limit")
        self.assertFieldError(
            self.call("GET", "/api/v1/lineage?kind=task&name=etl.lin.a&columns=true"), 400,
            "columns")
        # A resave replaces the task's edges.
        r = self.call("PUT", f"/api/v1/tasks/{a.json()['id']}",
                      transfer("etl.lin.a", "t1", "t9"), who="ann")
        self.assertEqual(r.status, 200, r)
        r = self.call("GET", "/api/v1/lineage?kind=table&name=lin-pg.public.t1")
        self.assertEqual({e["target_name"] for e in r.json()["edges"]}, {"lin-pg.public.t9"})

    def test_lineage_and_audit(self):
        rpc("add-lineage", "table", "ods.orders", "table", "dw.orders", 0)
        rpc("add-lineage", "table", "dw.orders", "file", "/exports/orders.csv", 0)
        r = self.call("GET", "/api/v1/lineage?kind=table&name=dw.orders", who="vic")
        self.assertEqual(r.status, 200, r)
        got = {(e["source_name"], e["target_name"]) for e in r.json()["edges"]}
        self.assertEqual(got, {("ods.orders", "dw.orders"), ("dw.orders", "/exports/orders.csv")})
        self.assertFieldError(self.call("GET", "/api/v1/lineage?kind=db&name=x"), 400, "kind")
        self.assertFieldError(self.call("GET", "/api/v1/lineage?kind=table"), 400, "name")
        self.assertFieldError(self.call("GET", "/api/v1/lineage?kind=table&name=x&depth=11"),
                              400, "depth")
        self.call("POST", "/api/v1/teams", {"name": "audited"})
        r = self.call("GET", "/api/v1/audit?object=team:")
        self.assertEqual(r.status, 200, r)
        self.assertIn(("user:root", "team:audited"),
                      [(e["actor"], e["object"]) for e in r.json()["items"]])
        r = self.call("GET", "/api/v1/audit?limit=1")
        self.assertEqual(len(r.json()["items"]), 1)
        older = self.call("GET", f"/api/v1/audit?limit=1&before={r.json()['next']}").json()
        self.assertLess(older["items"][0]["id"], r.json()["items"][0]["id"])
        for who in ("ann", "vic"):
            self.assertEqual(self.call("GET", "/api/v1/audit", who=who).status, 403)


if __name__ == "__main__":
    BUILD = sys.argv.pop(1)
    unittest.main(verbosity=2)
