#!/usr/bin/python3
"""test_executor_webhdfs.py - code packages and archived logs with a
webhdfs:// blob root, end to end: real halleyd, galaxyd and executord
(PostgreSQL, ZooKeeper) with [galaxy] and [executor] blob_root =
webhdfs://orrit@127.0.0.1:PORT/orrery/blob, served by the WebHDFS protocol
stand-in (tests/integration/lib/webhdfs_standin.py, started in this
process; it is not HDFS). The test plays keplerd's part (see
test_executor.py, whose helpers it shares).

Checks:
- a package uploaded through galaxyd (POST /api/v1/packages) lands in the
  stand-in as packages/<sha256>.tar.gz, and its source is that object's
  webhdfs:// URL; the executor fetches it from there, unpacks it and
  reports ok (GET /api/v1/packages shows the deployment); a shell task with
  config.package runs a script from it;
- the run's log is archived in the stand-in as logs/<task>/<instance>-1.log
  (nothing goes to a local folder), and galaxyd serves it from there
  (source "archive", complete), also from an offset (a ranged OPEN);
- an upload while the store does not answer fails with 503 and galaxyd
  keeps serving; the next upload, with the store back, succeeds.

usage: test_executor_webhdfs.py BUILD_DIR HALLEY_PROTO
Needs ORRERY_PG_DSN and ORRERY_ZK (deploy/test.sh exports them), root and
writable cgroups.
"""
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
import orrery_it  # noqa: E402
import test_executor as tx  # noqa: E402
import webhdfs_standin  # noqa: E402

HDFS = {}  # dir, nn (namenode port), stop, url (the blob root)


class WebHdfsExecutor(tx.Executor):
    def env(self):
        env = super().env()
        env["ORRERY_EXECUTOR_BLOB_ROOT"] = HDFS["url"]
        return env


def standin_stats():
    with urllib.request.urlopen(f"http://127.0.0.1:{HDFS['nn']}/ctl?stats=1", timeout=10) as r:
        return json.loads(r.read())


def stored(rel):
    return os.path.join(HDFS["dir"], "orrery", "blob", rel)


def tarball(files):
    """A .tar.gz in memory of {name: (bytes, mode)}."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, (data, mode) in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def upload(name, body):
    return tx.P.http("POST", f"/api/v1/packages?name={name}", raw=body, token=tx.TOKEN,
                     headers={"Content-Type": "application/gzip"})


def wait_deployed(name, pkg_id, timeout=30.0):
    """The deployment of package pkg_id on our executor, once reported."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        r = tx.P.http("GET", f"/api/v1/packages?name={name}", token=tx.TOKEN)
        assert r.status == 200, r
        for p in r.json()["items"]:
            mine = [d for d in p["deployments"] if d["executor"] == tx.EX.id]
            if p["id"] == pkg_id and mine and mine[0]["result"] in ("ok", "failed"):
                return mine[0]
        time.sleep(0.2)
    raise AssertionError(f"package {pkg_id} not deployed within {timeout} s\n"
                         f"{tx.EX.daemon_log()[-3000:]}")


def setUpModule():
    import grpc
    zk = orrery_it.require_env("ORRERY_ZK")
    tx.PB = orrery_it.import_proto(tx.PROTO, "halley_pb2")
    try:
        HDFS["dir"] = tempfile.mkdtemp(prefix="orr-exw-hdfs-")
        HDFS["nn"], _, HDFS["stop"] = webhdfs_standin.start(HDFS["dir"])
        HDFS["url"] = f"webhdfs://orrit@127.0.0.1:{HDFS['nn']}/orrery/blob?timeout_s=10"
        tx.P = orrery_it.Platform(tx.BUILD, galaxies=0).__enter__()
        tx.EX = WebHdfsExecutor(tx.P, zk)
        tx.P.start_galaxy({"ORRERY_GALAXY_ZK": zk,
                           "ORRERY_GALAXY_EXECUTOR_LOG_TOKEN": tx.EX.log_token,
                           "ORRERY_GALAXY_BLOB_ROOT": HDFS["url"]})
        tx.P.add_user("root", "root-password-1", "admin")
        tx.P.add_user("ann", "ann-password-1", "developer", teams=["etl"])  # makes team etl
        tx.TOKEN = tx.P.login("root", "root-password-1")
        tx.GRPC = grpc.insecure_channel(f"127.0.0.1:{tx.P.halley_port}")
        tx.EX.start()
    except BaseException:
        tearDownModule()
        raise


