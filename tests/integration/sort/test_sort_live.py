#!/usr/bin/env python3
"""sortd with its spec from ZooKeeper, applied live, and unit statistics in Halley.

    test_sort_live.py BUILD_DIR

A real halleyd + galaxyd (with ZooKeeper) on a fresh database; the stream is
saved with PUT /api/v1/streams/{name} (Halley validates and versions it,
galaxyd publishes it to /orrery/streams/{name}). One sortd runs
`run --stream-name` with [sort] zookeeper and [sort] halley set, on a file
source that tails a folder:

1. version 1 (bucket hour): the first input file lands in hourly folders;
   closed hours get _CHECK, and each reconciled unit reaches Halley through
   ReportDataUnit (interface, bucket and record count as in its _CHECK,
   bytes = the sum of the unit's landed file sizes).
2. a PUT changes the bucket to 15m and the zone to Asia/Kolkata (an IANA
   name, accepted by halleyd's schema); sortd polls only once an hour here,
   longer than the test may run, so the new version can only come through
   the ZooKeeper watch: the same sortd process (same pid,
   never restarted) drains version 1 and starts version 2, and the records
   of the next input file land in 15-minute folders labelled with Kolkata
   wall-clock time. Every record lands exactly once over both versions.
3. SIGTERM ends sortd cleanly with one summary line per version.
"""
import datetime
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import zoneinfo

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
NAME = f"live{os.getpid()}"
START = 1714521600  # 2024-05-01T00:00:00Z


def spec(folder, bucket, tz=None):
    time_spec = {"field": "ts", "format": "epoch_s"}
    if tz:
        time_spec["timezone"] = tz
    return {"name": NAME, "business": "blive",
            "source": {"type": "file", "path": folder, "read_size": 65536},
            "format": {"type": "delimited", "delimiter": "|",
                       "fields": ["id", "ts", "iface", "user", "h", "m", "path", "st", "n", "ua"]},
            "interface": {"field": "iface"},
            "time": time_spec,
            "bucket": bucket,
            "output": {"roll_size": 1048576, "roll_age_ms": 300, "fsync": False},
            "check": {"clock": "data", "grace_ms": 0}}


def write_records(path, first, n, span):
    """Records first..first+n-1 in sort_gen's layout, times spread over span seconds."""
    with open(path + ".part", "w") as f:
        for i in range(first, first + n):
            t = START + (i * span) // 20000
            f.write(f"{i}|{t}|if{i % 3}|u{i}|h|GET|/p/{i}|200|{i % 97}|agent\n")
    os.rename(path + ".part", path)


def landed(blob):
    """{file path: record count from its name} of every landed .lzo file."""
    out = {}
    for f in glob.glob(os.path.join(blob, "**", "part-*.lzo"), recursive=True):
        out[f] = int(f.rsplit("-n", 1)[1][:-4])
    return out


def wait_for(what, cond, timeout=60, proc=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"sortd exited ({proc.returncode}) while waiting for {what}")
        v = cond()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


