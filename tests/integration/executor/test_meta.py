#!/usr/bin/python3
"""test_meta.py - data metadata end to end: galaxyd's REST routes, halleyd's
cache, executord's POST /v1/meta and the real `wormhole meta` against the
stack's PostgreSQL and MariaDB.

Checks:
- the table list of a PostgreSQL and a MariaDB data source holds the
  test's tables with their row estimates and a view (kind view, no
  estimate); q filters it case-insensitively, limit cuts it (truncated);
- a table's columns come with their database types, value kinds,
  nullability and primary-key positions;
- a second read is answered from halleyd's cache: galaxyd's counter of
  requests sent to executors does not move, its cache-hit counter does;
  refresh=1 goes to the executor again; PutDataSource drops the cache;
- an unknown data source and an unknown table are 404 naming the field;
  bad input is 400 naming the parameter;
- the transfer preview shows the first rows as writers[0]'s mapping makes
  them (rename, cast, constant; at most `rows`), dirty rows with the
  mapping entry that refused them, and writes nothing; a bad job is 400
  naming its field, an unknown data source 404;
- with no executor alive a read that needs one is 503.

usage: test_meta.py BUILD_DIR HALLEY_PROTO
Needs ORRERY_PG_DSN, ORRERY_MYSQL_DSN and ORRERY_ZK (deploy/test.sh).
"""
import json
import os
import re
import secrets
import subprocess
import sys
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import orrery_it  # noqa: E402
import test_executor as tx  # noqa: E402
import test_executor_transfer as tt  # noqa: E402

PG = {}
MY = {}
PFX = f"mt{os.getpid()}"


def pg(q):
    return subprocess.run(["psql", PG["dsn"], "-v", "ON_ERROR_STOP=1", "-qAtc", q],
                          check=True, capture_output=True, text=True).stdout.strip()


def my(q):
    return subprocess.run(["mariadb", "-h", MY["host"], "-P", str(MY["port"]), "-u", MY["user"],
                           f"-p{MY['password']}", MY["db"], "-N", "-e", q],
                          check=True, capture_output=True, text=True).stdout.strip()


def counters():
    r = tx.P.http("GET", "/metrics")
    out = {}
    for name in ("galaxy_meta_fetches_total", "galaxy_meta_cache_hits_total"):
        m = re.search(rf"^{name} (\d+)$", r.body.decode() if isinstance(r.body, bytes)
                      else r.body, re.M)
        out[name] = int(m.group(1)) if m else None
    return out


def get(path, token=None):
    return tx.P.http("GET", path, token=token or tx.TOKEN)


def setUpModule():
    admin = orrery_it.require_env("ORRERY_PG_DSN")
    mdsn = orrery_it.require_env("ORRERY_MYSQL_DSN")
    tt.setUpModule()
    PG["dsn"] = tt.XFER["dsn"]
    pg("CREATE SCHEMA shop;"
       "CREATE TABLE shop.orders (id int8, line int4, code varchar(12) NOT NULL,"
       " amount numeric(12,2), at timestamptz, PRIMARY KEY (id, line));"
       "CREATE TABLE shop.customers (id int4 PRIMARY KEY, name text);"
       "CREATE TABLE shop.\"Order Lines\" (\"Line No\" int4);"
       "CREATE VIEW shop.big_orders AS SELECT id, amount FROM shop.orders WHERE amount > 10;"
       "INSERT INTO shop.orders SELECT g, 1, 'c' || g, g, now() FROM generate_series(1, 250) g;"
       "ANALYZE shop.orders; ANALYZE shop.customers;")
    u = urllib.parse.urlsplit(mdsn)
    MY.update(host=u.hostname, port=u.port or 3306, user=urllib.parse.unquote(u.username),
              password=urllib.parse.unquote(u.password or ""), db=u.path.lstrip("/"))
    my(f"CREATE TABLE {PFX}_items (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL,"
       f" price DECIMAL(10,2)); CREATE VIEW {PFX}_cheap AS SELECT id FROM {PFX}_items;"
       f" INSERT INTO {PFX}_items VALUES (1, 'a', 1.5), (2, 'b', 2.5), (3, 'c', 9);"
       f" ANALYZE TABLE {PFX}_items;")
    params = json.dumps({"host": MY["host"], "port": MY["port"], "user": MY["user"],
                         "database": MY["db"]})
    tt.tx.rpc("PutDataSource", tx.PB.PutDataSourceRequest(
        name="meta_my", kind="mysql", actor="it", params_json=params, secret=MY["password"]),
        tx.PB.DataSource)


