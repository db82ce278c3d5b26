/**
 * The unary gRPC fast path of the h2c shortcut (src/gateway/rpc/unary.ts;
 * `serveUnary`, `readBody`, `BodyReader`, `bodyAfter` in
 * src/gateway/rpc/direct.ts) keeps the lifecycle of Connect's handler: the
 * handler's signal and abort listeners, deadlines across a hand-over to
 * Connect, resets and torn-down connections. Like
 * test/e2e/unary-fast-parity.test.ts (whose cases are not repeated here),
 * each test starts two bare node:http2 servers over the same service with
 * `createDirectRpc`: one with the `unary` map of `recordingRouter` (the fast
 * path), one without it (Connect's gRPC handler serves every call on the
 * same shortcut), sends both the same call and compares what the client and
 * the implementation saw.
 *
 * Each test asserts Connect's side first, exactly.
 * UNARY_FAST_SANITY=1 gives the "fast" servers no `unary` map (Connect's
 * handler on both sides): every test then passes, which shows that each
 * failure comes from the fast path.
 */
import http2 from "node:http2";
import { setTimeout as sleepSignal } from "node:timers/promises";
import { create, toBinary, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { isDualProtocolServer, type DualProtocolServer } from "../../src/gateway/server.js";
import { Health, HealthCheckRequestSchema } from "../../src/gen/grpc/health/v1/health_pb.js";
import { httpRequest, startErplink } from "../../test-support/e2e.js";
import { Exposition } from "../../test-support/metrics.js";
import { grpcCallHeaders, rawData, rawHeaders, rawRst, rawSend } from "../../test-support/raw-h2.js";
import { AuthorizationService, type AuthorizeRequest, AuthorizeRequestSchema, AuthorizeResponseSchema } from "../../src/gen/erplink/authz/v1/authorization_pb.js";
import { envelope, type PairSeen, type PairServer, startShortcut, strip } from "../../test-support/shortcut-pair.js";

const PATH = `/${AuthorizationService.typeName}/${AuthorizationService.method.authorize.name}`;
const READ_MAX_BYTES = 600;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ------------------------------------------------------------------ servers

type Impl = (req: AuthorizeRequest, ctx: HandlerContext) => unknown;

type Seen = PairSeen;
type Server = PairServer;

interface StartOptions {
  readonly interceptors?: (seen: Seen) => Interceptor[];
}

function start(fast: boolean, impl: (seen: Seen) => Impl, opts: StartOptions = {}): Promise<Server> {
  return startShortcut(fast && process.env.UNARY_FAST_SANITY === undefined, {
    router: (seen) => ({ interceptors: opts.interceptors?.(seen) ?? [], readMaxBytes: READ_MAX_BYTES, acceptCompression: [compressionGzip, compressionBrotli] }),
    routes: (router, seen) => {
      const run = impl(seen);
      router.service(AuthorizationService, {
        authorize: (req: AuthorizeRequest, ctx: HandlerContext) => {
          seen.calls.push(JSON.stringify(toJson(AuthorizeRequestSchema, req)));
          return run(req, ctx);
        },
      } as never);
    },
  });
}

/** Runs `body` against a fast-path server, then a Connect-only server, over the same implementation. */
async function both<T>(impl: (seen: Seen) => Impl, body: (s: Server) => Promise<T>, opts: StartOptions = {}): Promise<{ fast: T; connect: T }> {
  const f = await start(true, impl, opts);
  const c = await start(false, impl, opts);
  try {
    const fast = await body(f);
    const connect = await body(c);
    return { fast, connect };
  } finally {
    await f.close();
    await c.close();
  }
}

// ------------------------------------------------------------------ clients


function request(fields: Omit<Partial<AuthorizeRequest>, "$typeName" | "$unknown"> = {}): Buffer {
  return envelope(0, toBinary(AuthorizeRequestSchema, create(AuthorizeRequestSchema, { instance: "plain", ...fields })));
}

const MESSAGE = request();

interface Answer {
  headers: Record<string, unknown>;
  data: string;
  trailers: Record<string, unknown> | undefined;
  rstCode: number;
}

interface Send {
  readonly headers?: http2.OutgoingHttpHeaders;
  readonly chunks: Buffer[];
  readonly gapMs?: number;
  /** Wait this long after the headers before the first chunk. */
  readonly firstAfterMs?: number;
  readonly timeoutMs?: number;
}

function send(session: http2.ClientHttp2Session, call: Send): Promise<Answer> {
  return new Promise((resolve) => {
    const stream = session.request(
      { ":method": "POST", ":path": PATH, "content-type": "application/grpc", te: "trailers", ...call.headers },
      { endStream: call.chunks.length === 0 },
    );
    const answer: Answer = { headers: {}, data: "", trailers: undefined, rstCode: -1 };
    const data: Buffer[] = [];
    stream.on("response", (h) => (answer.headers = strip(h)));
    stream.on("trailers", (t) => (answer.trailers = strip(t)));
    stream.on("data", (d: Buffer) => data.push(d));
    stream.on("error", () => {});
    const timer = setTimeout(() => stream.close(http2.constants.NGHTTP2_CANCEL), call.timeoutMs ?? 3000);
    stream.on("close", () => {
      clearTimeout(timer);
      answer.data = Buffer.concat(data).toString("hex");
      answer.rstCode = stream.rstCode ?? -1;
      resolve(answer);
    });
    void (async () => {
      if (call.firstAfterMs !== undefined) await sleep(call.firstAfterMs);
      for (const [i, chunk] of call.chunks.entries()) {
        if (i > 0 && call.gapMs !== undefined) await sleep(call.gapMs);
        if (stream.destroyed) return;
        if (i === call.chunks.length - 1) stream.end(chunk);
        else stream.write(chunk);
      }
    })();
  });
}

/** Waits until `cond` holds (at most ~1 s). */
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await sleep(5);
}

