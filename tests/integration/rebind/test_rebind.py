"""test_rebind.py - every listening daemon rebinds its ports at once after a stop.

A daemon stopped while clients are connected closes those connections
first, so its side of each one sits in TIME_WAIT for a minute. A listening
socket without SO_REUSEADDR cannot bind the port again until then, and a
restart fails with "Address already in use". For each listening daemon and
each of its ports (halleyd gRPC and /metrics, galaxyd HTTP, executord's log
server, sortd's /metrics) the test, twice in a row:

  1. opens a connection to every port and makes the daemon answer on it
     (an HTTP request with keep-alive; for gRPC the HTTP/2 preface and a
     PING, answered once the server has read all of it), and keeps it open;
  2. stops the daemon (SIGTERM) and reads each connection to its end, then
     closes it: the daemon closed first, so its side is in TIME_WAIT;
  3. checks with `ss` that the port has a connection in TIME_WAIT (the
     condition is made, not hoped for: the test fails if it is missing);
  4. starts the daemon again on the same ports, which must listen (a
     deadline only to catch a hang; the failure this test looks for is an
     exit at start) and answer.

Usage: test_rebind.py BUILD_DIR (the stack of deploy/test.sh: ORRERY_PG_DSN,
ORRERY_ZK).
"""
import contextlib
import glob
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
DEADLINE_S = 60.0  # generous: only to fail rather than hang
FAILURES = []


