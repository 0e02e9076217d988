#!/usr/bin/python3
"""test_executor_transfer.py - executord's transfer task type and code
packages, end to end: real PostgreSQL, real halleyd (with a worker token),
real executord running the real wormhole. The test plays keplerd's part
(see test_executor.py, whose helpers it shares).

Checks:
- a PG -> PG transfer whose job names a data source (not a dsn) runs with
  the password Halley keeps for it (a wrong stored password fails the
  run); the rows arrive; the instance's process statistics say how many;
  the resolved connection string shows in no log and the resolved job is
  gone after the run;
- an unknown data source fails the attempt with a reason naming the field;
- an incremental task run twice reads only the new rows the second time;
  the watermark is in Halley; a failed run does not move it, and the next
  good run picks up from where the last good one ended;
- a code package (CreateCodePackage with a tarball in the blob root) is
  unpacked on the executor, reported ok, and a shell task with
  config.package runs a script from it; a new version replaces it; one
  created while the executor was down is installed when it starts; an
  archive whose sha256 is not the recorded one is refused;
- tarballs with "../", an absolute name, a symbolic link out of the folder
  or a device file are refused, reported failed, and leave nothing behind.

usage: test_executor_transfer.py BUILD_DIR HALLEY_PROTO
Needs ORRERY_PG_DSN and ORRERY_ZK (deploy/test.sh exports them), root and
writable cgroups.
"""
import hashlib
import io
import json
import os
import secrets
import subprocess
import sys
import tarfile
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import orrery_it  # noqa: E402
import test_executor as tx  # noqa: E402

WORKER_TOKEN = secrets.token_hex(16)
XFER = {}  # user, password, port, db, dsn of the transfer database


class WorkerPlatform(orrery_it.Platform):
    """halleyd that hands data-source secrets to workers with WORKER_TOKEN."""

    def halley_env(self):
        env = super().halley_env()
        env["ORRERY_HALLEY_WORKER_TOKEN"] = WORKER_TOKEN
        return env


class WorkerExecutor(tx.Executor):
    def env(self):
        env = super().env()
        env["ORRERY_EXECUTOR_HALLEY_WORKER_TOKEN"] = WORKER_TOKEN
        return env

    def start(self):
        """Start, then wait until executord's card is in ZooKeeper: its port
        opens first, and galaxyd finds an executor for metadata, previews
        and checks at save only through that card."""
        super().start()
        deadline = time.monotonic() + 60
        out = None
        while time.monotonic() < deadline and self.proc.poll() is None:
            out = subprocess.run([os.path.join(tx.BUILD, "bin", "ex_zk_get"), self.zk,
                                  f"/orrery/executors/{self.id}"], capture_output=True, text=True)
            if out.returncode == 0 and '"http_port"' in out.stdout:
                return
            time.sleep(0.05)
        raise AssertionError("executord's card never came into ZooKeeper: "
                             f"{out.stderr if out else 'executord exited'}")


def sql(q):
    out = subprocess.run(["psql", XFER["dsn"], "-v", "ON_ERROR_STOP=1", "-qAtc", q],
                         check=True, capture_output=True, text=True)
    return out.stdout.strip()


