/**
 * Hostile clients against the h2c shortcut (src/gateway/rpc/direct.ts, the
 * one-port server's `stream` listener in src/gateway/server.ts), over a real
 * listening port on 127.0.0.1, each compared with the Fastify path (the same
 * server with `setHttp2Shortcut(undefined)`) where that makes sense.
 *
 * Suites:
 * - a call whose handler stopped reading its body early (over the body
 *   limit, a malformed message) while the client sends more of it: the
 *   stream must still close, the call be reported (metrics, access log),
 *   the connection be released when the client leaves and `close()` not
 *   wait for its shutdown timeout;
 * - `Expect` streams, which the compat layer answers (100 Continue, 417);
 * - streams the server ended while the client's side stays open, and a
 *   health Watch that arrives while erplink shuts down (both ways alike:
 *   predating the shortcut);
 * - floods of resets at every point of a call, client sessions torn down
 *   mid-call: every call reported exactly once, the same metrics both ways,
 *   nothing left open;
 * - HTTP/2 edge cases answered alike both ways (`:authority` and `host`
 *   both or neither, a long header list, client trailers, END_STREAM on
 *   the headers, methods the shortcut leaves).
 */
import http2 from "node:http2";
import net from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AuthorizationService, AuthorizeRequestSchema } from "../../src/gen/erplink/authz/v1/authorization_pb.js";
import { Health, HealthCheckRequestSchema } from "../../src/gen/grpc/health/v1/health_pb.js";
import { ServerReflection, ServerReflectionRequestSchema } from "../../src/gen/grpc/reflection/v1/reflection_pb.js";
import { isDualProtocolServer, type DualProtocolServer, type Http2Shortcut } from "../../src/gateway/server.js";
import { httpRequest, startErplink, within, type RunningErplink } from "../../test-support/e2e.js";
import { Exposition } from "../../test-support/metrics.js";
import { h2Frame, headerBlock } from "../../test-support/raw-h2.js";

const AUTHORIZE = `/${AuthorizationService.typeName}/${AuthorizationService.method.authorize.name}`;
const HEALTH = `/${Health.typeName}/${Health.method.check.name}`;
const WATCH = `/${Health.typeName}/${Health.method.watch.name}`;
const REFLECTION = `/${ServerReflection.typeName}/${ServerReflection.method.serverReflectionInfo.name}`;
/** The series an answered Authorize call moves (the access-log line is written beside it). */
const AUTHORIZE_SERIES = `erplink_http_requests_total{"route":"rpc","service":"${AuthorizationService.typeName}","method":"POST","status_class":"2xx"}`;
/** Body limit of the servers here (bytes). */
const BODY_LIMIT = 4096;
/** Shutdown timeout of the servers here: a `close()` that takes it waited for something left open. */
const SHUTDOWN_MS = 2000;

function frame(message: Uint8Array): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

const AUTHZ_MSG = frame(toBinary(AuthorizeRequestSchema, create(AuthorizeRequestSchema, { apiKey: "erpl_x", instance: "prod", service: "API_BP", entity: "A_BusinessPartner", operation: 1 })));
const HEALTH_MSG = frame(toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema, {})));
const REFLECT_MSG = frame(toBinary(ServerReflectionRequestSchema, create(ServerReflectionRequestSchema, { messageRequest: { case: "listServices", value: "" } })));
const BIG_REFLECT_MSG = frame(
  toBinary(ServerReflectionRequestSchema, create(ServerReflectionRequestSchema, { messageRequest: { case: "fileContainingSymbol", value: "erplink.admin.v1.SystemService" } })),
);
/** A message prefix that claims more than the body limit. */
const OVER_LIMIT_PREFIX = (() => {
  const p = Buffer.alloc(5);
  p.writeUInt32BE(100_000, 1);
  return p;
})();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ------------------------------------------------------------------ helpers

/** What a client saw of one call (never rejects). */
interface Outcome {
  status?: number;
  headers?: Record<string, string>;
  trailers?: Record<string, string>;
  body: string;
  /** RST_STREAM code the stream closed with (0: a clean end). */
  rst?: number;
  /** A 100 Continue came. */
  continued: boolean;
  /** Nothing closed the stream within the call's time: the client cancelled it. */
  timedOut: boolean;
}

interface CallOptions {
  readonly path: string;
  readonly method?: string;
  readonly headers?: http2.OutgoingHttpHeaders;
  readonly body?: readonly Buffer[];
  /** Send END_STREAM after the body (default true). */
  readonly end?: boolean;
  /** Send the body only after a 100 Continue. */
  readonly waitContinue?: boolean;
  /** Trailers the client sends after its body. */
  readonly clientTrailers?: http2.OutgoingHttpHeaders;
  /** END_STREAM on the request's HEADERS frame (no body at all). */
  readonly endStreamOnHeaders?: boolean;
  readonly timeoutMs?: number;
}

