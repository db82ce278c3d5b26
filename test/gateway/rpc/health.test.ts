/**
 * grpc.health.v1.Health over an in-process Connect transport: Check, List
 * and Watch, overall and per service, following a store check that the test
 * turns on and off (and makes hang), and shutdown.
 */
import { Code, createClient, createRouterTransport, type Client } from "@connectrpc/connect";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Health, HealthCheckResponse_ServingStatus as S } from "../../../src/gen/grpc/health/v1/health_pb.js";
import { createHealth, type HealthServer } from "../../../src/gateway/rpc/health.js";
import { rejects } from "../../../test-support/rpc.js";

const SERVED = ["erplink.admin.v1.SystemService", "erplink.authz.v1.AuthorizationService", "grpc.health.v1.Health"];

interface Ctx {
  store: "up" | "down" | "hang";
  pings: number;
  health: HealthServer;
  client: Client<typeof Health>;
}

const test = suite<Ctx>("gRPC health");

test.before.each((ctx) => {
  ctx.store = "up";
  ctx.pings = 0;
  ctx.health = createHealth({
    ready: () => {
      ctx.pings++;
      if (ctx.store === "up") return Promise.resolve();
      if (ctx.store === "down") return Promise.reject(new Error("store unavailable"));
      return new Promise<void>(() => {});
    },
    services: () => SERVED,
    independent: new Set(["grpc.health.v1.Health"]),
    watchIntervalMs: 20,
    checkTimeoutMs: 300,
  });
  ctx.client = createClient(Health, createRouterTransport((router) => router.service(Health, ctx.health.service)));
});

test.after.each((ctx) => {
  ctx.health.shutdown();
});

test("Check: overall and each served service SERVING while the store answers", async (ctx) => {
  for (const service of ["", ...SERVED]) {
    const res = await ctx.client.check({ service });
    assert.is(res.status, S.SERVING, service);
  }
});

test("Check: NOT_SERVING while the store check fails, overall and for services that need the store; health itself stays SERVING", async (ctx) => {
  ctx.store = "down";
  assert.is((await ctx.client.check({ service: "" })).status, S.NOT_SERVING);
  assert.is((await ctx.client.check({ service: "erplink.admin.v1.SystemService" })).status, S.NOT_SERVING);
  assert.is((await ctx.client.check({ service: "grpc.health.v1.Health" })).status, S.SERVING);
  ctx.store = "up";
  assert.is((await ctx.client.check({ service: "" })).status, S.SERVING, "recovers with the store");
});

test("Check: a store that does not answer is NOT_SERVING within the bound, not a hang", async (ctx) => {
  ctx.store = "hang";
  const started = Date.now();
  const res = await ctx.client.check({ service: "" });
  const ms = Date.now() - started;
  assert.is(res.status, S.NOT_SERVING);
  assert.ok(ms >= 250 && ms < 1500, `answered after ${ms} ms`);
});

test("Check: the wait fits the caller's deadline (answer, not DEADLINE_EXCEEDED)", async (ctx) => {
  ctx.store = "hang";
  const started = Date.now();
  const res = await ctx.client.check({ service: "" }, { timeoutMs: 1000 });
  assert.is(res.status, S.NOT_SERVING);
  assert.ok(Date.now() - started < 1000);
});

test("Check: concurrent checks share one store check", async (ctx) => {
  await Promise.all(Array.from({ length: 20 }, () => ctx.client.check({ service: "" })));
  assert.ok(ctx.pings <= 2, `pings: ${ctx.pings}`);
});

test("Check: an unknown service is NOT_FOUND (the protocol's answer)", async (ctx) => {
  await rejects(ctx.client.check({ service: "erplink.admin.v1.NoSuchService" }), Code.NotFound, "unknown service erplink.admin.v1.NoSuchService");
});

test("List: every served service and the overall status", async (ctx) => {
  ctx.store = "down";
  const res = await ctx.client.list({});
  const statuses = Object.fromEntries(Object.entries(res.statuses).map(([k, v]) => [k, S[v.status]]));
  assert.equal(statuses, {
    "": "NOT_SERVING",
    "erplink.admin.v1.SystemService": "NOT_SERVING",
    "erplink.authz.v1.AuthorizationService": "NOT_SERVING",
    "grpc.health.v1.Health": "SERVING",
  });
});

test("Watch: the current status at once, then each change (and nothing while it stays)", async (ctx) => {
  const controller = new AbortController();
  const seen: string[] = [];
  const stream = ctx.client.watch({ service: "erplink.admin.v1.SystemService" }, { signal: controller.signal });
  const it = stream[Symbol.asyncIterator]();
  seen.push(S[(await it.next()).value!.status]);
  ctx.store = "down";
  seen.push(S[(await it.next()).value!.status]);
  ctx.store = "up";
  seen.push(S[(await it.next()).value!.status]);
  assert.equal(seen, ["SERVING", "NOT_SERVING", "SERVING"]);
  assert.is(ctx.health.watchers(), 1);
  controller.abort();
  await it.return?.();
  // The server side notices the cancellation and forgets the watcher.
  for (let i = 0; i < 50 && ctx.health.watchers() > 0; i++) await new Promise((r) => setTimeout(r, 10));
  assert.is(ctx.health.watchers(), 0);
});

test("Watch: an unknown service gets SERVICE_UNKNOWN and the stream stays open", async (ctx) => {
  const controller = new AbortController();
  const it = ctx.client.watch({ service: "no.Such" }, { signal: controller.signal })[Symbol.asyncIterator]();
  assert.is((await it.next()).value!.status, S.SERVICE_UNKNOWN);
  const next = it.next();
  const outcome = await Promise.race([next.then(() => "message"), new Promise((r) => setTimeout(() => r("open"), 100))]);
  assert.is(outcome, "open");
  controller.abort();
  await next.catch(() => undefined);
});

test("shutdown: Watch streams get NOT_SERVING and end; Check answers NOT_SERVING from then on", async (ctx) => {
  const seen: string[] = [];
  const done = (async () => {
    for await (const res of ctx.client.watch({ service: "" })) seen.push(S[res.status]);
  })();
  for (let i = 0; i < 50 && ctx.health.watchers() === 0; i++) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 30));
  ctx.health.shutdown();
  await done;
  assert.equal(seen, ["SERVING", "NOT_SERVING"]);
  assert.is((await ctx.client.check({ service: "" })).status, S.NOT_SERVING);
  assert.is((await ctx.client.check({ service: "grpc.health.v1.Health" })).status, S.NOT_SERVING);
});

test("a Watch that arrives after shutdown gets NOT_SERVING and ends at once; nothing is left watching", async (ctx) => {
  ctx.health.shutdown();
  const seen: string[] = [];
  // A watcher added after shutdown has ended the others must still be ended.
  const done = (async () => {
    for await (const res of ctx.client.watch({ service: "" })) seen.push(S[res.status]);
    return "ended";
  })();
  const outcome = await Promise.race([done, new Promise((r) => setTimeout(() => r("open"), 500))]);
  assert.equal([outcome, seen, ctx.health.watchers()], ["ended", ["NOT_SERVING"], 0]);
});

test.run();
