#!/usr/bin/python3
"""meta.py - data metadata on a database with 1,000 tables: the latency of
GET /api/v1/datasources/{name}/tables and .../tables/{table} through galaxyd
once cached (p50/p99 over many calls), and of the first, uncached fetch
(galaxyd -> executord -> wormhole meta -> PostgreSQL -> halleyd's cache).

Runs its own halleyd, galaxyd and executord (the integration tests'
helpers) against the stack's PostgreSQL and ZooKeeper; makes a database of
its own with 1,000 tables of 5 columns each (a primary key, text, numeric,
timestamptz, boolean) and drops it at the end. Not a timed test: it prints
the figures recorded in docs/benchmarks.md.

    eval "$(deploy/stack.sh env)"
    /usr/bin/python3 tests/bench/wormhole/meta.py build [TABLES] [CALLS]
"""
import os
import random
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration", "executor"))
import test_executor as tx  # noqa: E402
import test_executor_transfer as tt  # noqa: E402


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def timed(path):
    t0 = time.perf_counter()
    r = tx.P.http("GET", path, token=tx.TOKEN)
    ms = (time.perf_counter() - t0) * 1000
    assert r.status == 200, r
    return ms, r


def report(what, xs):
    print(f"{what:<44} n={len(xs):<5} p50={statistics.median(xs):8.1f} ms"
          f"  p99={pct(xs, 99):8.1f} ms  max={max(xs):8.1f} ms")


def main():
    tx.BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    tx.PROTO = os.path.join(HERE, "..", "..", "..", "rpc", "halley.proto")
    ntables = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 500
    tt.setUpModule()
    try:
        t0 = time.perf_counter()
        ddl = ";".join(
            f"CREATE TABLE t{i:04d} (id bigint PRIMARY KEY, name text NOT NULL,"
            f" amount numeric(12,2), at timestamptz, ok boolean)" for i in range(ntables))
        tt.sql(f"BEGIN; {ddl}; COMMIT; ANALYZE")
        print(f"made {ntables} tables in {time.perf_counter() - t0:.1f} s")
        base = "/api/v1/datasources/xfer_pg/tables"

        first, r = timed(base + "?refresh=1")
        n = len(r.json()["tables"])
        assert n >= ntables, n
        print(f"tables listed: {n}, answer {len(r.body)} bytes")
        refetch = [timed(base + "?refresh=1")[0] for _ in range(10)]
        cached = [timed(base)[0] for _ in range(calls)]
        search = [timed(base + f"?q=t0{random.randrange(100):02d}")[0] for _ in range(calls)]

        names = [f"public.t{i:04d}" for i in range(ntables)]
        some = random.sample(names, 50)
        cold = [timed(f"{base}/{name}")[0] for name in some]
        warm = [timed(f"{base}/{random.choice(some)}")[0] for _ in range(calls)]
        hot = [timed(f"{base}/public.t0001")[0] for _ in range(calls)]

        print(f"first uncached table list (1 fetch)           {first:8.1f} ms")
        report("uncached table list (refresh=1)", refetch)
        report("cached table list (whole)", cached)
        report("cached table list with q=", search)
        report("first fetch of one table's columns", cold)
        report("cached table (random of those 50)", warm)
        report("cached table (the same one)", hot)
    finally:
        tt.tearDownModule()


if __name__ == "__main__":
    main()