const record = (h: http2.IncomingHttpHeaders): Record<string, string> =>
  Object.fromEntries(Object.entries(h).filter(([k]) => k !== "date" && k !== ":status").map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : String(v)]));

function call(session: http2.ClientHttp2Session, o: CallOptions): Promise<Outcome> {
  return new Promise((resolve) => {
    const stream = session.request(
      { ":method": o.method ?? "POST", ":path": o.path, "content-type": "application/grpc", te: "trailers", ...o.headers },
      { endStream: o.endStreamOnHeaders === true, waitForTrailers: o.clientTrailers !== undefined },
    );
    const out: Outcome = { body: "", continued: false, timedOut: false };
    const chunks: Buffer[] = [];
    stream.on("response", (h) => {
      out.status = Number(h[":status"]);
      out.headers = record(h);
    });
    stream.on("continue", () => (out.continued = true));
    stream.on("trailers", (t) => {
      out.trailers = record(t);
      // As gRPC clients do: the call is over once its status has come.
      if (!stream.writableEnded) stream.end();
    });
    stream.on("data", (d: Buffer) => chunks.push(d));
    stream.on("error", () => {});
    if (o.clientTrailers !== undefined) stream.once("wantTrailers", () => stream.sendTrailers(o.clientTrailers!));
    const send = () => {
      if (o.endStreamOnHeaders === true) return;
      for (const b of o.body ?? []) stream.write(b);
      if (o.end !== false) stream.end();
    };
    if (o.waitContinue === true) stream.once("continue", send);
    else send();
    const timer = setTimeout(() => {
      out.timedOut = true;
      stream.close(http2.constants.NGHTTP2_CANCEL);
    }, o.timeoutMs ?? 2000);
    stream.on("close", () => {
      clearTimeout(timer);
      out.rst = stream.rstCode;
      out.body = Buffer.concat(chunks).toString("hex");
      resolve(out);
    });
  });
}

/** An outcome without what differs by nature between two answers (fresh request ids). */
function normalized(o: Outcome): Outcome {
  const h = o.headers === undefined ? undefined : { ...o.headers };
  if (h?.["x-request-id"]?.startsWith("req_")) h["x-request-id"] = "req_fresh";
  return { ...o, headers: h };
}

async function scrape(server: RunningErplink): Promise<Map<string, number>> {
  // The metrics move when the server has finished its answer, which the client may see a moment before.
  await sleep(30);
  // A connection of its own, closed after: the connection counts below are the h2c clients' only.
  const res = await httpRequest(`${server.baseUrl}/metrics`, { headers: { connection: "close" } });
  assert.is(res.status, 200);
  const out = new Map<string, number>();
  const exp = new Exposition(res.text);
  for (const name of ["erplink_http_requests_total", "erplink_rpc_calls_total"]) {
    for (const m of exp.family(name).metrics) out.set(`${name}${JSON.stringify(m.labels ?? {})}`, Number(m.value));
  }
  return out;
}

/** The series that moved, without the scrape's own. */
function delta(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of after) if (v !== (before.get(k) ?? 0) && !k.includes('"route":"metrics"')) out[k] = v - (before.get(k) ?? 0);
  return out;
}

function dualOf(server: RunningErplink): DualProtocolServer {
  const dual = server.erplink.app.server;
  assert.ok(isDualProtocolServer(dual), "erplink listens on the one-port server");
  return dual as DualProtocolServer;
}

/** Open connections of the one-port server (h2c and HTTP/1.1). */
function connections(dual: DualProtocolServer): Promise<number> {
  return new Promise((resolve, reject) => dual.getConnections((err, n) => (err ? reject(err) : resolve(n))));
}

/** Waits until `probe` holds (polling), at most `ms`; returns whether it did. */
async function eventually(ms: number, probe: () => Promise<boolean>): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if (await probe()) return true;
    if (Date.now() > end) return false;
    await sleep(25);
  }
}

/** Closes erplink; resolves with how long it took. */
async function timedClose(server: RunningErplink): Promise<number> {
  const started = Date.now();
  await server.close();
  return Date.now() - started;
}

/** A server that counts the calls its shortcut takes (the shortcut on or off). */
interface Counted {
  readonly server: RunningErplink;
  readonly dual: DualProtocolServer;
  readonly original: Http2Shortcut;
  taken: number;
  /** Sets the counting shortcut (true) or none (false: every call through Fastify). */
  direct(on: boolean): void;
}

