"""Harness of the halleyd tests that use a stock gRPC client (Python grpcio).

The client knows halleyd only through rpc/halley.proto (message classes made
by protoc at test time; method paths from the service definition), the way
any generated client would. Each test gets a fresh database on the stack's
PostgreSQL (ORRERY_PG_DSN), reached through a TCP proxy the test controls, so
a test can take PostgreSQL away from halleyd and give it back by
construction. halleyd runs on a free loopback port; everything is removed at
the end.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import grpc

TOKEN = "stock-client-token"
WORKER_TOKEN = "stock-worker-token"
SECRET_KEY = "07" * 32
failures = []
passes = [0]


def check(cond, what):
    """Record one assertion; the run fails at the end if any failed."""
    if cond:
        passes[0] += 1
        print("ok:", what)
    else:
        failures.append(what)
        print("FAIL:", what)


def finish(name):
    print("%s: %d passed, %d failed" % (name, passes[0], len(failures)))
    return 1 if failures else 0


def wait_for(cond, what, timeout=30.0):
    """Poll cond() until it is true; fail loudly at the deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))


class Proxy:
    """A TCP forwarder between halleyd and PostgreSQL. cut() closes the
    listener and every forwarded connection (PostgreSQL is then unreachable
    for halleyd); restore() listens again on the same port."""

    def __init__(self, host, port):
        self.target = (host, port)
        self.lock = threading.Lock()
        self.conns = []
        self.lsock = None
        self.port = 0
        self.restore()

    def restore(self):
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", self.port))
        ls.listen(64)
        self.port = ls.getsockname()[1]
        self.lsock = ls
        threading.Thread(target=self._accept, args=(ls,), daemon=True).start()

    def _accept(self, ls):
        while True:
            try:
                c, _ = ls.accept()
            except OSError:
                return
            try:
                u = socket.create_connection(self.target, timeout=5)
                u.settimeout(None)
            except OSError:
                c.close()
                continue
            with self.lock:
                self.conns += [c, u]
            threading.Thread(target=self._pump, args=(c, u), daemon=True).start()
            threading.Thread(target=self._pump, args=(u, c), daemon=True).start()

    @staticmethod
    def _pump(a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        self.lsock.close()
        with self.lock:
            conns, self.conns = self.conns, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def dsn_with(dsn, host=None, port=None, db=None):
    u = urllib.parse.urlsplit(dsn)
    netloc = u.netloc
    userinfo = ""
    if "@" in netloc:
        userinfo, netloc = netloc.rsplit("@", 1)
        userinfo += "@"
    h, _, p = netloc.partition(":")
    netloc = "%s%s:%s" % (userinfo, host or h, port or p or "5432")
    path = "/" + db if db else u.path
    return urllib.parse.urlunsplit((u.scheme, netloc, path, u.query, u.fragment))


class Halley:
    """A fresh database, a proxy to PostgreSQL and one halleyd serving it."""

    def __init__(self, build_dir, source_dir, extra_env=None, creds=None):
        self.build_dir, self.source_dir = build_dir, source_dir
        self.tmp = tempfile.mkdtemp(prefix="orr-stock-")
        self.proc = self.proxy = self.db = None
        try:
            self._start(extra_env, creds)
        except BaseException:  # what was started is stopped, the folder removed
            self.close(show_log=True)
            raise

    def _start(self, extra_env, creds):
        admin = os.environ.get("ORRERY_PG_DSN")
        if not admin:
            raise SystemExit("FAIL: ORRERY_PG_DSN is not set: start the stack "
                             "(deploy/stack.sh start; eval \"$(deploy/stack.sh env)\")")
        self.admin = admin
        self.db = "halley_stock_%d" % os.getpid()
        self._psql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % self.db)
        self._psql("CREATE DATABASE %s" % self.db)
        u = urllib.parse.urlsplit(admin)
        self.proxy = Proxy(u.hostname, u.port or 5432)
        self.dsn = dsn_with(admin, "127.0.0.1", self.proxy.port, self.db)
        self.pb = self._protoc()
        env = dict(os.environ)
        env.update({
            "ORRERY_HALLEY_PG_DSN": self.dsn,
            "ORRERY_HALLEY_TOKEN": TOKEN,
            "ORRERY_HALLEY_WORKER_TOKEN": WORKER_TOKEN,
            "ORRERY_HALLEY_SECRET_KEY": SECRET_KEY,
            "ORRERY_HALLEY_LISTEN": "127.0.0.1:0",
            "ORRERY_HALLEY_METRICS_LISTEN": "127.0.0.1:0",
            "ORRERY_HALLEY_POOL_SIZE": "4",
            "ORRERY_HALLEY_PORT_FILE": os.path.join(self.tmp, "port"),
        })
        env.update(extra_env or {})
        halleyd = os.path.join(self.build_dir, "bin", "halleyd")
        subprocess.run([halleyd, "migrate"], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        self.log = open(os.path.join(self.tmp, "halleyd.log"), "w")
        self.proc = subprocess.Popen([halleyd, "serve"], env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        pf = os.path.join(self.tmp, "port")
        wait_for(lambda: os.path.exists(pf) or self.proc.poll() is not None, "halleyd port file")
        if self.proc.poll() is not None:
            raise SystemExit("FAIL: halleyd exited with %d" % self.proc.returncode)
        kv = dict(x.split("=") for x in open(pf).read().split())
        self.port = int(kv["grpc"])
        target = "127.0.0.1:%d" % self.port
        self.channel = (grpc.secure_channel(target, creds) if creds
                        else grpc.insecure_channel(target))
        grpc.channel_ready_future(self.channel).result(timeout=20)

    def sql(self, sql):
        """Run SQL on the test database (straight, not through the proxy)."""
        subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1",
                        dsn_with(self.admin, db=self.db), "-c", sql],
                       env=dict(os.environ, PGOPTIONS="-c client_min_messages=warning"),
                       check=True, stdout=subprocess.DEVNULL)

    def _psql(self, sql):
        subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1", self.admin, "-c", sql],
                       env=dict(os.environ, PGOPTIONS="-c client_min_messages=warning"),
                       check=True, stdout=subprocess.DEVNULL)

    def _protoc(self):
        protoc = shutil.which("protoc")
        if not protoc:
            raise SystemExit("FAIL: protoc (protobuf-compiler) is not installed")
        rpc = os.path.join(self.source_dir, "rpc")
        subprocess.run([protoc, "-I", rpc, "--python_out", self.tmp,
                        os.path.join(rpc, "halley.proto")], check=True)
        sys.path.insert(0, self.tmp)
        import halley_pb2
        return halley_pb2

    def method(self, name, token=TOKEN, stream=False):
        """A callable for Halley/<name>: fn(request, metadata=..., timeout=...)."""
        svc = self.pb.DESCRIPTOR.services_by_name["Halley"]
        m = svc.methods_by_name[name]
        req = self.pb.__dict__[m.input_type.name]
        resp = self.pb.__dict__[m.output_type.name]
        mk = self.channel.unary_stream if stream else self.channel.unary_unary
        fn = mk("/%s/%s" % (svc.full_name, name), request_serializer=req.SerializeToString,
                response_deserializer=resp.FromString)
        md = (("authorization", "Bearer " + token),) if token is not None else None

        def call(request=None, metadata=md, timeout=10):
            return fn(request if request is not None else req(), metadata=metadata,
                      timeout=timeout)
        return call

    def close(self, show_log=False):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proxy:
            self.proxy.cut()
        if self.db:
            try:
                self._psql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % self.db)
            except subprocess.CalledProcessError:
                pass
        if failures or show_log:
            try:
                sys.stdout.write(open(os.path.join(self.tmp, "halleyd.log")).read()[-4000:])
            except OSError:
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)