class SortLive(unittest.TestCase):
    def test_zookeeper_reload_and_unit_reports(self):
        zk = orrery_it.require_env("ORRERY_ZK")
        with orrery_it.Platform(BUILD, galaxies=0) as P:
            P.start_galaxy({"ORRERY_GALAXY_ZK": zk})
            P.add_user("root", "root-password-1", "admin")
            tok = P.login("root", "root-password-1")
            T = tempfile.mkdtemp(prefix="sort-live-")
            if not os.environ.get("SORT_KEEP"):
                self.addCleanup(shutil.rmtree, T, True)
            inp, blob = os.path.join(T, "in"), os.path.join(T, "blob")
            os.makedirs(inp)
            write_records(os.path.join(inp, "a-0001.log"), 0, 10000, 3 * 3600 * 2)

            r = P.http("PUT", f"/api/v1/streams/{NAME}", {"spec": spec(inp, "hour")}, token=tok)
            self.assertEqual(r.status, 200, r)
            v1 = r.json()["version"]

            env = dict(os.environ)
            env.update({"ORRERY_SORT_WORK_DIR": os.path.join(T, "work"),
                        "ORRERY_SORT_STATE_DIR": os.path.join(T, "state"),
                        "ORRERY_SORT_BLOB_ROOT": "file://" + blob,
                        "ORRERY_SORT_ZOOKEEPER": zk,
                        "ORRERY_SORT_HALLEY": f"127.0.0.1:{P.halley_port}",
                        "ORRERY_SORT_HALLEY_TOKEN": P.token,
                        # an hour, longer than the test runs: a new version
                        # can only come through the ZooKeeper watch
                        "ORRERY_SORT_SPEC_POLL_MS": "3600000",
                        "ORRERY_LOG_LEVEL": "info"})
            out = open(os.path.join(T, "sortd.out"), "w")
            err = open(os.path.join(T, "sortd.err"), "w")
            sortd = subprocess.Popen([os.path.join(BUILD, "bin", "sortd"), "run",
                                      "--stream-name", NAME], env=env, stdout=out, stderr=err)
            ok = False
            try:
                # Version 1: hourly folders (YYYYMMDDHH), all of file 1 landed.
                wait_for("version 1 to land file 1",
                         lambda: sum(landed(blob).values()) >= 10000, proc=sortd)
                labels = {os.path.basename(os.path.dirname(f)) for f in landed(blob)}
                self.assertTrue(labels and all(len(x) == 10 for x in labels), labels)
                # Closed hours were reconciled and reported to Halley. The
                # units' _CHECK files are written one after another: wait for
                # the three this test counts on, not for the first.
                checks = wait_for("three _CHECKs", lambda: (lambda c: c if len(c) >= 3 else None)(
                    glob.glob(os.path.join(blob, "**", "_CHECK"), recursive=True)))

                def iso(sec):
                    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(sec))

                def reports_match():
                    want = set()
                    for c in glob.glob(os.path.join(blob, "**", "_CHECK"), recursive=True):
                        with open(c) as f:
                            d = json.loads(f.read())
                        # bytes: the sum of the unit's landed file sizes
                        size = sum(os.path.getsize(os.path.join(os.path.dirname(c), x["name"]))
                                   for x in d["files"])
                        want.add((d["interface"], iso(d["bucket_start"]), d["total"], size))
                    r = P.http("GET", f"/api/v1/streams/{NAME}/units?reconciled=true",
                               token=tok)
                    if r.status != 200:
                        return None
                    got = {(u["interface"], u["bucket"], u["records"], int(u["bytes"]))
                           for u in r.json()["items"] if u["reconciled"]}
                    return (want, got) if want and want <= got else None
                want, got = wait_for("the _CHECKs reported to Halley", reports_match,
                                     timeout=30)
                self.assertGreaterEqual(len(checks), 3)
                self.assertTrue(all(n > 0 and b > 0 for _, _, n, b in want), want)

                # Version 2: 15-minute buckets in a named zone, same process.
                pid = sortd.pid
                r = P.http("PUT", f"/api/v1/streams/{NAME}",
                           {"spec": spec(inp, "15m", "Asia/Kolkata")}, token=tok)
                self.assertEqual(r.status, 200, r)
                v2 = r.json()["version"]
                self.assertGreater(v2, v1)
                applied = f'msg="stream spec applied" stream={NAME} version={v2}\n'

                def v2_applied():
                    with open(os.path.join(T, "sortd.err")) as f:
                        return applied in f.read()
                wait_for("version 2 applied (through the ZooKeeper watch)", v2_applied,
                         proc=sortd, timeout=90)
                write_records(os.path.join(inp, "a-0002.log"), 10000, 10000, 3 * 3600 * 2)
                wait_for("version 2 to land file 2",
                         lambda: sum(landed(blob).values()) >= 20000, proc=sortd)
                self.assertIsNone(sortd.poll(), "sortd restarted or died")
                self.assertEqual(sortd.pid, pid)
                new = [f for f in landed(blob)
                       if len(os.path.basename(os.path.dirname(f))) == 12]
                self.assertTrue(new, "no file landed in a 15-minute folder")
                # Every record exactly once over both versions.
                ids = []
                for f in landed(blob):
                    data = subprocess.run(["lzop", "-dc", f], capture_output=True,
                                          check=True).stdout.decode()
                    ids += [int(line.split("|", 1)[0]) for line in data.splitlines()]
                self.assertEqual(len(ids), 20000)
                self.assertEqual(sorted(ids), list(range(20000)))
                for f in new:
                    data = subprocess.run(["lzop", "-dc", f], capture_output=True,
                                          check=True).stdout.decode()
                    self.assertTrue(all(int(x.split("|", 1)[0]) >= 10000
                                        for x in data.splitlines()), f)
                    # labels are Kolkata wall-clock quarter hours (zoneinfo's view)
                    ts = int(data.splitlines()[0].split("|")[1])
                    local = datetime.datetime.fromtimestamp(ts, zoneinfo.ZoneInfo("Asia/Kolkata"))
                    local = local.replace(minute=local.minute - local.minute % 15)
                    self.assertEqual(os.path.basename(os.path.dirname(f)),
                                     local.strftime("%Y%m%d%H%M"), f)
                ok = True
            finally:
                sortd.send_signal(signal.SIGTERM)
                try:
                    rc = sortd.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    sortd.kill()
                    rc = sortd.wait()
                out.close()
                err.close()
                if not ok:  # T goes with the test: sortd's side of the failure first
                    for name in ("sortd.err", "sortd.out"):
                        with open(os.path.join(T, name), errors="replace") as f:
                            sys.stderr.write(f"---- {name} (end)\n{f.read()[-3000:]}\n")
            self.assertEqual(rc, 0, open(os.path.join(T, "sortd.err")).read()[-2000:])
            lines = [json.loads(x) for x in open(os.path.join(T, "sortd.out")) if x.strip()]
            self.assertEqual([(x["stream"], x["version"]) for x in lines],
                             [(NAME, v1), (NAME, v2)])
            self.assertEqual(sum(x["records_out"] for x in lines), 20000)

    def test_spec_from_halley(self):
        """Without ZooKeeper the spec comes from Halley's GetSortStream."""
        with orrery_it.Platform(BUILD, galaxies=0) as P:
            P.start_galaxy({"ORRERY_GALAXY_ZK": orrery_it.require_env("ORRERY_ZK")})
            P.add_user("root", "root-password-1", "admin")
            tok = P.login("root", "root-password-1")
            T = tempfile.mkdtemp(prefix="sort-live-")
            self.addCleanup(shutil.rmtree, T, True)
            inp, blob = os.path.join(T, "in"), os.path.join(T, "blob")
            os.makedirs(inp)
            write_records(os.path.join(inp, "a-0001.log"), 0, 5000, 3 * 3600 * 2)
            sp = spec(inp, "day")
            sp["source"]["exit_at_eof"] = True
            r = P.http("PUT", f"/api/v1/streams/{NAME}", {"spec": sp}, token=tok)
            self.assertEqual(r.status, 200, r)
            env = dict(os.environ)
            env.update({"ORRERY_SORT_WORK_DIR": os.path.join(T, "work"),
                        "ORRERY_SORT_STATE_DIR": os.path.join(T, "state"),
                        "ORRERY_SORT_BLOB_ROOT": "file://" + blob,
                        "ORRERY_SORT_ZOOKEEPER": "",
                        "ORRERY_SORT_HALLEY": f"127.0.0.1:{P.halley_port}",
                        "ORRERY_SORT_HALLEY_TOKEN": P.token,
                        "ORRERY_LOG_LEVEL": "warn"})
            # The source ends (exit_at_eof), so sortd ends too.
            r = subprocess.run([os.path.join(BUILD, "bin", "sortd"), "run", "--stream-name",
                                NAME], env=env, capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            line = json.loads(r.stdout.strip().splitlines()[-1])
            self.assertEqual((line["stream"], line["version"], line["records_out"]),
                             (NAME, 1, 5000))
            files = landed(blob)
            self.assertEqual(sum(files.values()), 5000)
            self.assertTrue(all(len(os.path.basename(os.path.dirname(f))) == 8 for f in files))
            # A bad token: Halley refuses, sortd says so and exits non-zero.
            env["ORRERY_SORT_HALLEY_TOKEN"] = "wrong"
            r = subprocess.run([os.path.join(BUILD, "bin", "sortd"), "run", "--stream-name",
                                NAME], env=env, capture_output=True, text=True, timeout=60)
            self.assertNotEqual(r.returncode, 0)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