async function startCounted(env: Record<string, string> = {}): Promise<Counted> {
  const server = await startErplink({ ERPLINK_BODY_LIMIT_BYTES: String(BODY_LIMIT), ERPLINK_SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_MS), ...env });
  const dual = dualOf(server);
  const original = dual.http2Shortcut();
  assert.type(original, "function", "the gateway set the shortcut");
  const c: Counted = {
    server,
    dual,
    original: original!,
    taken: 0,
    direct(on) {
      dual.setHttp2Shortcut(
        on
          ? (stream, headers) => {
              const took = c.original(stream, headers);
              if (took) c.taken++;
              return took;
            }
          : undefined,
      );
    },
  };
  c.direct(true);
  return c;
}

/** Runs `fn` on a fresh session with the shortcut, then without it: results, metric deltas, calls taken. */
async function both<T>(c: Counted, fn: (session: http2.ClientHttp2Session) => Promise<T>) {
  const run = async (on: boolean) => {
    c.direct(on);
    const taken = c.taken;
    const m0 = await scrape(c.server);
    const session = http2.connect(c.server.baseUrl);
    session.on("error", () => {});
    let result: T;
    try {
      result = await fn(session);
    } finally {
      session.destroy();
    }
    const m1 = await scrape(c.server);
    return { result, metrics: delta(m0, m1), taken: c.taken - taken };
  };
  try {
    const direct = await run(true);
    const routed = await run(false);
    return { direct, routed };
  } finally {
    c.direct(true);
  }
}

/**
 * A call whose handler stops reading its body early (the prefix claims more
 * than the body limit, or the first message is malformed), answered while
 * the client goes on sending `extra` more chunks of its body (20 ms apart,
 * each its own DATA frame), then ends its side (END_STREAM) or resets the
 * stream with NO_ERROR, as a client may once it has the answer.
 */
async function stoppedEarly(
  session: http2.ClientHttp2Session,
  trigger: Trigger,
  extra: number,
  finish: "end" | "rst-no-error",
): Promise<{ grpcStatus?: string; clientClosed: boolean }> {
  const stream = session.request({ ":method": "POST", ":path": AUTHORIZE, "content-type": "application/grpc", te: "trailers" }, { endStream: false });
  stream.on("error", () => {});
  stream.resume();
  let grpcStatus: string | undefined;
  const trailers = new Promise<void>((resolve) =>
    stream.on("trailers", (t) => {
      grpcStatus = String(t["grpc-status"]);
      resolve();
    }),
  );
  const closed = new Promise<boolean>((resolve) => stream.on("close", () => resolve(true)));
  // Field 3 with wire type 7: no such wire type (the parse fails on the first byte).
  stream.write(
    trigger === "over-limit"
      ? Buffer.concat([OVER_LIMIT_PREFIX, Buffer.alloc(100)])
      : trigger === "two-messages"
        ? Buffer.concat([AUTHZ_MSG, AUTHZ_MSG])
        : frame(Uint8Array.of(0x1f, 0, 0, 0)),
  );
  await within(2000, "the answer", trailers);
  for (let i = 0; i < extra; i++) {
    await sleep(20);
    stream.write(Buffer.alloc(1000));
  }
  await sleep(20);
  if (finish === "end") stream.end();
  else stream.close(http2.constants.NGHTTP2_NO_ERROR);
  const clientClosed = await Promise.race([closed, sleep(1000).then(() => false)]);
  return { grpcStatus, clientClosed };
}

/**
 * The stuck-stream scenario on a server of its own: the answer, whether the
 * call was reported (metrics and access log) and the connection released
 * once the client left, and whether `close()` finished well within its
 * shutdown timeout.
 */
async function stuckScenario(direct: boolean, trigger: Trigger, extra: number, finish: "end" | "rst-no-error") {
  const c = await startCounted();
  let closeMs: number | undefined;
  try {
    c.direct(direct);
    const m0 = await scrape(c.server);
    const session = http2.connect(c.server.baseUrl);
    session.on("error", () => {});
    let seen;
    try {
      seen = await stoppedEarly(session, trigger, extra, finish);
    } finally {
      // The client goes away altogether (its socket closed).
      session.destroy();
    }
    const released = await eventually(500, async () => (await connections(c.dual)) === 0);
    const reported = delta(m0, await scrape(c.server))[AUTHORIZE_SERIES] ?? 0;
    closeMs = await timedClose(c.server);
    return {
      answer: { grpcStatus: seen.grpcStatus, clientClosed: seen.clientClosed },
      taken: c.taken,
      reported,
      connectionReleased: released,
      closedWithinAMoment: closeMs < SHUTDOWN_MS / 2,
    };
  } finally {
    if (closeMs === undefined) await c.server.close();
  }
}

