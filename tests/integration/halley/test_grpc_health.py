#!/usr/bin/python3
"""halleyd's standard grpc.health.v1.Health as a stock gRPC client (Python
grpcio, message classes made by protoc from rpc/health.proto) sees it: no
token needed, Check for "" and the Halley service, NOT_FOUND for an unknown
one, and Watch following PostgreSQL going away (NOT_SERVING) and coming back
(SERVING). PostgreSQL is taken away by construction: halleyd reaches it
through a TCP proxy this test closes and reopens.

usage: test_grpc_health.py <build dir> <source dir>
"""
import os
import queue
import subprocess
import sys
import threading

import grpc

from stockclient import Halley, check, finish, rpc_error, wait_for


def health_pb(h):
    rpc = os.path.join(h.source_dir, "rpc")
    subprocess.run(["protoc", "-I", rpc, "--python_out", h.tmp, os.path.join(rpc, "health.proto")],
                   check=True)
    import health_pb2
    return health_pb2


class Watch:
    """A Watch stream read on a thread; next(timeout) fails loudly."""

    def __init__(self, fn, req):
        self.q = queue.Queue()
        self.call = fn(req, timeout=600)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for m in self.call:
                self.q.put(m)
        except grpc.RpcError as e:
            self.q.put(e)

    def next(self, what, timeout=30):
        try:
            m = self.q.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no Watch message within %d s: %s" % (timeout, what))
        if isinstance(m, grpc.RpcError):
            raise AssertionError("Watch ended with %s: %s" % (m.code(), what))
        return m

    def close(self):
        self.call.cancel()


def main():
    h = Halley(sys.argv[1], sys.argv[2])
    watches = []
    try:
        pb = health_pb(h)
        S = pb.HealthCheckResponse
        chk = h.channel.unary_unary("/grpc.health.v1.Health/Check",
                                    request_serializer=pb.HealthCheckRequest.SerializeToString,
                                    response_deserializer=S.FromString)
        wat = h.channel.unary_stream("/grpc.health.v1.Health/Watch",
                                     request_serializer=pb.HealthCheckRequest.SerializeToString,
                                     response_deserializer=S.FromString)
        for svc in ["", "orrery.halley.v1.Halley"]:
            r = chk(pb.HealthCheckRequest(service=svc), timeout=10)
            check(r.status == S.SERVING, "Check %r without a token: SERVING" % svc)
        r = chk(pb.HealthCheckRequest(), timeout=10,
                metadata=(("authorization", "Bearer garbage"),))
        check(r.status == S.SERVING, "Check ignores a token it does not need")
        e = rpc_error(chk, pb.HealthCheckRequest(service="no.such.Service"), timeout=10)
        check(e.code() == grpc.StatusCode.NOT_FOUND, "Check of an unknown service: NOT_FOUND")
        e = rpc_error(h.method("Health", token=None))
        check(e.code() == grpc.StatusCode.UNAUTHENTICATED,
              "Halley's own methods still need the token")

        w = Watch(wat, pb.HealthCheckRequest(service=""))
        watches.append(w)
        wu = Watch(wat, pb.HealthCheckRequest(service="no.such.Service"))
        watches.append(wu)
        check(w.next("first status").status == S.SERVING, "Watch: SERVING at once")
        check(wu.next("unknown service").status == S.SERVICE_UNKNOWN,
              "Watch of an unknown service: SERVICE_UNKNOWN, stream open")

        h.proxy.cut()
        check(w.next("PostgreSQL cut").status == S.NOT_SERVING,
              "Watch: NOT_SERVING while PostgreSQL is unreachable")
        r = chk(pb.HealthCheckRequest(service="orrery.halley.v1.Halley"), timeout=20)
        check(r.status == S.NOT_SERVING, "Check: NOT_SERVING while PostgreSQL is unreachable")

        h.proxy.restore()
        check(w.next("PostgreSQL back").status == S.SERVING,
              "Watch: SERVING again once PostgreSQL is back")
        wait_for(lambda: chk(pb.HealthCheckRequest(), timeout=20).status == S.SERVING,
                 "Check SERVING again")
        check(True, "Check: SERVING again")
        check(wu.q.empty(), "the unknown service's Watch sent nothing more")
    finally:
        for w in watches:
            w.close()
        h.close()
    return finish("test_grpc_health")


if __name__ == "__main__":
    sys.exit(main())
