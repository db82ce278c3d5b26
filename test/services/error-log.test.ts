/**
 * The services' error-log interceptor (src/services/errors.ts): an internal
 * error's cause is logged with the call's request id, the one the gateway
 * answered with (its context value), else the client's header; the client
 * sees only "internal error". Other errors are not logged.
 */
import { createClient, createRouterTransport, Code, ConnectError } from "@connectrpc/connect";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Health } from "../../src/gen/grpc/health/v1/health_pb.js";
import { kRequestId } from "../../src/schema/call-facts.js";
import { createErrorLogInterceptor, toConnectError } from "../../src/services/errors.js";
import { rejects } from "../../test-support/rpc.js";

const test = suite("error-log interceptor");

function client(logged: Record<string, unknown>[], failure: unknown) {
  const transport = createRouterTransport(
    (router) =>
      router.service(Health, {
        check: () => {
          // As the services do: anything but a store or Connect error becomes internal.
          throw toConnectError(failure, { singular: "thing" });
        },
      } as never),
    {
      router: {
        interceptors: [
          // The gateway's part: the id it answers with, as a context value (here from a test header).
          (next) => (req) => {
            const answered = req.header.get("x-test-answered-id");
            if (answered !== null) req.contextValues.set(kRequestId, answered);
            return next(req);
          },
          createErrorLogInterceptor({ error: (fields, message) => logged.push({ ...fields, message }) }),
        ],
      },
    },
  );
  return createClient(Health, transport);
}

test("an internal error is logged with the request id the gateway answered with, else the client's", async () => {
  const logged: Record<string, unknown>[] = [];
  const health = client(logged, new Error("boom"));
  await rejects(health.check({}, { headers: { "x-test-answered-id": "req_answered", "x-request-id": "client-sent" } }), Code.Internal, "internal error");
  await rejects(health.check({}, { headers: { "x-request-id": "client-sent" } }), Code.Internal, "internal error");
  await rejects(health.check({}), Code.Internal, "internal error");
  assert.equal(
    logged.map((l) => [l.message, l.rpc, l.requestId, (l.err as Error).message]),
    [
      ["rpc failed", "grpc.health.v1.Health/Check", "req_answered", "boom"],
      ["rpc failed", "grpc.health.v1.Health/Check", "client-sent", "boom"],
      ["rpc failed", "grpc.health.v1.Health/Check", undefined, "boom"],
    ],
  );
});

test("other errors are the client's: not logged", async () => {
  const logged: Record<string, unknown>[] = [];
  await rejects(client(logged, new ConnectError("no", Code.InvalidArgument)).check({}), Code.InvalidArgument, "no");
  assert.equal(logged, []);
});

test.run();