def tearDownModule():
    tx.tearDownModule()
    if HDFS.get("stop"):
        HDFS["stop"]()
    if HDFS.get("dir"):
        shutil.rmtree(HDFS["dir"], ignore_errors=True)


class WebHdfsBlobRoot(unittest.TestCase):
    def test_package_runs_and_log_is_archived(self):
        body = tarball({"bin/run.sh": (b"#!/bin/sh\necho from-hdfs-$1\ncat data/greeting\n",
                                       0o755),
                        "data/greeting": (b"hello over webhdfs\n", 0o644)})
        sha = hashlib.sha256(body).hexdigest()
        r = upload("tools", body)
        self.assertEqual(r.status, 201, r)
        pkg = r.json()
        self.assertEqual((pkg["sha256"], pkg["size"]), (sha, len(body)))
        self.assertEqual(pkg["source"], f"webhdfs://orrit@127.0.0.1:{HDFS['nn']}"
                                        f"/orrery/blob/packages/{sha}.tar.gz")
        with open(stored(f"packages/{sha}.tar.gz"), "rb") as f:
            self.assertEqual(f.read(), body)
        self.assertEqual([n for n in os.listdir(stored("packages")) if n.startswith(".")], [])

        dep = wait_deployed("tools", pkg["id"])
        self.assertEqual(dep["result"], "ok", dep["message"])
        with open(os.path.join(tx.EX.work, "code", "tools", "data", "greeting")) as f:
            self.assertEqual(f.read(), "hello over webhdfs\n")

        tid, iid = tx.make_instance({"command": "bin/run.sh", "args": ["it"],
                                     "package": "tools"})
        inst = tx.wait_state(iid, ("success", "failed"))
        self.assertEqual(tx.state_name(inst.state), "success", inst.reason)
        want = "from-hdfs-it\nhello over webhdfs\n"
        self.assertEqual(tx.EX.get_log(iid)[1], want)

        # Landed before the final report: the archive is in the stand-in now.
        with open(stored(f"logs/{tid}/{iid}-1.log")) as f:
            self.assertEqual(f.read(), want)
        self.assertFalse(os.path.exists(os.path.join(tx.EX.blob, "logs")))
        r = tx.P.http("GET", f"/api/v1/instances/{iid}/log", token=tx.TOKEN)
        self.assertEqual(r.status, 200, r)
        body = r.json()
        self.assertEqual((body["source"], body["complete"], body["data"]),
                         ("archive", True, want))
        self.assertEqual(body["next_offset"], len(want))
        ranged = standin_stats()["ops"].get("OPEN_RANGE", 0)
        r = tx.P.http("GET", f"/api/v1/instances/{iid}/log?offset=5", token=tx.TOKEN)
        body = r.json()
        self.assertEqual((body["source"], body["complete"], body["data"]),
                         ("archive", True, want[5:]))
        self.assertGreater(standin_stats()["ops"].get("OPEN_RANGE", 0), ranged)
        self.assertIn("orrit", standin_stats()["users"])

    def test_upload_while_the_store_is_down(self):
        body = tarball({"x.txt": (b"down\n", 0o644)})
        sha = hashlib.sha256(body).hexdigest()
        # Every request to the namenode is refused while it is stopped.
        HDFS["stop"]()
        try:
            r = upload("down", body)
            self.assertEqual(r.status, 503, r)
            self.assertEqual(tx.P.http("GET", "/api/v1/packages", token=tx.TOKEN).status, 200)
        finally:
            HDFS["nn"], _, HDFS["stop"] = webhdfs_standin.start(HDFS["dir"], HDFS["nn"])
        r = upload("down", body)
        self.assertEqual(r.status, 201, r)
        self.assertTrue(os.path.exists(stored(f"packages/{sha}.tar.gz")))
        self.assertEqual(wait_deployed("down", r.json()["id"])["result"], "ok")


if __name__ == "__main__":
    tx.BUILD = os.path.abspath(sys.argv[1])
    tx.PROTO = os.path.abspath(sys.argv[2])
    unittest.main(argv=sys.argv[:1], verbosity=2)
