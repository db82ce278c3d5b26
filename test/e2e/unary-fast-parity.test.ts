/**
 * Hostile calls on the unary gRPC fast path of the h2c shortcut
 * (src/gateway/rpc/unary.ts, `serveUnary`/`readBody`/`bodyAfter` in
 * src/gateway/rpc/direct.ts). Its promise: for any call, the answer on the
 * wire and the implementation's side effects are those Connect's gRPC
 * handler would produce. Each test builds two bare node:http2 servers over
 * the same service with `createDirectRpc`, one with the `unary` map of
 * `recordingRouter` (the fast path) and one without it (Connect's handler
 * serves every call on the same shortcut), sends both the same call and
 * compares.
 */
import http2 from "node:http2";
import { create, toBinary, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { isDualProtocolServer, type DualProtocolServer } from "../../src/gateway/server.js";
import { httpRequest, startErplink } from "../../test-support/e2e.js";
import { Exposition } from "../../test-support/metrics.js";
import { grpcCallHeaders, rawData, rawHeaders, rawRst, rawSend } from "../../test-support/raw-h2.js";
import {
  AuthorizationService,
  type AuthorizeRequest,
  AuthorizeRequestSchema,
  AuthorizeResponseSchema,
} from "../../src/gen/erplink/authz/v1/authorization_pb.js";
import { envelope, type PairServer, startShortcut, strip } from "../../test-support/shortcut-pair.js";

const PATH = `/${AuthorizationService.typeName}/${AuthorizationService.method.authorize.name}`;
const READ_MAX_BYTES = 600;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ------------------------------------------------------------------ servers

type Impl = (req: AuthorizeRequest, ctx: HandlerContext) => unknown;

type Server = PairServer;

interface StartOptions {
  readonly interceptors?: Interceptor[];
  /** Service options given to `router.service` (the third argument). */
  readonly serviceOptions?: Record<string, unknown>;
}

function start(fast: boolean, impl: Impl, opts: StartOptions = {}): Promise<Server> {
  return startShortcut(fast, {
    router: () => ({ interceptors: opts.interceptors ?? [], readMaxBytes: READ_MAX_BYTES, acceptCompression: [compressionGzip, compressionBrotli] }),
    routes: (router, seen) =>
      router.service(
        AuthorizationService,
        {
          authorize: (req: AuthorizeRequest, ctx: HandlerContext) => {
            seen.calls.push(JSON.stringify(toJson(AuthorizeRequestSchema, req)));
            return impl(req, ctx);
          },
        } as never,
        opts.serviceOptions as never,
      ),
  });
}

/** Runs `body` against a fast-path server and a Connect-only server over the same implementation. */
async function both<T>(impl: Impl, body: (s: Server) => Promise<T>, opts: StartOptions = {}): Promise<{ fast: T; connect: T; servers: [Server, Server] }> {
  const f = await start(true, impl, opts);
  const c = await start(false, impl, opts);
  try {
    const fast = await body(f);
    const connect = await body(c);
    return { fast, connect, servers: [f, c] };
  } finally {
    await f.close();
    await c.close();
  }
}

// ------------------------------------------------------------------ clients

function request(fields: Omit<Partial<AuthorizeRequest>, "$typeName" | "$unknown"> = {}): Buffer {
  return envelope(0, toBinary(AuthorizeRequestSchema, create(AuthorizeRequestSchema, { instance: "plain", ...fields })));
}

interface Answer {
  headers: Record<string, unknown>;
  data: string;
  trailers: Record<string, unknown> | undefined;
  rstCode: number;
  /** ms from the request to the response headers (-1: none). */
  headersAt: number;
}

interface Send {
  readonly headers?: http2.OutgoingHttpHeaders;
  /** Each written separately, `gapMs` apart. */
  readonly chunks: Buffer[];
  readonly gapMs?: number;
  /** Leave the client's side open (no END_STREAM). */
  readonly open?: boolean;
  /** Client trailers instead of a plain end. */
  readonly trailers?: http2.OutgoingHttpHeaders;
  /** Reset the stream with this code after `resetAfterMs`. */
  readonly reset?: { code: number; afterMs: number };
  /** Give up (reset CANCEL) after this long; the answer so far is returned. */
  readonly timeoutMs?: number;
}

function send(session: http2.ClientHttp2Session, call: Send): Promise<Answer> {
  return new Promise((resolve) => {
    const started = Date.now();
    const stream = session.request(
      { ":method": "POST", ":path": PATH, "content-type": "application/grpc", te: "trailers", ...call.headers },
      { endStream: call.chunks.length === 0 && call.open !== true && call.trailers === undefined, waitForTrailers: call.trailers !== undefined },
    );
    const answer: Answer = { headers: {}, data: "", trailers: undefined, rstCode: -1, headersAt: -1 };
    const data: Buffer[] = [];
    stream.on("response", (h) => {
      answer.headers = strip(h);
      answer.headersAt = Date.now() - started;
    });
    stream.on("trailers", (t) => (answer.trailers = strip(t)));
    stream.on("data", (d: Buffer) => data.push(d));
    stream.on("error", () => {});
    if (call.trailers !== undefined) stream.on("wantTrailers", () => stream.sendTrailers(call.trailers!));
    const timer = setTimeout(() => stream.close(http2.constants.NGHTTP2_CANCEL), call.timeoutMs ?? 3000);
    if (call.reset !== undefined) setTimeout(() => stream.close(call.reset!.code), call.reset.afterMs);
    stream.on("close", () => {
      clearTimeout(timer);
      answer.data = Buffer.concat(data).toString("hex");
      answer.rstCode = stream.rstCode ?? -1;
      resolve(answer);
    });
    void (async () => {
      for (const [i, chunk] of call.chunks.entries()) {
        if (i > 0 && call.gapMs !== undefined) await sleep(call.gapMs);
        if (stream.destroyed) return;
        if (i === call.chunks.length - 1 && call.open !== true) stream.end(chunk);
        else stream.write(chunk);
      }
      if (call.chunks.length === 0 && call.trailers !== undefined) stream.end();
    })();
  });
}

/** An answer without its timing. */
function wire(a: Answer): Omit<Answer, "headersAt"> {
  const { headersAt: _, ...rest } = a;
  return rest;
}

/** Waits until `cond` holds (at most ~1 s). */
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await sleep(5);
}

