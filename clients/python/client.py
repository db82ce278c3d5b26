"""Calls erplink with grpcio over HTTP/2 cleartext: Authorize (allowed, each
denial step, rate limited), systems with a bearer token, the BadRequest detail
of a validation error (grpcio-status), and the rate-limit metadata. Prints one
line per check (`ok - <name>` or `not ok - <name>: <why>`) and exits 1 if any
failed.

    ERPLINK_URL=http://localhost:8080 ERPLINK_TOKEN=... ERPLINK_DATA_KEY=... \
    ERPLINK_EXPIRED_KEY=... ERPLINK_LIMITED_KEY=... python clients/python/client.py

The generated modules are expected in clients/python/gen (see clients/README.md).
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "gen"))

import grpc  # noqa: E402
from grpc_status import rpc_status  # noqa: E402

from erplink.admin.v1 import system_pb2, system_pb2_grpc  # noqa: E402
from erplink.authz.v1 import authorization_pb2, authorization_pb2_grpc  # noqa: E402
from erplink.errors.v1 import bad_request_pb2  # noqa: E402

# What ERPLINK_DATA_KEY must be granted: `get` on this entity set, and nothing else.
INSTANCE = "s4-prod"
SERVICE = "API_BUSINESS_PARTNER"
ENTITY = "A_BusinessPartner"

Op = authorization_pb2.Operation
Step = authorization_pb2.DenialStep


class Failed(Exception):
    """A check's expectation was not met."""


class Report:
    """One line per check; the exit code says whether any failed."""

    def __init__(self):
        self.checks = 0
        self.failed = 0

    def check(self, name, fn):
        self.checks += 1
        try:
            fn()
        except Exception as err:  # a check fails on anything, and the others still run
            self.failed += 1
            why = " ".join(f"{type(err).__name__}: {err}".split())
            print(f"not ok - {name}: {why}", flush=True)
        else:
            print(f"ok - {name}", flush=True)

    def done(self):
        print(f"done: {self.checks} checks, {self.failed} failed", flush=True)
        return 1 if self.failed else 0


def env(name, default=None):
    value = os.environ.get(name) or default
    if value is None:
        sys.exit(f"client.py: set {name} (see clients/README.md)")
    return value


def rate_limit_fields(metadata):
    """Reads and checks the admin rate-limit fields of a call's metadata."""
    md = dict(metadata)
    try:
        limit = int(md["x-ratelimit-limit"])
        remaining = int(md["x-ratelimit-remaining"])
        reset = int(md["x-ratelimit-reset"])
        policy = md["ratelimit-policy"]
    except (KeyError, ValueError) as err:
        raise Failed(f"rate-limit metadata missing or malformed ({err!r}) in {sorted(md)}") from None
    if not 0 <= remaining < limit:
        raise Failed(f"limit {limit}, remaining {remaining}: want 0 <= remaining < limit")
    if not time.time() - 1 <= reset <= time.time() + 86400:
        raise Failed(f"reset {reset} is not within the next day")
    if '"minute";q=' not in policy or '"day";q=' not in policy:
        raise Failed(f"ratelimit-policy {policy!r} names no minute and day windows")
    return remaining, reset


