/**
 * The fast path for plain unary gRPC calls (src/gateway/rpc/unary.ts,
 * `serveUnary` in src/gateway/rpc/direct.ts) against Connect's own handler:
 * two h2c shortcuts over the same service, one with the fast path and one
 * without it (Connect's gRPC handler serves every call there), get the same
 * hostile calls (fast-check: bodies that are one message or not quite,
 * flags, declared lengths, extra bytes, chunks split anywhere; content
 * types, encodings, accepted encodings, timeouts; implementations that
 * answer large, fail, fail without a ConnectError, set headers and
 * trailers, read the context) and must answer each alike: status, headers,
 * data bytes, trailers, the stream's close code, what the implementation
 * saw and how often it ran, what was reported. The run also checks that it
 * took the fast path for a good share of the calls, and left others to
 * Connect, so that it cannot pass by comparing Connect with itself.
 */
import http2 from "node:http2";
import { create, toBinary, toJson } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createContextKey,
  createContextValues,
  type HandlerContext,
  type Interceptor,
} from "@connectrpc/connect";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  AuthorizationService,
  type AuthorizeRequest,
  AuthorizeRequestSchema,
  AuthorizeResponseSchema,
} from "../../../src/gen/erplink/authz/v1/authorization_pb.js";
import { fuzzSeed } from "../../../test-support/fuzz/harness.js";
import { envelope, type PairSeen, type PairServer, startShortcut, strip } from "../../../test-support/shortcut-pair.js";

const PATH = `/${AuthorizationService.typeName}/${AuthorizationService.method.authorize.name}`;
/** Small, so that generated messages cross it. */
const READ_MAX_BYTES = 600;
const kTag = createContextKey<string>("none", { description: "test tag" });

type Seen = PairSeen;

/** How the implementation answers, by the request's `instance`. */
async function authorize(seen: Seen, req: AuthorizeRequest, ctx: HandlerContext) {
  seen.calls.push(JSON.stringify(toJson(AuthorizeRequestSchema, req)));
  switch (req.instance) {
    case "big":
      // Past Connect's compressMinBytes (1 KiB) when `entity` is long enough: compressed if the client accepts it.
      return { allowed: true, message: req.entity.repeat(40), keyId: req.apiKey };
    case "fail":
      throw new ConnectError(req.entity, (req.operation % 16) + 1, { "x-meta": "m", "grpc-status": "0" }, [
        { desc: AuthorizeRequestSchema, value: { instance: "detail", entity: req.entity } },
      ]);
    case "throw":
      throw new Error(`not a ConnectError: ${req.entity}`);
    case "headers":
      ctx.responseHeader.set("x-answer", req.entity.replace(/[^ -~]/g, "?").trim() || "empty");
      ctx.responseTrailer.set("x-trailer", "t");
      ctx.responseHeader.set("content-type", "application/grpc+proto");
      return { allowed: false, code: "headers" };
    case "context":
      return {
        // The URL without the port, which differs between the two servers.
        code: `${ctx.protocolName} ${ctx.requestMethod} ${ctx.url.replace(/:\d+\//, ":port/")} ${ctx.service.typeName} ${ctx.method.name}`,
        message: `${ctx.requestHeader.get("x-custom") ?? "-"} ${ctx.values.get(kTag)} ${ctx.timeoutMs() === undefined ? "no deadline" : "deadline"} ${ctx.signal.aborted}`,
      };
    case "later":
      await new Promise((resolve) => setTimeout(resolve, 2));
      return { allowed: true, keyId: "later" };
    default:
      return { keyId: req.instance.slice(0, 50) };
  }
}

/** An interceptor of every call: refuses one instance, and adds a header and a trailer to what passes. */
const intercept: Interceptor = (next) => async (req) => {
  if (!req.stream && (req.message as AuthorizeRequest).instance === "refuse") throw new ConnectError("the interceptor refuses", Code.PermissionDenied);
  const res = await next(req);
  res.header.set("x-intercepted", "1");
  res.trailer.set("x-intercepted-trailer", "1");
  return res;
};

/** A server over the test service (`fast`: with the fast path). */
function start(fast: boolean): Promise<PairServer> {
  return startShortcut(fast, {
    router: () => ({ interceptors: [intercept], readMaxBytes: READ_MAX_BYTES, acceptCompression: [compressionGzip, compressionBrotli] }),
    routes: (router, seen) => router.service(AuthorizationService, { authorize: (req, ctx) => authorize(seen, req, ctx) }),
    contextValues: () => {
      const values = createContextValues();
      values.set(kTag, "tagged");
      return values;
    },
  });
}

