#!/usr/bin/python3
"""halleyd's gRPC with TLS and mutual TLS, checked against a private CA made
with openssl at test time (a CA, a server certificate for 127.0.0.1 and
localhost, a client certificate, and a second unrelated CA with a client
certificate of its own).

modes:
  server   halleyd with TLS: a stock client trusting the CA is served; one
           trusting the other CA is refused; halleyd's own admin command
           (the Orrery client) works with the CA and fails, saying why, with
           the wrong one.
  mutual   halleyd with tls_client_ca_file: a client with the CA's client
           certificate is served; one without a certificate, or with the
           other CA's, is refused and halleyd logs the refusal.
  platform galaxyd calling halleyd over mutual TLS: log in and create a task
           through REST; a galaxyd without a client certificate is refused
           by halleyd (its REST calls fail) and halleyd logs why.
  nginx    the real nginx with deploy/nginx/orrery-tls.conf in front of two
           galaxyd: log in and read a page over https trusting the CA; a
           client not trusting it is refused; the event stream path is not
           buffered.
  badconf  a missing certificate file, a key file readable by others, a
           certificate without its key: halleyd refuses to start (exit 2)
           naming the file and the key.

usage: test_tls.py <build dir> <source dir> <mode>
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "halley"))
from stockclient import Halley, TOKEN, check, finish, rpc_error  # noqa: E402


def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


class PKI:
    """ca, ca2 (unrelated), server (ca; SAN 127.0.0.1, localhost), client
    (ca), rogue (ca2). Keys mode 0600."""

    def __init__(self, d):
        self.d = d
        for ca in ("ca", "ca2"):
            openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", self.key(ca),
                    "-out", self.crt(ca), "-days", "2", "-subj", "/CN=Orrery test %s" % ca)
        for name, ca, san in (("server", "ca", "IP:127.0.0.1,DNS:localhost"),
                              ("client", "ca", "DNS:orrery-client"),
                              ("rogue", "ca2", "DNS:orrery-rogue")):
            csr = os.path.join(d, name + ".csr")
            ext = os.path.join(d, name + ".ext")
            with open(ext, "w") as f:
                f.write("subjectAltName=%s\n" % san)
            openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", self.key(name), "-out",
                    csr, "-subj", "/CN=%s" % name)
            openssl("x509", "-req", "-in", csr, "-CA", self.crt(ca), "-CAkey", self.key(ca),
                    "-CAcreateserial", "-out", self.crt(name), "-days", "2", "-extfile", ext)
        for f in os.listdir(d):
            if f.endswith(".key"):
                os.chmod(os.path.join(d, f), 0o600)

    def crt(self, n):
        return os.path.join(self.d, n + ".crt")

    def key(self, n):
        return os.path.join(self.d, n + ".key")

    def read(self, p):
        with open(p, "rb") as f:
            return f.read()

    def creds(self, ca, client=None):
        if client:
            return grpc.ssl_channel_credentials(self.read(self.crt(ca)), self.read(self.key(client)),
                                                self.read(self.crt(client)))
        return grpc.ssl_channel_credentials(self.read(self.crt(ca)))


def server_env(pki, mutual=False):
    env = {"ORRERY_HALLEY_TLS_CERT_FILE": pki.crt("server"),
           "ORRERY_HALLEY_TLS_KEY_FILE": pki.key("server")}
    if mutual:
        env["ORRERY_HALLEY_TLS_CLIENT_CA_FILE"] = pki.crt("ca")
    return env


def health(h, creds):
    """Call Halley/Health over a new channel with creds (None: plaintext):
    None or the error."""
    target = "127.0.0.1:%d" % h.port
    ch = grpc.secure_channel(target, creds) if creds else grpc.insecure_channel(target)
    try:
        svc = h.pb.DESCRIPTOR.services_by_name["Halley"]
        m = svc.methods_by_name["Health"]
        req = h.pb.__dict__[m.input_type.name]
        resp = h.pb.__dict__[m.output_type.name]
        fn = ch.unary_unary("/%s/Health" % svc.full_name, request_serializer=req.SerializeToString,
                            response_deserializer=resp.FromString)
        fn(req(), metadata=(("authorization", "Bearer " + TOKEN),), timeout=60)
        return None
    except grpc.RpcError as e:
        return e
    finally:
        ch.close()


def user_add(h, env_extra, name):
    """halleyd user-add (the Orrery C client) against h: (exit code, stderr)."""
    env = dict(os.environ)
    env.update({"ORRERY_HALLEY_LISTEN": "127.0.0.1:%d" % h.port,
                "ORRERY_HALLEY_TOKEN": TOKEN,
                "ORRERY_HALLEY_PG_DSN": h.dsn,
                "ORRERY_HALLEY_SECRET_KEY": "07" * 32})
    env.update(env_extra)
    p = subprocess.run([os.path.join(h.build_dir, "bin", "halleyd"), "user-add", name,
                        "--role", "viewer"], input="pw-%s-secret\n" % name, env=env,
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stderr


def halley_log(h):
    h.log.flush()
    with open(os.path.join(h.tmp, "halleyd.log")) as f:
        return f.read()


def halley_log_with(h, *texts, timeout=60.0):
    """halleyd's log once it holds every text (or at the deadline): gRPC
    logs a refused handshake on a thread of its own, possibly after the
    client has seen the refusal."""
    deadline = time.monotonic() + timeout
    while True:
        log = halley_log(h)
        if all(t in log for t in texts) or time.monotonic() > deadline:
            return log
        time.sleep(0.1)


def mode_server(build, src, pki):
    h = Halley(build, src, extra_env=server_env(pki), creds=pki.creds("ca"))
    try:
        check(health(h, pki.creds("ca")) is None, "a client trusting the CA is served over TLS")
        e = health(h, pki.creds("ca2"))
        check(e is not None and e.code() == grpc.StatusCode.UNAVAILABLE,
              "a client trusting another CA is refused (%s)" % (e and e.code()))
        # refused, not merely slow: a call over plaintext fails UNAVAILABLE
        # well within its deadline
        e = health(h, None)
        check(e is not None and e.code() == grpc.StatusCode.UNAVAILABLE,
              "a plaintext client is not served (%s)" % (e and e.code()))
        rc, err = user_add(h, {"ORRERY_HALLEY_HALLEY_TLS_CA_FILE": pki.crt("ca")}, "tls_ok")
        check(rc == 0, "halleyd user-add over TLS trusting the CA works (%d %s)" % (rc, err))
        rc, err = user_add(h, {"ORRERY_HALLEY_HALLEY_TLS_CA_FILE": pki.crt("ca2")}, "tls_bad")
        print(err)
        check(rc != 0, "halleyd user-add trusting another CA fails")
        check("127.0.0.1:%d" % h.port in err, "its message names the peer")
        check("over TLS" in err, "its message says the call was over TLS")
        check("CERTIFICATE_VERIFY_FAILED" in err or "certificate verify failed" in err.lower(),
              "its message says the certificate did not verify")
    finally:
        h.close()


def mode_mutual(build, src, pki):
    h = Halley(build, src, extra_env=server_env(pki, mutual=True),
               creds=pki.creds("ca", "client"))
    try:
        check(health(h, pki.creds("ca", "client")) is None,
              "a client with a certificate of the CA is served")
        e = health(h, pki.creds("ca"))
        check(e is not None and e.code() == grpc.StatusCode.UNAVAILABLE,
              "a client without a certificate is refused (%s)" % (e and e.code()))
        e = health(h, pki.creds("ca", "rogue"))
        check(e is not None and e.code() == grpc.StatusCode.UNAVAILABLE,
              "a client with a certificate of another CA is refused (%s)" % (e and e.code()))
        log = halley_log_with(h, "peer did not return a certificate", "certificate verify failed")
        print(log[-3000:])
        check("peer did not return a certificate" in log,
              "halleyd logs the handshake refused for want of a client certificate")
        check("certificate verify failed" in log,
              "halleyd logs the handshake refused for a certificate of another CA")
        rc, err = user_add(h, {"ORRERY_HALLEY_HALLEY_TLS_CA_FILE": pki.crt("ca"),
                               "ORRERY_HALLEY_HALLEY_TLS_CERT_FILE": pki.crt("client"),
                               "ORRERY_HALLEY_HALLEY_TLS_KEY_FILE": pki.key("client")}, "mtls_ok")
        check(rc == 0, "halleyd user-add with the client certificate works (%d %s)" % (rc, err))
    finally:
        h.close()


def start_fails(build, env_extra):
    env = dict(os.environ)
    env.update({"ORRERY_HALLEY_TOKEN": TOKEN, "ORRERY_HALLEY_SECRET_KEY": "07" * 32,
                "ORRERY_HALLEY_PG_DSN": "postgresql://127.0.0.1:1/none",
                "ORRERY_HALLEY_LISTEN": "127.0.0.1:0", "ORRERY_HALLEY_METRICS_LISTEN": ""})
    env.update(env_extra)
    p = subprocess.run([os.path.join(build, "bin", "halleyd"), "serve"], env=env,
                       capture_output=True, text=True, timeout=30)
    return p.returncode, p.stderr


def mode_badconf(build, src, pki):
    d = pki.d
    missing = os.path.join(d, "nosuch.crt")
    rc, err = start_fails(build, {"ORRERY_HALLEY_TLS_CERT_FILE": missing,
                                  "ORRERY_HALLEY_TLS_KEY_FILE": pki.key("server")})
    check(rc == 2, "a missing certificate file: exit 2 (%d)" % rc)
    check(missing in err and "tls_cert_file" in err, "... naming the file and the key: " + err)
    open_key = os.path.join(d, "open.key")
    with open(pki.key("server"), "rb") as f, open(open_key, "wb") as g:
        g.write(f.read())
    os.chmod(open_key, 0o644)
    rc, err = start_fails(build, {"ORRERY_HALLEY_TLS_CERT_FILE": pki.crt("server"),
                                  "ORRERY_HALLEY_TLS_KEY_FILE": open_key})
    check(rc == 2, "a key file readable by others: exit 2 (%d)" % rc)
    check(open_key in err and "tls_key_file" in err, "... naming the file and the key: " + err)
    missing_key = os.path.join(d, "nosuch.key")
    rc, err = start_fails(build, {"ORRERY_HALLEY_TLS_CERT_FILE": pki.crt("server"),
                                  "ORRERY_HALLEY_TLS_KEY_FILE": missing_key})
    check(rc == 2 and missing_key in err and "tls_key_file" in err,
          "a missing key file: exit 2 naming it: " + err)
    rc, err = start_fails(build, {"ORRERY_HALLEY_TLS_CERT_FILE": pki.crt("server")})
    check(rc == 2 and "tls_key_file" in err, "a certificate without its key: exit 2: " + err)
    rc, err = start_fails(build, {"ORRERY_HALLEY_TLS_CERT_FILE": pki.crt("server"),
                                  "ORRERY_HALLEY_TLS_KEY_FILE": pki.key("server"),
                                  "ORRERY_HALLEY_TLS_CLIENT_CA_FILE": missing})
    check(rc == 2 and missing in err and "tls_client_ca_file" in err,
          "a missing client CA file: exit 2 naming it: " + err)


def mode_platform(build, src, pki):
    sys.path.insert(0, os.path.join(src, "tests", "integration", "lib"))
    import orrery_it

    tls_env = dict(server_env(pki, mutual=True))
    tls_env.update({"ORRERY_HALLEY_HALLEY_TLS_CA_FILE": pki.crt("ca"),
                    "ORRERY_HALLEY_HALLEY_TLS_CERT_FILE": pki.crt("client"),
                    "ORRERY_HALLEY_HALLEY_TLS_KEY_FILE": pki.key("client")})

    class TlsPlatform(orrery_it.Platform):
        def halley_env(self):
            env = super().halley_env()
            env.update(tls_env)
            return env

    with TlsPlatform(build, galaxies=0) as p:
        p.start_galaxy({"ORRERY_GALAXY_HALLEY_TLS_CA_FILE": pki.crt("ca"),
                        "ORRERY_GALAXY_HALLEY_TLS_CERT_FILE": pki.crt("client"),
                        "ORRERY_GALAXY_HALLEY_TLS_KEY_FILE": pki.key("client")})
        p.add_user("tls_ann", "tls-ann-password-1", "developer", teams=["tls_etl"])
        tok = p.login("tls_ann", "tls-ann-password-1")
        check(bool(tok), "a login through galaxyd over mutual TLS to halleyd")
        spec = {"name": "tls_etl.orders", "team": "tls_etl", "type": "shell",
                "schedule": "0 * * * *", "timezone": "UTC", "config": {"command": "/bin/true"}}
        r = p.http("POST", "/api/v1/tasks", spec, token=tok)
        check(r.status == 201, "a task created through REST over mutual TLS (%s)" % r)
        r = p.http("GET", "/api/v1/tasks", token=tok)
        check(r.status == 200 and "tls_etl.orders" in json.dumps(r.json()),
              "the task is listed (%s)" % r.status)
        # A second galaxyd trusting the CA but with no client certificate.
        port = p.start_galaxy({"ORRERY_GALAXY_HALLEY_TLS_CA_FILE": pki.crt("ca"),
                               "ORRERY_GALAXY_RPC_TIMEOUT": "2s"})
        r = orrery_it.http("http://127.0.0.1:%d" % port, "GET", "/api/v1/tasks", token=tok)
        check(r.status >= 500, "a galaxyd without a client certificate cannot read (%s)" % r.status)
        # gRPC logs the refused handshake on its own thread: polled (60 s bound)
        deadline = time.monotonic() + 60
        log = p.log("halleyd.log")
        while "peer did not return a certificate" not in log and time.monotonic() < deadline:
            time.sleep(0.1)
            log = p.log("halleyd.log")
        check("peer did not return a certificate" in log,
              "halleyd logs the client that presented no certificate")


def https(port, method, path, body=None, token=None, cafile=None):
    """One request over https to 127.0.0.1:port: (status, json or None).
    cafile None: the system's roots only."""
    import http.client
    import ssl
    ctx = ssl.create_default_context(cafile=cafile)
    c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=15)
    hdrs = {"Content-Type": "application/json"}
    if token:
        hdrs["Authorization"] = "Bearer " + token
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=hdrs)
    r = c.getresponse()
    data = r.read()
    c.close()
    try:
        return r.status, dict(r.getheaders()), json.loads(data) if data else None
    except ValueError:
        return r.status, dict(r.getheaders()), None


