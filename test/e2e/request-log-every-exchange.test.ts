/**
 * One request-log entry per exchange, however it ends, over real sockets on
 * loopback: a back end of our own (node:http) whose every answer waits for
 * the test to release it, in two steps (its head with the first bytes of its
 * body, then the rest), and that answers in full, breaks off mid-body,
 * goes silent mid-body, resets the connection or never answers; clients over
 * HTTP/1.1 (node:http) and h2c (node:http2) that read the whole answer or
 * vanish while sending their request's body, before the answer, at its head
 * or in its body (HTTP/1.1: the connection dropped; HTTP/2: the stream reset
 * with CANCEL, or the whole session dropped). Each exchange must be logged
 * exactly once, with the status that says how it ended (499
 * `CLIENT_CLOSED_REQUEST` when the client went away first, 502 `BAD_GATEWAY`
 * or 504 `GATEWAY_TIMEOUT` when the back end failed mid-body), what was
 * forwarded, the back end's status when it answered, and how many bytes of
 * the answer's body were sent: every back end against every client moment
 * on both protocols, then a property over back end × client moment × HTTP
 * version × method; and an `/admin` request whose client goes away.
 */
import http from "node:http";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { AccessLogEntry } from "../../src/gateway/app.js";
import { V4_METADATA } from "../../test-support/odata/fixtures.js";
import { addProdSales } from "../../test-support/sales-world.js";
import { AUTH, MASTER_KEY, createWorld, type World } from "../../test-support/world.js";

/** How the back end answers a data request. */
type Backend = "whole" | "breaks" | "stalls" | "resets" | "hangs";
/** When the client goes away (`stays`: never). */
type Moment = "stays" | "request-body" | "before" | "head" | "body";
/** How an HTTP/2 client goes away: its stream reset (CANCEL) or its session dropped. HTTP/1.1 drops the connection. */
type How = "reset" | "drop";
type Version = "1.1" | "2";
type Method = "GET" | "HEAD" | "POST" | "PATCH" | "DELETE";

interface Case {
  readonly version: Version;
  readonly method: Method;
  readonly backend: Backend;
  readonly moment: Moment;
  readonly how: How;
}

interface Deferred {
  readonly promise: Promise<void>;
  resolve(): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** The back end's script for one request (found by the `X-Request-Id` erplink forwards). */
interface Plan {
  readonly backend: Backend;
  readonly status: number;
  /** The request reached the back end. */
  readonly arrived: Deferred;
  /** Released: the back end answers its head and the first bytes (or resets, or never answers). */
  readonly head: Deferred;
  /** Released: the back end sends the rest (or breaks off, or goes silent). */
  readonly rest: Deferred;
}

/** What a client read. */
interface Read {
  status: number | undefined;
  contentLength: number | undefined;
  bytes: number;
  complete: boolean;
}

/** A client's exchange under way. */
interface Client {
  /** Settles when the client is done (read the answer, or went away). */
  readonly done: Promise<Read>;
  /** Settles when the client has read the first bytes of the back end's answer, or is done. */
  readonly first: Promise<void>;
  /** Goes away now. */
  vanish(): void;
}

interface Ctx {
  world: World;
  upstream: http.Server;
  port: number;
  key: string;
  plans: Map<string, Plan>;
  /** Every entry the gateway recorded. */
  entries: AccessLogEntry[];
  /** Request id -> the gateway saw its exchange end (its response closed). */
  ended: Map<string, Deferred>;
}

const SERVICE = "/odata/prod/SALES";
/** The back end's answer body: its first FIRST bytes come with its head, the rest when released. */
const BODY = Buffer.from(`{"value":[${'"x",'.repeat(1000)}"x"]}`, "latin1");
const FIRST = 100;
const WRITE_BODY = '{"Note":"n"}';
const UPSTREAM_TIMEOUT_MS = 300;
const CLIENT_CLOSED = { status: 499, errorCode: "CLIENT_CLOSED_REQUEST" } as const;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function within<T>(what: string, p: Promise<T>, ms = 5_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

const test = suite<Ctx>("request log: one entry per exchange, however it ends");

test.before(async (ctx) => {
  ctx.plans = new Map();
  ctx.entries = [];
  ctx.ended = new Map();
  ctx.upstream = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => void answer(ctx, req, res));
  });
  await new Promise<void>((r) => ctx.upstream.listen(0, "127.0.0.1", r));
  ctx.world = await createWorld({ dualProtocol: true, upstreamTimeoutMs: UPSTREAM_TIMEOUT_MS });
  const writer = ctx.world.layer.logWriter as unknown as { record: (e: AccessLogEntry) => void };
  const record = writer.record.bind(writer);
  writer.record = (entry) => (ctx.entries.push(entry), record(entry));
  // When the gateway sees each exchange end: what a client that goes away waits for before the back end answers.
  ctx.world.app.addHook("onRequest", (req, reply, done) => {
    const id = req.id;
    const raw = reply.raw as { stream?: http2.ServerHttp2Stream } & NodeJS.EventEmitter;
    (raw.stream ?? raw).once("close", () => endedOf(ctx, id).resolve());
    done();
  });
  await ctx.world.app.listen({ port: 0, host: "127.0.0.1" });
  ctx.port = (ctx.world.app.server.address() as AddressInfo).port;
  ctx.key = await addProdSales(ctx.world.app, `http://127.0.0.1:${(ctx.upstream.address() as AddressInfo).port}/odata/`, {
    SalesOrders: ["list", "get", "create", "update", "delete"],
  });
});