function responseHex(fields: Record<string, unknown>): string {
  return envelope(0, toBinary(AuthorizeResponseSchema, create(AuthorizeResponseSchema, fields))).toString("hex");
}

const reasonOf = (r: unknown) => (r instanceof ConnectError ? `ConnectError(${Code[r.code]})` : r instanceof Error ? `${r.name}` : String(r));

// ------------------------------------------------------------------ raw HTTP/2 (frames as written; as in unary-fast-parity)

const callHeaders = (port: number, path = PATH, extra: [string, string][] = []): [string, string][] => grpcCallHeaders(port, path, extra);

// ------------------------------------------------------------------ tests

const test = suite("unary fast path: the lifecycle of Connect's handler");

test("the handler's signal is aborted at the end of a call even when no listener is attached at that instant: AbortSignal.any() dependents, `aborted` read later, work started after the method returned", async () => {
  const impl = (seen: Seen): Impl => (req, ctx) => {
    // A derived signal, as code that adds its own timeout writes it (AbortSignal.any registers no 'abort' listener on its sources).
    const derived = AbortSignal.any([ctx.signal, AbortSignal.timeout(60_000)]);
    derived.addEventListener("abort", () => seen.notes.push(`derived aborted: ${reasonOf(derived.reason)}`), { once: true });
    // Background work the method leaves running, which checks the call's signal before its side effect.
    setTimeout(() => seen.notes.push(`later: aborted=${ctx.signal.aborted}`), 30);
    // Background work that waits on the call's signal, started once the method has returned.
    setTimeout(() => {
      sleepSignal(200, undefined, { signal: ctx.signal }).then(
        () => seen.notes.push("background wait: ran to its end"),
        (e: unknown) => seen.notes.push(`background wait: ${reasonOf(e)}`),
      );
    }, 10);
    return { keyId: req.instance };
  };
  const r = await both(impl, async (s) => {
    const a = await send(s.session, { chunks: [MESSAGE] });
    await until(() => s.seen.notes.length >= 3);
    await sleep(20);
    return { trailers: a.trailers, notes: [...s.seen.notes].sort(), connect: s.seen.connect };
  });
  assert.equal(r.connect, {
    trailers: { "grpc-status": "0" },
    notes: ["background wait: AbortError", "derived aborted: AbortError", "later: aborted=true"],
    connect: 1,
  }, "Connect's handler aborts the context at the end of every call");
  assert.equal({ ...r.fast, connect: 1 }, r.connect, "the fast path leaves the signal live when nothing listened at the end");
});

