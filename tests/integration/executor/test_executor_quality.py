#!/usr/bin/python3
"""test_executor_quality.py - quality checks run by executord, end to end:
real PostgreSQL, halleyd with a worker token, executord running the real
wormhole (the platform of test_executor_transfer.py, whose helpers it
shares; the test plays keplerd's part).

Checks:
- a transfer with passing checks succeeds; each check's figures are the
  attempt's process statistics quality.<name>.value/.threshold/.ok;
- a transfer whose check fails ends failed with reason "quality", its load
  rolled back (the target as it was), the figures recorded with ok = 0;
- a task of type quality on a data source passes, then fails with reason
  "quality" once the data breaks a check, the offending rows in its log;
- a quality task's config is checked when it is saved (400 naming the
  field), an unknown data source included.

usage: test_executor_quality.py BUILD_DIR HALLEY_PROTO
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import test_executor as tx  # noqa: E402
import test_executor_transfer as tt  # noqa: E402

setUpModule = tt.setUpModule
tearDownModule = tt.tearDownModule


class Quality(unittest.TestCase):
    def test_transfer_checks_pass_then_fail(self):
        tt.sql("CREATE TABLE q_src (id bigint PRIMARY KEY, v text, t timestamptz);"
               "CREATE TABLE q_dst (id bigint PRIMARY KEY, v text, t timestamptz);"
               "INSERT INTO q_src SELECT g, CASE WHEN g % 4 = 0 THEN NULL ELSE 'v' END, now() "
               "FROM generate_series(1, 200) g;"
               "INSERT INTO q_dst VALUES (-1, 'old', now())")
        checks = [{"name": "rows", "kind": "row_count"},
                  {"name": "v_nulls", "kind": "null_ratio", "column": "v", "max_ratio": 0.3},
                  {"name": "id_unique", "kind": "unique", "columns": ["id"]}]
        tid = tt.new_task({"name": "q_copy", "reader": tt.pg_endpoint("q_src"),
                           "writers": [tt.pg_endpoint("q_dst", mode="truncate")],
                           "quality": checks})
        iid, _ = tt.run(tid, 0)
        st = tt.stats(iid)
        self.assertEqual(st["quality.rows.value"], 0)
        self.assertEqual(st["quality.rows.ok"], 1)
        self.assertEqual(st["quality.v_nulls.value"], 0.25)
        self.assertEqual(st["quality.v_nulls.threshold"], 0.3)
        self.assertEqual(st["quality.v_nulls.ok"], 1)
        self.assertEqual(st["quality.id_unique.ok"], 1)
        self.assertEqual(st["rows_read"], 200)
        self.assertEqual(tt.sql("SELECT count(*) FROM q_dst"), "200")

        # A stricter threshold: the check fails inside the load's
        # transaction, so the truncate and the load roll back.
        tt.sql("DELETE FROM q_dst WHERE id > 10")
        checks[1]["max_ratio"] = 0.1
        tid = tt.new_task({"name": "q_copy", "reader": tt.pg_endpoint("q_src"),
                           "writers": [tt.pg_endpoint("q_dst", mode="truncate")],
                           "quality": checks})
        iid, inst = tt.run(tid, 1, want="failed")
        self.assertEqual(inst.reason, "quality")
        self.assertEqual(tt.sql("SELECT count(*) FROM q_dst"), "10")
        st = tt.stats(iid)
        self.assertEqual(st["quality.v_nulls.ok"], 0)
        self.assertEqual(st["quality.v_nulls.value"], 0.25)
        self.assertEqual(st["quality.v_nulls.threshold"], 0.1)
        self.assertIn("quality check failed", tx.EX.get_log(iid)[1])

    def test_quality_task_passes_then_fails(self):
        tt.sql("CREATE TABLE qt_orders (id bigint, amount numeric, at timestamptz);"
               "INSERT INTO qt_orders SELECT g, g, now() FROM generate_series(1, 50) g")
        config = {"datasource": "xfer_pg", "checks": [
            {"name": "id_unique", "kind": "unique", "table": "qt_orders", "columns": ["id"]},
            {"name": "fresh", "kind": "freshness", "table": "qt_orders", "column": "at",
             "max_age_s": 3600},
            {"name": "no_negative", "kind": "sql",
             "query": "SELECT id, amount FROM qt_orders WHERE amount < 0 ORDER BY id"}]}
        tid = tt.new_task(config, task_type="quality")
        iid, _ = tt.run(tid, 2)
        st = tt.stats(iid)
        self.assertEqual(st["quality.id_unique.ok"], 1)
        self.assertEqual(st["quality.fresh.ok"], 1)
        self.assertEqual(st["quality.no_negative.value"], 0)
        log = tx.EX.get_log(iid)[1]
        self.assertIn('"status":"ok"', log)
        self.assertNotIn("password=", log)

        tt.sql("INSERT INTO qt_orders VALUES (7, -3, now()), (8, -4, now())")
        iid, inst = tt.run(tid, 3, want="failed")
        self.assertEqual(inst.reason, "quality")
        st = tt.stats(iid)
        self.assertEqual(st["quality.id_unique.value"], 2)
        self.assertEqual(st["quality.id_unique.ok"], 0)
        self.assertEqual(st["quality.no_negative.value"], 2)
        self.assertEqual(st["quality.no_negative.threshold"], 0)
        self.assertEqual(st["quality.fresh.ok"], 1)
        log = tx.EX.get_log(iid)[1]
        self.assertIn('quality check offending row', log)
        self.assertIn('[\\"7\\",\\"-3\\"]', log)

    def test_quality_config_checked_at_save(self):
        def save(config):
            spec = {"name": "q_bad", "team": "etl", "type": "quality",
                    "schedule": "0 * * * *", "timezone": "UTC", "config": config}
            return tx.P.http("POST", "/api/v1/tasks", spec, token=tx.TOKEN)
        cases = [
            ({"checks": [{"name": "a", "kind": "sql", "query": "SELECT 1"}]},
             "spec.config.datasource"),
            ({"datasource": "xfer_pg", "checks": []}, "spec.config.checks"),
            ({"datasource": "xfer_pg", "checks": [{"name": "a", "kind": "row_count"}]},
             "spec.config.checks[0].kind"),
            ({"datasource": "xfer_pg",
              "checks": [{"name": "a", "kind": "unique", "columns": ["id"]}]},
             "spec.config.checks[0].table"),
            ({"datasource": "xfer_pg",
              "checks": [{"name": "a", "kind": "sql", "query": "SELECT 1", "max_ratio": 1}]},
             "spec.config.checks[0].max_ratio"),
            ({"datasource": "xfer_pg",
              "checks": [{"name": "Bad", "kind": "sql", "query": "SELECT 1"}]},
             "spec.config.checks[0].name"),
        ]
        for config, field in cases:
            r = save(config)
            self.assertEqual(r.status, 400, (config, r))
            self.assertEqual(r.json()["error"]["field"], field, (config, r.json()))

    def test_checks_tables_and_columns_at_save(self):
        # galaxyd reads the tables through the executor and names the field.
        tt.sql("CREATE TABLE qs_t (id bigint, v text, at timestamptz)")

        def save(type_, config):
            tt_spec = {"name": "qs_bad", "team": "etl", "type": type_,
                       "schedule": "0 * * * *", "timezone": "UTC", "config": config}
            return tx.P.http("POST", "/api/v1/tasks", tt_spec, token=tx.TOKEN)

        def q(*checks):
            return {"datasource": "xfer_pg", "checks": list(checks)}
        cases = [
            (q({"name": "a", "kind": "null_ratio", "table": "qs_none", "column": "v"}),
             "spec.config.checks[0].table"),
            (q({"name": "a", "kind": "sql", "query": "SELECT 1"},
               {"name": "b", "kind": "null_ratio", "table": "qs_t", "column": "nope"}),
             "spec.config.checks[1].column"),
            (q({"name": "a", "kind": "unique", "table": "public.qs_t", "columns": ["id", "nope"]}),
             "spec.config.checks[0].columns[1]"),
            (q({"name": "a", "kind": "freshness", "table": "qs_t", "column": "v",
                "max_age_s": 60}),
             "spec.config.checks[0].column"),
        ]
        for config, field in cases:
            r = save("quality", config)
            self.assertEqual(r.status, 400, (config, r))
            self.assertEqual(r.json()["error"]["field"], field, (config, r.json()))
        # a transfer's check defaults to its writer's table
        r = save("transfer", {"reader": tt.pg_endpoint("qs_t"),
                              "writers": [tt.pg_endpoint("qs_t", name="copy")],
                              "quality": [{"name": "n", "kind": "null_ratio", "column": "nope",
                                           "writer": "copy"}]})
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.json()["error"]["field"], "spec.config.quality[0].column")
        # good checks save
        r = save("quality", q({"name": "f", "kind": "freshness", "table": "qs_t", "column": "at",
                               "max_age_s": 60},
                              {"name": "u", "kind": "unique", "table": "qs_t", "columns": ["id"]}))
        self.assertEqual(r.status, 201, r)

    def test_unknown_datasource_fails_naming_the_field(self):
        # Refused at save (halleyd checks the name), so it never runs.
        spec = {"name": "q_unknown_ds", "team": "etl", "type": "quality",
                "schedule": "0 * * * *", "timezone": "UTC",
                "config": {"datasource": "no_such_source",
                           "checks": [{"name": "a", "kind": "sql", "query": "SELECT 1"}]}}
        r = tx.P.http("POST", "/api/v1/tasks", spec, token=tx.TOKEN)
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.json()["error"]["field"], "spec.config.datasource")


if __name__ == "__main__":
    tx.BUILD = os.path.abspath(sys.argv[1])
    tx.PROTO = os.path.abspath(sys.argv[2])
    unittest.main(argv=sys.argv[:1], verbosity=2)