test.after(async (ctx) => {
  await ctx.world.close();
  ctx.upstream.closeAllConnections();
  await new Promise<void>((r) => ctx.upstream.close(() => r()));
});

function endedOf(ctx: Ctx, id: string): Deferred {
  let d = ctx.ended.get(id);
  if (d === undefined) ctx.ended.set(id, (d = deferred()));
  return d;
}

async function answer(ctx: Ctx, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  if (req.url!.endsWith("/$metadata")) return void res.writeHead(200, { "content-type": "application/xml" }).end(V4_METADATA);
  // The CSRF token fetch before a write: this back end uses none.
  if (req.headers["x-csrf-token"] !== undefined) return void res.writeHead(200).end();
  const plan = ctx.plans.get(String(req.headers["x-request-id"]));
  if (plan === undefined) return void res.writeHead(500).end("no plan");
  plan.arrived.resolve();
  await plan.head.promise;
  if (plan.backend === "resets") return void req.socket.destroy();
  if (plan.backend === "hangs") return;
  // A HEAD answer is its head.
  if (req.method === "HEAD") return void res.writeHead(plan.status, { "content-type": "application/json", "content-length": String(BODY.length) }).end();
  res.writeHead(plan.status, { "content-type": "application/json", "content-length": String(BODY.length) });
  // Flushed before the rest, the break or the silence (the first write is corked until the next tick).
  await new Promise<void>((r) => res.write(BODY.subarray(0, FIRST), () => r()));
  await plan.rest.promise;
  if (plan.backend === "whole") res.end(BODY.subarray(FIRST));
  else if (plan.backend === "breaks") req.socket.destroy();
  // stalls: silent until erplink's upstream timeout gives up on it.
}

function target(method: Method): string {
  return method === "GET" || method === "HEAD" || method === "POST" ? `${SERVICE}/SalesOrders` : `${SERVICE}/SalesOrders(1)`;
}

const hasBody = (method: Method) => method === "POST" || method === "PATCH";

/**
 * Starts the request over HTTP/1.1 on a connection of its own. `moment`
 * `head` and `body` make the client go away by itself (at the answer's head,
 * at its first bytes); `request-body` sends part of the body it announces.
 */