// ------------------------------------------------------------------ raw HTTP/2 (frames as written)

const callHeaders = (port: number): [string, string][] => grpcCallHeaders(port, PATH);

// ------------------------------------------------------------------ tests

const test = suite("unary fast path: the same answers and side effects as Connect's handler");

const plainImpl: Impl = (req) => ({ keyId: req.instance });
const MESSAGE = request();

/** Sends `call` to both servers and returns what each saw (answers, implementation runs, reports, failures, handovers). */
async function compare(impl: Impl, call: Send, opts: StartOptions = {}) {
  const r = await both(
    impl,
    async (s) => {
      const answer = await send(s.session, call);
      await until(() => s.seen.reported.length > 0);
      await sleep(5);
      return { answer, calls: [...s.seen.calls], reported: [...s.seen.reported], failed: [...s.seen.failed], connect: s.seen.connect };
    },
    opts,
  );
  return r;
}

// ============================================================ divergences

test("a call reset (CANCEL or NO_ERROR) after its whole message but before END_STREAM never runs the implementation, as with Connect", async () => {
  const r = await both(plainImpl, async (s) => {
    const runs: Record<string, number> = {};
    for (const [name, code] of [
      ["CANCEL", http2.constants.NGHTTP2_CANCEL],
      ["NO_ERROR", http2.constants.NGHTTP2_NO_ERROR],
    ] as const) {
      const before = s.seen.calls.length;
      for (let i = 0; i < 5; i++) {
        // HEADERS, DATA (the whole message, no END_STREAM), RST_STREAM: a client cancelling before it half-closed.
        await rawSend(s.port, Buffer.concat([rawHeaders(1, callHeaders(s.port), false), rawData(1, MESSAGE, false), rawRst(1, code)]), 20);
      }
      await sleep(20);
      runs[name] = s.seen.calls.length - before;
      // The reset in a later packet, after the server has read the message.
      const before2 = s.seen.calls.length;
      for (let i = 0; i < 3; i++) {
        await rawSend(s.port, Buffer.concat([rawHeaders(1, callHeaders(s.port), false), rawData(1, MESSAGE, false)]), 20, { afterMs: 30, bytes: rawRst(1, code) });
      }
      await sleep(20);
      runs[`${name} later`] = s.seen.calls.length - before2;
    }
    return { runs, reported: s.seen.reported.length, failed: s.seen.failed };
  });
  assert.equal(r.connect, { runs: { CANCEL: 0, "CANCEL later": 0, NO_ERROR: 0, "NO_ERROR later": 0 }, reported: 16, failed: [] }, "Connect's handler");
  assert.equal(r.fast, r.connect, "the fast path runs the implementation of a call its client cancelled");
});