const expectedUnstuck = (grpcStatus: string, taken: number) => ({
  answer: { grpcStatus, clientClosed: true },
  taken,
  reported: 1,
  connectionReleased: true,
  closedWithinAMoment: true,
});

// ------------------------------------------------------------------ a handler that stopped reading early

/**
 * What makes the handler stop reading: a body over the limit, a malformed first message, or a second
 * message to a unary method (Connect then stops without returning the body's iterator, which stays
 * attached to the stream).
 */
type Trigger = "over-limit" | "malformed" | "two-messages";

const Stuck = suite("e2e hostile h2c clients: a call whose handler stopped reading its body early, while the client sends more of it");

Stuck("shortcut: over the body limit, one more DATA frame, then END_STREAM: the stream closes, the call is reported, the connection is released when the client leaves, close() does not wait for its shutdown timeout", async () => {
  // Seen failing on 0371bca: the stream's unread frame keeps it from ever closing (node's onStreamClose waits
  // for an 'end' nobody reads to): no metrics or access-log line, the session and socket kept even after the
  // client closed its TCP connection, and erplink.close() waits for ERPLINK_SHUTDOWN_TIMEOUT_MS.
  assert.equal(await stuckScenario(true, "over-limit", 1, "end"), expectedUnstuck("8", 1));
});

Stuck("shortcut: over the body limit, one more DATA frame, then RST_STREAM(NO_ERROR) after the answer: closed and reported, the connection released", async () => {
  assert.equal(await stuckScenario(true, "over-limit", 1, "rst-no-error"), expectedUnstuck("8", 1));
});

Stuck("shortcut: a malformed first message (INTERNAL), one more DATA frame, then END_STREAM: closed and reported, the connection released", async () => {
  assert.equal(await stuckScenario(true, "malformed", 1, "end"), expectedUnstuck("13", 1));
});

Stuck("shortcut: two messages to a unary method (a client-streaming stub), three more DATA frames, then END_STREAM: closed and reported, the connection released", async () => {
  assert.equal(await stuckScenario(true, "two-messages", 3, "end"), expectedUnstuck("12", 1));
});

Stuck("Fastify path: two messages to a unary method, twenty more DATA frames (past the compat request's buffer), then END_STREAM: closed and reported, the connection released", async () => {
  assert.equal(await stuckScenario(false, "two-messages", 20, "end"), expectedUnstuck("12", 0));
});

Stuck("Fastify path, for comparison: over the body limit, one more DATA frame, then END_STREAM is closed and reported (the compat request drains that frame)", async () => {
  assert.equal(await stuckScenario(false, "over-limit", 1, "end"), expectedUnstuck("8", 0));
});

Stuck("Fastify path (predates the shortcut): over the body limit, three more DATA frames, then END_STREAM: closed and reported, the connection released", async () => {
  // Seen failing on 0371bca without the shortcut too: the compat request pauses its stream once the handler
  // stopped reading, and the frames after the first stay unread for ever.
  assert.equal(await stuckScenario(false, "over-limit", 3, "end"), expectedUnstuck("8", 0));
});

Stuck("shortcut: many clients doing it at once leave nothing open (20 connections)", async () => {
  const c = await startCounted();
  let closeMs: number | undefined;
  try {
    const m0 = await scrape(c.server);
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        const session = http2.connect(c.server.baseUrl);
        session.on("error", () => {});
        try {
          await stoppedEarly(session, "over-limit", 1, "end");
        } finally {
          session.destroy();
        }
      }),
    );
    await eventually(500, async () => (await connections(c.dual)) === 0);
    const left = await connections(c.dual);
    const reported = delta(m0, await scrape(c.server))[AUTHORIZE_SERIES] ?? 0;
    closeMs = await timedClose(c.server);
    assert.equal({ taken: c.taken, left, reported, closedWithinAMoment: closeMs < SHUTDOWN_MS / 2 }, { taken: 20, left: 0, reported: 20, closedWithinAMoment: true });
  } finally {
    if (closeMs === undefined) await c.server.close();
  }
});

Stuck.run();

// ------------------------------------------------------------------ Expect

const Expect = suite<{ c: Counted }>("e2e hostile h2c clients: gRPC calls with an Expect header reach the compat layer, as before the shortcut");

Expect.before(async (ctx) => {
  ctx.c = await startCounted();
});
Expect.after(async (ctx) => {
  await ctx.c?.server.close();
});