function overHttp1(ctx: Ctx, id: string, c: Case): Client {
  const read: Read = { status: undefined, contentLength: undefined, bytes: 0, complete: false };
  const headers: http.OutgoingHttpHeaders = { authorization: `Bearer ${ctx.key}`, "x-request-id": id };
  if (hasBody(c.method)) {
    headers["content-type"] = "application/json";
    headers["content-length"] = String(WRITE_BODY.length + (c.moment === "request-body" ? 10 : 0));
  }
  const req = http.request({ host: "127.0.0.1", port: ctx.port, method: c.method, path: target(c.method), headers, agent: false });
  const first = deferred();
  const done = new Promise<Read>((resolve) => {
    req.on("error", () => resolve(read));
    req.on("close", () => resolve(read));
    req.on("response", (res) => {
      read.status = res.statusCode;
      read.contentLength = res.headers["content-length"] === undefined ? undefined : Number(res.headers["content-length"]);
      if (c.moment === "head") return void req.destroy();
      res.on("data", (chunk: Buffer) => {
        read.bytes += chunk.length;
        if (read.bytes >= FIRST) first.resolve();
        if (c.moment === "body") req.destroy();
      });
      res.on("error", () => {});
      res.on("end", () => (read.complete = res.complete));
    });
  });
  if (hasBody(c.method)) req.write(WRITE_BODY);
  if (c.moment !== "request-body") req.end();
  void done.then(first.resolve);
  return { done, first: first.promise, vanish: () => req.destroy() };
}

/** The same over h2c, on a session of its own; the client goes away as `how` says. */
function overH2c(ctx: Ctx, id: string, c: Case): Client {
  const read: Read = { status: undefined, contentLength: undefined, bytes: 0, complete: false };
  const session = http2.connect(`http://127.0.0.1:${ctx.port}`);
  session.on("error", () => {});
  const headers: http2.OutgoingHttpHeaders = { ":method": c.method, ":path": target(c.method), authorization: `Bearer ${ctx.key}`, "x-request-id": id };
  if (hasBody(c.method)) {
    headers["content-type"] = "application/json";
    headers["content-length"] = String(WRITE_BODY.length + (c.moment === "request-body" ? 10 : 0));
  }
  const stream = session.request(headers, { endStream: !hasBody(c.method) });
  const vanish = () => {
    if (c.how === "reset") stream.close(http2.constants.NGHTTP2_CANCEL);
    else session.destroy();
  };
  const first = deferred();
  const done = new Promise<Read>((resolve) => {
    stream.on("error", () => {});
    stream.on("response", (h) => {
      read.status = Number(h[":status"]);
      read.contentLength = h["content-length"] === undefined ? undefined : Number(h["content-length"]);
      if (c.moment === "head") vanish();
    });
    stream.on("data", (chunk: Buffer) => {
      read.bytes += chunk.length;
      if (read.bytes >= FIRST) first.resolve();
      if (c.moment === "body") vanish();
    });
    stream.on("close", () => {
      read.complete = stream.rstCode === http2.constants.NGHTTP2_NO_ERROR && read.status !== undefined;
      session.destroy();
      resolve(read);
    });
  });
  if (hasBody(c.method)) {
    stream.write(WRITE_BODY);
    if (c.moment !== "request-body") stream.end();
  }
  void done.then(first.resolve);
  return { done, first: first.promise, vanish };
}

let seq = 0;

