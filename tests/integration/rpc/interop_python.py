#!/usr/bin/python3
"""Calls the Orrery RPC runtime from a standard gRPC client (Python grpcio)
that knows nothing but echo.proto: message classes come from protoc, method
paths from the service definition. Exit 0 = pass, 77 = grpcio/protoc missing
(skipped), anything else = failure.

usage: interop_python.py <rpc_echo_server binary> <echo.proto>
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

TOKEN = "interop-token"

try:
    import grpc
except ImportError:
    print("SKIP: python3-grpcio is not installed")
    sys.exit(77)
PROTOC = shutil.which("protoc")
if not PROTOC:
    print("SKIP: protoc (protobuf-compiler) is not installed")
    sys.exit(77)


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


def main():
    server_bin, proto = sys.argv[1], os.path.abspath(sys.argv[2])
    tmp = tempfile.mkdtemp(prefix="orr-interop-")
    proc = None
    try:
        subprocess.run([PROTOC, "-I", os.path.dirname(proto), "--python_out", tmp, proto],
                       check=True)
        sys.path.insert(0, tmp)
        import echo_pb2 as pb

        proc = subprocess.Popen([server_bin, "--token", TOKEN], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        line = proc.stdout.readline().strip()
        check(line.startswith("port="), "server printed its port: " + line)
        port = int(line.split("=", 1)[1])

        # the service path as any gRPC stub would derive it from the .proto
        svc = "/" + pb.DESCRIPTOR.services_by_name["Echo"].full_name + "/"
        auth = (("authorization", "Bearer " + TOKEN),)
        with grpc.insecure_channel("127.0.0.1:%d" % port) as ch:
            grpc.channel_ready_future(ch).result(timeout=10)
            say = ch.unary_unary(svc + "Say", request_serializer=pb.SayRequest.SerializeToString,
                                 response_deserializer=pb.SayReply.FromString)
            fail = ch.unary_unary(svc + "Fail",
                                  request_serializer=pb.FailRequest.SerializeToString,
                                  response_deserializer=pb.FailReply.FromString)
            count = ch.unary_stream(svc + "Count",
                                    request_serializer=pb.CountRequest.SerializeToString,
                                    response_deserializer=pb.CountReply.FromString)

            r = say(pb.SayRequest(text="hello from python"), metadata=auth, timeout=5)
            check(r.text == "hello from python", "unary Say echoes the text")
            check("127.0.0.1" in r.peer, "reply carries the peer address")

            def code_of(fn, *a, **kw):
                try:
                    fn(*a, **kw)
                except grpc.RpcError as e:
                    return e
                raise AssertionError("call unexpectedly succeeded")

            e = code_of(say, pb.SayRequest(text="no token"), timeout=5)
            check(e.code() == grpc.StatusCode.UNAUTHENTICATED, "missing token: UNAUTHENTICATED")
            e = code_of(say, pb.SayRequest(text="bad"), timeout=5,
                        metadata=(("authorization", "Bearer nope"),))
            check(e.code() == grpc.StatusCode.UNAUTHENTICATED, "wrong token: UNAUTHENTICATED")

            e = code_of(say, pb.SayRequest(text=""), metadata=auth, timeout=5)
            check(e.code() == grpc.StatusCode.INVALID_ARGUMENT, "empty text: INVALID_ARGUMENT")
            check(e.details() == "text: must not be empty", "details name the field: "
                  + e.details())
            check(("orr-field", "text") in tuple(e.trailing_metadata()),
                  "orr-field trailing metadata")

            # ESTATE (4) -> FAILED_PRECONDITION, ECONFLICT (5) -> ABORTED
            for code, want in ((4, grpc.StatusCode.FAILED_PRECONDITION),
                               (5, grpc.StatusCode.ABORTED), (2, grpc.StatusCode.NOT_FOUND)):
                e = code_of(fail, pb.FailRequest(code=code, field="instance.state",
                                                 message="m%d" % code), metadata=auth, timeout=5)
                check(e.code() == want, "Fail(%d) -> %s" % (code, want))
                check(e.details() == "instance.state: m%d" % code, "details of Fail(%d)" % code)

            replies = list(count(pb.CountRequest(n=7), metadata=auth, timeout=5))
            check([x.i for x in replies] == list(range(7)), "server stream: 7 messages then OK")

            it = count(pb.CountRequest(n=2, fail_code=4), metadata=auth, timeout=5)
            got = []
            try:
                for x in it:
                    got.append(x.i)
                raise AssertionError("stream should fail")
            except grpc.RpcError as e:
                check(got == [0, 1] and e.code() == grpc.StatusCode.FAILED_PRECONDITION,
                      "stream ends with its error status after its messages")

            e = code_of(say, pb.SayRequest(text="slow", sleep_ms=3000), metadata=auth,
                        timeout=0.2)
            check(e.code() == grpc.StatusCode.DEADLINE_EXCEEDED, "deadline: DEADLINE_EXCEEDED")

            nope = ch.unary_unary(svc + "Nope")
            e = code_of(nope, b"\x01\x02", metadata=auth, timeout=5)
            check(e.code() == grpc.StatusCode.UNIMPLEMENTED, "unknown method: UNIMPLEMENTED")
            raw = ch.unary_unary(svc + "Say")
            e = code_of(raw, b"\x0a\xff\xff\xff\xff\x0f", metadata=auth, timeout=5)
            check(e.code() == grpc.StatusCode.INVALID_ARGUMENT, "bad protobuf: INVALID_ARGUMENT")

            stream = count(pb.CountRequest(until_cancelled=True, interval_ms=10), metadata=auth)
            first = next(stream)
            stream.cancel()
            check(first.i == 0, "cancel a running stream")

        out, _ = proc.communicate("quit\n", timeout=20)
        check(proc.returncode == 0, "server stopped cleanly: " + out.strip())
        proc = None
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print("interop: all checks passed")


if __name__ == "__main__":
    main()
