#!/usr/bin/python3
"""halleyd's errors as a stock gRPC client (Python grpcio, rpc/halley.proto
only) sees them: who is unauthenticated and who is merely not allowed, the
bearer scheme per RFC 7235, every compare-and-set precondition naming its own
field, and the standard google.rpc.Status (BadRequest) in
grpc-status-details-bin whenever a field is known.

usage: test_grpc_errors.py <build dir> <source dir>
"""
import sys

import grpc

from stockclient import (TOKEN, WORKER_TOKEN, Halley, check, finish, rpc_error,
                         status_details, trailer)


def field_of(e):
    """The field as both trailers name it; checks that they agree."""
    st, viol = status_details(e)
    orr = trailer(e, "orr-field")
    check(st is not None, "%s: grpc-status-details-bin is sent" % orr)
    if st is None:
        return orr
    check(st.code == e.code().value[0], "%s: Status.code equals the gRPC status" % orr)
    check(st.message == e.details(), "%s: Status.message equals the status message" % orr)
    check(len(viol) == 1, "%s: one FieldViolation" % orr)
    if len(viol) != 1:
        return orr
    check(viol[0].field == orr, "FieldViolation.field %r equals orr-field %r" %
          (viol[0].field, orr))
    check(viol[0].description != "", "%s: FieldViolation has a description" % orr)
    return viol[0].field


def test_bearer_scheme(h):
    health = h.method("Health", token=None)
    good = ["Bearer " + TOKEN, "bearer " + TOKEN, "BEARER " + TOKEN, "BeArEr " + TOKEN,
            "Bearer    " + TOKEN, "bearer  " + TOKEN + "  "]
    for v in good:
        r = health(metadata=(("authorization", v),))
        check(r.db_ok, "authorization %r is accepted" % v)
    bad = ["Bearer" + TOKEN, "Bearer", "Bearer ", "Basic " + TOKEN,
           TOKEN, "Bearer " + TOKEN + "x", "Bearer x" + TOKEN, "bearers " + TOKEN]
    for v in bad:
        e = rpc_error(health, metadata=(("authorization", v),))
        check(e.code() == grpc.StatusCode.UNAUTHENTICATED, "authorization %r: UNAUTHENTICATED"
              % v)
    e = rpc_error(health, metadata=None)
    check(e.code() == grpc.StatusCode.UNAUTHENTICATED, "no authorization: UNAUTHENTICATED")
    check(field_of(e) == "authorization", "the refusal names authorization")


def test_worker_auth(h):
    pb = h.pb
    put = h.method("PutDataSource")
    put(pb.PutDataSourceRequest(name="wh", kind="postgresql", params_json='{"host":"x"}',
                                secret="s3cret", actor="test"))
    secret = h.method("GetDataSourceSecret", token=None)
    req = pb.GetDataSourceSecretRequest(name="wh")
    unidentified = [None, "Bearer garbage", "bearer garbage", "Basic " + WORKER_TOKEN,
                    "Bearer", WORKER_TOKEN]
    for v in unidentified:
        md = (("authorization", v),) if v is not None else None
        e = rpc_error(secret, req, metadata=md)
        check(e.code() == grpc.StatusCode.UNAUTHENTICATED,
              "GetDataSourceSecret with %r: UNAUTHENTICATED (got %s)" % (v, e.code()))
        check(field_of(e) == "authorization", "... and names authorization")
    e = rpc_error(secret, req, metadata=(("authorization", "Bearer " + TOKEN),))
    check(e.code() == grpc.StatusCode.PERMISSION_DENIED,
          "GetDataSourceSecret with the service token: PERMISSION_DENIED (got %s)" % e.code())
    for v in ["Bearer " + WORKER_TOKEN, "bearer   " + WORKER_TOKEN]:
        r = secret(req, metadata=(("authorization", v),))
        check(r.secret == "s3cret", "GetDataSourceSecret with %r reads the secret" % v)
    e = rpc_error(secret, pb.GetDataSourceSecretRequest(name="nope"),
                  metadata=(("authorization", "Bearer " + WORKER_TOKEN),))
    check(e.code() == grpc.StatusCode.NOT_FOUND, "the worker reaches the handler: NOT_FOUND")
    # every method the runtime guards answers UNAUTHENTICATED the same way
    for name in ["GetTask", "ListAudit", "TransitionInstance", "PutWatermark"]:
        e = rpc_error(h.method(name, token="garbage"))
        check(e.code() == grpc.StatusCode.UNAUTHENTICATED, "%s with garbage: UNAUTHENTICATED"
              % name)


def make_instance(h, name):
    pb = h.pb
    spec = ('{"name":"%s","team":"errs","type":"shell","schedule":"0 * * * *",'
            '"config":{"command":"echo hi"}}' % name)
    t = h.method("CreateTask")(pb.CreateTaskRequest(spec_json=spec, actor="test"))
    r = h.method("CreateInstances")(pb.CreateInstancesRequest(instances=[
        pb.CreateInstance(task_id=t.id, schedule_time_ms=1700000000000, actor="test")]))
    return t, r.results[0].instance