/** A call as sent: its headers, its body's chunks (none: the headers end the stream). */
interface Call {
  readonly headers: http2.OutgoingHttpHeaders;
  readonly chunks: Buffer[];
  /** Sent a few milliseconds after the chunks, with the end of the stream (a client that ends its side late, maybe with more). */
  readonly tail?: Buffer;
}

/** What came back: everything but the request id and the date. */
interface Answer {
  readonly headers: Record<string, unknown>;
  readonly data: string;
  readonly trailers: Record<string, unknown> | undefined;
  readonly rstCode: number;
}

/** Sends a call on a session and collects its answer (a call left open fails after 3 s). */
function send(session: http2.ClientHttp2Session, call: Call): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request(
      { ":method": "POST", ":path": PATH, te: "trailers", ...call.headers },
      { endStream: call.chunks.length === 0 },
    );
    let headers: Record<string, unknown> = {};
    let trailers: Record<string, unknown> | undefined;
    const data: Buffer[] = [];
    stream.on("response", (h) => (headers = strip(h)));
    stream.on("trailers", (t) => (trailers = strip(t)));
    stream.on("data", (d: Buffer) => data.push(d));
    stream.on("error", () => {});
    const timer = setTimeout(() => {
      stream.close(http2.constants.NGHTTP2_CANCEL);
      reject(new Error("no answer within 3 s"));
    }, 3000);
    stream.on("close", () => {
      clearTimeout(timer);
      resolve({ headers, data: Buffer.concat(data).toString("hex"), trailers, rstCode: stream.rstCode ?? -1 });
    });
    for (const [i, chunk] of call.chunks.entries()) {
      if (i === call.chunks.length - 1 && call.tail === undefined) stream.end(chunk);
      else stream.write(chunk);
    }
    const tail = call.tail;
    if (tail !== undefined && call.chunks.length > 0) setTimeout(() => stream.end(tail), 3);
  });
}


const instances = fc.constantFrom("big", "fail", "throw", "headers", "context", "later", "refuse", "plain", "");
const requestMessage = fc
  .record({
    instance: fc.oneof(instances, fc.string({ maxLength: 8 })),
    entity: fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: "grapheme", maxLength: 12 }), fc.constant("x".repeat(700))),
    apiKey: fc.string({ maxLength: 10 }),
    operation: fc.integer({ min: 0, max: 5 }),
    dryRun: fc.boolean(),
  })
  .map((r) => toBinary(AuthorizeRequestSchema, create(AuthorizeRequestSchema, r)));

/** A body: mostly one message, else one of the ways it can fail to be exactly one. */
const body: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 20, arbitrary: requestMessage.map((m) => envelope(0, m)) },
  { weight: 1, arbitrary: fc.constant(Buffer.alloc(0)) },
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 1, max: 255 }), requestMessage).map(([f, m]) => envelope(f, m)) },
  { weight: 1, arbitrary: fc.tuple(requestMessage, fc.integer({ min: -3, max: 3 })).filter(([, d]) => d !== 0).map(([m, d]) => envelope(0, m, Math.max(0, m.length + d))) },
  { weight: 1, arbitrary: fc.tuple(requestMessage, requestMessage).map(([a, b]) => Buffer.concat([envelope(0, a), envelope(0, b)])) },
  { weight: 1, arbitrary: fc.tuple(requestMessage, fc.uint8Array({ minLength: 1, maxLength: 6 })).map(([m, x]) => Buffer.concat([envelope(0, m), x])) },
  { weight: 1, arbitrary: requestMessage.map((m) => envelope(0, m).subarray(0, Math.max(0, m.length))) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 40 }).map((b) => envelope(0, b)) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b)) },
  { weight: 1, arbitrary: fc.constant(envelope(0, Buffer.alloc(0), READ_MAX_BYTES + 1)) },
  { weight: 1, arbitrary: fc.integer({ min: READ_MAX_BYTES - 2, max: READ_MAX_BYTES + 2 }).map((n) => envelope(0, Buffer.alloc(n, 0))) },
);