test("the deadline passes while the body is still coming: the implementation gets an aborted signal (DEADLINE_EXCEEDED), as from Connect's handler", async () => {
  // An implementation that honours its signal, as Connect's docs ask.
  const impl: Impl = (req, ctx) => {
    if (ctx.signal.aborted) throw ConnectError.from(ctx.signal.reason);
    return { keyId: req.instance };
  };
  const r = await both(impl, async (s) => wire(await send(s.session, { headers: { "grpc-timeout": "20m" }, chunks: [Buffer.alloc(0), MESSAGE], gapMs: 80 })));
  assert.equal(r.connect.trailers?.["grpc-status"], String(Code.DeadlineExceeded), "Connect: deadline_exceeded");
  assert.equal(r.fast, r.connect, "the same answer");
});

test("the handler's signal is aborted once the call is answered (or failed), as by Connect", async () => {
  const events: string[] = [];
  const impl: Impl = (req, ctx) => {
    ctx.signal.addEventListener("abort", () => events.push(`${req.instance}: ${(ctx.signal.reason as Error)?.name ?? String(ctx.signal.reason)}`), { once: true });
    if (req.instance === "fail") throw new ConnectError("no", Code.PermissionDenied);
    return { keyId: req.instance };
  };
  const r = await both(impl, async (s) => {
    events.length = 0;
    await send(s.session, { chunks: [request({ instance: "ok" })] });
    await send(s.session, { chunks: [request({ instance: "fail" })] });
    await sleep(20);
    return [...events];
  });
  assert.equal(r.connect, ["ok: AbortError", "fail: ConnectError"], "Connect aborts the context after the answer, with the error if one");
  assert.equal(r.fast, r.connect, "the implementation's abort listeners (cleanup of work it started) never run on the fast path");
});

test("an implementation that throws `undefined` is answered grpc-status 0 without a message, as by Connect", async () => {
  const impl: Impl = () => {
    throw undefined;
  };
  const r = await compare(impl, { chunks: [MESSAGE] });
  assert.equal(r.connect.answer.trailers, { "grpc-status": "0" }, "Connect's transformCatchFinally sets no status for an undefined error");
  assert.equal(r.connect.answer.data, "");
  assert.equal(wire(r.fast.answer), wire(r.connect.answer), "the same answer");
});