Expect("`Expect: 100-continue`: a client that waits for 100 Continue before its body gets it, then its answer, the same both ways", async ({ c }) => {
  // Seen failing on 0371bca: the shortcut takes the call and never sends 100 Continue (the compat layer's
  // onServerStream does): the client waits, the handler waits for the body, until the client gives up.
  const r = await both(c, (s) => call(s, { path: AUTHORIZE, headers: { expect: "100-continue" }, body: [AUTHZ_MSG], waitContinue: true }));
  assert.is(r.routed.result.continued, true, "through Fastify: 100 Continue");
  assert.is(r.routed.result.trailers?.["grpc-status"], "0", "through Fastify: answered (a denial: the key is unknown)");
  assert.equal(normalized(r.direct.result), normalized(r.routed.result), "the same answer with the shortcut");
  assert.equal(r.direct.metrics, r.routed.metrics, "the same metrics");
});

Expect("`Expect: something-else`: 417 Expectation Failed, the same both ways", async ({ c }) => {
  // Seen failing on 0371bca: the shortcut answers the call (200, grpc-status 16) where the compat layer answers 417.
  const r = await both(c, (s) => call(s, { path: AUTHORIZE, headers: { expect: "something-else" }, body: [AUTHZ_MSG] }));
  assert.is(r.routed.result.status, 417, "through Fastify: 417");
  assert.equal(normalized(r.direct.result), normalized(r.routed.result), "the same answer with the shortcut");
  assert.equal(r.direct.metrics, r.routed.metrics, "the same metrics");
  assert.is(r.direct.taken, 0, "not taken");
});

Expect.run();

// ------------------------------------------------------------------ streams left open at shutdown (both ways, predating the shortcut)

const Open = suite("e2e hostile h2c clients: streams the server has finished hold erplink's close (both ways)");

for (const direct of [true, false]) {
  const way = direct ? "shortcut" : "Fastify path";
  Open(`${way}: a reflection stream ended by shutdown whose client never half-closes does not hold close() for its shutdown timeout`, async () => {
    // Seen failing both ways on 0371bca: the answer ends (trailers, grpc-status 0) but the stream stays
    // half-closed (local) until the client ends its side; a gRPC server resets it (RST_STREAM NO_ERROR).
    const c = await startCounted();
    c.direct(direct);
    let closeMs: number | undefined;
    const session = http2.connect(c.server.baseUrl);
    session.on("error", () => {});
    try {
      const s = session.request({ ":method": "POST", ":path": REFLECTION, "content-type": "application/grpc", te: "trailers" });
      s.on("error", () => {});
      s.resume();
      let status: string | undefined;
      s.on("trailers", (t) => (status = String(t["grpc-status"])));
      s.write(REFLECT_MSG);
      await within(2000, "the first answer", new Promise((r) => s.once("data", r)));
      closeMs = await timedClose(c.server);
      assert.equal({ status, closedWithinAMoment: closeMs < SHUTDOWN_MS / 2 }, { status: "0", closedWithinAMoment: true });
    } finally {
      session.destroy();
      if (closeMs === undefined) await c.server.close();
    }
  });

  Open(`${way}: a health Watch that arrives while erplink shuts down is refused (its session started after the close began: REFUSED_STREAM, safe to retry elsewhere) or ends NOT_SERVING with status OK, and does not hold close()`, async () => {
    // Seen failing both ways on 0371bca: health.ts subscribed a watcher after shutdown() had ended the others
    // and nothing ended it (test/gateway/rpc/health.test.ts); and a session whose preface came just after the
    // close began was never asked to go away (src/gateway/server.ts). Either held close() until its timeout.
    const c = await startCounted();
    c.direct(direct);
    const session = http2.connect(c.server.baseUrl);
    session.on("error", () => {});
    try {
      await new Promise((r) => session.once("connect", r));
      const started = Date.now();
      const closing = c.server.close();
      const watch = call(session, { path: WATCH, body: [HEALTH_MSG], timeoutMs: 3 * SHUTDOWN_MS });
      await closing;
      const closeMs = Date.now() - started;
      const w = await watch;
      const refused = w.rst === http2.constants.NGHTTP2_REFUSED_STREAM && w.status === undefined;
      assert.equal(
        { closedWithinAMoment: closeMs < SHUTDOWN_MS / 2, outcome: refused ? "refused" : w.trailers?.["grpc-status"] === "0" ? "NOT_SERVING, OK" : JSON.stringify(w) },
        { closedWithinAMoment: true, outcome: refused ? "refused" : "NOT_SERVING, OK" },
      );
      if (!refused) assert.is(w.body.slice(-4), "0802", "the last message says NOT_SERVING (status 2)");
    } finally {
      session.destroy();
      await c.server.close();
    }
  });
}