def rpc_error(fn, *a, **kw):
    """The grpc.RpcError of a call that must fail (AssertionError if it succeeds)."""
    try:
        fn(*a, **kw)
    except grpc.RpcError as e:
        return e
    raise AssertionError("call unexpectedly succeeded")


def trailer(e, key):
    for k, v in e.trailing_metadata() or ():
        if k == key:
            return v
    return None


_status_classes = []


def status_classes():
    """google.rpc.Status and google.rpc.BadRequest message classes, built
    from descriptors written here after the public google/rpc protos."""
    if _status_classes:
        return _status_classes
    from google.protobuf import any_pb2  # noqa: F401  (puts Any in the pool)
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    F = descriptor_pb2.FieldDescriptorProto
    fd = descriptor_pb2.FileDescriptorProto(name="orr_test/google_rpc.proto",
                                            package="google.rpc", syntax="proto3",
                                            dependency=["google/protobuf/any.proto"])
    st = fd.message_type.add(name="Status")
    st.field.add(name="code", number=1, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    st.field.add(name="message", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    st.field.add(name="details", number=3, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                 type_name=".google.protobuf.Any")
    br = fd.message_type.add(name="BadRequest")
    fv = br.nested_type.add(name="FieldViolation")
    fv.field.add(name="field", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    fv.field.add(name="description", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    br.field.add(name="field_violations", number=1, type=F.TYPE_MESSAGE,
                 label=F.LABEL_REPEATED, type_name=".google.rpc.BadRequest.FieldViolation")
    pool = descriptor_pool.Default()
    pool.Add(fd)
    fac = message_factory.MessageFactory(pool)
    _status_classes.extend([fac.GetPrototype(pool.FindMessageTypeByName("google.rpc.Status")),
                            fac.GetPrototype(pool.FindMessageTypeByName("google.rpc.BadRequest"))])
    return _status_classes


def status_details(e):
    """(google.rpc.Status, [FieldViolation]) from grpc-status-details-bin, or
    (None, []) when the trailer is absent."""
    raw = trailer(e, "grpc-status-details-bin")
    if raw is None:
        return None, []
    Status, BadRequest = status_classes()
    st = Status.FromString(raw)
    viol = []
    for d in st.details:
        if d.type_url == "type.googleapis.com/google.rpc.BadRequest":
            viol += list(BadRequest.FromString(d.value).field_violations)
    return st, viol