def tearDownModule():
    try:
        if MY.get("db"):
            my(f"DROP VIEW IF EXISTS {PFX}_cheap; DROP TABLE IF EXISTS {PFX}_items")
    finally:
        tt.tearDownModule()


class Meta(unittest.TestCase):
    def test_a_pg_tables_with_estimates_and_a_view(self):
        r = get("/api/v1/datasources/xfer_pg/tables?refresh=1")
        self.assertEqual(r.status, 200, r)
        doc = r.json()
        byname = {(t["schema"], t["name"]): t for t in doc["tables"]}
        self.assertEqual(byname[("shop", "orders")]["kind"], "table")
        self.assertEqual(byname[("shop", "orders")]["row_estimate"], 250)
        self.assertEqual(byname[("shop", "customers")]["row_estimate"], 0)
        self.assertEqual(byname[("shop", "big_orders")]["kind"], "view")
        self.assertIsNone(byname[("shop", "big_orders")]["row_estimate"])
        self.assertFalse(any(t["schema"] in ("pg_catalog", "information_schema")
                             for t in doc["tables"]))
        self.assertFalse(doc["truncated"])
        self.assertRegex(doc["fetched_at"], r"^\d{4}-\d\d-\d\dT")
        r = get("/api/v1/datasources/xfer_pg/tables?q=SHOP.ORDERS")
        self.assertEqual([t["name"] for t in r.json()["tables"]], ["orders"])
        r = get("/api/v1/datasources/xfer_pg/tables?q=shop.&limit=2")
        self.assertEqual(len(r.json()["tables"]), 2)
        self.assertTrue(r.json()["truncated"])

    def test_b_pg_columns_types_and_key(self):
        r = get("/api/v1/datasources/xfer_pg/tables/shop.orders?refresh=1")
        self.assertEqual(r.status, 200, r)
        doc = r.json()
        self.assertEqual((doc["schema"], doc["name"], doc["row_estimate"]),
                         ("shop", "orders", 250))
        self.assertEqual(doc["primary_key"], ["id", "line"])
        cols = {c["name"]: c for c in doc["columns"]}
        self.assertEqual([c["name"] for c in doc["columns"]],
                         ["id", "line", "code", "amount", "at"])
        self.assertEqual(cols["id"]["type"], "bigint")
        self.assertEqual(cols["id"]["kind"], "int")
        self.assertEqual(cols["id"]["primary_key"], 1)
        self.assertEqual(cols["line"]["primary_key"], 2)
        self.assertEqual(cols["code"]["type"], "character varying(12)")
        self.assertEqual(cols["code"]["kind"], "text")
        self.assertFalse(cols["code"]["nullable"])
        self.assertEqual(cols["code"]["primary_key"], 0)
        self.assertEqual(cols["amount"]["type"], "numeric(12,2)")
        self.assertEqual(cols["amount"]["kind"], "numeric")
        self.assertTrue(cols["amount"]["nullable"])
        self.assertEqual(cols["at"]["kind"], "timestamptz")
        self.assertEqual(cols["at"]["ordinal"], 5)
        # A name that needs quoting, URL-encoded in the path.
        r = get("/api/v1/datasources/xfer_pg/tables/shop.Order%20Lines?refresh=1")
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json()["name"], [c["name"] for c in r.json()["columns"]]),
                         ("Order Lines", ["Line No"]))
        v = get("/api/v1/datasources/xfer_pg/tables/shop.big_orders").json()
        self.assertEqual((v["kind"], v["primary_key"]), ("view", []))

    def test_c_mariadb_tables_and_columns(self):
        r = get("/api/v1/datasources/meta_my/tables?refresh=1&q=" + PFX)
        self.assertEqual(r.status, 200, r)
        byname = {t["name"]: t for t in r.json()["tables"]}
        self.assertEqual(byname[f"{PFX}_items"]["kind"], "table")
        self.assertEqual(byname[f"{PFX}_items"]["row_estimate"], 3)
        self.assertEqual(byname[f"{PFX}_cheap"]["kind"], "view")
        r = get(f"/api/v1/datasources/meta_my/tables/{MY['db']}.{PFX}_items?refresh=1")
        self.assertEqual(r.status, 200, r)
        doc = r.json()
        self.assertEqual(doc["primary_key"], ["id"])
        cols = {c["name"]: c for c in doc["columns"]}
        self.assertEqual(cols["id"]["kind"], "int")
        self.assertEqual(cols["name"]["type"], "varchar(40)")
        self.assertFalse(cols["name"]["nullable"])
        self.assertEqual(cols["price"]["kind"], "numeric")

    def test_d_cache_hit_refresh_and_drop(self):
        path = "/api/v1/datasources/xfer_pg/tables/shop.customers"
        first = get(path + "?refresh=1")
        self.assertEqual(first.status, 200, first)
        c0 = counters()
        again = get(path)  # from the cache: no executor asked
        self.assertEqual(again.status, 200, again)
        c1 = counters()
        self.assertEqual(c1["galaxy_meta_fetches_total"], c0["galaxy_meta_fetches_total"])
        self.assertEqual(c1["galaxy_meta_cache_hits_total"],
                         c0["galaxy_meta_cache_hits_total"] + 1)
        self.assertEqual(again.json()["fetched_at"], first.json()["fetched_at"])
        self.assertEqual(again.json()["columns"], first.json()["columns"])
        # A column added in the database shows after a refresh, not before.
        pg("ALTER TABLE shop.customers ADD COLUMN email text")
        self.assertNotIn("email", [c["name"] for c in get(path).json()["columns"]])
        fresh = get(path + "?refresh=1")
        self.assertIn("email", [c["name"] for c in fresh.json()["columns"]])
        self.assertEqual(counters()["galaxy_meta_fetches_total"],
                         c1["galaxy_meta_fetches_total"] + 1)
        # A change of the data source drops its cache.
        ds = tx.rpc("GetDataSource", tx.PB.GetDataSourceRequest(name="xfer_pg"), tx.PB.DataSource)
        tx.rpc("PutDataSource", tx.PB.PutDataSourceRequest(
            name="xfer_pg", kind=ds.kind, params_json=ds.params_json, actor="it"),
            tx.PB.DataSource)
        c2 = counters()
        self.assertEqual(get(path).status, 200)
        self.assertEqual(counters()["galaxy_meta_fetches_total"],
                         c2["galaxy_meta_fetches_total"] + 1)

    def test_e_not_found_and_bad_input(self):
        r = get("/api/v1/datasources/no_such_ds/tables")
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.json()["error"]["field"], "name")
        r = get("/api/v1/datasources/xfer_pg/tables/shop.no_such_table")
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.json()["error"]["field"], "table")
        r = get("/api/v1/datasources/no_such_ds/tables/shop.orders")
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.json()["error"]["field"], "name")
        for q, field in (("limit=0", "limit"), ("limit=abc", "limit"), ("refresh=maybe", "refresh"),
                         ("q=" + "x" * 300, "q")):
            r = get("/api/v1/datasources/xfer_pg/tables?" + q)
            self.assertEqual(r.status, 400, (q, r))
            self.assertEqual(r.json()["error"]["field"], field)
        r = get("/api/v1/datasources/bad%20name/tables")
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.json()["error"]["field"], "name")
        # A kind without a catalog wormhole can read.
        tx.rpc("PutDataSource", tx.PB.PutDataSourceRequest(
            name="meta_hdfs", kind="hdfs", actor="it", params_json='{"host": "h"}'),
            tx.PB.DataSource)
        r = get("/api/v1/datasources/meta_hdfs/tables")
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.json()["error"]["field"], "name")
        self.assertIn("kind hdfs", r.json()["error"]["message"])
        # Anyone logged in may read; nobody else.
        self.assertEqual(tx.P.http("GET", "/api/v1/datasources/xfer_pg/tables").status, 401)
        ann = tx.P.login("ann", "ann-password-1")
        self.assertEqual(get("/api/v1/datasources/xfer_pg/tables", token=ann).status, 200)

    def preview(self, config, rows=None, token=None):
        body = {"config": config}
        if rows is not None:
            body["rows"] = rows
        return tx.P.http("POST", "/api/v1/transfers/preview", body, token=token or tx.TOKEN)

    def test_f_preview_maps_and_writes_nothing(self):
        pg("CREATE TABLE shop.preview_target (order_id int8, amt text, src text)")
        job = {"reader": {"type": "postgres", "datasource": "xfer_pg", "table": "shop.orders",
                          "split": {"key": "id"}},
               "writers": [{"type": "postgres", "datasource": "xfer_pg",
                            "table": "shop.preview_target", "mode": "truncate",
                            "mapping": [{"target": "order_id", "source": "id"},
                                        {"target": "amt", "source": "amount", "cast": "text"},
                                        {"target": "src", "constant": "shop"}]}]}
        r = self.preview(job, rows=7)
        self.assertEqual(r.status, 200, r)
        doc = r.json()
        self.assertEqual([c["name"] for c in doc["columns"]], ["order_id", "amt", "src"])
        self.assertEqual(len(doc["rows"]), 7)
        ids = sorted(int(row[0]) for row in doc["rows"])
        self.assertEqual(len(set(ids)), 7)
        for row in doc["rows"]:
            self.assertEqual(row[1], f"{int(row[0])}.00")
            self.assertEqual(row[2], "shop")
        self.assertEqual(doc["dirty"], [])
        # Nothing was written, truncated or staged.
        self.assertEqual(pg("SELECT count(*) FROM shop.preview_target"), "0")
        pg("INSERT INTO shop.preview_target VALUES (1, 'kept', 'x')")
        self.assertEqual(self.preview(job).status, 200)
        self.assertEqual(pg("SELECT count(*) FROM shop.preview_target"), "1")
        # Default: 20 rows. A value a cast refuses is a dirty row naming the entry.
        self.assertEqual(len(self.preview(job).json()["rows"]), 20)
        bad = json.loads(json.dumps(job))
        bad["writers"][0]["mapping"][1] = {"target": "amt", "source": "code", "cast": "int"}
        doc = self.preview(bad, rows=3).json()
        self.assertEqual(doc["rows"], [])
        self.assertEqual(len(doc["dirty"]), 3)
        self.assertEqual(doc["dirty"][0]["field"], "writers[0].mapping[1]")
        self.assertIn("not an integer", doc["dirty"][0]["reason"])

    def test_g_preview_bad_input(self):
        job = {"reader": {"type": "postgres", "datasource": "xfer_pg", "table": "shop.orders"},
               "writers": [{"type": "postgres", "datasource": "xfer_pg", "table": "shop.x",
                            "mapping": [{"target": "a", "source": "no_such_column"}]}]}
        r = self.preview(job)
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.json()["error"]["field"], "config.writers[0].mapping[0].source")
        for body, field in (({}, "config"), ({"config": []}, "config"),
                            ({"config": job, "rows": 21}, "rows"),
                            ({"config": job, "rows": "5"}, "rows")):
            r = tx.P.http("POST", "/api/v1/transfers/preview", body, token=tx.TOKEN)
            self.assertEqual(r.status, 400, (body, r))
            self.assertEqual(r.json()["error"]["field"], field)
        unknown = json.loads(json.dumps(job))
        unknown["reader"]["datasource"] = "no_such_ds"
        r = self.preview(unknown)
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.json()["error"]["field"], "config.reader.datasource")
        r = self.preview({"reader": {"type": "postgres"}, "writers": []})
        self.assertEqual(r.status, 400, r)
        self.assertTrue(r.json()["error"]["field"].startswith("config."), r)

    def test_z_no_executor_is_503(self):
        # Cached answers still come; one that needs an executor is 503.
        self.assertEqual(get("/api/v1/datasources/xfer_pg/tables/shop.orders").status, 200)
        tx.EX.stop()
        # galaxyd notices the stopped executor on its own time: a bounded
        # wait-until, long enough for a sanitizer build on a loaded machine.
        deadline = time.time() + 120
        r = None
        while time.time() < deadline:
            r = get("/api/v1/datasources/xfer_pg/tables/shop.orders?refresh=1")
            if r.status == 503:
                break
            time.sleep(0.2)
        self.assertEqual(r.status, 503, r)
        self.assertEqual(r.json()["error"]["field"], "executor")
        self.assertEqual(get("/api/v1/datasources/xfer_pg/tables/shop.orders").status, 200)
        r = self.preview({"reader": {"type": "postgres", "datasource": "xfer_pg",
                                     "table": "shop.orders"},
                          "writers": [{"type": "postgres", "datasource": "xfer_pg",
                                       "table": "shop.orders"}]})
        self.assertEqual(r.status, 503, r)


if __name__ == "__main__":
    tx.BUILD = os.path.abspath(sys.argv[1])
    tx.PROTO = os.path.abspath(sys.argv[2])
    unittest.main(argv=sys.argv[:1], verbosity=2)
