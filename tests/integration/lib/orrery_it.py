"""orrery_it.py - shared fixture of Orrery's integration tests (Python side).

Starts real daemons from the build against the private stack that the test
command started (deploy/test.sh exports ORRERY_PG_DSN and friends):

    with Platform(build_dir) as p:          # fresh database, halleyd, galaxyd
        p.admin_token()                     # logged-in admin
        p.http("GET", "/api/v1/tasks", token=...)

Every daemon runs on free loopback ports and is stopped by its pid; the test
database is created for the run and dropped at the end; the Platform's folder
(the servers' logs) is removed when the test process exits, also after a
failure, which prints the end of each log first. A missing stack is a
failure, never a skip.

Every answer http() gets is recorded (method, path, status); when a
Platform ends without an error, each recorded answer of a documented
operation must be listed in that operation's responses in
static/openapi.json, so the document cannot fall behind what the routes
really answer.
"""
import atexit
import importlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request


def require_env(name):
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(
            f"{name} is not set: run the tests through deploy/test.sh, or start the stack "
            f"with deploy/stack.sh start and eval \"$(deploy/stack.sh env)\"")
    return value


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, what, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} at start")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on port {port} within {timeout} s")


def sortd_file_stream(sdir, name, records, metrics_port):
    """A sortd stream named name over one file in sdir/in holding records
    ("id|epoch seconds" lines), for tests that need a sortd serving its
    metrics: writes the spec, returns (spec path, env for `sortd run`)."""
    os.makedirs(os.path.join(sdir, "in"))
    with open(os.path.join(sdir, "in", "part-0"), "w") as f:
        f.write("".join(line + "\n" for line in records))
    spec = os.path.join(sdir, "stream.json")
    with open(spec, "w") as f:
        json.dump({"name": name, "business": "bk",
                   "source": {"type": "file", "path": os.path.join(sdir, "in")},
                   "format": {"type": "delimited", "delimiter": "|", "fields": ["id", "ts"]},
                   "interface": {"const": "it"},
                   "time": {"field": "ts", "format": "epoch_s"},
                   "bucket": "hour", "check": {"enabled": False}}, f)
    env = dict(os.environ)
    env.update({"ORRERY_SORT_METRICS_LISTEN": f"127.0.0.1:{metrics_port}",
                "ORRERY_SORT_WORK_DIR": os.path.join(sdir, "work"),
                "ORRERY_SORT_STATE_DIR": os.path.join(sdir, "state"),
                "ORRERY_SORT_BLOB_ROOT": "file://" + os.path.join(sdir, "blob")})
    return spec, env


def dsn_with_db(dsn, db):
    u = urllib.parse.urlsplit(dsn)
    return urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + db, u.query, u.fragment))


def psql(dsn, sql):
    subprocess.run(["psql", dsn, "-v", "ON_ERROR_STOP=1", "-qAtc", sql], check=True,
                   capture_output=True, text=True)


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def __repr__(self):
        return f"<{self.status} {self.body[:300]!r}>"


SEEN = set()  # (method, path without query, status) of every answer http() got


def undocumented_statuses(doc_path):
    """The recorded answers whose status the document does not list for their
    operation (answers to paths or methods it does not document are left out:
    404 and 405 are galaxyd's own)."""
    with open(doc_path, encoding="utf-8") as f:
        doc = json.load(f)
    templates = []
    for p in doc["paths"]:
        rx = "^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(p)) + "$"
        templates.append((p.count("{"), re.compile(rx), p))
    templates.sort(key=lambda t: t[0])  # literal segments win over parameters
    missing = []
    for method, path, status in sorted(SEEN):
        for _, rx, p in templates:
            if rx.match(path):
                op = doc["paths"][p].get(method.lower())
                if op is not None and str(status) not in op.get("responses", {}) \
                        and "default" not in op.get("responses", {}):
                    missing.append(f"{method} {p} -> {status}")
                break
    return sorted(set(missing))