test("ctx.timeoutMs() with a sub-millisecond grpc-timeout is whole milliseconds (a Date), as with Connect", async () => {
  const impl: Impl = (_req, ctx) => ({ keyId: `integer=${Number.isInteger(ctx.timeoutMs())}` });
  const r = await both(impl, async (s) => (await send(s.session, { headers: { "grpc-timeout": "1500500u" }, chunks: [MESSAGE] })).data);
  const integer = envelope(0, toBinary(AuthorizeResponseSchema, create(AuthorizeResponseSchema, { keyId: "integer=true" }))).toString("hex");
  assert.is(r.connect, integer, "Connect: new Date(now + 1500.5 ms).getTime() - now");
  assert.is(r.fast, r.connect, "the fast path: now + 1500.5 - now, never rounded");
});

test("recordingRouter validates merged service options as Connect's handler factory does (explicit undefined acceptCompression / compressMinBytes)", async () => {
  const big: Impl = (req) => ({ keyId: req.instance, message: "m".repeat(2000) });
  // acceptCompression: undefined → Connect []; the fast path throws a TypeError outside answerUnary's try (logged via `failed`, INTERNAL).
  const a = await compare(big, { headers: { "grpc-accept-encoding": "gzip" }, chunks: [MESSAGE] }, { serviceOptions: { acceptCompression: undefined } });
  assert.equal(a.connect.failed, []);
  assert.equal(a.connect.answer.trailers, { "grpc-status": "0" });
  const short = (x: typeof a.fast) => ({ data: x.answer.data.slice(0, 16), trailers: x.answer.trailers, failed: x.failed });
  assert.equal(short(a.fast), short(a.connect), "acceptCompression: undefined");
});

test("service option compressMinBytes: undefined: a 2 KB answer is compressed (default 1024), as by Connect", async () => {
  const big: Impl = (req) => ({ keyId: req.instance, message: "m".repeat(2000) });
  const short = (x: { answer: Answer; failed: string[] }) => ({ data: x.answer.data.slice(0, 16), trailers: x.answer.trailers, failed: x.failed });
  // compressMinBytes: undefined → Connect 1024 (gzip answer, flag 1); the fast path never compresses.
  const b = await compare(big, { headers: { "grpc-accept-encoding": "gzip" }, chunks: [MESSAGE] }, { serviceOptions: { compressMinBytes: undefined } });
  assert.is(b.connect.answer.data.slice(0, 2), "01", "Connect compresses the 2 KB answer");
  assert.equal(short(b.fast), short(b.connect), "compressMinBytes: undefined");
});

test("a shutdownSignal in the router's or a service's options is linked into the handler signal, as by Connect", async () => {
  const shutdown = new AbortController();
  shutdown.abort(new ConnectError("shutting down", Code.Unavailable));
  const impl: Impl = (req, ctx) => {
    if (ctx.signal.aborted) throw ConnectError.from(ctx.signal.reason);
    return { keyId: req.instance };
  };
  const r = await both(impl, async (s) => wire(await send(s.session, { chunks: [MESSAGE] })).trailers, { serviceOptions: { shutdownSignal: shutdown.signal } });
  assert.equal(r.connect, { "grpc-status": String(Code.Unavailable), "grpc-message": "shutting%20down" });
  assert.equal(r.fast, r.connect);
});

test("the implementation's context has what Connect's has (abort, requestSignal, shutdownSignal)", async () => {
  const impl: Impl = (_req, ctx) => {
    const c = ctx as unknown as Record<string, unknown>;
    return { keyId: ["abort", "requestSignal", "shutdownSignal"].filter((k) => k in c).join(",") };
  };
  const r = await both(impl, async (s) => (await send(s.session, { chunks: [MESSAGE] })).data);
  assert.is(r.fast, r.connect);
});


