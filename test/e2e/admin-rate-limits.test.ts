/**
 * Admin rate limits end to end over a real port (ERPLINK_ADMIN_RATE_PER_MINUTE=5):
 * gRPC callers of the admin services (connect-node over h2c) are counted and
 * refused like REST callers, with the rate-limit headers in their response
 * headers or error metadata, and REST and gRPC share the master key's budget.
 * Each test starts its own erplink and waits out a UTC minute boundary first.
 */
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { Http2SessionManager, createGrpcTransport } from "@connectrpc/connect-node";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { SystemService } from "../../src/gen/erplink/admin/v1/system_pb.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";

const POLICY = `"minute";q=5;w=60, "day";q=10000;w=86400`;

interface Ctx {
  server: RunningErplink;
  sessions: Http2SessionManager;
  grpc: Client<typeof SystemService>;
}

/** Waits until at least 3 s remain in the current UTC minute; returns the minute's end in Unix seconds. */
async function awayFromMinuteBoundary(): Promise<number> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 3_000) await new Promise((r) => setTimeout(r, left + 50));
  return Math.ceil(Date.now() / 60_000) * 60;
}

/** Awaits a Connect call that must fail, and returns its ConnectError. */
async function connectError(promise: Promise<unknown>): Promise<ConnectError> {
  try {
    await promise;
  } catch (err) {
    assert.instance(err, ConnectError);
    return err as ConnectError;
  }
  throw new Error("expected the call to fail");
}

/** The rate-limit headers of a Headers object. */
function rateHeaders(h: Headers): Record<string, string | null> {
  return {
    limit: h.get("x-ratelimit-limit"),
    remaining: h.get("x-ratelimit-remaining"),
    reset: h.get("x-ratelimit-reset"),
    policy: h.get("ratelimit-policy"),
  };
}

const E2E = suite<Ctx>("e2e: admin rate limits over gRPC and REST");

E2E.before.each(async (ctx) => {
  ctx.server = await startErplink({ ERPLINK_ADMIN_RATE_PER_MINUTE: "5" });
  ctx.sessions = new Http2SessionManager(ctx.server.baseUrl);
  ctx.grpc = createClient(SystemService, createGrpcTransport({ baseUrl: ctx.server.baseUrl, sessionManager: ctx.sessions }));
});
E2E.after.each(async (ctx) => {
  ctx.sessions?.abort();
  await ctx.server?.close();
});

E2E("gRPC: 5 ListSystems pass with x-ratelimit-* response headers; the 6th is RESOURCE_EXHAUSTED with retry-after in its metadata", async (ctx) => {
  const minuteEnd = await awayFromMinuteBoundary();
  const auth = { authorization: ctx.server.authorization };
  for (let i = 1; i <= 5; i++) {
    let headers: Headers | undefined;
    await ctx.grpc.listSystems({}, { headers: auth, onHeader: (h) => (headers = h) });
    assert.ok(headers, `call ${i}: response headers`);
    assert.equal(
      rateHeaders(headers!),
      { limit: "5", remaining: String(5 - i), reset: String(minuteEnd), policy: POLICY },
      `call ${i}`,
    );
    const t = Number(/^"minute";r=(\d+);t=(\d+), "day";r=(\d+);t=\d+$/.exec(headers!.get("ratelimit") ?? "")?.[2]);
    assert.ok(t >= 1 && t <= 60, `call ${i}: ratelimit ${headers!.get("ratelimit")}`);
  }

  const err = await connectError(ctx.grpc.listSystems({}, { headers: auth }));
  assert.is(err.code, Code.ResourceExhausted);
  assert.is(err.rawMessage, `admin rate limit exceeded; retry in ${err.metadata.get("retry-after")} s`);
  const retryAfter = Number(err.metadata.get("retry-after"));
  const expected = minuteEnd - Date.now() / 1000;
  assert.ok(retryAfter >= 1 && retryAfter <= 60 && Math.abs(retryAfter - expected) <= 2, `retry-after ${retryAfter}, expected ~${expected}`);
  assert.is(err.metadata.get("x-ratelimit-remaining"), "0");
  assert.is(err.metadata.get("x-ratelimit-limit"), "5");
  assert.is(err.metadata.get("x-ratelimit-reset"), String(minuteEnd));
  assert.is(err.metadata.get("ratelimit-policy"), POLICY);
  assert.match(err.metadata.get("ratelimit") ?? "", /^"minute";r=0;t=\d+, "day";r=9995;t=\d+$/);
});