test("the context's abort listeners run before the answer is written (an error's before the headers, a success's before the trailers), as with Connect, so what a listener adds to the answer is kept", async () => {
  const impl = (): Impl => (req, ctx) => {
    ctx.signal.addEventListener("abort", () => {
      ctx.responseTrailer.set("x-aborted", reasonOf(ctx.signal.reason));
      ctx.responseHeader.set("x-aborted-header", "1");
    });
    if (req.instance === "fail") throw new ConnectError("no", Code.PermissionDenied);
    return { keyId: req.instance };
  };
  const r = await both(impl, async (s) => {
    const ok = await send(s.session, { chunks: [request({ instance: "ok" })] });
    const fail = await send(s.session, { chunks: [request({ instance: "fail" })] });
    return { ok: [ok.headers, ok.trailers], fail: [fail.headers, fail.trailers] };
  });
  assert.equal(r.connect, {
    ok: [{ ":status": 200, "content-type": "application/grpc+proto" }, { "grpc-status": "0", "x-aborted": "AbortError" }],
    fail: [
      { ":status": 200, "content-type": "application/grpc+proto", "x-aborted-header": "1" },
      { "grpc-status": "7", "grpc-message": "no", "x-aborted": "ConnectError(PermissionDenied)" },
    ],
  });
  assert.equal(r.fast, r.connect);
});

test("the answer's headers are refused by Node (a header the method set): the handler's signal is aborted (with Node's error, or the method's own when it failed), as by Connect", async () => {
  const impl = (seen: Seen): Impl => (req, ctx) => {
    ctx.signal.addEventListener("abort", () => seen.notes.push(`${req.instance}: ${reasonOf(ctx.signal.reason)} ${(ctx.signal.reason as { code?: unknown })?.code ?? ""}`));
    ctx.responseHeader.set("connection", "close");
    if (req.instance === "fail") throw new ConnectError("no", Code.PermissionDenied);
    return {};
  };
  const r = await both(impl, async (s) => {
    const ok = await send(s.session, { chunks: [request({ instance: "ok" })] });
    const fail = await send(s.session, { chunks: [request({ instance: "fail" })] });
    await until(() => s.seen.reported.length === 2);
    await sleep(20);
    return { trailers: [ok.trailers, fail.trailers], notes: [...s.seen.notes], failed: s.seen.failed.length };
  });
  const internal = { "grpc-status": "13", "grpc-message": "internal%20error" };
  assert.equal(r.connect, {
    trailers: [internal, internal],
    notes: ["ok: TypeError ERR_HTTP2_INVALID_CONNECTION_HEADERS", "fail: ConnectError(PermissionDenied) 7"],
    failed: 2,
  });
  assert.equal(r.fast, r.connect);
});