test("gateway: an Authorize call cancelled before END_STREAM is neither decided nor counted (erplink_authorization_decisions_total) with the fast path, as through Fastify/Connect", async () => {
  const server = await startErplink();
  try {
    const dual = server.erplink.app.server as unknown as DualProtocolServer;
    assert.ok(isDualProtocolServer(dual));
    const original = dual.http2Shortcut()!;
    let taken = 0;
    const shortcut: typeof original = (stream, headers) => {
      const took = original(stream, headers);
      if (took) taken++;
      return took;
    };
    dual.setHttp2Shortcut(shortcut);
    const decisions = async () => {
      await sleep(30);
      const res = await httpRequest(`${server.baseUrl}/metrics`, { headers: { connection: "close" } });
      const family = new Exposition(res.text).family("erplink_authorization_decisions_total");
      return family.metrics.reduce((n, m) => n + Number(m.value), 0);
    };
    const message = request({ apiKey: "erpl_not_a_key", instance: "prod", service: "API_BP", entity: "A_BusinessPartner", operation: 1 });
    const cancelled = async () => {
      const before = await decisions();
      for (let i = 0; i < 3; i++) {
        await rawSend(server.port, Buffer.concat([rawHeaders(1, callHeaders(server.port), false), rawData(1, message, false), rawRst(1, http2.constants.NGHTTP2_CANCEL)]), 20);
      }
      return (await decisions()) - before;
    };
    {
      const before = await decisions();
      await rawSend(server.port, Buffer.concat([rawHeaders(1, callHeaders(server.port), false), rawData(1, message, true)]), 50);
      assert.is((await decisions()) - before, 1, "a plain call is decided once");
    }
    const direct = await cancelled();
    assert.is(taken, 4, "the calls took the shortcut");
    dual.setHttp2Shortcut(undefined);
    const routed = await cancelled();
    dual.setHttp2Shortcut(shortcut);
    assert.is(routed, 0, "through Fastify and Connect's handler: never decided");
    assert.is(direct, routed, "with the fast path: each cancelled call decided (a rate-limit token and a decision counted, for a call nobody will read)");
  } finally {
    await server.close();
  }
});

// ============================================================ probes that held