Open("a flood of reflection streams that ask for 20 large answers, read none, then reset (CANCEL, NO_ERROR, INTERNAL_ERROR in turn): every stream closes and is reported, no connection left, both ways", async () => {
  // Seen failing both ways on 0371bca (300 streams, 100 to a session): client streams reset with NO_ERROR
  // while their requests lie unread on the server never close there (node's onStreamClose waits for an
  // 'end' nobody reads to), nor do their sessions; some client streams never see their close either.
  const result: Record<string, unknown> = {};
  for (const direct of [true, false]) {
    const c = await startCounted();
    c.direct(direct);
    try {
      const m0 = await scrape(c.server);
      let clientStreamsClosed = true;
      try {
        await flood(c.server.baseUrl, "reflect-unread-rst", 300);
      } catch {
        clientStreamsClosed = false;
      }
      await eventually(1000, async () => (await connections(c.dual)) === 0);
      const connectionsLeft = await connections(c.dual);
      const reported = Object.entries(delta(m0, await scrape(c.server)))
        .filter(([k]) => k.startsWith("erplink_http_requests_total"))
        .reduce((n, [, v]) => n + v, 0);
      const closeMs = await timedClose(c.server);
      result[direct ? "shortcut" : "fastify"] = { clientStreamsClosed, connectionsLeft, reported, closedWithinAMoment: closeMs < SHUTDOWN_MS / 2 };
    } finally {
      await c.server.close();
    }
  }
  const fine = { clientStreamsClosed: true, connectionsLeft: 0, reported: 300, closedWithinAMoment: true };
  assert.equal(result, { shortcut: { ...fine }, fastify: { ...fine } });
});

Open.run();

// ------------------------------------------------------------------ held: floods of resets

type Kind = "rst-at-headers" | "rst-after-body" | "rst-at-response" | "watch-rst" | "reflect-unread-rst" | "session-destroyed";

/**
 * Opens `n` streams of `kind`, 100 to a session (RST codes CANCEL, NO_ERROR
 * and INTERNAL_ERROR in turn); resolves when the client has seen them all
 * close.
 */
async function flood(base: string, kind: Kind, n: number): Promise<void> {
  for (let done = 0; done < n; done += 100) {
    const session = http2.connect(base);
    session.on("error", () => {});
    const closes: Promise<void>[] = [];
    const written: Promise<void>[] = [];
    for (let i = 0; i < Math.min(100, n - done); i++) {
      const path = kind === "watch-rst" ? WATCH : kind === "reflect-unread-rst" ? REFLECTION : i % 2 === 0 ? AUTHORIZE : HEALTH;
      const msg = path === AUTHORIZE ? AUTHZ_MSG : HEALTH_MSG;
      const s = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers" }, { endStream: false });
      s.on("error", () => {});
      closes.push(new Promise((r) => s.on("close", () => r())));
      const code = [http2.constants.NGHTTP2_CANCEL, http2.constants.NGHTTP2_NO_ERROR, http2.constants.NGHTTP2_INTERNAL_ERROR][i % 3]!;
      switch (kind) {
        case "rst-at-headers":
          s.close(code);
          break;
        case "rst-after-body":
          s.write(msg, () => s.close(code));
          break;
        case "rst-at-response":
          s.resume();
          s.on("response", () => s.close(code));
          s.end(msg);
          break;
        case "watch-rst":
          s.once("data", () => s.close(code));
          s.end(msg);
          break;
        case "reflect-unread-rst":
          // Asks for 20 large answers, reads none: the server's writes wait for the window; then the reset.
          s.pause();
          s.write(Buffer.concat(Array.from({ length: 20 }, () => BIG_REFLECT_MSG)));
          setTimeout(() => {
            // (A paused client stream with unread data never emits close itself.)
            s.resume();
            s.close(code);
            // Node's client stream reset with NO_ERROR sometimes never ends its readable side, and so
            // never closes (a client-side quirk, seen 4 in 100): the client lets go of it. The server's
            // side is what is checked (every call reported, nothing left open).
            setTimeout(() => s.destroy(), 200);
          }, 100);
          break;
        case "session-destroyed":
          written.push(new Promise((r) => s.write(msg, () => r())));
          break;
      }
    }
    // Torn down 5 ms after every message has been written to the socket (a write's callback), so that
    // each stream reaches the server: 5 ms from the requests alone was sometimes too short on a loaded
    // machine (a whole batch of 100 never sent, 200 of 300 reported). (A PING does not order: nghttp2
    // sends it ahead of queued HEADERS and DATA.)
    if (kind === "session-destroyed") void Promise.all(written).then(() => setTimeout(() => session.destroy(), 5));
    try {
      await within(5000, `${kind}: the client's streams closed (batch ${done / 100})`, Promise.all(closes));
    } finally {
      session.destroy();
    }
  }
}

const Flood = suite<{ c: Counted }>("e2e hostile h2c clients: floods of resets and torn-down sessions leave nothing open, each call reported once, as through Fastify");