test("a call handed to Connect mid-body (an envelope flag Connect ignores, 0x02) keeps the client's deadline: no fresh deadline from the hand-over, no live signal past it, no time left once it passed", async () => {
  const impl = (): Impl => (req, ctx) => {
    if (req.instance === "strict" && ctx.signal.aborted) throw ConnectError.from(ctx.signal.reason);
    return { keyId: req.instance, message: `aborted=${ctx.signal.aborted} left>0=${(ctx.timeoutMs() ?? 0) > 0}` };
  };
  const strict = request({ instance: "strict" });
  const flagged = envelope(2, strict.subarray(5));
  const lenient = envelope(2, MESSAGE.subarray(5));
  const r = await both(impl, async (s) => {
    // The deadline (100 ms) passes while the body is read; the prefix comes at ~250 ms, the message just after.
    const late = await send(s.session, { headers: { "grpc-timeout": "100m" }, chunks: [lenient.subarray(0, 5), lenient.subarray(5)], firstAfterMs: 250, gapMs: 5 });
    // The deadline (300 ms) runs from the headers. The envelope's prefix comes at ~200 ms (the fast path hands the call
    // to Connect there, whose own deadline then runs to ~500 ms), the message at ~400 ms: past the client's deadline.
    const a = await send(s.session, { headers: { "grpc-timeout": "300m" }, chunks: [flagged.subarray(0, 5), flagged.subarray(5)], firstAfterMs: 200, gapMs: 200 });
    return { late: late.data, data: a.data, trailers: a.trailers, runs: s.seen.calls.length, connect: s.seen.connect };
  });
  assert.equal(r.connect, {
    late: responseHex({ keyId: "plain", message: "aborted=true left>0=false" }),
    data: "",
    trailers: { "grpc-status": String(Code.DeadlineExceeded), "grpc-message": "the%20operation%20timed%20out" },
    runs: 2,
    connect: 2,
  });
  assert.equal(r.fast, r.connect);
});

test("fast-check: a call handed to Connect while more DATA frames of the same packet are in flight (flags 0x02/0x04/0x80, extra envelopes, cuts anywhere, an empty END_STREAM frame): the same bytes reach the method, the same answer", async () => {
  const impl = (): Impl => (req) => ({ keyId: req.instance, message: req.entity });
  const fast = await start(true, impl);
  const connect = await start(false, impl);
  try {
    let handed = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.string({ maxLength: 20 }),
        fc.string({ maxLength: 400 }),
        fc.constantFrom(0, 2, 4, 0x80),
        fc.array(fc.nat(), { maxLength: 8 }),
        fc.constantFrom<"none" | "second" | "partial" | "empty-end">("none", "second", "partial", "empty-end"),
        fc.boolean(),
        async (instance, entity, flags, cuts, tail, gap) => {
          const msg = request({ instance, entity });
          const b = Buffer.concat([envelope(flags, msg.subarray(5)), tail === "second" ? msg : tail === "partial" ? msg.subarray(0, 3) : Buffer.alloc(0)]);
          const at = [...new Set(cuts.map((c) => c % b.length).filter((c) => c > 0))].sort((x, y) => x - y);
          const chunks: Buffer[] = [];
          let from = 0;
          for (const c of [...at, b.length]) {
            chunks.push(b.subarray(from, c));
            from = c;
          }
          if (tail === "empty-end") chunks.push(Buffer.alloc(0));
          const before = fast.seen.connect;
          const call: Send = { chunks, gapMs: gap ? 1 : undefined };
          const [a, c] = [await send(fast.session, call), await send(connect.session, call)];
          handed += fast.seen.connect - before;
          assert.equal(a, c);
          assert.equal(fast.seen.calls, connect.seen.calls);
        },
      ),
      { numRuns: 120, seed: 7 },
    );
    assert.ok(handed > 30, `handed over: ${handed}`);
    assert.equal(fast.seen.failed, []);
  } finally {
    await fast.close();
    await connect.close();
  }
});

