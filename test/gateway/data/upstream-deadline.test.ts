/**
 * The upstream deadline covers the whole exchange, waiting for a connection
 * included: requests to a back end that hangs get 504 within a tenth of the
 * configured timeout however many of them wait, a healthy service of the
 * same instance keeps answering meanwhile, and beyond the waiting room a
 * request is refused at once with 503 and `Retry-After`. A client that stops
 * reading its answer does not hold the back end's connection beyond the
 * timeout either.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import net, { type Socket } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { V4_METADATA } from "../../../test-support/odata/fixtures.js";
import { AUTH, createWorld, type World } from "../../../test-support/world.js";
import { json, post } from "../../../test-support/http.js";

const TIMEOUT_MS = 3_000;

interface Ctx {
  upstream: http.Server;
  sockets: Set<Socket>;
  world: World;
  key: string;
}

const Deadline = suite<Ctx>("upstream deadline");

/** A back end whose service `slow` never answers its entity requests, and `fast` answers at once. */
async function start(ctx: Ctx, connections?: number, instanceConnections?: number): Promise<void> {
  ctx.sockets = new Set();
  ctx.upstream = http.createServer((req, res) => {
    if (req.url?.endsWith("/$metadata")) {
      res.writeHead(200, { "content-type": "application/xml" }).end(V4_METADATA);
      return;
    }
    if (req.url?.startsWith("/odata/slow/")) return; // hangs
    // Its headers after two thirds of the timeout, then nothing.
    if (req.url?.startsWith("/odata/late/")) return void setTimeout(() => res.writeHead(200, { "content-type": "application/json" }).flushHeaders(), (TIMEOUT_MS * 2) / 3);
    res.writeHead(200, { "content-type": "application/json;odata.metadata=minimal", "odata-version": "4.0" }).end('{"value":[]}');
  });
  ctx.upstream.on("connection", (s: Socket) => {
    ctx.sockets.add(s);
    s.on("close", () => ctx.sockets.delete(s));
  });
  await new Promise<void>((r) => ctx.upstream.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${(ctx.upstream.address() as AddressInfo).port}/odata/`;
  ctx.world = await createWorld({ upstreamTimeoutMs: TIMEOUT_MS, ...(connections !== undefined ? { upstreamConnections: connections } : {}) });
  const sys = json(await post(ctx.world.app, "/admin/systems", { name: "S4" })).data.id;
  const ins = await post(ctx.world.app, `/admin/systems/${sys}/instances`, {
    name: "prod",
    base_url: base,
    services: { SLOW: { path: "slow" }, FAST: { path: "fast" }, LATE: { path: "late" } },
    ...(instanceConnections !== undefined ? { upstream_connections: instanceConnections } : {}),
  });
  assert.is(ins.statusCode, 201);
  ctx.key = json(await post(ctx.world.app, "/admin/api-keys", { name: "app", permissions: { prod: { "*": { "*": ["list"] } } } })).data.key;
}

Deadline.after.each(async (ctx) => {
  await ctx.world.close();
  for (const s of ctx.sockets) s.destroy();
  await new Promise<void>((r) => ctx.upstream.close(() => r()));
});

async function timed(ctx: Ctx, service: string): Promise<{ status: number; ms: number; code: string | undefined; retryAfter: unknown }> {
  const t0 = performance.now();
  const res = await ctx.world.app.inject({ method: "GET", url: `/odata/prod/${service}/SalesOrders`, headers: { authorization: `Bearer ${ctx.key}` } });
  const code = res.statusCode >= 400 ? (json(res).error as { code: string }).code : undefined;
  return { status: res.statusCode, ms: performance.now() - t0, code, retryAfter: res.headers["retry-after"] };
}

Deadline("a hanging back end: every request gets 504 within a tenth of the timeout, waiting for a connection included; a healthy service of the instance answers meanwhile", async (ctx) => {
  await start(ctx);
  // Both services asked for once (their $metadata read, the slow one's request timed out).
  assert.is((await timed(ctx, "FAST")).status, 200);
  assert.is((await timed(ctx, "SLOW")).status, 504);
  // More hanging requests than the instance has connections (64).
  const burst = Array.from({ length: 100 }, () => timed(ctx, "SLOW"));
  const healthy: number[] = [];
  for (let i = 0; i < 5; i++) {
    const fast = await timed(ctx, "FAST");
    assert.is(fast.status, 200);
    healthy.push(fast.ms);
  }
  const slow = await Promise.all(burst);
  for (const s of slow) {
    assert.equal([s.status, s.code], [504, "GATEWAY_TIMEOUT"]);
    assert.ok(s.ms >= TIMEOUT_MS - 5 && s.ms <= TIMEOUT_MS * 1.1, `504 after ${Math.round(s.ms)} ms, timeout ${TIMEOUT_MS} ms`);
  }
  assert.ok(Math.max(...healthy) < TIMEOUT_MS / 3, `the healthy service answered in ${healthy.map(Math.round).join(", ")} ms while the other hung`);
});

async function waitingRoom(ctx: Ctx): Promise<void> {
  // Two connections: one in flight for a service once two were asked for, sixteen waiting.
  assert.is((await timed(ctx, "FAST")).status, 200);
  const answers = await Promise.all(Array.from({ length: 30 }, () => timed(ctx, "SLOW")));
  const refused = answers.filter((a) => a.status === 503);
  assert.is(refused.length, 30 - 1 - 16);
  for (const r of refused) {
    assert.equal([r.code, r.retryAfter], ["UNAVAILABLE", "1"]);
    assert.ok(r.ms < TIMEOUT_MS / 3, `refused after ${Math.round(r.ms)} ms`);
  }
  for (const a of answers.filter((a) => a.status !== 503)) assert.equal([a.status, a.code], [504, "GATEWAY_TIMEOUT"]);
}

Deadline("beyond the requests that may wait for the instance's connections (ERPLINK_UPSTREAM_CONNECTIONS), a request is refused at once with 503 and Retry-After", async (ctx) => {
  await start(ctx, 2);
  await waitingRoom(ctx);
});

Deadline("an instance's own upstream_connections bounds it instead of the process default", async (ctx) => {
  await start(ctx, undefined, 2);
  await waitingRoom(ctx);
});

Deadline("a back end that sends its headers late and then nothing: 504 in the envelope within a tenth of the timeout, counted from the start of the exchange, logged with that answer's bytes", async (ctx) => {
  await start(ctx);
  assert.is((await timed(ctx, "FAST")).status, 200);
  const t0 = performance.now();
  const answer = await ctx.world.app.inject({ method: "GET", url: "/odata/prod/LATE/SalesOrders", headers: { authorization: `Bearer ${ctx.key}`, "x-request-id": "late-1" } });
  const ms = performance.now() - t0;
  // Nothing of the back end's answer had passed: erplink's own, in the envelope.
  assert.is(answer.statusCode, 504);
  assert.equal(JSON.parse(answer.body), { error: { code: "GATEWAY_TIMEOUT", message: "the back end did not answer in time", requestId: "late-1" } });
  assert.ok(ms >= TIMEOUT_MS - 50 && ms <= TIMEOUT_MS * 1.1, `ended after ${Math.round(ms)} ms`);
  await ctx.world.layer.logWriter.flush();
  const res = await ctx.world.app.inject({ method: "GET", url: "/admin/logs?request_id=late-1", headers: AUTH });
  const [entry] = (JSON.parse(res.body) as { data: { status: number; error_code: string; upstream_status: number; response_bytes: string | number }[] }).data;
  assert.equal([entry?.status, entry?.error_code, entry?.upstream_status], [504, "GATEWAY_TIMEOUT", 200]);
  assert.is(Number(entry!.response_bytes), Buffer.byteLength(answer.body), "the bytes of the answer the client was sent");
});

Deadline("$metadata fetches take the instance's connections like data requests: a burst naming many unread services opens no more than the instance allows", async () => {
  let inProgress = 0;
  let most = 0;
  let fetched = 0;
  const sockets = new Set<Socket>();
  const upstream = http.createServer((req) => {
    // Every $metadata hangs: each holds its connection until erplink gives up on it.
    if (req.url?.endsWith("/$metadata")) {
      fetched++;
      inProgress++;
      most = Math.max(most, inProgress);
      req.socket.once("close", () => inProgress--);
    }
  });
  upstream.on("connection", (s: Socket) => sockets.add(s));
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
  const world = await createWorld({ upstreamTimeoutMs: 1_000 });
  try {
    const sys = json(await post(world.app, "/admin/systems", { name: "S4" })).data.id;
    const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/odata/`;
    const services = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`SVC${i}`, { path: `svc${i}` }]));
    assert.is((await post(world.app, `/admin/systems/${sys}/instances`, { name: "prod", base_url: base, services, upstream_connections: 2 })).statusCode, 201);
    const key = json(await post(world.app, "/admin/api-keys", { name: "app", permissions: { prod: { "*": { "*": ["list"] } } } })).data.key;
    const t0 = performance.now();
    const answers = await Promise.all(
      Object.keys(services).map((name) => world.app.inject({ method: "GET", url: `/odata/prod/${name}/SalesOrders`, headers: { authorization: `Bearer ${key}` } })),
    );
    const ms = performance.now() - t0;
    assert.ok(most <= 2, `at most the instance's 2 connections fetched $metadata at once, saw ${most}`);
    assert.ok(fetched >= 2 && fetched < 12, `${fetched} fetched: the others gave up waiting for a connection`);
    assert.ok(answers.every((a) => a.statusCode === 504), JSON.stringify(answers.map((a) => a.statusCode)));
    assert.ok(ms < 1_000 * 1.5, `all answered after ${Math.round(ms)} ms`);
  } finally {
    await world.close();
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => upstream.close(() => r()));
  }
});

