#!/usr/bin/python3
"""test_xfer_mapping.py - a transfer task's column mapping checked at save
against the tables' columns (galaxyd, reading them through executord's
/v1/meta), then run by executord with the real wormhole (the platform of
test_executor_transfer.py, whose helpers it shares; the test plays
keplerd's part).

Checks:
- a target not in the writer's table, a source not in the reader's table
  (or not among the reader's own columns), a cast that cannot work (a date
  cast to int, an int cast into a date column), a copy between kinds no cast
  joins, a NULL constant into a NOT NULL column and an unknown table are each
  a 400 naming the field (spec.config.writers[0].mapping[N].target, .source,
  .cast, .constant, spec.config.writers[0].table), on create and on update,
  and nothing is saved;
- a good mapping saves with no warnings, runs, and the target holds the
  renamed, cast and constant columns; the unmapped column never arrives;
- the run reports the tables and columns it moved (lineage origin run), which
  stay when the task is then saved with another target;
- GET /api/v1/tasks/{id}/watermark answers "" before an incremental mapped
  task's first run and the high mark after it (400 without a name, 404 for
  an unknown task).

usage: test_xfer_mapping.py BUILD_DIR HALLEY_PROTO
Needs ORRERY_PG_DSN and ORRERY_ZK (deploy/test.sh exports them).
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import test_executor as tx  # noqa: E402
import test_executor_transfer as tt  # noqa: E402

PFX = f"xm{os.getpid()}"


def setUpModule():
    tt.setUpModule()
    tt.sql(f"CREATE TABLE {PFX}_src (id bigint PRIMARY KEY, name text, code text,"
           f" born date, secret text);"
           f"CREATE TABLE {PFX}_dst (ident bigint PRIMARY KEY, label varchar(40), num int,"
           f" day date, origin text NOT NULL);"
           f"INSERT INTO {PFX}_src SELECT g, 'n' || g, (g * 10)::text, date '2024-01-01' + g,"
           f" 'hidden' FROM generate_series(1, 50) g")


tearDownModule = tt.tearDownModule

GOOD = [{"target": "ident", "source": "id"},
        {"target": "label", "source": "name"},
        {"target": "num", "source": "code", "cast": "int"},
        {"target": "day", "source": "born"},
        {"target": "origin", "constant": "crm"}]


def spec(name, mapping, reader_extra=None, table=None):
    reader = tt.pg_endpoint(f"{PFX}_src")
    reader.update(reader_extra or {})
    writer = tt.pg_endpoint(table or f"{PFX}_dst", mode="truncate")
    writer["mapping"] = mapping
    return {"name": name, "team": "etl", "type": "transfer", "schedule": "0 * * * *",
            "timezone": "UTC", "config": {"reader": reader, "writers": [writer]}}


def with_entry(k, entry):
    m = [dict(e) for e in GOOD]
    m[k] = entry
    return m


class Mapping(unittest.TestCase):
    def refused(self, r, field, words):
        self.assertEqual(r.status, 400, r)
        err = r.json()["error"]
        self.assertEqual(err["field"], field, err)
        self.assertIn(words, err["message"], err)

    def test_bad_mappings_are_refused_naming_the_field(self):
        w = "spec.config.writers[0]"
        cases = [
            (spec("xm_t", with_entry(1, {"target": "lable", "source": "name"})),
             f"{w}.mapping[1].target", "column lable is not in table"),
            (spec("xm_s", with_entry(2, {"target": "num", "source": "kode", "cast": "int"})),
             f"{w}.mapping[2].source", "column kode is not in table"),
            (spec("xm_c", with_entry(2, {"target": "num", "source": "born", "cast": "int"})),
             f"{w}.mapping[2].cast", "cannot be cast to int"),
            (spec("xm_c2", with_entry(3, {"target": "day", "source": "id", "cast": "bigint"})),
             f"{w}.mapping[3].cast", "cannot go into column day"),
            (spec("xm_k", with_entry(3, {"target": "day", "source": "id"})),
             f"{w}.mapping[3].source", "cannot go into column day"),
            (spec("xm_n", with_entry(4, {"target": "origin", "constant": None})),
             f"{w}.mapping[4].constant", "NOT NULL"),
            (spec("xm_r", GOOD, reader_extra={"columns": ["id", "name", "born"]}),
             f"{w}.mapping[2].source", "not among the reader's columns"),
            (spec("xm_tab", GOOD, table=f"{PFX}_nope"),
             f"{w}.table", "no table"),
        ]
        for s, field, words in cases:
            # the designer's check without saving answers as the save does
            self.refused(tx.P.http("POST", "/api/v1/tasks/validate", s, token=tx.TOKEN),
                         field, words)
            self.refused(tx.P.http("POST", "/api/v1/tasks", s, token=tx.TOKEN), field, words)
            r = tx.P.http("GET", f"/api/v1/tasks?q={s['name']}&active=any", token=tx.TOKEN)
            self.assertEqual(r.json()["items"], [], s["name"])
        # On update too: the version stays.
        r = tx.P.http("POST", "/api/v1/tasks", spec("xm_upd", GOOD), token=tx.TOKEN)
        self.assertEqual(r.status, 201, r)
        tid, version = r.json()["id"], r.json()["version"]
        bad = spec("xm_upd", with_entry(0, {"target": "ident", "source": "nope"}))
        self.refused(tx.P.http("PUT", f"/api/v1/tasks/{tid}", bad, token=tx.TOKEN),
                     f"{w}.mapping[0].source", "column nope")
        r = tx.P.http("GET", f"/api/v1/tasks/{tid}", token=tx.TOKEN)
        self.assertEqual(r.json()["version"], version)

    def test_good_mapping_saves_and_runs(self):
        r = tx.P.http("POST", "/api/v1/tasks", spec("xm_run", GOOD), token=tx.TOKEN)
        self.assertEqual(r.status, 201, r)
        self.assertNotIn("warnings", r.json())
        iid, _ = tt.run(r.json()["id"], 5)
        self.assertEqual(tt.sql(f"SELECT count(*) FROM {PFX}_dst"), "50")
        self.assertEqual(tt.sql(f"SELECT ident, label, num, day, origin FROM {PFX}_dst"
                                f" WHERE ident = 7"), "7|n7|70|2024-01-08|crm")
        st = tt.stats(iid)
        self.assertEqual(st["rows_written"], 50)

    def test_run_reports_what_it_moved(self):
        r = tx.P.http("POST", "/api/v1/tasks", spec("xm_lineage", GOOD), token=tx.TOKEN)
        self.assertEqual(r.status, 201, r)
        tid = r.json()["id"]
        tt.run(tid, 6)
        # The task now writes elsewhere: its saved edges follow, the run's stay.
        tt.sql(f"CREATE TABLE {PFX}_other (ident bigint)")
        r = tx.P.http("PUT", f"/api/v1/tasks/{tid}",
                      spec("xm_lineage", GOOD[:1], table=f"{PFX}_other"), token=tx.TOKEN)
        self.assertEqual(r.status, 200, r)
        src, dst, other = (f"xfer_pg.public.{PFX}_{t}" for t in ("src", "dst", "other"))
        r = tx.P.http("GET", f"/api/v1/lineage?kind=table&name={src}", token=tx.TOKEN)
        self.assertEqual(r.status, 200, r)
        got = {(e["target_name"], tuple(e["origins"])) for e in r.json()["edges"]
               if e["task"] == "xm_lineage"}
        self.assertEqual(got, {(dst, ("run",)), (other, ("save",))})
        r = tx.P.http("GET", f"/api/v1/lineage?kind=column&name={dst}.num", token=tx.TOKEN)
        self.assertEqual([(e["source_name"], e["detail"], e["origins"]) for e in r.json()["edges"]
                          if e["task"] == "xm_lineage"],
                         [(f"{src}.code", {"cast": "int"}, ["run"])])

    def test_watermark_route(self):
        s = spec("xm_incr", GOOD, reader_extra={"incremental": {"column": "id", "kind": "integer"}})
        s["config"]["writers"][0]["mode"] = "append"
        tt.sql(f"TRUNCATE {PFX}_dst")
        r = tx.P.http("POST", "/api/v1/tasks", s, token=tx.TOKEN)
        self.assertEqual(r.status, 201, r)
        tid = r.json()["id"]
        path = f"/api/v1/tasks/{tid}/watermark?name={PFX}_src.id"
        r = tx.P.http("GET", path, token=tx.TOKEN)
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json()["value"], r.json()["instance_id"]), ("", None))
        iid, _ = tt.run(tid, 7)
        r = tx.P.http("GET", path, token=tx.TOKEN)
        self.assertEqual((r.json()["value"], r.json()["instance_id"]), ("50", iid), r.json())
        self.assertIsNotNone(r.json()["updated_at"])
        r = tx.P.http("GET", f"/api/v1/tasks/{tid}/watermark", token=tx.TOKEN)
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.json()["error"]["field"], "name")
        r = tx.P.http("GET", f"/api/v1/tasks/999999/watermark?name=x.id", token=tx.TOKEN)
        self.assertEqual(r.status, 404, r)


if __name__ == "__main__":
    tx.BUILD = os.path.abspath(sys.argv[1])
    tx.PROTO = os.path.abspath(sys.argv[2])
    unittest.main(argv=sys.argv[:1], verbosity=2)