test("DATA with END_STREAM and RST_STREAM (CANCEL / NO_ERROR) in one packet, or the reset a little later: the method runs as often both ways", async () => {
  const r = await both(() => (req) => ({ keyId: req.instance }), async (s) => {
    const runs: Record<string, number> = {};
    for (const [name, code] of [
      ["CANCEL", http2.constants.NGHTTP2_CANCEL],
      ["NO_ERROR", http2.constants.NGHTTP2_NO_ERROR],
    ] as const) {
      let before = s.seen.calls.length;
      for (let i = 0; i < 4; i++) await rawSend(s.port, Buffer.concat([rawHeaders(1, callHeaders(s.port), false), rawData(1, MESSAGE, true), rawRst(1, code)]), 20);
      await sleep(20);
      runs[`${name} same packet`] = s.seen.calls.length - before;
      before = s.seen.calls.length;
      for (let i = 0; i < 2; i++) await rawSend(s.port, Buffer.concat([rawHeaders(1, callHeaders(s.port), false), rawData(1, MESSAGE, true)]), 20, { afterMs: 20, bytes: rawRst(1, code) });
      await sleep(20);
      runs[`${name} later`] = s.seen.calls.length - before;
    }
    await until(() => s.seen.reported.length === 12);
    return { runs, reported: s.seen.reported.length, failed: s.seen.failed };
  });
  assert.equal(r.connect, { runs: { "CANCEL same packet": 4, "CANCEL later": 2, "NO_ERROR same packet": 4, "NO_ERROR later": 2 }, reported: 12, failed: [] });
  assert.equal(r.fast, r.connect);
});

test("a call handed over (flag 0x02) whose END_STREAM and RST_STREAM come in one packet (whole or split envelope), or the reset later: the paused stream's buffered rest reaches Connect, the method runs as often both ways", async () => {
  const flagged = envelope(2, MESSAGE.subarray(5));
  const r = await both(() => (req) => ({ keyId: req.instance }), async (s) => {
    const runs: Record<string, number> = {};
    for (const [name, code] of [
      ["CANCEL", http2.constants.NGHTTP2_CANCEL],
      ["NO_ERROR", http2.constants.NGHTTP2_NO_ERROR],
    ] as const) {
      let before = s.seen.calls.length;
      for (let i = 0; i < 4; i++) await rawSend(s.port, Buffer.concat([rawHeaders(1, callHeaders(s.port), false), rawData(1, flagged, true), rawRst(1, code)]), 20);
      await sleep(20);
      runs[`${name} same packet`] = s.seen.calls.length - before;
      before = s.seen.calls.length;
      for (let i = 0; i < 4; i++) await rawSend(s.port, Buffer.concat([rawHeaders(1, callHeaders(s.port), false), rawData(1, flagged.subarray(0, 5), false), rawData(1, flagged.subarray(5), true), rawRst(1, code)]), 20);
      await sleep(20);
      runs[`${name} split, same packet`] = s.seen.calls.length - before;
      before = s.seen.calls.length;
      for (let i = 0; i < 2; i++) await rawSend(s.port, Buffer.concat([rawHeaders(1, callHeaders(s.port), false), rawData(1, flagged, true)]), 20, { afterMs: 20, bytes: rawRst(1, code) });
      await sleep(20);
      runs[`${name} later`] = s.seen.calls.length - before;
    }
    await until(() => s.seen.reported.length === 20);
    return { runs, reported: s.seen.reported.length, failed: s.seen.failed };
  });
  const all = { "same packet": 4, "split, same packet": 4, later: 2 };
  assert.equal(r.connect, { runs: Object.fromEntries(["CANCEL", "NO_ERROR"].flatMap((c) => Object.entries(all).map(([k, v]) => [`${c} ${k}`, v]))), reported: 20, failed: [] });
  assert.equal(r.fast, r.connect);
});

