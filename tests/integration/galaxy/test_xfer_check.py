#!/usr/bin/env python3
"""test_xfer_check.py - the save-time check of the data sources a transfer
or quality task names, through galaxyd's task routes against real halleyd
and PostgreSQL.

An unknown data source, or one of a kind the endpoint cannot use, is a 400
naming spec.config.reader.datasource, spec.config.writers[N].datasource or
spec.config.datasource, on create and on update, and nothing is saved (the
task does not exist; an update leaves the version as it was). A column
mapping cannot be checked here (no executor reads the catalogs): the save
succeeds with a "warnings" entry per table it could not read.

usage: test_xfer_check.py BUILD_DIR
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = None
P = None
TOK = {}


def setUpModule():
    global P
    P = orrery_it.Platform(BUILD).__enter__()
    P.add_user("root", "root-password-1", "admin")
    P.add_user("xc", "xc-password-1", "developer", teams=["xct"])
    for u in ("root", "xc"):
        TOK[u] = P.login(u, f"{u}-password-1")
    for name, kind in (("xc_pg", "postgresql"), ("xc_my", "mysql")):
        r = P.http("PUT", f"/api/v1/datasources/{name}",
                   {"kind": kind, "params": {"host": "127.0.0.1", "port": 1, "dbname": "x",
                                             "user": "x"}}, token=TOK["root"])
        assert r.status in (200, 201), r


def tearDownModule():
    if P:
        P.__exit__(None, None, None)


def pg(ds, table):
    return {"type": "postgres", "datasource": ds, "table": table}


def transfer(name, reader, *writers):
    return {"name": name, "team": "xct", "type": "transfer", "schedule": "0 * * * *",
            "timezone": "UTC", "config": {"reader": reader, "writers": list(writers)}}


class DataSourceCheck(unittest.TestCase):
    def refused(self, r, field, words):
        self.assertEqual(r.status, 400, r)
        err = r.json()["error"]
        self.assertEqual(err["field"], field, err)
        self.assertIn(words, err["message"], err)

    def absent(self, name):
        r = P.http("GET", f"/api/v1/tasks?q={name}&active=any", token=TOK["xc"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["items"], [], name)

    def test_create_refuses_naming_the_endpoint(self):
        cases = [
            (transfer("xct.r", pg("xc_nope", "a"), pg("xc_pg", "b")),
             "spec.config.reader.datasource", 'no data source named "xc_nope"'),
            (transfer("xct.w", pg("xc_pg", "a"), pg("xc_pg", "b"), pg("xc_gone", "c")),
             "spec.config.writers[1].datasource", 'no data source named "xc_gone"'),
            (transfer("xct.k", pg("xc_pg", "a"), {"type": "mysql", "datasource": "xc_pg",
                                                  "table": "b"}),
             "spec.config.writers[0].datasource", "kind postgresql, which a mysql endpoint"),
            (transfer("xct.k2", pg("xc_my", "a"), pg("xc_pg", "b")),
             "spec.config.reader.datasource", "kind mysql, which a postgres endpoint"),
        ]
        for spec, field, words in cases:
            self.refused(P.http("POST", "/api/v1/tasks", spec, token=TOK["xc"]), field, words)
            self.absent(spec["name"])
        q = {"name": "xct.q", "team": "xct", "type": "quality", "schedule": "0 * * * *",
             "timezone": "UTC", "config": {"datasource": "xc_none", "checks": [
                 {"name": "a", "kind": "sql", "query": "SELECT 1"}]}}
        self.refused(P.http("POST", "/api/v1/tasks", q, token=TOK["xc"]),
                     "spec.config.datasource", 'no data source named "xc_none"')
        self.absent("xct.q")
        # A known source of the right kind, and a dsn endpoint: saved.
        ok = transfer("xct.ok", pg("xc_pg", "a"),
                      {"type": "postgres", "dsn": "host=127.0.0.1", "table": "b"})
        r = P.http("POST", "/api/v1/tasks", ok, token=TOK["xc"])
        self.assertEqual(r.status, 201, r)
        self.assertNotIn("warnings", r.json())

    def test_update_refuses_and_keeps_the_version(self):
        good = transfer("xct.upd", pg("xc_pg", "a"), pg("xc_pg", "b"))
        r = P.http("POST", "/api/v1/tasks", good, token=TOK["xc"])
        self.assertEqual(r.status, 201, r)
        tid, version = r.json()["id"], r.json()["version"]
        bad = transfer("xct.upd", pg("xc_pg", "a"), pg("xc_missing", "b"))
        self.refused(P.http("PUT", f"/api/v1/tasks/{tid}", bad, token=TOK["xc"]),
                     "spec.config.writers[0].datasource", 'no data source named "xc_missing"')
        r = P.http("GET", f"/api/v1/tasks/{tid}", token=TOK["xc"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["version"], version)
        self.assertEqual(r.json()["spec"]["config"]["writers"][0]["datasource"], "xc_pg")

    def test_mapping_unchecked_without_executor_saves_with_warnings(self):
        spec = transfer("xct.map", pg("xc_pg", "public.a"), pg("xc_pg", "public.b"))
        spec["config"]["writers"][0]["mapping"] = [{"target": "x", "source": "y"}]
        r = P.http("POST", "/api/v1/tasks/validate", spec, token=TOK["xc"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual([w["field"] for w in r.json()["warnings"]],
                         ["spec.config.reader", "spec.config.writers[0]"], r.json())
        r = P.http("POST", "/api/v1/tasks", spec, token=TOK["xc"])
        self.assertEqual(r.status, 201, r)
        warnings = r.json()["warnings"]
        self.assertEqual([w["field"] for w in warnings],
                         ["spec.config.reader", "spec.config.writers[0]"], warnings)
        self.assertIn("not checked", warnings[0]["message"])
        r = P.http("PUT", f"/api/v1/tasks/{r.json()['id']}", spec, token=TOK["xc"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(len(r.json()["warnings"]), 2, r.json())


if __name__ == "__main__":
    BUILD = os.path.abspath(sys.argv[1])
    unittest.main(argv=sys.argv[:1], verbosity=2)