/** Calls on the edge of "one plain message", each sent to both. */
const EDGE_CALLS: [string, Send, "fast" | "connect"][] = [
  ["prefix split 1+1+1+1+1, then the message, separate DATA frames", { chunks: [...[...MESSAGE.subarray(0, 5)].map((b) => Buffer.from([b])), MESSAGE.subarray(5)], gapMs: 3 }, "fast"],
  ["prefix split 4+1 with the message", { chunks: [MESSAGE.subarray(0, 4), MESSAGE.subarray(4)], gapMs: 3 }, "fast"],
  ["one byte per DATA frame", { chunks: [...MESSAGE].map((b) => Buffer.from([b])), gapMs: 1 }, "fast"],
  ["zero-length message", { chunks: [envelope(0, Buffer.alloc(0))] }, "fast"],
  ["zero-length message, prefix split 2+3", { chunks: [Buffer.from([0, 0]), Buffer.from([0, 0, 0])], gapMs: 3 }, "fast"],
  ["declared length = readMaxBytes (a message of that size that parses: unknown field)", { chunks: [envelope(0, Buffer.concat([Buffer.from([0xfa, 0x01, 0xd4, 0x04]), Buffer.alloc(READ_MAX_BYTES - 4, 0x61)]))] }, "fast"],
  ["declared length = readMaxBytes + 1 (prefix only, client keeps open)", { chunks: [envelope(0, Buffer.alloc(0), READ_MAX_BYTES + 1)], open: true, timeoutMs: 300 }, "connect"],
  ["declared 0xffffffff", { chunks: [envelope(0, Buffer.alloc(0), 0xffffffff)], open: true, timeoutMs: 300 }, "connect"],
  ["flags 0x02", { chunks: [envelope(2, MESSAGE.subarray(5))] }, "connect"],
  ["flags 0x80", { chunks: [envelope(0x80, MESSAGE.subarray(5))] }, "connect"],
  ["flags 0x01 (compressed) without grpc-encoding", { chunks: [envelope(1, MESSAGE.subarray(5))] }, "connect"],
  ["1 extra byte after the message", { chunks: [Buffer.concat([MESSAGE, Buffer.from([0])])] }, "connect"],
  ["4 extra bytes after the message, separate frame", { chunks: [MESSAGE, Buffer.from([0, 0, 0, 0])], gapMs: 3 }, "connect"],
  ["two messages", { chunks: [MESSAGE, MESSAGE], gapMs: 3 }, "connect"],
  ["two messages, client keeps open (Connect answers before the end)", { chunks: [MESSAGE, MESSAGE], gapMs: 3, open: true, timeoutMs: 400 }, "connect"],
  ["truncated message", { chunks: [MESSAGE.subarray(0, MESSAGE.length - 1)] }, "connect"],
  ["prefix only (4 bytes)", { chunks: [MESSAGE.subarray(0, 4)] }, "connect"],
  ["bytes that do not parse", { chunks: [envelope(0, Buffer.from([0xff, 0xff, 0xff]))] }, "connect"],
  ["END_STREAM on the headers", { chunks: [] }, "connect"],
  ["client trailers after the message", { chunks: [MESSAGE], trailers: { "x-client-trailer": "t", "grpc-status": "0" } }, "fast"],
  ["grpc-encoding identity", { headers: { "grpc-encoding": "identity" }, chunks: [MESSAGE] }, "fast"],
  ["grpc-encoding gzip with an uncompressed envelope", { headers: { "grpc-encoding": "gzip" }, chunks: [MESSAGE] }, "connect"],
  ["content-type application/grpc+proto", { headers: { "content-type": "application/grpc+proto" }, chunks: [MESSAGE] }, "fast"],
  ["content-type application/grpc;charset=utf-8", { headers: { "content-type": "application/grpc;charset=utf-8" }, chunks: [MESSAGE] }, "connect"],
  ["content-type application/grpc+json", { headers: { "content-type": "application/grpc+json" }, chunks: [Buffer.from([0, 0, 0, 0, 2, 0x7b, 0x7d])] }, "connect"],
  ["grpc-timeout 0n", { headers: { "grpc-timeout": "0n" }, chunks: [MESSAGE] }, "connect"],
  ["grpc-timeout 1n", { headers: { "grpc-timeout": "1n" }, chunks: [MESSAGE] }, "fast"],
  ["grpc-timeout 99H", { headers: { "grpc-timeout": "99H" }, chunks: [MESSAGE] }, "fast"],
  ["grpc-timeout 100H", { headers: { "grpc-timeout": "100H" }, chunks: [MESSAGE] }, "connect"],
  ["grpc-timeout 99999999m", { headers: { "grpc-timeout": "99999999m" }, chunks: [MESSAGE] }, "fast"],
  ["grpc-timeout 999999999m (malformed)", { headers: { "grpc-timeout": "999999999m" }, chunks: [MESSAGE] }, "connect"],
  ["grpc-timeout -1S", { headers: { "grpc-timeout": "-1S" }, chunks: [MESSAGE] }, "connect"],
  ["grpc-timeout 1s (lower-case unit)", { headers: { "grpc-timeout": "1s" }, chunks: [MESSAGE] }, "connect"],
  ["huge grpc-accept-encoding", { headers: { "grpc-accept-encoding": `${"x,".repeat(4000)}gzip` }, chunks: [MESSAGE] }, "fast"],
  ["grpc-accept-encoding with spaces and br", { headers: { "grpc-accept-encoding": " identity , br " }, chunks: [request({ entity: "e".repeat(500) })] }, "fast"],
];