/** The body cut into chunks at generated points (each chunk one write: the prefix may arrive split). */
const chunked = fc.tuple(body, fc.array(fc.nat(), { maxLength: 4 })).map(([b, cuts]) => {
  if (b.length === 0) return [];
  const at = [...new Set(cuts.map((c) => c % b.length).filter((c) => c > 0))].sort((x, y) => x - y);
  const out: Buffer[] = [];
  let from = 0;
  for (const c of [...at, b.length]) {
    out.push(b.subarray(from, c));
    from = c;
  }
  return out;
});

const optional = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
const defined = (h: Record<string, string | undefined>) => Object.fromEntries(Object.entries(h).filter(([, v]) => v !== undefined)) as http2.OutgoingHttpHeaders;
const custom = optional(fc.string({ maxLength: 10 }).filter((s) => /^[!-~]*$/.test(s)));
const acceptEncoding = optional(fc.constantFrom("", "gzip", "identity,deflate,gzip", "br", "identity", "x, gzip", "GZIP"));
/** Headers of a call the fast path may take (a timeout it holds, or none). */
const plainHeaders = fc
  .record({
    "content-type": fc.constantFrom("application/grpc", "application/grpc+proto"),
    "grpc-encoding": optional(fc.constant("identity")),
    "grpc-accept-encoding": acceptEncoding,
    "grpc-timeout": optional(fc.constantFrom("10S", "5M", "99H", "20000m", "999999S")),
    "x-custom": custom,
  })
  .map(defined);
/** Headers of any call, most of which Connect's handler serves. */
const anyHeaders = fc
  .record({
    "content-type": fc.constantFrom("application/grpc", "application/grpc+proto", "application/grpc+json", "application/GRPC", "application/grpc;charset=utf-8", "application/grpc+proto "),
    "grpc-encoding": optional(fc.constantFrom("identity", "gzip", "br", "deflate", "Identity", "")),
    "grpc-accept-encoding": acceptEncoding,
    "grpc-timeout": optional(fc.constantFrom("10S", "99H", "100H", "1n", "0m", "0n", "abc", "123456789m", "99999999S", "1S ", "1000000S")),
    "x-custom": custom,
  })
  .map(defined);
const headers = fc.oneof({ weight: 3, arbitrary: plainHeaders }, { weight: 1, arbitrary: anyHeaders });

/** Mostly none; else the end alone, or more bytes with it. */
const tails = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  { weight: 2, arbitrary: fc.constant(new Uint8Array(0)) },
  { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 6 }) },
);

const test = suite("unary gRPC fast path: answers every call as Connect's handler does");


test("hostile calls (fast-check): the same answer, the same implementation calls, the same reports, with the fast path and without it", async () => {
  const fast = await start(true);
  const connect = await start(false);
  let runs = 0;
  let answeredFast = 0;
  let handedOver = 0;
  try {
    await fc.assert(
      fc.asyncProperty(headers, chunked, tails, async (h, chunks, tail) => {
        runs++;
        const before = { fast: fast.seen.calls.length, connect: connect.seen.calls.length, handed: fast.seen.connect };
        const reportedBefore = { fast: fast.seen.reported.length, connect: connect.seen.reported.length, fastLeft: fast.seen.left, connectLeft: connect.seen.left };
        // Every stream ends reported (taken by the shortcut) or left (its 404).
        const settled = (s: PairServer, reported: number, left: number) => s.seen.reported.length > reported || s.seen.left > left;
        const call = { headers: h, chunks, tail: tail === undefined ? undefined : Buffer.from(tail) };
        const [a, b] = await Promise.all([send(fast.session, call), send(connect.session, call)]);
        assert.equal(a, b, "the answer");
        // Reports come with the stream's close, which the client may see first.
        for (let i = 0; i < 100 && !(settled(fast, reportedBefore.fast, reportedBefore.fastLeft) && settled(connect, reportedBefore.connect, reportedBefore.connectLeft)); i++) {
          await new Promise((r) => setTimeout(r, 2));
        }
        assert.equal(fast.seen.calls.slice(before.fast), connect.seen.calls.slice(before.connect), "what the implementation saw");
        assert.equal(fast.seen.reported.slice(reportedBefore.fast), connect.seen.reported.slice(reportedBefore.connect), "what was reported");
        assert.is(fast.seen.left - reportedBefore.fastLeft, connect.seen.left - reportedBefore.connectLeft, "calls the shortcut left");
        if (fast.seen.connect === before.handed && fast.seen.left === reportedBefore.fastLeft) answeredFast++;
        if (fast.seen.connect > before.handed) handedOver++;
      }),
      { seed: fuzzSeed(), numRuns: 400 },
    );
  } finally {
    await fast.close();
    await connect.close();
  }
  assert.equal(fast.seen.failed, []);
  assert.equal(connect.seen.failed, []);
  assert.ok(answeredFast >= runs / 6, `the fast path answered ${answeredFast} of ${runs} calls`);
  assert.ok(handedOver >= runs / 10, `${handedOver} of ${runs} calls were handed to Connect`);
});