Flood.before(async (ctx) => {
  ctx.c = await startCounted();
});
Flood.after(async (ctx) => {
  await ctx.c?.server.close();
});

const N = 300;
for (const kind of ["rst-at-headers", "rst-after-body", "rst-at-response", "watch-rst", "session-destroyed"] as Kind[]) {
  Flood(`${kind} x ${N}: every call reported exactly once, the same metrics both ways, no connection left`, async ({ c }) => {
    const r = await both(c, async (unused) => {
      unused.destroy();
      let clientStreamsClosed = true;
      try {
        await flood(c.server.baseUrl, kind, N);
      } catch {
        clientStreamsClosed = false;
      }
      await eventually(1000, async () => (await connections(c.dual)) === 0);
      return { clientStreamsClosed, connectionsLeft: await connections(c.dual) };
    });
    // Whether the handler finished before the reset is a race: only the requests counted (one per stream) must match.
    const requests = (m: Record<string, number>) => Object.fromEntries(Object.entries(m).filter(([k]) => k.startsWith("erplink_http_requests_total")));
    const total = (m: Record<string, number>) => Object.values(requests(m)).reduce((n, v) => n + v, 0);
    assert.equal(
      { direct: { ...r.direct.result, taken: r.direct.taken, reported: total(r.direct.metrics) }, routed: { ...r.routed.result, reported: total(r.routed.metrics) } },
      { direct: { clientStreamsClosed: true, connectionsLeft: 0, taken: N, reported: N }, routed: { clientStreamsClosed: true, connectionsLeft: 0, reported: N } },
    );
    assert.equal(requests(r.direct.metrics), requests(r.routed.metrics), "the same requests counted as through Fastify");
  });
}

Flood("after the floods, a plain call is answered and erplink closes at once", async ({ c }) => {
  const session = http2.connect(c.server.baseUrl);
  session.on("error", () => {});
  try {
    const o = await call(session, { path: HEALTH, body: [HEALTH_MSG] });
    assert.is(o.trailers?.["grpc-status"], "0");
  } finally {
    session.close();
  }
  const ms = await timedClose(c.server);
  assert.ok(ms < SHUTDOWN_MS / 2, `close took ${ms} ms`);
});

Flood.run();

// ------------------------------------------------------------------ held: HTTP/2 edge cases answered alike

const Edge = suite<{ c: Counted }>("e2e hostile h2c clients: HTTP/2 edge cases answered alike with the shortcut and without it");

Edge.before(async (ctx) => {
  ctx.c = await startCounted();
});
Edge.after(async (ctx) => {
  await ctx.c?.server.close();
});

const edgeCases: [string, CallOptions, number][] = [
  [":authority and Host both (different)", { path: AUTHORIZE, headers: { ":authority": "a.example:1", host: "b.example:2" }, body: [AUTHZ_MSG] }, 1],
  [":authority well-formed, Host making no URL", { path: AUTHORIZE, headers: { ":authority": "a.example", host: "[" }, body: [AUTHZ_MSG] }, 1],
  [":authority making no URL, Host well-formed", { path: AUTHORIZE, headers: { ":authority": "x:99999", host: "b.example" }, body: [AUTHZ_MSG] }, 1],
  [
    "a long header list (100 headers of 500 bytes)",
    { path: AUTHORIZE, headers: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`x-pad-${i}`, "v".repeat(500)])), body: [AUTHZ_MSG] },
    1,
  ],
  ["a repeated x-request-id", { path: HEALTH, headers: { "x-request-id": ["a.1", "b.2"] }, body: [HEALTH_MSG] }, 1],
  ["client trailers after the body", { path: HEALTH, body: [HEALTH_MSG], clientTrailers: { "x-trailer": "t", "grpc-status": "0" } }, 1],
  ["client trailers and no body", { path: HEALTH, body: [], clientTrailers: { "x-trailer": "t" } }, 1],
  ["END_STREAM on the headers (no body)", { path: AUTHORIZE, endStreamOnHeaders: true }, 1],
  ["END_STREAM on the headers of a Watch", { path: WATCH, endStreamOnHeaders: true }, 1],
  ["a Watch with a 300 ms deadline", { path: WATCH, headers: { "grpc-timeout": "300m" }, body: [HEALTH_MSG] }, 1],
  ["a reflection stream half-closed at once", { path: REFLECTION, body: [REFLECT_MSG, REFLECT_MSG] }, 1],
  ["a message split across many DATA frames", { path: AUTHORIZE, body: [...AUTHZ_MSG].map((b) => Buffer.of(b)) }, 1],
  ["exactly the body limit", { path: AUTHORIZE, body: [frame(new Uint8Array(BODY_LIMIT))] }, 1],
  ["one byte over the body limit", { path: AUTHORIZE, body: [frame(new Uint8Array(BODY_LIMIT + 1))] }, 1],
  ["HEAD on a taken path", { path: AUTHORIZE, method: "HEAD", endStreamOnHeaders: true }, 0],
  ["GET on a taken path", { path: HEALTH, method: "GET", endStreamOnHeaders: true }, 0],
  ["PUT on a taken path", { path: HEALTH, method: "PUT", body: [HEALTH_MSG] }, 0],
  ["gRPC-Web on a taken path", { path: HEALTH, headers: { "content-type": "application/grpc-web" }, body: [HEALTH_MSG] }, 0],
];