class TableGate:
    """Holds an ACCESS EXCLUSIVE lock on a table in an open transaction of
    its own psql, so a run that reads the table waits inside PostgreSQL
    until open() commits: the test, not the machine's speed, decides when
    the read may go on."""

    def __init__(self, table):
        self.table = table
        self.p = subprocess.Popen(["psql", XFER["dsn"], "-v", "ON_ERROR_STOP=1", "-qAt"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.p.stdin.write(f"BEGIN; LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE; "
                           "SELECT 'locked';\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline().strip()
        if line != "locked":
            self.p.kill()
            raise AssertionError(f"could not lock {table}: {line!r}")

    def waiters(self):
        """Sessions waiting for the lock now."""
        return int(sql("SELECT count(*) FROM pg_locks WHERE NOT granted "
                       f"AND relation = '{self.table}'::regclass"))

    def open(self):
        if self.p.poll() is None:
            self.p.stdin.write("COMMIT;\n")
            self.p.stdin.close()
            self.p.wait(timeout=30)
        self.p.stdout.close()


def setUpModule():
    import grpc
    zk = orrery_it.require_env("ORRERY_ZK")
    admin = orrery_it.require_env("ORRERY_PG_DSN")
    tx.PB = orrery_it.import_proto(tx.PROTO, "halley_pb2")
    # The transfer's own database; the stack's password reaches wormhole only
    # through the data source kept (encrypted) in Halley.
    u = urllib.parse.urlsplit(admin)
    XFER["user"] = urllib.parse.unquote(u.username or "")
    XFER["password"] = urllib.parse.unquote(u.password or "")
    XFER["port"] = u.port or 5432
    XFER["db"] = f"orr_xfer_{os.getpid()}_{secrets.token_hex(3)}"
    orrery_it.psql(admin, f"CREATE DATABASE \"{XFER['db']}\"")
    XFER["dsn"] = orrery_it.dsn_with_db(admin, XFER["db"])
    tx.P = WorkerPlatform(tx.BUILD, galaxies=0).__enter__()
    try:
        tx.EX = WorkerExecutor(tx.P, zk)
        tx.P.start_galaxy({"ORRERY_GALAXY_ZK": zk,
                           "ORRERY_GALAXY_EXECUTOR_LOG_TOKEN": tx.EX.log_token,
                           "ORRERY_GALAXY_BLOB_ROOT": "file://" + tx.EX.blob})
        tx.P.add_user("root", "root-password-1", "admin")
        tx.P.add_user("ann", "ann-password-1", "developer", teams=["etl"])
        tx.TOKEN = tx.P.login("root", "root-password-1")
        tx.GRPC = grpc.insecure_channel(f"127.0.0.1:{tx.P.halley_port}")
        params = json.dumps({"host": "127.0.0.1", "port": XFER["port"], "user": XFER["user"],
                             "database": XFER["db"], "connect_timeout": 10})
        for name, secret in (("xfer_pg", XFER["password"]), ("xfer_badpw", "not-the-password")):
            tx.rpc("PutDataSource", tx.PB.PutDataSourceRequest(
                name=name, kind="postgresql", actor="it", params_json=params, secret=secret),
                tx.PB.DataSource)
        tx.EX.start()
    except BaseException:
        tearDownModule()
        raise


def tearDownModule():
    tx.tearDownModule()
    admin = os.environ.get("ORRERY_PG_DSN")
    if admin and XFER.get("db"):
        try:
            orrery_it.psql(admin, f"DROP DATABASE IF EXISTS \"{XFER['db']}\" WITH (FORCE)")
        except subprocess.CalledProcessError:
            pass


def new_task(config, task_type="transfer"):
    tx.COUNTER[0] += 1
    spec = {"name": f"ex_xfer_{tx.COUNTER[0]}", "team": "etl", "type": task_type,
            "schedule": "0 * * * *", "timezone": "UTC", "config": config}
    r = tx.P.http("POST", "/api/v1/tasks", spec, token=tx.TOKEN)
    assert r.status == 201, r
    return r.json()["id"]


def dispatch(tid, hour):
    """One instance of task tid (its hour-th cycle), dispatched to us."""
    r = tx.P.http("POST", f"/api/v1/tasks/{tid}/backfill",
                  {"from": f"2026-01-01T{hour:02d}:00:00Z",
                   "to": f"2026-01-01T{hour + 1:02d}:00:00Z"}, token=tx.TOKEN)
    assert r.status == 200, r
    iid = r.json()["created"][0]
    S = tx.PB.InstanceState
    tx.rpc("TransitionInstance", tx.PB.TransitionRequest(
        instance_id=iid, expected_state=S.Value("INSTANCE_STATE_WAITING"),
        new_state=S.Value("INSTANCE_STATE_READY"), actor="kepler"), tx.PB.TransitionResult)
    tx.rpc("TransitionInstance", tx.PB.TransitionRequest(
        instance_id=iid, expected_state=S.Value("INSTANCE_STATE_READY"),
        new_state=S.Value("INSTANCE_STATE_DISPATCHED"), actor="kepler", executor=tx.EX.id),
        tx.PB.TransitionResult)
    return iid


def run(tid, hour, want="success"):
    iid = dispatch(tid, hour)
    inst = tx.wait_state(iid, ("success", "failed", "timed_out"), timeout=45)
    if tx.state_name(inst.state) != want:
        raise AssertionError(f"instance {iid}: {tx.state_name(inst.state)} ({inst.reason!r}), "
                             f"wanted {want}\n--- task log\n{tx.EX.get_log(iid)[1][-3000:]}")
    return iid, inst


def stats(iid):
    r = tx.rpc("ListProcessStats", tx.PB.ListProcessStatsRequest(instance_id=iid),
               tx.PB.ListProcessStatsResponse)
    return {s.key: s.value for s in r.stats}


def watermark(tid, name):
    return tx.rpc("GetWatermark", tx.PB.GetWatermarkRequest(task_id=tid, name=name),
                  tx.PB.Watermark).value


def pg_endpoint(table, **kw):
    d = {"type": "postgres", "datasource": "xfer_pg", "table": table}
    d.update(kw)
    return d


class Transfer(unittest.TestCase):
    def test_datasource_copy_records_statistics(self):
        sql("CREATE TABLE ds_src (id bigint PRIMARY KEY, v text, t timestamptz);"
            "CREATE TABLE ds_dst (id bigint PRIMARY KEY, v text, t timestamptz);"
            "INSERT INTO ds_src SELECT g, 'row ' || g, now() FROM generate_series(1, 1234) g")
        tid = new_task({"name": "ds_copy", "reader": pg_endpoint("ds_src"),
                        "writers": [pg_endpoint("ds_dst", mode="truncate")]})
        iid, _ = run(tid, 0)
        self.assertEqual(sql("SELECT count(*) FROM ds_dst"), "1234")
        self.assertEqual(sql("SELECT count(*) FROM (SELECT * FROM ds_src EXCEPT "
                             "SELECT * FROM ds_dst) x"), "0")
        st = stats(iid)
        self.assertEqual(st["rows_read"], 1234)
        self.assertEqual(st["rows_written"], 1234)
        self.assertEqual((st["resumed_splits"], st["rows_skipped"]), (0, 0))  # a first attempt
        self.assertEqual(st["dirty_rows"], 0)
        self.assertGreater(st["bytes_read"], 1234 * 5)
        self.assertIn("seconds", st)
        # The password was only ever in the private job file, which is gone;
        # no log shows the resolved connection string.
        log = tx.EX.get_log(iid)[1]
        self.assertIn('"status":"ok"', log)
        for text in (log, tx.EX.daemon_log(), tx.P.log("halleyd.log")):
            self.assertNotIn("password=", text)
        self.assertFalse(os.path.exists(os.path.join(tx.EX.work, "runs", f"{iid}-1")))
        self.assertIn("data source resolved", tx.EX.daemon_log())

    def test_a_rerun_resumes_the_committed_splits_unless_from_scratch(self):
        # The first attempt fails by construction at its last split: the
        # target refuses the source's highest id (a CHECK). 800 rows in 4
        # splits are sampled whole (deterministic boundaries at ids 201, 401,
        # 601), and on one channel the splits commit in key order: the three
        # before the bad row are committed and recorded, 600 rows.
        sql("CREATE TABLE rs_src (id bigint PRIMARY KEY, v text);"
            "CREATE TABLE rs_dst (id bigint PRIMARY KEY, v text, CONSTRAINT rs_max CHECK (id < 800));"
            "INSERT INTO rs_src SELECT g, md5(g::text) FROM generate_series(1, 800) g;"
            "ANALYZE rs_src")
        tid = new_task({"name": "rs_copy", "channels": 1,
                        "reader": pg_endpoint("rs_src", split={"key": "id", "shards": 4}),
                        "writers": [pg_endpoint("rs_dst")]})
        iid, inst = run(tid, 0, want="failed")
        self.assertEqual(sql("SELECT count(*) FROM rs_dst"), "600")
        self.assertEqual(sql("SELECT count(*) FROM orr_wh_splits WHERE job = 'rs_copy'"), "3")

        def attempt_stats(n):
            r = tx.rpc("ListProcessStats", tx.PB.ListProcessStatsRequest(instance_id=iid),
                       tx.PB.ListProcessStatsResponse)
            return {x.key: x.value for x in r.stats if x.attempt == n}

        def rerun(attempt, want, **body):
            r = tx.P.http("POST", f"/api/v1/instances/{iid}/rerun", body, token=tx.TOKEN)
            self.assertEqual(r.status, 200, r)
            S = tx.PB.InstanceState
            for a, b, ex in (("WAITING", "READY", ""), ("READY", "DISPATCHED", tx.EX.id)):
                tx.rpc("TransitionInstance", tx.PB.TransitionRequest(
                    instance_id=iid, expected_state=S.Value(f"INSTANCE_STATE_{a}"),
                    new_state=S.Value(f"INSTANCE_STATE_{b}"), actor="kepler", executor=ex),
                    tx.PB.TransitionResult)
            got = tx.wait_state(iid, ("success", "failed", "timed_out"), timeout=45)
            self.assertEqual((got.attempt, tx.state_name(got.state)), (attempt, want),
                             tx.EX.get_log(iid)[1][-3000:])
            return attempt_stats(attempt)

        # The rerun resumes: it reads only the last split.
        sql("ALTER TABLE rs_dst DROP CONSTRAINT rs_max")
        st = rerun(2, "success")
        self.assertEqual((st["resumed_splits"], st["rows_skipped"], st["rows_read"]),
                         (3, 600, 200))
        self.assertEqual(sql("SELECT count(*) FROM (SELECT * FROM rs_src EXCEPT ALL "
                             "SELECT * FROM rs_dst) x"), "0")
        self.assertEqual(sql("SELECT count(*) FROM rs_dst"), "800")
        self.assertEqual(sql("SELECT count(*) FROM orr_wh_splits WHERE job = 'rs_copy'"), "0")

        # Failed again midway, then rerun from scratch (on an emptied
        # target): every split is read, none skipped.
        sql("TRUNCATE rs_dst; ALTER TABLE rs_dst ADD CONSTRAINT rs_max CHECK (id < 800)")
        rerun(3, "failed")
        self.assertEqual(sql("SELECT count(*) FROM orr_wh_splits WHERE job = 'rs_copy'"), "3")
        sql("TRUNCATE rs_dst; ALTER TABLE rs_dst DROP CONSTRAINT rs_max")
        st = rerun(4, "success", from_scratch=True)
        self.assertEqual((st["resumed_splits"], st["rows_skipped"], st["rows_read"]), (0, 0, 800))
        self.assertEqual(sql("SELECT count(*) FROM rs_dst"), "800")

    def test_datasource_password_is_the_one_used(self):
        # The same source with a wrong stored secret: PostgreSQL refuses it.
        tid = new_task({"reader": {"type": "postgres", "datasource": "xfer_badpw",
                                   "table": "ds_src"},
                        "writers": [pg_endpoint("ds_dst", mode="truncate")]})
        iid, inst = run(tid, 0, want="failed")
        self.assertEqual(inst.reason, "exit code 1")
        self.assertIn("password authentication failed", tx.EX.get_log(iid)[1])

    def test_unknown_datasource_fails_naming_the_field(self):
        # Refused at save (halleyd checks the names), so it never runs.
        spec = {"name": "ex_xfer_unknown_ds", "team": "etl", "type": "transfer",
                "schedule": "0 * * * *", "timezone": "UTC",
                "config": {"reader": {"type": "postgres", "datasource": "no_such_source",
                                      "table": "x"},
                           "writers": [pg_endpoint("y")]}}
        r = tx.P.http("POST", "/api/v1/tasks", spec, token=tx.TOKEN)
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.json()["error"]["field"], "spec.config.reader.datasource")
        self.assertIn("no_such_source", r.json()["error"]["message"])
        # a reference beside a dsn is ambiguous: refused, naming the writer
        tid = new_task({"reader": pg_endpoint("x"),
                        "writers": [pg_endpoint("y", dsn="host=127.0.0.1")]})
        _, inst = run(tid, 0, want="failed")
        self.assertTrue(inst.reason.startswith("bad_spec: config.writers[0].datasource"),
                        inst.reason)

    def test_incremental_runs_move_the_watermark_only_on_success(self):
        sql("CREATE TABLE inc_src (id bigint PRIMARY KEY, v text);"
            "CREATE TABLE inc_dst (id bigint PRIMARY KEY, v text);"
            "INSERT INTO inc_src SELECT g, 'a' || g FROM generate_series(1, 100) g")
        tid = new_task({"name": "inc", "reader": pg_endpoint(
            "inc_src", incremental={"column": "id", "kind": "integer"}),
            "writers": [pg_endpoint("inc_dst")]})
        name = "inc_src.id"
        self.assertEqual(watermark(tid, name), "")
        iid, _ = run(tid, 0)
        self.assertEqual(stats(iid)["rows_read"], 100)
        self.assertEqual(sql("SELECT count(*) FROM inc_dst"), "100")
        self.assertEqual(watermark(tid, name), "100")
        wm = tx.rpc("GetWatermark", tx.PB.GetWatermarkRequest(task_id=tid, name=name),
                    tx.PB.Watermark)
        self.assertEqual(wm.instance_id, iid)

        # Second run: only the new rows (append mode would fail on a re-read
        # key, so the count proves it).
        sql("INSERT INTO inc_src SELECT g, 'b' || g FROM generate_series(101, 150) g")
        iid, _ = run(tid, 1)
        self.assertEqual(stats(iid)["rows_read"], 50)
        self.assertEqual(stats(iid)["rows_written"], 50)
        self.assertEqual(sql("SELECT count(*) FROM inc_dst"), "150")
        self.assertEqual(watermark(tid, name), "150")

        # A failed run (the target is missing) saves nothing.
        sql("INSERT INTO inc_src SELECT g, 'c' || g FROM generate_series(151, 160) g;"
            "ALTER TABLE inc_dst RENAME TO inc_dst_away")
        iid, inst = run(tid, 2, want="failed")
        self.assertEqual(inst.reason, "exit code 1")
        self.assertEqual(watermark(tid, name), "150")
        self.assertIn('"status":"failed"', tx.EX.get_log(iid)[1])

        # The next good run starts from the last saved watermark.
        sql("ALTER TABLE inc_dst_away RENAME TO inc_dst")
        iid, _ = run(tid, 3)
        self.assertEqual(stats(iid)["rows_read"], 10)
        self.assertEqual(sql("SELECT count(*) FROM inc_dst"), "160")
        self.assertEqual(watermark(tid, name), "160")

    def test_watermark_moved_meanwhile_fails_the_attempt(self):
        # The watermark is read before the instance is running; the run's
        # read then waits at a lock the test holds on the source table;
        # while it waits, someone moves the watermark; the run's save is a
        # compare-and-set, so the attempt fails instead of overwriting.
        sql("CREATE TABLE cas_src (id bigint PRIMARY KEY, v text);"
            "CREATE TABLE cas_dst (id bigint PRIMARY KEY, v text);"
            "INSERT INTO cas_src SELECT g, 'x' FROM generate_series(1, 60) g")
        tid = new_task({"name": "cas", "batch_rows": 5,
                        "reader": pg_endpoint("cas_src",
                                              incremental={"column": "id", "kind": "integer"}),
                        "writers": [pg_endpoint("cas_dst")]})
        gate = TableGate("cas_src")
        try:
            iid = dispatch(tid, 0)
            tx.wait_state(iid, ("running",), timeout=30)
            # The run is inside PostgreSQL, waiting for the gate.
            deadline = time.monotonic() + 60
            while gate.waiters() == 0:
                self.assertLess(time.monotonic(), deadline, "the run never reached the source")
                time.sleep(0.05)
            # While it runs, the resolved job (with the password) is
            # readable by executord's user only; wormhole got it as its stdin.
            job = os.path.join(tx.EX.work, "runs", f"{iid}-1", "job.json")
            st = os.stat(job)
            self.assertEqual((st.st_uid, st.st_mode & 0o777), (0, 0o600))
            peek = subprocess.run(["runuser", "-u", "orrery-task", "--", "cat", job],
                                  capture_output=True, text=True)
            self.assertNotEqual(peek.returncode, 0)
            self.assertIn("Permission denied", peek.stderr)
            self.assertEqual(len(tx.pids_of("wormhole run - --state")), 1)
            tx.rpc("PutWatermark", tx.PB.PutWatermarkRequest(
                task_id=tid, name="cas_src.id", expected="", value="7"), tx.PB.Watermark)
        finally:
            gate.open()
        inst = tx.wait_state(iid, ("success", "failed"), timeout=45)
        self.assertEqual(tx.state_name(inst.state), "failed")
        self.assertTrue(inst.reason.startswith("watermark:"), inst.reason)
        self.assertEqual(watermark(tid, "cas_src.id"), "7")
        self.assertEqual(stats(iid)["rows_read"], 60)  # statistics of the run all the same


def tarball(members):
    """A .tar.gz in memory; members: (TarInfo, bytes or None)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    return buf.getvalue()


def file_member(name, data, mode=0o644):
    info = tarfile.TarInfo(name)
    info.mode = mode
    return info, data


def upload(name, blob):
    """Write blob into the blob root and register it; returns the package."""
    sha = hashlib.sha256(blob).hexdigest()
    folder = os.path.join(tx.EX.blob, "packages")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{name}-{sha}.tar.gz")
    with open(path, "wb") as f:
        f.write(blob)
    return tx.rpc("CreateCodePackage", tx.PB.CreateCodePackageRequest(
        name=name, sha256=sha, size=len(blob), source="file://" + path, actor="it"),
        tx.PB.CodePackage)


def wait_deployment(pkg_id, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        p = tx.rpc("GetCodePackage", tx.PB.GetCodePackageRequest(id=pkg_id), tx.PB.CodePackage)
        mine = [d for d in p.deployments if d.executor == tx.EX.id]
        if mine and mine[0].result in ("ok", "failed"):
            return mine[0]
        time.sleep(0.1)
    raise AssertionError(f"package {pkg_id} not deployed within {timeout} s\n"
                         f"{tx.EX.daemon_log()[-3000:]}")


class CodePackages(unittest.TestCase):
    def test_package_installed_and_used_by_a_shell_task(self):
        blob = tarball([
            file_member("bin/run.sh", b"#!/bin/sh\necho from-package-$1\ncat data/greeting\n",
                        0o755),
            file_member("data/greeting", b"hello v1\n"),
        ])
        pkg = upload("tools", blob)
        dep = wait_deployment(pkg.id)
        self.assertEqual(dep.result, "ok", dep.message)
        code = os.path.join(tx.EX.work, "code", "tools")
        with open(os.path.join(code, "data", "greeting")) as f:
            self.assertEqual(f.read(), "hello v1\n")
        tid = new_task({"command": "bin/run.sh", "args": ["it"], "package": "tools"},
                       task_type="shell")
        iid, _ = run(tid, 0)
        self.assertEqual(tx.EX.get_log(iid)[1], "from-package-it\nhello v1\n")

        # A new version replaces the folder as a whole (the old file is gone).
        link = tarfile.TarInfo("greeting")
        link.type = tarfile.SYMTYPE
        link.linkname = "data/greeting2"
        blob2 = tarball([
            file_member("bin/run.sh", b"#!/bin/sh\necho v2-$1\ncat greeting\n", 0o755),
            file_member("data/greeting2", b"hello v2\n"),
            (link, None),
        ])
        pkg2 = upload("tools", blob2)
        self.assertEqual(wait_deployment(pkg2.id).result, "ok")
        self.assertFalse(os.path.exists(os.path.join(code, "data", "greeting")))
        self.assertFalse([n for n in os.listdir(os.path.join(tx.EX.work, "code"))
                          if n.startswith(".tmp")])
        iid, _ = run(tid, 1)
        self.assertEqual(tx.EX.get_log(iid)[1], "v2-it\nhello v2\n")

    def test_package_created_while_down_is_installed_at_start(self):
        tx.EX.stop()
        try:
            pkg = upload("late", tarball([file_member("x.txt", b"late\n")]))
            time.sleep(0.5)
            self.assertFalse(os.path.exists(os.path.join(tx.EX.work, "code", "late")))
        finally:
            tx.EX.start()
        dep = wait_deployment(pkg.id)
        self.assertEqual(dep.result, "ok", dep.message)
        with open(os.path.join(tx.EX.work, "code", "late", "x.txt")) as f:
            self.assertEqual(f.read(), "late\n")

    def test_unsafe_packages_are_refused(self):
        code = os.path.join(tx.EX.work, "code")
        out_link = tarfile.TarInfo("etc")
        out_link.type = tarfile.SYMTYPE
        out_link.linkname = "../../../../../../etc"
        dev = tarfile.TarInfo("null")
        dev.type = tarfile.CHRTYPE
        dev.devmajor, dev.devminor = 1, 3
        cases = {
            "bad_dotdot": ([file_member("ok.txt", b"fine\n"),
                            file_member("../escaped.txt", b"evil\n")], '".." is not allowed'),
            "bad_abs": ([file_member("/tmp/orr-abs-escape.txt", b"evil\n")],
                        "absolute names are not allowed"),
            "bad_link": ([(out_link, None)], "leaves the package"),
            "bad_dev": ([(dev, None)], "device files are not allowed"),
        }
        for name, (members, why) in cases.items():
            with self.subTest(name=name):
                dep = wait_deployment(upload(name, tarball(members)).id)
                self.assertEqual(dep.result, "failed")
                self.assertIn(why, dep.message)
                self.assertIn("package", dep.message)
                self.assertFalse(os.path.exists(os.path.join(code, name)))
        self.assertFalse(os.path.exists(os.path.join(tx.EX.work, "escaped.txt")))
        self.assertFalse(os.path.exists("/tmp/orr-abs-escape.txt"))
        self.assertFalse([n for n in os.listdir(code) if n.startswith(".tmp")])
        # a shell task naming a refused package fails as a bad spec
        tid = new_task({"command": "true", "package": "bad_dotdot"}, task_type="shell")
        _, inst = run(tid, 0, want="failed")
        self.assertTrue(inst.reason.startswith("bad_spec: config.package"), inst.reason)

    def test_archive_that_does_not_match_its_checksum_is_refused(self):
        blob = tarball([file_member("a.txt", b"a\n")])
        pkg = upload("sumcheck", blob)
        dep = wait_deployment(pkg.id)
        self.assertEqual(dep.result, "ok")
        # same name, the recorded sha256 is not the file's
        path = os.path.join(tx.EX.blob, "packages", "sumcheck-other.tar.gz")
        with open(path, "wb") as f:
            f.write(tarball([file_member("a.txt", b"b\n")]))
        other = hashlib.sha256(b"not the archive").hexdigest()
        p = tx.rpc("CreateCodePackage", tx.PB.CreateCodePackageRequest(
            name="sumcheck", sha256=other, size=os.path.getsize(path),
            source="file://" + path, actor="it"), tx.PB.CodePackage)
        dep = wait_deployment(p.id)
        self.assertEqual(dep.result, "failed")
        self.assertIn("sha256", dep.message)
        with open(os.path.join(tx.EX.work, "code", "sumcheck", "a.txt")) as f:
            self.assertEqual(f.read(), "a\n")  # the installed version stays


if __name__ == "__main__":
    tx.BUILD = os.path.abspath(sys.argv[1])
    tx.PROTO = os.path.abspath(sys.argv[2])
    unittest.main(argv=sys.argv[:1], verbosity=2)
