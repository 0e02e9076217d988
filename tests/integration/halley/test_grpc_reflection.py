#!/usr/bin/python3
"""halleyd's gRPC server reflection as a stock client (Python grpcio) sees it.

The client knows only the standard reflection protocol (message classes made
by protoc from rpc/grpc/reflection/v1alpha/reflection.proto, as grpcurl has
them compiled in). Without a token it lists the services, fetches the file
that defines orrery.halley.v1.Halley, builds a descriptor pool of its own
from the returned FileDescriptorProtos, and calls CreateTask and GetTask
with messages made from those descriptors alone: a client that has no
Orrery .proto can call halleyd. Several requests share one bidi stream;
unknown names get a NOT_FOUND error_response; grpc.reflection.v1 answers the
same way.

usage: test_grpc_reflection.py <build dir> <source dir>
"""
import os
import subprocess
import sys
import threading

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from stockclient import TOKEN, Halley, check, finish

NOT_FOUND = 5
V1A = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
V1 = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"


def reflection_pb(h):
    d = os.path.join(h.source_dir, "rpc", "grpc", "reflection", "v1alpha")
    subprocess.run(["protoc", "-I", d, "--python_out", h.tmp, os.path.join(d, "reflection.proto")],
                   check=True)
    import reflection_pb2
    return reflection_pb2


def ask(h, pb, path, reqs, metadata=None):
    """Send reqs on one ServerReflectionInfo stream; the answers, in order."""
    fn = h.channel.stream_stream(path,
                                 request_serializer=pb.ServerReflectionRequest.SerializeToString,
                                 response_deserializer=pb.ServerReflectionResponse.FromString)
    return list(fn(iter(reqs), metadata=metadata, timeout=20))


def files_of(resp):
    """FileDescriptorProtos of a file_descriptor_response, by name."""
    check(resp.WhichOneof("message_response") == "file_descriptor_response",
          "a file_descriptor_response (got %s)" % resp.WhichOneof("message_response"))
    out = {}
    for raw in resp.file_descriptor_response.file_descriptor_proto:
        fd = descriptor_pb2.FileDescriptorProto.FromString(raw)
        out[fd.name] = fd
    return out


def pool_of(files):
    """A fresh descriptor pool (not the default one) holding files, each
    added after its dependencies; fails if a dependency is missing."""
    pool = descriptor_pool.DescriptorPool()
    added = set()
    while len(added) < len(files):
        ready = [n for n, fd in files.items()
                 if n not in added and all(d in added for d in fd.dependency)]
        if not ready:
            raise AssertionError("dependencies missing from the answer: %r" %
                                 {n: list(fd.dependency) for n, fd in files.items()})
        for n in sorted(ready):
            pool.Add(files[n])
            added.add(n)
    return pool


def error_of(resp):
    if resp.WhichOneof("message_response") != "error_response":
        return None
    return resp.error_response.error_code