for (const [name, options, taken] of edgeCases) {
  Edge(`${name}: the same answer and metrics both ways (taken: ${taken === 1 ? "yes" : "no"})`, async ({ c }) => {
    const r = await both(c, (s) => call(s, options));
    assert.is(r.direct.taken, taken, "taken by the shortcut");
    assert.not.ok(r.direct.result.timedOut, "answered");
    assert.equal(normalized(r.direct.result), normalized(r.routed.result), "the same answer");
    assert.equal(r.direct.metrics, r.routed.metrics, "the same metrics");
  });
}

Edge("CONNECT reaches the compat layer (405), as before", async ({ c }) => {
  const r = await both(c, async (s) => {
    const stream = s.request({ ":method": "CONNECT", ":authority": "127.0.0.1:1" });
    stream.on("error", () => {});
    const status = await within(2000, "CONNECT answer", new Promise<number>((resolve) => stream.on("response", (h) => resolve(Number(h[":status"])))));
    stream.close();
    return status;
  });
  assert.equal([r.direct.result, r.direct.taken, r.routed.result], [405, 0, 405]);
});

// A minimal raw HTTP/2 client: HEADERS without `:authority` or `host` (node's client always sends one).

/** The frames the server sent on stream 1 (type:flags, DATA payloads, RST code), and whether a GOAWAY came. */
function rawCall(port: number, fields: [string, string][], body: Buffer): Promise<{ frames: string[]; data: string; goaway: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    const frames: string[] = [];
    let data = "";
    let goaway = false;
    let buf = Buffer.alloc(0);
    const done = () => {
      socket.destroy();
      resolve({ frames, data, goaway });
    };
    const timer = setTimeout(done, 2000);
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      resolve({ frames, data, goaway });
    });
    socket.on("data", (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      while (buf.length >= 9) {
        const len = buf.readUIntBE(0, 3);
        if (buf.length < 9 + len) break;
        const type = buf[3]!;
        const flags = buf[4]!;
        const id = buf.readUInt32BE(5) & 0x7fffffff;
        const payload = buf.subarray(9, 9 + len);
        buf = buf.subarray(9 + len);
        if (type === 4 && (flags & 1) === 0) socket.write(h2Frame(4, 1, 0, Buffer.alloc(0)));
        if (type === 7) goaway = true;
        if (id !== 1) continue;
        frames.push(type === 3 ? `RST_STREAM ${payload.readUInt32BE(0)}` : `${type}:${flags & 1}`);
        if (type === 0) data += payload.toString("hex");
        if (type === 3 || ((type === 0 || type === 1) && (flags & 1) === 1)) {
          clearTimeout(timer);
          done();
          return;
        }
      }
    });
    socket.write(
      Buffer.concat([
        Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1"),
        h2Frame(4, 0, 0, Buffer.alloc(0)),
        h2Frame(1, 0x4, 1, headerBlock(fields)),
        h2Frame(0, 0x1, 1, body),
      ]),
    );
  });
}

Edge("neither :authority nor Host: reset by nghttp2 (PROTOCOL_ERROR) alike both ways, never offered to the shortcut", async ({ c }) => {
  const fields: [string, string][] = [
    [":method", "POST"],
    [":scheme", "http"],
    [":path", AUTHORIZE],
    ["content-type", "application/grpc"],
    ["te", "trailers"],
  ];
  const before = c.taken;
  const direct = await rawCall(c.server.port, fields, AUTHZ_MSG);
  const taken = c.taken - before;
  c.direct(false);
  let routed;
  try {
    routed = await rawCall(c.server.port, fields, AUTHZ_MSG);
  } finally {
    c.direct(true);
  }
  // nghttp2 refuses the stream (RST_STREAM PROTOCOL_ERROR) before node emits it: nothing to take.
  assert.is(taken, 0, "not taken");
  assert.equal(direct, { frames: ["RST_STREAM 1"], data: "", goaway: false });
  assert.equal(direct, routed);
});

Edge.run();