E2E("gRPC: errors after admission carry the headers and count; unauthenticated calls carry none and count nothing", async (ctx) => {
  const minuteEnd = await awayFromMinuteBoundary();
  const auth = { authorization: ctx.server.authorization };

  for (let i = 0; i < 3; i++) {
    const unauth = await connectError(ctx.grpc.listSystems({}, { headers: { authorization: "Bearer nope" } }));
    assert.is(unauth.code, Code.Unauthenticated);
    assert.is(unauth.metadata.get("x-ratelimit-remaining"), null);
    assert.is(unauth.metadata.get("retry-after"), null);
  }

  const missing = await connectError(ctx.grpc.getSystem({ id: "sys_00000000000000000000000000" }, { headers: auth }));
  assert.is(missing.code, Code.NotFound);
  assert.equal(
    { limit: missing.metadata.get("x-ratelimit-limit"), remaining: missing.metadata.get("x-ratelimit-remaining"), reset: missing.metadata.get("x-ratelimit-reset") },
    { limit: "5", remaining: "4", reset: String(minuteEnd) },
  );
  assert.is(missing.metadata.get("retry-after"), null);

  let headers: Headers | undefined;
  await ctx.grpc.listSystems({}, { headers: auth, onHeader: (h) => (headers = h) });
  assert.is(headers?.get("x-ratelimit-remaining"), "3");
});

E2E("REST and gRPC share the master key's budget", async (ctx) => {
  const minuteEnd = await awayFromMinuteBoundary();
  const { baseUrl, authorization } = ctx.server;
  const rest = () => fetch(`${baseUrl}/admin/systems`, { headers: { authorization } });
  const auth = { authorization };

  const r1 = await rest();
  assert.is(r1.status, 200);
  assert.equal(rateHeaders(r1.headers), { limit: "5", remaining: "4", reset: String(minuteEnd), policy: POLICY });
  await r1.body?.cancel();

  let headers: Headers | undefined;
  await ctx.grpc.listSystems({}, { headers: auth, onHeader: (h) => (headers = h) });
  assert.is(headers?.get("x-ratelimit-remaining"), "3", "gRPC continues where REST left off");

  const r2 = await rest();
  assert.is(r2.headers.get("x-ratelimit-remaining"), "2", "REST continues where gRPC left off");
  await r2.body?.cancel();

  await ctx.grpc.listSystems({}, { headers: auth, onHeader: (h) => (headers = h) });
  assert.is(headers?.get("x-ratelimit-remaining"), "1");
  await ctx.grpc.listSystems({}, { headers: auth, onHeader: (h) => (headers = h) });
  assert.is(headers?.get("x-ratelimit-remaining"), "0");

  const refusedRest = await rest();
  assert.is(refusedRest.status, 429);
  const body = (await refusedRest.json()) as { error: { code: string; message: string } };
  assert.is(body.error.code, "RATE_LIMITED");
  assert.is(refusedRest.headers.get("x-ratelimit-remaining"), "0");
  const retryAfter = refusedRest.headers.get("retry-after");
  assert.ok(retryAfter !== null && Number(retryAfter) >= 1 && Number(retryAfter) <= 60, `retry-after ${retryAfter}`);
  assert.is(body.error.message, `admin rate limit exceeded; retry in ${retryAfter} s`);

  const refusedGrpc = await connectError(ctx.grpc.listSystems({}, { headers: auth }));
  assert.is(refusedGrpc.code, Code.ResourceExhausted);
  assert.is(refusedGrpc.metadata.get("x-ratelimit-remaining"), "0");
});

E2E.run();