def main():
    h = Halley(sys.argv[1], sys.argv[2])
    try:
        pb = reflection_pb(h)
        R = pb.ServerReflectionRequest
        want_services = {"orrery.halley.v1.Halley", "grpc.health.v1.Health",
                         "grpc.reflection.v1alpha.ServerReflection",
                         "grpc.reflection.v1.ServerReflection"}

        # several requests, one stream, answered in order, no token
        answers = ask(h, pb, V1A, [
            R(list_services="*"),
            R(file_containing_symbol="orrery.halley.v1.Halley"),
            R(file_containing_symbol="no.such.Symbol"),
            R(file_containing_symbol="orrery.halley.v1.Halley.GetTask"),
            R(file_containing_symbol="orrery.halley.v1.GetTaskRequest"),
            R(file_by_filename="no/such.proto"),
            R(file_containing_symbol="grpc.health.v1.Health"),
            R(file_containing_symbol="orrery.halley.v1.Halley.NoSuchMethod"),
        ])
        check(len(answers) == 8, "one answer per request on one stream (got %d)" % len(answers))
        check([a.original_request.WhichOneof("message_request") for a in answers] ==
              ["list_services"] + ["file_containing_symbol"] * 4 + ["file_by_filename",
                                                                    "file_containing_symbol",
                                                                    "file_containing_symbol"],
              "answers carry their original requests, in order")
        names = {s.name for s in answers[0].list_services_response.service}
        check(names == want_services, "list_services: %s" % sorted(names))

        files = files_of(answers[1])
        svc_file = [n for n, fd in files.items()
                    if fd.package == "orrery.halley.v1" and
                    any(s.name == "Halley" for s in fd.service)]
        check(len(svc_file) == 1, "the file defining orrery.halley.v1.Halley came back")
        first = descriptor_pb2.FileDescriptorProto.FromString(
            answers[1].file_descriptor_response.file_descriptor_proto[0])
        check(first.name == svc_file[0], "the file asked for comes first")

        check(error_of(answers[2]) == NOT_FOUND, "unknown symbol: NOT_FOUND error_response")
        check("no.such.Symbol" in answers[2].error_response.error_message,
              "the error names the symbol")
        check(set(files_of(answers[3])) == set(files), "a method symbol finds the same file")
        check(set(files_of(answers[4])) == set(files), "a message symbol finds the same file")
        check(error_of(answers[5]) == NOT_FOUND, "unknown file name: NOT_FOUND error_response")
        health = files_of(answers[6])
        check(any(fd.package == "grpc.health.v1" for fd in health.values()),
              "the health service's file is served too")
        check(error_of(answers[7]) == NOT_FOUND, "unknown method: NOT_FOUND error_response")

        # by file name, as clients fetch dependencies
        byname = files_of(ask(h, pb, V1A, [R(file_by_filename=svc_file[0])])[0])
        check(svc_file[0] in byname, "file_by_filename returns the file")

        # a client with nothing but the reflected descriptors calls halleyd
        pool = pool_of(files)
        svc = pool.FindServiceByName("orrery.halley.v1.Halley")
        get = svc.methods_by_name["GetTask"]
        create = svc.methods_by_name["CreateTask"]
        check(get.input_type.full_name == "orrery.halley.v1.GetTaskRequest",
              "GetTask's input type from reflection: %s" % get.input_type.full_name)

        def message_class(desc):
            if hasattr(message_factory, "GetMessageClass"):  # protobuf >= 4.21
                return message_factory.GetMessageClass(desc)
            return message_factory.MessageFactory(pool).GetPrototype(desc)

        def call(m, **fields):
            req_cls = message_class(m.input_type)
            resp_cls = message_class(m.output_type)
            fn = h.channel.unary_unary("/%s/%s" % (svc.full_name, m.name),
                                       request_serializer=req_cls.SerializeToString,
                                       response_deserializer=resp_cls.FromString)
            return fn(req_cls(**fields), metadata=(("authorization", "Bearer " + TOKEN),),
                      timeout=20)

        team = svc.methods_by_name["CreateTeam"]
        call(team, name="refl", actor="test")
        spec = ('{"name":"refl_task","team":"refl","type":"shell","schedule":"0 * * * *",'
                '"config":{"command":"echo hi"}}')
        made = call(create, spec_json=spec, actor="test")
        check(made.id > 0, "CreateTask with reflected messages: id %d" % made.id)
        got = call(get, id=made.id)
        check(got.DESCRIPTOR.full_name == "orrery.halley.v1.Task" and got.name == "refl_task"
              and got.team == "refl" and got.id == made.id,
              "GetTask with reflected messages: %s/%s id %d" % (got.team, got.name, got.id))

        # the same protocol under grpc.reflection.v1, and a token it ignores
        v1 = ask(h, pb, V1, [R(list_services=""), R(file_containing_symbol="no.such.Symbol")],
                 metadata=(("authorization", "Bearer garbage"),))
        check({s.name for s in v1[0].list_services_response.service} == want_services,
              "grpc.reflection.v1 lists the same services")
        check(error_of(v1[1]) == NOT_FOUND, "grpc.reflection.v1: NOT_FOUND for unknown symbol")
        v1f = files_of(ask(h, pb, V1, [
            R(file_containing_symbol="grpc.reflection.v1.ServerReflection")])[0])
        check(any(fd.package == "grpc.reflection.v1" for fd in v1f.values()),
              "the v1 reflection service's own file is served")

        # a stream left open: the server answers and keeps it open for more
        q = []
        more = threading.Event()

        def reqs():
            yield R(list_services="")
            more.wait(20)
            yield R(file_by_filename=svc_file[0])

        fn = h.channel.stream_stream(V1A,
                                     request_serializer=R.SerializeToString,
                                     response_deserializer=pb.ServerReflectionResponse.FromString)
        it = fn(reqs(), timeout=20)
        q.append(next(it))
        check(q[0].WhichOneof("message_response") == "list_services_response",
              "first answer arrives while the client's side is still open")
        more.set()
        q.append(next(it))
        check(q[1].WhichOneof("message_response") == "file_descriptor_response",
              "a later request on the same open stream is answered")
        check(list(it) == [], "the stream ends OK once the client half-closes")
    finally:
        h.close()
    return finish("test_grpc_reflection")


if __name__ == "__main__":
    sys.exit(main())
