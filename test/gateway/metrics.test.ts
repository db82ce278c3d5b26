/**
 * The gateway's side of the metrics (src/gateway/metrics.ts): route
 * patterns classified into route classes (never a path a client chose),
 * and the RPC interceptor's codes for unary and streaming calls, ended
 * normally, by an error, or by the client leaving.
 */
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { classifyRoute, createRpcMetricsInterceptor } from "../../src/gateway/metrics.js";

const Routes = suite("gateway metrics: route classes");

const CASES: [string | undefined, string, string][] = [
  [undefined, "unrouted", ""],
  ["/admin/systems", "admin", ""],
  ["/admin/systems/:id/instances", "admin", ""],
  ["/odata/:instance/:service/*", "data", ""],
  ["/odata/:instance/:service", "data", ""],
  ["/healthz", "health", ""],
  ["/readyz", "health", ""],
  ["/metrics", "metrics", ""],
  ["/dashboard/*", "dashboard", ""],
  ["/api-reference/openapi.json", "api_reference", ""],
  ["/erplink.admin.v1.SystemService/ListSystems", "rpc", "erplink.admin.v1.SystemService"],
  ["/grpc.health.v1.Health/Check", "rpc", "grpc.health.v1.Health"],
  // A parameter or wildcard is not a registered RPC: its path could be anything.
  ["/:service/:method", "other", ""],
  ["/*", "other", ""],
  ["/erplink.admin.v1.SystemService/*", "other", ""],
  ["/NoPackage/Method", "other", ""],
  ["/administrator", "other", ""],
];

for (const [pattern, route, service] of CASES) {
  Routes(`${pattern ?? "(no route)"} -> ${route}${service ? ` ${service}` : ""}`, () => {
    assert.equal(classifyRoute(pattern), { route, service });
  });
}

Routes.run();

const Rpc = suite("gateway metrics: RPC interceptor");

type Seen = [string, string, string];

function intercept(next: (req: unknown) => Promise<unknown>): { run: () => Promise<unknown>; seen: Seen[] } {
  const seen: Seen[] = [];
  const interceptor: Interceptor = createRpcMetricsInterceptor({
    call: (service, method, code, seconds) => {
      assert.ok(seconds >= 0 && seconds < 5);
      seen.push([service, method, code]);
    },
  });
  const req = { service: { typeName: "pkg.v1.Svc" }, method: { name: "Do" } };
  const handler = interceptor(next as never);
  return { run: () => handler(req as never) as Promise<unknown>, seen };
}

async function* messages(n: number, fail?: Error): AsyncGenerator<number> {
  for (let i = 0; i < n; i++) yield i;
  if (fail) throw fail;
}

Rpc("unary: ok, or the error's code (an unknown error is unknown)", async () => {
  const ok = intercept(async () => ({ stream: false, message: {} }));
  await ok.run();
  assert.equal(ok.seen, [["pkg.v1.Svc", "Do", "ok"]]);
  for (const [err, code] of [
    [new ConnectError("no", Code.PermissionDenied), "permission_denied"],
    [new ConnectError("slow", Code.DeadlineExceeded), "deadline_exceeded"],
    [new ConnectError("gone", Code.Unauthenticated), "unauthenticated"],
    [new Error("boom"), "unknown"],
  ] as const) {
    const failing = intercept(async () => {
      throw err;
    });
    await failing.run().then(
      () => assert.unreachable(),
      (thrown: unknown) => assert.is(thrown, err),
    );
    assert.equal(failing.seen, [["pkg.v1.Svc", "Do", code]]);
  }
});

Rpc("streaming: counted when the stream ends: ok, the error's code, or canceled when the client leaves", async () => {
  const ok = intercept(async () => ({ stream: true, message: messages(3) }));
  const res = (await ok.run()) as { message: AsyncIterable<number> };
  assert.equal(ok.seen, [], "not before the stream ends");
  const got: number[] = [];
  for await (const m of res.message) got.push(m);
  assert.equal(got, [0, 1, 2]);
  assert.equal(ok.seen, [["pkg.v1.Svc", "Do", "ok"]]);

  const failing = intercept(async () => ({ stream: true, message: messages(1, new ConnectError("down", Code.Unavailable)) }));
  const failed = (await failing.run()) as { message: AsyncIterable<number> };
  await (async () => {
    for await (const _ of failed.message);
  })().then(
    () => assert.unreachable(),
    (err: unknown) => assert.is(ConnectError.from(err).code, Code.Unavailable),
  );
  assert.equal(failing.seen, [["pkg.v1.Svc", "Do", "unavailable"]]);

  const left = intercept(async () => ({ stream: true, message: messages(10) }));
  const leaving = (await left.run()) as { message: AsyncIterable<number> };
  for await (const m of leaving.message) if (m === 1) break;
  assert.equal(left.seen, [["pkg.v1.Svc", "Do", "canceled"]]);
});

Rpc.run();