test("ctx.requestSignal is the request's signal (aborted only when the client goes away), as with Connect, not the handler's signal (aborted at the deadline and at the end of every call)", async () => {
  const impl = (seen: Seen): Impl => async (req, ctx) => {
    const requestSignal = (ctx as unknown as { requestSignal: AbortSignal }).requestSignal;
    requestSignal.addEventListener("abort", () => seen.notes.push(`${req.instance}: request signal aborted: ${reasonOf(requestSignal.reason)}`));
    if (req.instance === "slow") await sleep(120);
    return { keyId: `${requestSignal === ctx.signal}` };
  };
  const r = await both(impl, async (s) => {
    const a = await send(s.session, { chunks: [request({ instance: "quick" })] });
    const b = await send(s.session, { headers: { "grpc-timeout": "40m" }, chunks: [request({ instance: "slow" })] });
    await sleep(20);
    return { data: a.data, deadline: b.trailers?.["grpc-status"], notes: [...s.seen.notes] };
  });
  assert.equal(r.connect, { data: responseHex({ keyId: "false" }), deadline: "0", notes: [] });
  assert.equal(r.fast, r.connect);
});

test("a router made with { grpc: false }: a service registered without options has no gRPC protocol: HTTP 415 and the method never runs, as with Connect", async () => {
  const answers: Record<string, unknown> = {};
  for (const fast of [true, false]) {
    const s = await startShortcut(fast && process.env.UNARY_FAST_SANITY === undefined, {
      router: () => ({ grpc: false, readMaxBytes: READ_MAX_BYTES }),
      routes: (router, seen) =>
        router.service(AuthorizationService, {
          authorize: (req: AuthorizeRequest) => {
            seen.calls.push(req.instance);
            return { keyId: req.instance };
          },
        } as never),
    });
    try {
      const a = await send(s.session, { chunks: [MESSAGE] });
      answers[fast ? "fast" : "connect"] = { status: a.headers[":status"], grpcStatus: a.trailers?.["grpc-status"], runs: s.seen.calls.length };
    } finally {
      await s.close();
    }
  }
  assert.equal(answers.connect, { status: 415, grpcStatus: undefined, runs: 0 });
  assert.equal(answers.fast, answers.connect);
});

test("trailers Node refuses (set by the method) with an abort listener: the same reset, listener reason, reports, nothing logged, both ways", async () => {
  const impl = (seen: Seen): Impl => (_req, ctx) => {
    ctx.signal.addEventListener("abort", () => seen.notes.push(`aborted: ${reasonOf(ctx.signal.reason)}`));
    ctx.responseTrailer.set("connection", "close");
    return {};
  };
  const r = await both(impl, async (s) => {
    const a = await send(s.session, { chunks: [MESSAGE] });
    await until(() => s.seen.reported.length > 0);
    await sleep(20);
    return { answer: a, notes: [...s.seen.notes], reported: s.seen.reported, failed: s.seen.failed };
  });
  assert.equal(r.connect, {
    answer: { headers: { ":status": 200, "content-type": "application/grpc+proto" }, data: "0000000000", trailers: undefined, rstCode: http2.constants.NGHTTP2_INTERNAL_ERROR },
    notes: ["aborted: AbortError"],
    reported: [200],
    failed: [],
  });
  assert.equal(r.fast, r.connect);
});

test("the client's connection torn down right after END_STREAM (same write), or after the method started: the method runs as often, each call reported once, both ways", async () => {
  const r = await both(() => async (req) => {
    await sleep(req.instance === "slow" ? 30 : 0);
    return { keyId: req.instance };
  }, async (s) => {
    const runs: number[] = [];
    for (const [instance, hold] of [["plain", 0], ["slow", 10]] as const) {
      const before = s.seen.calls.length;
      for (let i = 0; i < 4; i++) await rawSend(s.port, Buffer.concat([rawHeaders(1, callHeaders(s.port), false), rawData(1, request({ instance }), true)]), hold);
      await sleep(60);
      runs.push(s.seen.calls.length - before);
    }
    await until(() => s.seen.reported.length === 8);
    return { runs, reported: s.seen.reported.length, failed: s.seen.failed };
  });
  assert.equal(r.connect, { runs: [4, 4], reported: 8, failed: [] });
  assert.equal(r.fast, r.connect);
});