Deadline("a client that stops reading a large answer: cut off after the timeout, the back end's connection freed, logged 499 with the bytes passed", async () => {
  const total = 32 * 2 ** 20;
  let upstreamClosed = 0;
  const upstream = http.createServer((req, res) => {
    if (req.url?.endsWith("/$metadata")) {
      res.writeHead(200, { "content-type": "application/xml" }).end(V4_METADATA);
      return;
    }
    res.on("close", () => (upstreamClosed = performance.now()));
    res.writeHead(200, { "content-type": "application/json", "content-length": String(total) });
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let sent = 0;
    const more = () => {
      while (sent < total) {
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once("drain", more);
      }
      res.end();
    };
    more();
  });
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
  const world = await createWorld({ upstreamTimeoutMs: 1_000, dualProtocol: true });
  const client = new net.Socket();
  try {
    await world.app.listen({ port: 0, host: "127.0.0.1" });
    const sys = json(await post(world.app, "/admin/systems", { name: "S4" })).data.id;
    const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/odata/`;
    assert.is((await post(world.app, `/admin/systems/${sys}/instances`, { name: "prod", base_url: base, services: { BIG: { path: "big" } } })).statusCode, 201);
    const key = json(await post(world.app, "/admin/api-keys", { name: "app", permissions: { prod: { "*": { "*": ["list"] } } } })).data.key;
    client.on("error", () => {});
    await new Promise<void>((r) => client.connect((world.app.server.address() as AddressInfo).port, "127.0.0.1", r));
    const closed = new Promise<void>((r) => client.once("close", () => r()));
    const t0 = performance.now();
    client.write(`GET /odata/prod/BIG/SalesOrders HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nX-Request-Id: stalled-1\r\n\r\n`);
    // Reads the first bytes, then nothing more.
    await new Promise((r) => client.once("data", r));
    client.pause();
    while (upstreamClosed === 0 && performance.now() - t0 < 5_000) await new Promise((r) => setTimeout(r, 50));
    const at = upstreamClosed - t0;
    assert.ok(at >= 1_000 && at < 3_000, `the back end's answer abandoned (its connection freed) after ${Math.round(at)} ms`);
    // What the client had not read is still in its buffers, then the connection's end.
    client.resume();
    await closed;
    await world.layer.logWriter.flush();
    const res = await world.app.inject({ method: "GET", url: "/admin/logs?request_id=stalled-1", headers: AUTH });
    const [entry] = (JSON.parse(res.body) as { data: { status: number; error_code: string; upstream_status: number; response_bytes: string | number }[] }).data;
    assert.equal([entry?.status, entry?.error_code, entry?.upstream_status], [499, "CLIENT_CLOSED_REQUEST", 200]);
    const bytes = Number(entry!.response_bytes);
    assert.ok(bytes > 0 && bytes < total, `${bytes} of ${total} bytes passed`);
  } finally {
    client.destroy();
    await world.close();
    upstream.closeAllConnections();
    await new Promise<void>((r) => upstream.close(() => r()));
  }
});

Deadline.run();