/** One well-formed call of `instance`. */
function plain(instance: string, extra: http2.OutgoingHttpHeaders = {}): Call {
  return { headers: { "content-type": "application/grpc", ...extra }, chunks: [envelope(0, toBinary(AuthorizeRequestSchema, create(AuthorizeRequestSchema, { instance })))] };
}

test("a plain call never reaches Connect's handler; a compressed, JSON or oversized one does", async () => {
  const s = await start(true);
  try {
    const answer = await send(s.session, plain("plain"));
    assert.equal(answer.headers, { ":status": 200, "content-type": "application/grpc+proto", "x-intercepted": "1" });
    assert.equal(answer.trailers, { "grpc-status": "0", "x-intercepted-trailer": "1" });
    const keyId = toBinary(AuthorizeResponseSchema, create(AuthorizeResponseSchema, { keyId: "plain" }));
    assert.is(answer.data, envelope(0, keyId).toString("hex"));
    assert.is(s.seen.connect, 0);
    await send(s.session, plain("plain", { "grpc-encoding": "gzip" }));
    assert.is(s.seen.connect, 1);
    await send(s.session, plain("plain", { "content-type": "application/grpc+json" }));
    assert.is(s.seen.connect, 2);
    await send(s.session, { headers: { "content-type": "application/grpc" }, chunks: [envelope(0, Buffer.alloc(0), READ_MAX_BYTES + 1)] });
    assert.is(s.seen.connect, 3);
    await send(s.session, plain("plain", { "grpc-timeout": "100H" }));
    assert.is(s.seen.connect, 4);
    await send(s.session, plain("plain", { "grpc-timeout": "10S" }));
    assert.is(s.seen.connect, 4);
  } finally {
    await s.close();
  }
});

/** A server whose implementation waits for its signal and answers with the abort reason's code (noted in `seen.notes`). */
function waiting(fast: boolean): Promise<PairServer> {
  return startShortcut(fast, {
    router: () => ({ interceptors: [], readMaxBytes: READ_MAX_BYTES }),
    routes: (router, seen) =>
      router.service(AuthorizationService, {
        authorize: async (_req, ctx) => {
          if (!ctx.signal.aborted) await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
          const code = ConnectError.from(ctx.signal.reason).code;
          seen.notes.push(Code[code]);
          return { code: Code[code] };
        },
      }),
  });
}

test("the deadline: the handler's signal aborts with deadline_exceeded at the client's timeout, and the answer follows, as with Connect", async () => {
  for (const fast of [true, false]) {
    const s = await waiting(fast);
    try {
      const started = Date.now();
      const answer = await send(s.session, plain("any", { "grpc-timeout": "40m" }));
      const took = Date.now() - started;
      assert.ok(took >= 35, `answered after ${took} ms (fast: ${fast})`);
      assert.equal(s.seen.notes, ["DeadlineExceeded"], `fast: ${fast}`);
      assert.equal(answer.trailers, { "grpc-status": "0" });
      const expected = envelope(0, toBinary(AuthorizeResponseSchema, create(AuthorizeResponseSchema, { code: "DeadlineExceeded" })));
      assert.is(answer.data, expected.toString("hex"), `fast: ${fast}`);
    } finally {
      await s.close();
    }
  }
});

test("a client that resets its stream while the handler runs: the handler's signal says canceled (both ways)", async () => {
  for (const fast of [true, false]) {
    const s = await waiting(fast);
    try {
      await new Promise<void>((resolve) => {
        const stream = s.session.request({ ":method": "POST", ":path": PATH, "content-type": "application/grpc", te: "trailers" });
        stream.on("error", () => {});
        stream.on("close", () => resolve());
        stream.end(plain("any").chunks[0]);
        setTimeout(() => stream.close(http2.constants.NGHTTP2_CANCEL), 30);
      });
      for (let i = 0; i < 100 && s.seen.notes.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
      assert.equal(s.seen.notes, ["Canceled"], `fast: ${fast}`);
    } finally {
      await s.close();
    }
  }
});

test.run();