/** Runs one exchange as `c` says; returns its request id and what the client read. */
async function exchange(ctx: Ctx, c: Case): Promise<{ id: string; read: Read }> {
  const id = `every-${++seq}`;
  const plan: Plan = {
    backend: c.backend,
    status: c.method === "POST" ? 201 : 200,
    arrived: deferred(),
    head: deferred(),
    rest: deferred(),
  };
  ctx.plans.set(id, plan);
  const ended = endedOf(ctx, id).promise;
  const client = c.version === "1.1" ? overHttp1(ctx, id, c) : overH2c(ctx, id, c);
  const label = JSON.stringify(c);
  switch (c.moment) {
    case "stays":
      // The rest (or the break, or the silence) once the first bytes have reached the client.
      plan.head.resolve();
      await within(`${label}: the client reads the first bytes`, client.first);
      plan.rest.resolve();
      break;
    case "request-body":
      // The body never arrives whole: nothing reaches the back end.
      await sleep(20);
      client.vanish();
      await within(`${label}: the gateway sees the exchange end`, ended);
      break;
    case "before":
      await within(`${label}: the request reaches the back end`, plan.arrived.promise);
      client.vanish();
      await within(`${label}: the gateway sees the client go`, ended);
      plan.head.resolve();
      plan.rest.resolve();
      break;
    case "head":
    case "body":
      // The client goes away by itself once the head (and first bytes) reach it; the rest waits until then.
      plan.head.resolve();
      await within(`${label}: the gateway sees the exchange end`, ended);
      plan.rest.resolve();
      break;
  }
  const read = await within(`${label}: the client is done`, client.done);
  return { id, read };
}

/** The entry of `id`, once it is written. */
async function entryOf(ctx: Ctx, id: string, label: string): Promise<AccessLogEntry> {
  for (const started = Date.now(); Date.now() - started < 5_000; await sleep(5)) {
    const found = ctx.entries.find((e) => e.requestId === id);
    if (found !== undefined) return found;
  }
  throw new Error(`${label}: no entry for ${id} within 5 s (${ctx.entries.length} entries in all)`);
}

/** The facts of an entry this suite is about. */
function facts(e: AccessLogEntry) {
  return {
    instance: e.instance,
    service: e.service,
    status: e.status,
    errorCode: e.errorCode,
    upstreamMethod: e.upstreamMethod,
    upstreamStatus: e.upstreamStatus,
    responseBytes: e.responseBytes,
  };
}

/** The entry a case must get (`read`: what its client read, for the length of erplink's own answers). */
function expected(c: Case, read: Read): ReturnType<typeof facts> {
  return { instance: "prod", service: "SALES", ...outcome(c, read) };
}

/** What an exchange's entry says of how it ended. */
function outcome(c: Case, read: Read): Omit<ReturnType<typeof facts>, "instance" | "service"> {
  const status = c.method === "POST" ? 201 : 200;
  // Ended before its handler ran, it is still found by the instance and service it named.
  if (c.moment === "request-body") return { ...CLIENT_CLOSED, upstreamMethod: "", upstreamStatus: 0, responseBytes: 0 };
  const forwarded = { upstreamMethod: c.method };
  // The back end never answered: erplink answers itself, in the envelope, unless the client went first.
  if (c.backend === "resets" || c.backend === "hangs") {
    if (c.moment === "before") return { ...CLIENT_CLOSED, ...forwarded, upstreamStatus: 0, responseBytes: 0 };
    const own = c.backend === "resets" ? { status: 502, errorCode: "BAD_GATEWAY" } : { status: 504, errorCode: "GATEWAY_TIMEOUT" };
    return { ...own, ...forwarded, upstreamStatus: 0, responseBytes: read.contentLength ?? -1 };
  }
  // The back end answered `status` and sent the first bytes.
  if (c.moment === "before") return { ...CLIENT_CLOSED, ...forwarded, upstreamStatus: status, responseBytes: 0 };
  if (c.moment === "head" || c.moment === "body") return { ...CLIENT_CLOSED, ...forwarded, upstreamStatus: status, responseBytes: FIRST };
  if (c.backend === "whole") return { status, errorCode: "", ...forwarded, upstreamStatus: status, responseBytes: BODY.length };
  if (c.backend === "breaks") return { status: 502, errorCode: "BAD_GATEWAY", ...forwarded, upstreamStatus: status, responseBytes: FIRST };
  return { status: 504, errorCode: "GATEWAY_TIMEOUT", ...forwarded, upstreamStatus: status, responseBytes: FIRST };
}