def check(ok, what):
    print(("ok   - " if ok else "FAIL - ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


@contextlib.contextmanager
def logs_on_failure(folder):
    """On leaving, when a check failed or an exception escapes, prints the end
    of each daemon log in folder on stderr: the folder is removed next."""
    ok = False
    try:
        yield
        ok = not FAILURES
    finally:
        if not ok:
            for path in sorted(glob.glob(os.path.join(folder, "*.log"))):
                with open(path, errors="replace") as f:
                    sys.stderr.write(f"---- {os.path.basename(path)} (end)\n{f.read()[-3000:]}\n")


def poke_http(port):
    """A keep-alive GET /healthz-style request; returns the open socket."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n")
    head = s.recv(65536)
    if not head.startswith(b"HTTP/1."):
        raise RuntimeError(f"port {port}: not an HTTP answer: {head[:80]!r}")
    return s


def h2_frames(s):
    """HTTP/2 frames read from s: (type, flags, payload), one at a time."""
    buf = b""
    while True:
        while len(buf) < 9 or len(buf) < 9 + int.from_bytes(buf[:3], "big"):
            chunk = s.recv(65536)
            if not chunk:
                raise RuntimeError("connection closed during the HTTP/2 handshake")
            buf += chunk
        n = int.from_bytes(buf[:3], "big")
        yield buf[3], buf[4], buf[9:9 + n]
        buf = buf[9 + n:]


def poke_grpc(port):
    """The HTTP/2 client preface, an empty SETTINGS frame, the ACK of the
    server's SETTINGS and a PING; returns once the PING's ACK arrived. The
    server answers a PING only after reading every byte sent before it, so
    nothing of ours is left unread when it stops: closing a socket with
    unread data sends a reset instead of a FIN, and leaves no TIME_WAIT."""
    s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S)
    settings = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
    settings_ack = b"\x00\x00\x00\x04\x01\x00\x00\x00\x00"
    ping = b"\x00\x00\x08\x06\x00\x00\x00\x00\x00" + b"orrery!!"
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + settings + settings_ack + ping)
    for ftype, flags, payload in h2_frames(s):
        if ftype == 0x06 and flags & 0x01 and payload == b"orrery!!":
            return s
    raise RuntimeError(f"port {port}: no PING acknowledgement")


def drain_and_close(s):
    """Reads until the daemon's close reaches us, then closes our side."""
    s.settimeout(DEADLINE_S)
    try:
        while s.recv(65536):
            pass
    except OSError:
        pass  # a reset is also the daemon closing first
    s.close()


def time_wait_on(port):
    out = subprocess.run(["ss", "-Htan", "state", "time-wait", f"( sport = :{port} )"],
                         capture_output=True, text=True, check=True).stdout
    return bool(out.strip())


def wait_for(cond, what):
    deadline = time.time() + DEADLINE_S
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    check(False, f"{what} (waited {DEADLINE_S:.0f} s)")
    return False


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        check(False, f"pid {proc.pid} stopped within {DEADLINE_S:.0f} s of SIGTERM")


def rebind_twice(name, start, ports):
    """start() -> Popen that listens on every (port, poke) of ports."""
    proc = start()
    try:
        for round_no in (1, 2):
            socks = [poke(port) for port, poke in ports]
            stop(proc)
            for s in socks:
                drain_and_close(s)
            for port, _ in ports:
                made = wait_for(lambda p=port: time_wait_on(p),
                                f"{name}: port {port} has a connection in TIME_WAIT")
                if made:
                    check(True, f"{name} round {round_no}: port {port} in TIME_WAIT before restart")
            proc = start()
            for port, poke in ports:
                poke(port).close()
            check(True, f"{name} round {round_no}: restarted at once on "
                  + ", ".join(str(p) for p, _ in ports))
    finally:
        if proc.poll() is None:
            stop(proc)


def spawn(args, env, log_path):
    with open(log_path, "ab") as out:
        return subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)


def started(proc, ports, what, log_path):
    """Waits for every port to listen; a start that exits is the failure."""
    for port in ports:
        try:
            orrery_it.wait_port(port, proc, what, timeout=DEADLINE_S)
        except RuntimeError as e:
            with open(log_path, "rb") as f:
                tail = f.read().decode("utf-8", "replace")[-1500:]
            raise AssertionError(f"{e}\n--- {log_path} (end)\n{tail}") from None
    return proc


def starter(p, what, args, env, log_path, ports):
    """A start() for rebind_twice: spawn the daemon (p stops it at the end)
    and wait for every port."""
    def start():
        pr = spawn(args, env, log_path)
        p.procs.append(pr)
        return started(pr, ports, what, log_path)
    return start


def main():
    zk = orrery_it.require_env("ORRERY_ZK")
    # the daemons' folders, removed once the Platform stopped them, also when
    # a check raised (their logs printed first when the test failed)
    with tempfile.TemporaryDirectory(prefix="orr-rebind-", ignore_cleanup_errors=True) as tmp, \
            logs_on_failure(tmp), orrery_it.Platform(BUILD) as p:
        # ---- halleyd: gRPC and /metrics. The Platform's halleyd is stopped
        # first, so the test owns the only copy on these ports.
        hl = p.procs[0]
        stop(hl)
        env = p.halley_env()
        hl_metrics = orrery_it.free_port()
        env["ORRERY_HALLEY_METRICS_LISTEN"] = f"127.0.0.1:{hl_metrics}"
        hl_log = os.path.join(tmp, "halleyd.log")

        start_halley = starter(p, "halleyd", [p.bin("halleyd"), "serve"], env, hl_log,
                               [p.halley_port, hl_metrics])

        rebind_twice("halleyd", start_halley,
                     [(p.halley_port, poke_grpc), (hl_metrics, poke_http)])
        halley = start_halley()  # for galaxyd and executord below

        # ---- galaxyd
        gport = orrery_it.free_port()
        gx_log = os.path.join(tmp, "galaxyd.log")
        gx_env = dict(os.environ)
        gx_env.update({
            "ORRERY_GALAXY_LISTEN": f"127.0.0.1:{gport}",
            "ORRERY_GALAXY_HALLEY": f"127.0.0.1:{p.halley_port}",
            "ORRERY_GALAXY_HALLEY_TOKEN": p.token,
            "ORRERY_GALAXY_JWT_SECRET": p.jwt_secret,
            "ORRERY_GALAXY_STATIC_DIR": os.path.join(p.root, "static"),
            "ORRERY_GALAXY_SCHEMA_DIR": os.path.join(p.root, "schema"),
            "ORRERY_GALAXY_THREADS": "2",
        })

        start_galaxy = starter(p, "galaxyd", [p.bin("galaxyd"), "serve"], gx_env, gx_log, [gport])

        rebind_twice("galaxyd", start_galaxy, [(gport, poke_http)])

        # ---- executord's log server
        xport = orrery_it.free_port()
        xdir = os.path.join(tmp, "executor")
        os.makedirs(xdir)
        os.chmod(tmp, 0o711)
        os.chmod(xdir, 0o711)
        ex_log = os.path.join(tmp, "executord.log")
        ex_env = dict(os.environ)
        ex_env.update({
            "ORRERY_EXECUTOR_ID": f"it-rebind-{os.getpid()}",
            "ORRERY_EXECUTOR_HALLEY": f"127.0.0.1:{p.halley_port}",
            "ORRERY_EXECUTOR_HALLEY_TOKEN": p.token,
            "ORRERY_EXECUTOR_ZK": zk,
            "ORRERY_EXECUTOR_ZK_SESSION": "4s",
            "ORRERY_EXECUTOR_SLOTS": "1",
            "ORRERY_EXECUTOR_LISTEN": f"127.0.0.1:{xport}",
            "ORRERY_EXECUTOR_LOG_TOKEN": "rebind-test-token",
            "ORRERY_EXECUTOR_WORK_DIR": os.path.join(xdir, "work"),
            "ORRERY_EXECUTOR_BLOB_ROOT": "file://" + os.path.join(xdir, "blob"),
            "ORRERY_EXECUTOR_CGROUP_PARENT": "orrery-it-rebind",
        })

        start_executor = starter(p, "executord", [p.bin("executord"), "serve"], ex_env, ex_log,
                                 [xport])

        rebind_twice("executord", start_executor, [(xport, poke_http)])

        # ---- sortd's /metrics: a file source that never ends (no
        # exit_at_eof), so sortd serves until it is stopped.
        sport = orrery_it.free_port()
        sdir = os.path.join(tmp, "sort")
        os.makedirs(os.path.join(sdir, "in"))
        spec = os.path.join(sdir, "stream.json")
        with open(spec, "w") as f:
            json.dump({"name": "rebind", "business": "bk",
                       "source": {"type": "file", "path": os.path.join(sdir, "in")},
                       "format": {"type": "delimited", "delimiter": "|", "fields": ["id", "ts"]},
                       "interface": {"const": "it"},
                       "time": {"field": "ts", "format": "epoch_s"},
                       "bucket": "hour", "check": {"enabled": False}}, f)
        so_log = os.path.join(tmp, "sortd.log")
        so_env = dict(os.environ)
        so_env.update({
            "ORRERY_SORT_METRICS_LISTEN": f"127.0.0.1:{sport}",
            "ORRERY_SORT_WORK_DIR": os.path.join(sdir, "work"),
            "ORRERY_SORT_STATE_DIR": os.path.join(sdir, "state"),
            "ORRERY_SORT_BLOB_ROOT": "file://" + os.path.join(sdir, "blob"),
        })

        start_sortd = starter(p, "sortd", [p.bin("sortd"), "run", "--stream", spec], so_env,
                              so_log, [sport])

        rebind_twice("sortd", start_sortd, [(sport, poke_http)])
        stop(halley)

    if FAILURES:
        print(f"{len(FAILURES)} failed", flush=True)
        return 1
    print("PASS rebind", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