for (const [name, call, way] of EDGE_CALLS) {
  test(`probe: ${name}: the same answer, runs, reports (${way === "fast" ? "answered by the fast path" : "handed to Connect"})`, async () => {
    const impl: Impl = (req, ctx) => ({ keyId: req.instance, message: `${req.entity.repeat(3)} ${ctx.timeoutMs() === undefined ? "-" : "deadline"} ${ctx.signal.aborted}` });
    const r = await compare(impl, call);
    assert.equal(r.fast.answer.headers, r.connect.answer.headers, "headers");
    assert.equal(r.fast.answer.data, r.connect.answer.data, "data");
    assert.equal(r.fast.answer.trailers, r.connect.answer.trailers, "trailers");
    assert.equal(r.fast.answer.rstCode, r.connect.answer.rstCode, "reset code");
    assert.equal(r.fast.calls, r.connect.calls, "implementation runs");
    assert.equal(r.fast.reported, r.connect.reported, "reports");
    assert.equal(r.fast.failed, [], "nothing failed");
    assert.equal(r.connect.failed, []);
    assert.is(r.fast.connect, way === "fast" ? 0 : 1, "which way the fast path went");
  });
}

test("the answer waits for END_STREAM, on both (timing)", async () => {
  const r = await both(plainImpl, async (s) => {
    const a = await send(s.session, { chunks: [MESSAGE, Buffer.alloc(0)], gapMs: 150 });
    return { at: a.headersAt >= 140, status: a.trailers?.["grpc-status"], runs: s.seen.calls.length };
  });
  assert.equal(r.fast, { at: true, status: "0", runs: 1 });
  assert.equal(r.fast, r.connect);
});

test("a client that never ends its side gets nothing on both; its reset is reported once; the implementation never runs", async () => {
  for (const code of [http2.constants.NGHTTP2_CANCEL, http2.constants.NGHTTP2_INTERNAL_ERROR, http2.constants.NGHTTP2_REFUSED_STREAM]) {
    const r = await both(plainImpl, async (s) => {
      const a = await send(s.session, { headers: { "grpc-timeout": "50m" }, chunks: [MESSAGE.subarray(0, 7)], open: true, reset: { code, afterMs: 200 } });
      await until(() => s.seen.reported.length > 0);
      return { headers: a.headers, runs: s.seen.calls.length, reported: s.seen.reported, failed: s.seen.failed };
    });
    assert.equal(r.connect, { headers: {}, runs: 0, reported: [200], failed: [] });
    assert.equal(r.fast, r.connect, `code ${code}`);
  }
});

test("a reset at each moment of the body (after the headers, mid-prefix, mid-message): the same runs and reports", async () => {
  const cuts = [0, 3, 5, 8];
  const r = await both(plainImpl, async (s) => {
    for (const cut of cuts) {
      const bytes = Buffer.concat([rawHeaders(1, callHeaders(s.port), false), ...(cut > 0 ? [rawData(1, MESSAGE.subarray(0, cut), false)] : []), rawRst(1, 8)]);
      await rawSend(s.port, bytes, 15);
    }
    await until(() => s.seen.reported.length === cuts.length);
    return { runs: s.seen.calls.length, reported: s.seen.reported, failed: s.seen.failed };
  });
  assert.equal(r.connect, { runs: 0, reported: [200, 200, 200, 200], failed: [] });
  assert.equal(r.fast, r.connect);
});

test("a big answer to a client with a tiny flow-control window that reads slowly: the same bytes, one report", async () => {
  const impl: Impl = (req) => ({ keyId: req.instance, message: "z".repeat(200_000) });
  const r = await both(impl, async (s) => {
    const session = http2.connect(`http://127.0.0.1:${s.port}`, { settings: { initialWindowSize: 1024 } });
    session.on("error", () => {});
    try {
      const stream = session.request({ ":method": "POST", ":path": PATH, "content-type": "application/grpc", te: "trailers" });
      const data: Buffer[] = [];
      let trailers: Record<string, unknown> | undefined;
      stream.on("trailers", (t) => (trailers = strip(t)));
      stream.on("data", (d: Buffer) => {
        data.push(d);
        stream.pause();
        setTimeout(() => stream.resume(), 1);
      });
      stream.end(MESSAGE);
      await new Promise((resolve) => stream.on("close", resolve));
      await until(() => s.seen.reported.length > 0);
      return { bytes: Buffer.concat(data).length, trailers, reported: s.seen.reported, failed: s.seen.failed };
    } finally {
      session.destroy();
    }
  });
  assert.equal(r.fast, r.connect);
  assert.is(r.fast.bytes, r.connect.bytes);
});