/** Runs `c` and checks its entry (and, for a client that stayed, that it read what the entry says was sent). */
async function check(ctx: Ctx, c: Case): Promise<void> {
  const label = JSON.stringify(c);
  const { id, read } = await exchange(ctx, c);
  const entry = await entryOf(ctx, id, label);
  assert.equal(facts(entry), expected(c, read), label);
  assert.is(entry.path, target(c.method), label);
  if (entry.upstreamMethod !== "") assert.match(entry.upstreamUrl, /\/odata\/sap\/sales\/0001\/SalesOrders/, label);
  if (c.moment === "stays") {
    assert.is(read.bytes, entry.responseBytes, `${label}: bytes read`);
    assert.is(read.complete, c.backend !== "breaks" && c.backend !== "stalls", `${label}: complete`);
  }
}

/** Every request id this suite made has exactly one entry. */
function exactlyOnce(ctx: Ctx): void {
  const counts = new Map<string, number>();
  for (const e of ctx.entries) if (e.requestId.startsWith("every-")) counts.set(e.requestId, (counts.get(e.requestId) ?? 0) + 1);
  const wrong = [...counts].filter(([, n]) => n !== 1);
  assert.equal(wrong, [], "request ids with more than one entry");
  assert.is(counts.size, seq, "every request has an entry");
}

const VERSIONS: readonly Version[] = ["1.1", "2"];
const METHODS: readonly Method[] = ["GET", "POST", "PATCH", "DELETE"];
const BACKENDS: readonly Backend[] = ["whole", "breaks", "stalls", "resets", "hangs"];
const MOMENTS: readonly Moment[] = ["stays", "request-body", "before", "head", "body"];

test("20 POSTs whose back end breaks off mid-body: 20 entries, 502 BAD_GATEWAY with the back end's 201 and the bytes sent", async (ctx) => {
  for (const version of VERSIONS) {
    const runs = await Promise.all(Array.from({ length: 10 }, () => exchange(ctx, { version, method: "POST", backend: "breaks", moment: "stays", how: "drop" })));
    for (const { id, read } of runs) {
      const entry = await entryOf(ctx, id, `POST over ${version}`);
      assert.equal(facts(entry), { instance: "prod", service: "SALES", status: 502, errorCode: "BAD_GATEWAY", upstreamMethod: "POST", upstreamStatus: 201, responseBytes: FIRST });
      assert.is(entry.errorMessage, "the back end's answer broke off");
      assert.is(read.bytes, FIRST);
      assert.is(read.complete, false);
    }
  }
});

test("every back-end behaviour against every client moment, over HTTP/1.1 and h2c (stream reset and session dropped)", async (ctx) => {
  const cases: Case[] = [];
  for (const version of VERSIONS) {
    for (const how of version === "2" ? (["reset", "drop"] as const) : (["drop"] as const)) {
      for (const backend of BACKENDS) {
        for (const moment of MOMENTS) {
          // The back end is never reached: one back end is enough.
          if (moment === "request-body" && backend !== "whole") continue;
          // The methods take turns; a body cut short needs a method with one.
          const method = moment === "request-body" ? (cases.length % 2 === 0 ? "POST" : "PATCH") : METHODS[cases.length % METHODS.length]!;
          cases.push({ version, method, backend, moment, how });
        }
      }
    }
  }
  // Several at a time: a back end that hangs or stalls costs the upstream timeout (undici's coarse timers: up to a second).
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < cases.length) await check(ctx, cases[next++]!);
    }),
  );
});

test("property: (back end × client moment × HTTP version × method): exactly one entry, saying how the exchange ended", async (ctx) => {
  const cases = fc
    .record({
      version: fc.constantFrom(...VERSIONS),
      method: fc.constantFrom(...METHODS),
      backend: fc.constantFrom(...BACKENDS),
      moment: fc.constantFrom(...MOMENTS),
      how: fc.constantFrom<How>("reset", "drop"),
    })
    .filter((c) => c.moment !== "request-body" || hasBody(c.method));
  await fc.assert(
    fc.asyncProperty(cases, async (c) => check(ctx, c)),
    { numRuns: 40 },
  );
});