def http(base, method, path, body=None, token=None, headers=None, raw=None, timeout=15):
    data = raw
    hdrs = dict(headers or {})
    if body is not None:
        data = json.dumps(body).encode("utf-8")
        hdrs.setdefault("Content-Type", "application/json")
    if token:
        hdrs["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(base + path, data=data, method=method, headers=hdrs)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            resp = Response(r.status, r.headers, r.read())
    except urllib.error.HTTPError as e:
        resp = Response(e.code, e.headers, e.read())
    SEEN.add((method, urllib.parse.urlsplit(path).path, resp.status))
    return resp


# Folders of platforms, removed when the test process exits, whether the
# test passed or not (a test may still read a log after its `with` block);
# a failed platform first prints the end of each log on stderr.
_PLATFORM_DIRS = []


@atexit.register
def _drop_platform_dirs():
    for d in _PLATFORM_DIRS:
        shutil.rmtree(d, ignore_errors=True)


# Platforms started and not yet ended. A module whose setUpModule fails
# after its Platform started never reaches tearDownModule (unittest skips
# it): its servers are stopped here when the test process exits (before the
# folders go: atexit runs in reverse order), instead of outliving the test
# and answering the next test's requests, e.g. an executor card left in
# ZooKeeper.
_LIVE_PLATFORMS = []


@atexit.register
def _stop_live_platforms():
    for p in list(_LIVE_PLATFORMS):
        sys.stderr.write("orrery_it: a platform was not ended by its test; stopping it\n")
        p._stop()
        p._print_log_tails()


def stop_at_exit(proc):
    """Terminate proc (a subprocess.Popen) when the test process exits, if it
    still runs then: for servers a test starts outside a Platform."""

    def stop():
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    atexit.register(stop)


def import_proto(proto, module):
    """Compile proto with protoc into a temporary folder, import its
    messages as module and remove the folder (the loaded module keeps
    what it needs)."""
    with tempfile.TemporaryDirectory(prefix="orr-pb-") as gen:
        subprocess.run(["protoc", "-I", os.path.dirname(proto), "--python_out", gen, proto],
                       check=True)
        sys.path.insert(0, gen)
        try:
            return importlib.import_module(module)
        finally:
            sys.path.remove(gen)


class Platform:
    """halleyd + galaxyd (n copies) on a fresh database."""

    def __init__(self, build_dir, galaxies=1, root=None):
        self.build = os.path.abspath(build_dir)
        self.root = root or os.path.abspath(os.path.join(os.path.dirname(__file__), "../../.."))
        self.n_galaxies = galaxies
        self.procs = []
        self.galaxy_procs = []
        self.tmp = tempfile.mkdtemp(prefix="orr-it-")
        _PLATFORM_DIRS.append(self.tmp)
        _LIVE_PLATFORMS.append(self)
        self.db = f"orr_it_{os.getpid()}_{secrets.token_hex(3)}"
        self.admin_dsn = require_env("ORRERY_PG_DSN")
        self.dsn = dsn_with_db(self.admin_dsn, self.db)
        self.token = secrets.token_hex(16)
        self.jwt_secret = secrets.token_hex(32)
        self.halley_port = free_port()
        self.halley_metrics_port = free_port()
        self.galaxy_ports = []

    def bin(self, name):
        return os.path.join(self.build, "bin", name)

    def _spawn(self, args, env, log):
        with open(os.path.join(self.tmp, log), "ab") as out:
            p = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
        self.procs.append(p)
        return p

    def halley_env(self):
        env = dict(os.environ)
        env.update({
            "ORRERY_HALLEY_LISTEN": f"127.0.0.1:{self.halley_port}",
            "ORRERY_HALLEY_TOKEN": self.token,
            "ORRERY_HALLEY_PG_DSN": self.dsn,
            "ORRERY_HALLEY_SECRET_KEY": "ab" * 32,
            "ORRERY_HALLEY_METRICS_LISTEN": f"127.0.0.1:{self.halley_metrics_port}",
            "ORRERY_HALLEY_POOL_SIZE": "4",
        })
        return env

    def start_galaxy(self, extra_env=None):
        port = free_port()
        env = dict(os.environ)
        env.update(extra_env or {})
        env.update({
            "ORRERY_GALAXY_LISTEN": f"127.0.0.1:{port}",
            "ORRERY_GALAXY_HALLEY": f"127.0.0.1:{self.halley_port}",
            "ORRERY_GALAXY_HALLEY_TOKEN": self.token,
            "ORRERY_GALAXY_JWT_SECRET": self.jwt_secret,
            "ORRERY_GALAXY_STATIC_DIR": os.path.join(self.root, "static"),
            "ORRERY_GALAXY_SCHEMA_DIR": os.path.join(self.root, "schema"),
            "ORRERY_GALAXY_THREADS": "4",
        })
        env.update(extra_env or {})
        p = self._spawn([self.bin("galaxyd"), "serve"], env, f"galaxyd-{port}.log")
        wait_port(port, p, "galaxyd")
        self.galaxy_ports.append(port)
        self.galaxy_procs.append(p)
        return port

    def __enter__(self):
        psql(self.admin_dsn, f'CREATE DATABASE "{self.db}"')
        try:
            env = self.halley_env()
            subprocess.run([self.bin("halleyd"), "migrate"], env=env, check=True,
                           capture_output=True, text=True)
            p = self._spawn([self.bin("halleyd"), "serve"], env, "halleyd.log")
            wait_port(self.halley_port, p, "halleyd")
            for _ in range(self.n_galaxies):
                self.start_galaxy()
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def _stop(self):
        """Stop the servers by pid and drop the database (once)."""
        if self in _LIVE_PLATFORMS:
            _LIVE_PLATFORMS.remove(self)
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        try:
            psql(self.admin_dsn, f'DROP DATABASE IF EXISTS "{self.db}" WITH (FORCE)')
        except subprocess.CalledProcessError:
            pass

    def __exit__(self, *exc):
        self._stop()
        if exc[0] is not None:
            self._print_log_tails()
        if exc[0] is None and SEEN:
            missing = undocumented_statuses(os.path.join(self.root, "static", "openapi.json"))
            if missing:
                raise AssertionError("answers the OpenAPI document does not list: "
                                     + "; ".join(missing))
        return False

    def _print_log_tails(self):
        """The end of each server log on stderr: the folder does not outlive
        the test process."""
        try:
            names = sorted(n for n in os.listdir(self.tmp) if n.endswith(".log"))
            for name in names:
                sys.stderr.write(f"---- orrery_it: {name} (end)\n{self.log(name)[-3000:]}\n")
        except OSError:
            pass

    def log(self, name):
        with open(os.path.join(self.tmp, name), "rb") as f:
            return f.read().decode("utf-8", "replace")

    @property
    def base(self):
        return f"http://127.0.0.1:{self.galaxy_ports[0]}"

    def http(self, method, path, body=None, token=None, **kw):
        return http(self.base, method, path, body=body, token=token, **kw)

    def add_user(self, name, password, role, teams=()):
        """Bootstrap a user straight through halleyd's CLI (no API needed)."""
        args = [self.bin("halleyd"), "user-add", name, "--role", role]
        for t in teams:
            args += ["--team", t]
        subprocess.run(args, env=self.halley_env(), input=password + "\n", check=True,
                       capture_output=True, text=True)

    def login(self, name, password):
        r = self.http("POST", "/api/v1/auth/login", {"name": name, "password": password})
        if r.status != 200:
            raise AssertionError(f"login {name}: {r}")
        return r.json()["token"]