def main():
    url = env("ERPLINK_URL", "http://localhost:8080").rstrip("/")
    target = url.removeprefix("http://").removeprefix("https://")
    token = env("ERPLINK_TOKEN")
    data_key = env("ERPLINK_DATA_KEY")
    expired_key = env("ERPLINK_EXPIRED_KEY")
    limited_key = env("ERPLINK_LIMITED_KEY")
    name = env("ERPLINK_CLIENT_NAME", "python-client")

    report = Report()
    # erplink serves gRPC in cleartext; put TLS in front and use
    # grpc.secure_channel in production.
    channel = grpc.insecure_channel(target)
    authz = authorization_pb2_grpc.AuthorizationServiceStub(channel)
    systems = system_pb2_grpc.SystemServiceStub(channel)
    # The admin services take the bearer token in the `authorization` metadata.
    admin = [("authorization", f"Bearer {token}")]

    def request(key=data_key, instance=INSTANCE, service=SERVICE, entity=ENTITY, operation=Op.OPERATION_GET):
        return authorization_pb2.AuthorizeRequest(
            api_key=key, instance=instance, service=service, entity=entity, operation=operation
        )

    def expect_allowed():
        res = authz.Authorize(request(), timeout=10)
        if not res.allowed:
            raise Failed(f"denied ({Step.Name(res.denial_step)}: {res.message}), want allowed")
        if not res.key_id.startswith("key_"):
            raise Failed(f"key_id {res.key_id!r}, want key_...")
        rl = res.rate_limit
        if not (rl.limit > 0 and rl.remaining < rl.limit and len(rl.windows) == 2):
            raise Failed(f"rate_limit {rl}, want limit > remaining and two windows")

    def expect_denied(req, step, code):
        def check():
            res = authz.Authorize(req, timeout=10)
            if res.allowed or res.denial_step != step or res.code != code or not res.message:
                raise Failed(
                    f"got allowed={res.allowed} {Step.Name(res.denial_step)} {res.code} {res.message!r},"
                    f" want {Step.Name(step)} {code}"
                )

        return check

    def expect_rate_limited():
        req = request(key=limited_key)
        first = authz.Authorize(req, timeout=10)
        second = authz.Authorize(req, timeout=10)
        if not first.allowed:
            raise Failed(f"first call denied ({Step.Name(first.denial_step)}: {first.message}), want allowed")
        if second.allowed or second.denial_step != Step.DENIAL_STEP_RATE_LIMITED or second.code != "RATE_LIMITED":
            raise Failed(f"second call: allowed={second.allowed} {Step.Name(second.denial_step)} {second.code}")
        rl = second.rate_limit
        if rl.remaining != 0 or rl.retry_after.ToTimedelta().total_seconds() <= 0:
            raise Failed(f"rate_limit {rl}, want remaining 0 and a retry_after")

    def expect_code(fn, code):
        try:
            fn()
        except grpc.RpcError as err:
            if err.code() != code:
                raise Failed(f"got {err.code()} {err.details()!r}, want {code}") from None
            return err
        raise Failed(f"succeeded, want {code}")

    report.check("authorize allowed", expect_allowed)
    report.check(
        "authorize denied: key invalid",
        expect_denied(request(key="erpl_not_a_key"), Step.DENIAL_STEP_KEY_INVALID, "UNAUTHORIZED"),
    )
    report.check(
        "authorize denied: key expired",
        expect_denied(request(key=expired_key), Step.DENIAL_STEP_KEY_EXPIRED, "UNAUTHORIZED"),
    )
    report.check(
        "authorize denied: instance",
        expect_denied(request(instance="s4-dev"), Step.DENIAL_STEP_INSTANCE, "FORBIDDEN"),
    )
    report.check(
        "authorize denied: service",
        expect_denied(request(service="API_SALES_ORDER_SRV"), Step.DENIAL_STEP_SERVICE, "FORBIDDEN"),
    )
    report.check(
        "authorize denied: entity",
        expect_denied(request(entity="A_Customer"), Step.DENIAL_STEP_ENTITY, "FORBIDDEN"),
    )
    report.check(
        "authorize denied: operation",
        expect_denied(request(operation=Op.OPERATION_DELETE), Step.DENIAL_STEP_OPERATION, "FORBIDDEN"),
    )
    report.check("authorize denied: rate limited", expect_rate_limited)
    report.check(
        "authorize invalid request",
        lambda: expect_code(
            lambda: authz.Authorize(authorization_pb2.AuthorizeRequest(api_key=data_key), timeout=10),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
    )
    report.check(
        "unknown method is unimplemented",
        lambda: expect_code(
            # A method erplink does not serve (an older or newer client): gRPC status 12.
            lambda: channel.unary_unary(
                "/erplink.authz.v1.AuthorizationService/NoSuchMethod",
                request_serializer=authorization_pb2.AuthorizeRequest.SerializeToString,
                response_deserializer=authorization_pb2.AuthorizeResponse.FromString,
            )(authorization_pb2.AuthorizeRequest(), timeout=10),
            grpc.StatusCode.UNIMPLEMENTED,
        ),
    )
    report.check(
        "admin call without token is unauthenticated",
        lambda: expect_code(
            lambda: systems.ListSystems(system_pb2.ListSystemsRequest(), timeout=10),
            grpc.StatusCode.UNAUTHENTICATED,
        ),
    )

    created = {}

    def create_system():
        system = system_pb2.System(name=f"{name}-{time.time_ns()}", description="created by clients/python/client.py")
        res = systems.CreateSystem(system_pb2.CreateSystemRequest(system=system), metadata=admin, timeout=10)
        if not res.system.id.startswith("sys_") or not res.system.HasField("created_at"):
            raise Failed(f"got {res.system}, want an id sys_... and created_at")
        created["system"] = res.system

    def list_systems():
        if "system" not in created:
            raise Failed("no system was created")
        want = created["system"]
        page_token = ""
        while True:
            res = systems.ListSystems(
                system_pb2.ListSystemsRequest(page_size=100, page_token=page_token), metadata=admin, timeout=10
            )
            if any(s.id == want.id and s.name == want.name for s in res.systems):
                return
            page_token = res.next_page_token
            if not page_token:
                raise Failed(f"{want.id} is not listed")

    def validation_error():
        err = expect_code(
            lambda: systems.CreateSystem(
                system_pb2.CreateSystemRequest(system=system_pb2.System(name="")), metadata=admin, timeout=10
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
        )
        # grpcio-status decodes the google.rpc.Status of the trailer
        # grpc-status-details-bin; its details are Any messages.
        status = rpc_status.from_call(err)
        if status is None:
            raise Failed("no grpc-status-details-bin trailer")
        for detail in status.details:
            if detail.Is(bad_request_pb2.BadRequest.DESCRIPTOR):
                bad_request = bad_request_pb2.BadRequest()
                detail.Unpack(bad_request)
                if any(v.field == "name" and v.description == "is required" for v in bad_request.field_violations):
                    return
                raise Failed(f"BadRequest {bad_request} has no violation name: is required")
        raise Failed(f"no BadRequest among the details {[d.type_url for d in status.details]}")

    def rate_limit_metadata():
        seen = []
        for _ in range(2):
            _, call = systems.ListSystems.with_call(
                system_pb2.ListSystemsRequest(page_size=1), metadata=admin, timeout=10
            )
            seen.append(rate_limit_fields(call.initial_metadata()))
        (first, reset1), (second, reset2) = seen
        # Each call takes one from the budget (unless a window rolled over between them).
        if reset1 == reset2 and second != first - 1:
            raise Failed(f"remaining {first} then {second}, want one less")

    def rate_limit_metadata_on_error():
        err = expect_code(
            lambda: systems.GetSystem(
                system_pb2.GetSystemRequest(id="sys_00000000000000000000000000"), metadata=admin, timeout=10
            ),
            grpc.StatusCode.NOT_FOUND,
        )
        # An error without a message is "trailers-only": the fields arrive as trailers.
        rate_limit_fields([*(err.initial_metadata() or []), *(err.trailing_metadata() or [])])

    report.check("create system", create_system)
    report.check("list systems", list_systems)
    report.check("validation error carries a BadRequest detail", validation_error)
    report.check("rate-limit metadata", rate_limit_metadata)
    report.check("rate-limit metadata on an error", rate_limit_metadata_on_error)
    channel.close()
    return report.done()


if __name__ == "__main__":
    sys.exit(main())