def mode_nginx(build, src, pki):
    import shutil
    import signal
    import ssl
    sys.path.insert(0, os.path.join(src, "tests", "integration", "lib"))
    import orrery_it

    with orrery_it.Platform(build, galaxies=0) as p:
        for _ in range(2):
            p.start_galaxy({"ORRERY_GALAXY_TRUSTED_PROXIES": "127.0.0.1",
                            "ORRERY_GALAXY_COOKIE_SECURE": "true"})
        p.add_user("tls_nina", "tls-nina-password-1", "developer", teams=["tls_web"])
        prefix = os.path.join(pki.d, "nginx")
        port = orrery_it.free_port()
        subprocess.run([os.path.join(src, "deploy", "nginx", "render.sh"), "--tls",
                        pki.crt("server"), pki.key("server"), prefix, "127.0.0.1:%d" % port]
                       + ["127.0.0.1:%d" % g for g in p.galaxy_ports], check=True,
                       stdout=subprocess.DEVNULL)
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        proc = subprocess.Popen([nginx, "-p", prefix, "-c", os.path.join(prefix, "nginx.conf")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            orrery_it.wait_port(port, proc, "nginx")
            st, hdr, doc = https(port, "POST", "/api/v1/auth/login",
                                 {"name": "tls_nina", "password": "tls-nina-password-1"},
                                 cafile=pki.crt("ca"))
            check(st == 200 and doc and doc.get("token"),
                  "a login through nginx over https trusting the CA (%s)" % st)
            tok = doc.get("token") if doc else None
            check("Strict-Transport-Security" in hdr, "nginx sends HSTS")
            cookie = hdr.get("Set-Cookie", "")
            check("; secure" in cookie.lower(),
                  "the session cookie is Secure (%s)" % cookie[:80])
            st, _, doc = https(port, "GET", "/api/v1/tasks", token=tok, cafile=pki.crt("ca"))
            check(st == 200 and doc is not None, "a page read over https (%s)" % st)
            try:
                https(port, "GET", "/api/v1/tasks", token=tok)
                refused = False
            except ssl.SSLCertVerificationError as e:
                refused = "certificate verify failed" in str(e)
            check(refused, "a client not trusting the CA is refused")
            try:
                https(port, "GET", "/api/v1/tasks", token=tok, cafile=pki.crt("ca2"))
                refused = False
            except ssl.SSLCertVerificationError:
                refused = True
            check(refused, "a client trusting another CA is refused")
            conf = open(os.path.join(prefix, "nginx.conf")).read()
            check("proxy_buffering off" in conf and "X-Forwarded-Proto https" in conf,
                  "the rendered config streams live logs unbuffered and forwards the scheme")
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)


def main():
    build, src, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    with tempfile.TemporaryDirectory(prefix="orr-tls-") as d:
        pki = PKI(d)
        {"server": mode_server, "mutual": mode_mutual, "badconf": mode_badconf,
         "platform": mode_platform, "nginx": mode_nginx}[mode](build, src,
                                                                                      pki)
    return finish("test_tls " + mode)


if __name__ == "__main__":
    sys.exit(main())