test("an /admin request whose client goes away while sending its body: one entry, 499 CLIENT_CLOSED_REQUEST, for its caller", async (ctx) => {
  for (const version of VERSIONS) {
    const id = `every-${++seq}`;
    const ended = endedOf(ctx, id).promise;
    const headers = { ...AUTH, "x-request-id": id, "content-type": "application/json", "content-length": "100" };
    if (version === "1.1") {
      const req = http.request({ host: "127.0.0.1", port: ctx.port, method: "POST", path: "/admin/systems", headers, agent: false });
      req.on("error", () => {});
      req.write('{"name":');
      await sleep(50);
      req.destroy();
    } else {
      const session = http2.connect(`http://127.0.0.1:${ctx.port}`);
      session.on("error", () => {});
      const stream = session.request({ ":method": "POST", ":path": "/admin/systems", ...headers });
      stream.on("error", () => {});
      stream.write('{"name":');
      await sleep(50);
      session.destroy();
    }
    await within(`admin over ${version}: the gateway sees the exchange end`, ended);
    const entry = await entryOf(ctx, id, `admin over ${version}`);
    assert.equal(
      { ...facts(entry), apiKeyId: entry.apiKeyId, method: entry.method, path: entry.path },
      { instance: "", service: "", ...CLIENT_CLOSED, upstreamMethod: "", upstreamStatus: 0, responseBytes: 0, apiKeyId: "master", method: "POST", path: "/admin/systems" },
      version,
    );
  }
});

test("HEAD, whose answer has no body: answered in full, or its client gone before the answer, over HTTP/1.1 and h2c", async (ctx) => {
  for (const version of VERSIONS) {
    for (const how of ["reset", "drop"] as const) {
      const whole = await exchange(ctx, { version, method: "HEAD", backend: "whole", moment: "stays", how });
      const label = `HEAD over ${version} (${how})`;
      assert.equal(facts(await entryOf(ctx, whole.id, label)), { instance: "prod", service: "SALES", status: 200, errorCode: "", upstreamMethod: "HEAD", upstreamStatus: 200, responseBytes: 0 }, label);
      const gone = await exchange(ctx, { version, method: "HEAD", backend: "whole", moment: "before", how });
      assert.equal(facts(await entryOf(ctx, gone.id, label)), { instance: "prod", service: "SALES", ...CLIENT_CLOSED, upstreamMethod: "HEAD", upstreamStatus: 200, responseBytes: 0 }, label);
    }
  }
});

test("each request logged exactly once; the entries reach the log service with the bytes sent", async (ctx) => {
  // Late duplicates (a handler that returns after its client went) would have come by now.
  await sleep(2 * UPSTREAM_TIMEOUT_MS);
  exactlyOnce(ctx);
  await ctx.world.layer.logWriter.flush();
  const cut = ctx.entries.find((e) => e.requestId.startsWith("every-") && e.status === 499 && e.responseBytes === FIRST)!;
  const whole = ctx.entries.find((e) => e.requestId.startsWith("every-") && e.status === 200 && e.responseBytes === BODY.length)!;
  for (const e of [cut, whole]) {
    const res = await ctx.world.app.inject({ method: "GET", url: `/admin/logs?request_id=${e.requestId}`, headers: { authorization: `Bearer ${MASTER_KEY}` } });
    assert.is(res.statusCode, 200, res.body);
    const [logged] = (JSON.parse(res.body) as { data: Record<string, unknown>[] }).data;
    assert.equal(
      { status: logged!.status, error_code: logged!.error_code, upstream_status: logged!.upstream_status, response_bytes: logged!.response_bytes },
      { status: e.status, error_code: e.errorCode, upstream_status: e.upstreamStatus, response_bytes: String(e.responseBytes) },
    );
  }
});

test.run();