test("a handler that sets a header Node refuses (connection): logged once via `failed`, INTERNAL, on both", async () => {
  const impl: Impl = (_req, ctx) => {
    ctx.responseHeader.set("connection", "close");
    return {};
  };
  const r = await compare(impl, { chunks: [MESSAGE] });
  assert.equal(r.connect.answer.trailers, { "grpc-status": "13", "grpc-message": "internal%20error" });
  assert.equal(r.connect.failed.length, 1);
  assert.equal(wire(r.fast.answer), wire(r.connect.answer));
  assert.equal(r.fast.failed.length, 1);
  assert.equal(r.fast.reported, r.connect.reported);
});

test("a flood of 300 calls (plain, with 99H deadlines, resets at random points, extra bytes): each reported once, nothing failed, no timer or listener left", async () => {
  const s = await start(true, async (req) => {
    if (req.instance === "slow") await sleep(5);
    return { keyId: req.instance };
  });
  try {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    await send(s.session, { chunks: [MESSAGE] });
    await until(() => s.seen.reported.length === 1);
    const baseline = timers();
    const N = 300;
    await Promise.all(
      Array.from({ length: N }, (_, i) => {
        const kind = i % 5;
        const msg = request({ instance: i % 2 === 0 ? "slow" : "plain" });
        if (kind === 0) return send(s.session, { headers: { "grpc-timeout": "99H" }, chunks: [msg] });
        if (kind === 1) return send(s.session, { headers: { "grpc-timeout": "99H" }, chunks: [msg.subarray(0, 3)], open: true, reset: { code: 8, afterMs: 5 } });
        if (kind === 2) return send(s.session, { headers: { "grpc-timeout": "99H" }, chunks: [msg], reset: { code: 8, afterMs: 2 } });
        if (kind === 3) return send(s.session, { chunks: [Buffer.concat([msg, Buffer.from([0, 0])])] });
        return send(s.session, { chunks: [msg], open: true, reset: { code: 0, afterMs: 10 } });
      }),
    );
    await until(() => s.seen.reported.length === N + 1);
    await sleep(20);
    assert.is(s.seen.reported.length, N + 1, "each call reported once");
    assert.equal(s.seen.failed, []);
    assert.ok(timers() <= baseline, `timers: ${timers()} after, ${baseline} before`);
  } finally {
    await s.close();
  }
});

test("fast-check: one message cut into DATA frames anywhere, with gaps, plus optional trailing bytes: the same answer both ways", async () => {
  const fast = await start(true, plainImpl);
  const connect = await start(false, plainImpl);
  try {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ maxLength: 30 }),
        fc.array(fc.nat(), { maxLength: 5 }),
        fc.option(fc.uint8Array({ minLength: 1, maxLength: 9 }), { nil: undefined }),
        async (instance, cuts, extra) => {
          const b = Buffer.concat([request({ instance }), ...(extra === undefined ? [] : [Buffer.from(extra)])]);
          const at = [...new Set(cuts.map((c) => c % b.length).filter((c) => c > 0))].sort((x, y) => x - y);
          const chunks: Buffer[] = [];
          let from = 0;
          for (const c of [...at, b.length]) {
            chunks.push(b.subarray(from, c));
            from = c;
          }
          const [a, c] = await Promise.all([send(fast.session, { chunks, gapMs: 1 }), send(connect.session, { chunks, gapMs: 1 })]);
          assert.equal(a, { ...c, headersAt: a.headersAt });
        },
      ),
      { numRuns: 60, seed: 42 },
    );
    await sleep(10);
    assert.equal(fast.seen.calls, connect.seen.calls);
    assert.equal(fast.seen.failed, []);
  } finally {
    await fast.close();
    await connect.close();
  }
});

test.run();