def test_cas_fields(h):
    pb = h.pb
    h.method("CreateTeam")(pb.CreateTeamRequest(name="errs", actor="test"))
    t, inst = make_instance(h, "cas_task")
    tr = h.method("TransitionInstance")
    S = pb.InstanceState
    # waiting -> ready at attempt inst.attempt succeeds
    tr(pb.TransitionRequest(instance_id=inst.id, expected_state=S.Value("INSTANCE_STATE_WAITING"),
                            new_state=S.Value("INSTANCE_STATE_READY"), actor="test",
                            expected_attempt=inst.attempt))
    # state right, attempt wrong -> expected_attempt
    e = rpc_error(tr, pb.TransitionRequest(
        instance_id=inst.id, expected_state=S.Value("INSTANCE_STATE_READY"),
        new_state=S.Value("INSTANCE_STATE_SUSPENDED"), actor="test",
        expected_attempt=inst.attempt + 7))
    check(e.code() == grpc.StatusCode.ABORTED, "attempt mismatch: ABORTED")
    check(field_of(e) == "expected_attempt", "attempt mismatch names expected_attempt")
    # state wrong, attempt right -> expected_state
    e = rpc_error(tr, pb.TransitionRequest(
        instance_id=inst.id, expected_state=S.Value("INSTANCE_STATE_WAITING"),
        new_state=S.Value("INSTANCE_STATE_SUSPENDED"), actor="test",
        expected_attempt=inst.attempt))
    check(e.code() == grpc.StatusCode.ABORTED, "state mismatch: ABORTED")
    check(field_of(e) == "expected_state", "state mismatch names expected_state")
    # the batch form says the same per item
    r = h.method("TransitionInstances")(pb.TransitionBatchRequest(items=[
        pb.TransitionRequest(instance_id=inst.id, expected_state=S.Value("INSTANCE_STATE_READY"),
                             new_state=S.Value("INSTANCE_STATE_SUSPENDED"), actor="test",
                             expected_attempt=inst.attempt + 1),
        pb.TransitionRequest(instance_id=inst.id,
                             expected_state=S.Value("INSTANCE_STATE_RUNNING"),
                             new_state=S.Value("INSTANCE_STATE_SUCCESS"), actor="test")]))
    check(r.results[0].code == grpc.StatusCode.ABORTED.value[0] and
          r.results[0].field == "expected_attempt", "batch item: expected_attempt")
    check(r.results[1].code == grpc.StatusCode.ABORTED.value[0] and
          r.results[1].field == "expected_state", "batch item: expected_state")
    # task version
    e = rpc_error(h.method("UpdateTask"), pb.UpdateTaskRequest(
        id=t.id, spec_json=t.spec_json, actor="test", expected_version=t.version + 3))
    check(e.code() == grpc.StatusCode.ABORTED, "version mismatch: ABORTED")
    check(field_of(e) == "expected_version", "version mismatch names expected_version")
    # watermark
    pw = h.method("PutWatermark")
    pw(pb.PutWatermarkRequest(task_id=t.id, name="public.t.updated_at", value="1"))
    e = rpc_error(pw, pb.PutWatermarkRequest(task_id=t.id, name="public.t.updated_at",
                                             expected="0", value="2"))
    check(e.code() == grpc.StatusCode.ABORTED, "watermark moved: ABORTED")
    check(field_of(e) == "expected", "watermark mismatch names expected")


def test_status_details(h):
    pb = h.pb
    # a field-less error carries no BadRequest
    e = rpc_error(h.channel.unary_unary("/orrery.halley.v1.Halley/NoSuchMethod",
                                        request_serializer=lambda m: b"",
                                        response_deserializer=lambda b: b),
                  b"", metadata=(("authorization", "Bearer " + TOKEN),), timeout=10)
    check(e.code() == grpc.StatusCode.UNIMPLEMENTED, "unknown method: UNIMPLEMENTED")
    check(trailer(e, "grpc-status-details-bin") is None, "no field: no status details")
    # input errors of several shapes, each naming its field both ways
    cases = [
        ("GetTask", pb.GetTaskRequest(id=-1), grpc.StatusCode.INVALID_ARGUMENT),
        ("CreateTask", pb.CreateTaskRequest(spec_json="{", actor="t"),
         grpc.StatusCode.INVALID_ARGUMENT),
        ("GetInstance", pb.GetInstanceRequest(id=987654321), grpc.StatusCode.NOT_FOUND),
        ("CreateTeam", pb.CreateTeamRequest(name="errs", actor="t"),
         grpc.StatusCode.ALREADY_EXISTS),
    ]
    for name, req, code in cases:
        e = rpc_error(h.method(name), req)
        check(e.code() == code, "%s: %s (got %s)" % (name, code, e.code()))
        f = field_of(e)
        check(bool(f), "%s names a field (%r)" % (name, f))
    # undecodable bytes name the request
    raw = h.channel.unary_unary("/orrery.halley.v1.Halley/GetTask",
                                request_serializer=lambda b: b,
                                response_deserializer=lambda b: b)
    e = rpc_error(raw, b"\xff\xff\xff", metadata=(("authorization", "Bearer " + TOKEN),),
                  timeout=10)
    check(e.code() == grpc.StatusCode.INVALID_ARGUMENT, "bad bytes: INVALID_ARGUMENT")
    check(field_of(e) == "request", "bad bytes name request")


def main():
    h = Halley(sys.argv[1], sys.argv[2])
    try:
        test_bearer_scheme(h)
        test_worker_auth(h)
        test_cas_fields(h)
        test_status_details(h)
    finally:
        h.close()
    return finish("test_grpc_errors")


if __name__ == "__main__":
    sys.exit(main())