test("gateway: Authorize and health Check calls cancelled at each moment, handed over, or plain: the same decisions, RPC and HTTP metrics with the shortcut's fast path as through Fastify", async () => {
  const server = await startErplink();
  try {
    const dual = server.erplink.app.server as unknown as DualProtocolServer;
    assert.ok(isDualProtocolServer(dual));
    const shortcut = dual.http2Shortcut()!;
    const HEALTH = `/${Health.typeName}/${Health.method.check.name}`;
    const authz = request({ apiKey: "erpl_not_a_key", instance: "prod", service: "API_BP", entity: "A_BusinessPartner", operation: 1 });
    const health = envelope(0, toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema, {})));
    const flagged = (m: Buffer) => envelope(2, m.subarray(5));
    const counters = async () => {
      await sleep(40);
      const res = await httpRequest(`${server.baseUrl}/metrics`, { headers: { connection: "close" } });
      const exp = new Exposition(res.text);
      const out: Record<string, number> = {};
      for (const name of ["erplink_authorization_decisions_total", "erplink_rpc_calls_total", "erplink_http_requests_total"]) {
        for (const m of exp.family(name).metrics) out[`${name}${JSON.stringify(m.labels)}`] = Number(m.value);
      }
      return out;
    };
    const delta = (a: Record<string, number>, b: Record<string, number>) => {
      const out: Record<string, number> = {};
      for (const [k, v] of Object.entries(b)) if (v !== (a[k] ?? 0)) out[k] = v - (a[k] ?? 0);
      return out;
    };
    const scenarios = async () => {
      const p = server.port;
      const CANCEL = http2.constants.NGHTTP2_CANCEL;
      const h = (path = PATH, extra: [string, string][] = []) => rawHeaders(1, callHeaders(p, path, extra), false);
      // Plain, to the end.
      await rawSend(p, Buffer.concat([h(), rawData(1, authz, true)]));
      await rawSend(p, Buffer.concat([h(HEALTH), rawData(1, health, true)]));
      // Handed over (a flag Connect ignores), to the end.
      await rawSend(p, Buffer.concat([h(), rawData(1, flagged(authz), true)]));
      await rawSend(p, Buffer.concat([h(HEALTH), rawData(1, flagged(health), true)]));
      // Cancelled: mid-message; after the message before END_STREAM (handed over); with END_STREAM in the same packet; later.
      await rawSend(p, Buffer.concat([h(), rawData(1, authz.subarray(0, 9), false), rawRst(1, CANCEL)]));
      await rawSend(p, Buffer.concat([h(), rawData(1, flagged(authz), false), rawRst(1, CANCEL)]));
      await rawSend(p, Buffer.concat([h(), rawData(1, authz, true), rawRst(1, CANCEL)]));
      await rawSend(p, Buffer.concat([h(), rawData(1, authz, true)]), 20, { afterMs: 15, bytes: rawRst(1, CANCEL) });
      // A deadline that passes while the body is read, then the message.
      await rawSend(p, Buffer.concat([h(PATH, [["grpc-timeout", "30m"]]), rawData(1, authz.subarray(0, 3), false)]), 30, { afterMs: 80, bytes: rawData(1, authz.subarray(3), true) });
      await rawSend(p, Buffer.concat([h(HEALTH, [["grpc-timeout", "30m"]]), rawData(1, health.subarray(0, 3), false)]), 30, { afterMs: 80, bytes: rawData(1, health.subarray(3), true) });
    };
    let before = await counters();
    await scenarios();
    const direct = delta(before, await counters());
    dual.setHttp2Shortcut(undefined);
    before = await counters();
    await scenarios();
    const routed = delta(before, await counters());
    dual.setHttp2Shortcut(shortcut);
    assert.is(direct[`erplink_authorization_decisions_total{"api":"authorize","outcome":"key_invalid"}`], 5, "decided: plain, handed over, END_STREAM+RST, RST later, late body");
    assert.equal(direct, routed);
  } finally {
    await server.close();
  }
});

test.run();
