/**
 * gRPC calls over h2c served before Fastify routes them
 * (src/gateway/rpc/direct.ts), over a real listening port.
 *
 * Differential, property-based: hostile gRPC requests (paths of taken and
 * untaken methods, methods, content types, compression, lying and truncated
 * frames, timeouts, request ids, origins, message bytes from valid to random)
 * are each sent twice on one server, once with the shortcut set and once
 * without it (every request through Fastify). Both answers must be the same:
 * HTTP status, headers, body bytes, trailers or stream reset, and the
 * metrics each moved (`erplink_http_requests_total`, `erplink_rpc_calls_total`).
 * Only what differs by nature is normalized: fresh request ids (`req_<uuid>`),
 * `Date`, and an allowed Authorize's remaining places and window ends (the
 * first call spent one). The shortcut must have taken a share of the calls.
 *
 * Examples: which calls the shortcut takes and which it leaves (admin calls,
 * which the request log records; a call with an Origin; Connect over h2c),
 * the request id it answers with, and its access-log line.
 *
 * Environment: ERPLINK_FUZZ_SEED (default fixed), ERPLINK_FUZZ_RUNS (150).
 */
import http2 from "node:http2";
import { Writable } from "node:stream";
import { gzipSync } from "node:zlib";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createErplink } from "../../src/app.js";
import { loadConfig } from "../../src/config.js";
import { ApiKeySchema, ApiKeyService, ApiKeyType, CreateApiKeyRequestSchema } from "../../src/gen/erplink/admin/v1/api_key_pb.js";
import { ListSystemsRequestSchema, SystemService } from "../../src/gen/erplink/admin/v1/system_pb.js";
import { AuthorizationService, AuthorizeRequestSchema, AuthorizeResponseSchema, Operation } from "../../src/gen/erplink/authz/v1/authorization_pb.js";
import { Authorization as EnvoyAuthorization, CheckRequestSchema } from "../../src/gen/envoy/service/auth/v3/external_auth_pb.js";
import { Health, HealthCheckRequestSchema } from "../../src/gen/grpc/health/v1/health_pb.js";
import { ServerReflection, ServerReflectionRequestSchema } from "../../src/gen/grpc/reflection/v1/reflection_pb.js";
import { isDualProtocolServer, type DualProtocolServer, type Http2Shortcut } from "../../src/gateway/server.js";
import { createGrpcJsClient, httpRequest, startErplink, within, type RunningErplink } from "../../test-support/e2e.js";
import { envInt, fuzzSeed } from "../../test-support/fuzz/harness.js";
import { REQ_ID } from "../../test-support/http.js";
import { Exposition } from "../../test-support/metrics.js";

const AUTHORIZE = `/${AuthorizationService.typeName}/${AuthorizationService.method.authorize.name}`;
const CHECK = `/${EnvoyAuthorization.typeName}/${EnvoyAuthorization.method.check.name}`;
const HEALTH = `/${Health.typeName}/${Health.method.check.name}`;
const REFLECTION = `/${ServerReflection.typeName}/${ServerReflection.method.serverReflectionInfo.name}`;
const LIST_SYSTEMS = `/${SystemService.typeName}/${SystemService.method.listSystems.name}`;
const ORIGIN = "https://app.example";
/** A fresh request id anywhere in a text or in message bytes (same length, so frames stay well-formed). */
const FRESH_ID = /req_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/** One raw HTTP/2 exchange's outcome. */
interface Exchange {
  readonly status?: number;
  readonly headers?: Record<string, string>;
  readonly body?: Buffer;
  readonly trailers?: Record<string, string>;
  /** The stream ended with RST_STREAM (its code) or a session error. */
  readonly reset?: string;
}

interface Frame {
  readonly flags: number;
  readonly payload: Uint8Array;
  /** Added to the true length in the prefix (a lying prefix). */
  readonly lie: number;
  readonly gzip: boolean;
}

interface Case {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly frames: readonly Frame[];
  /** Bytes cut from the end of the body. */
  readonly cut: number;
}

function headerRecord(h: http2.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined && k !== "date") out[k] = Array.isArray(v) ? v.join(", ") : String(v);
  return out;
}

function bodyOf(c: Case): Buffer {
  const parts: Buffer[] = [];
  for (const f of c.frames) {
    const payload = f.gzip ? gzipSync(f.payload) : Buffer.from(f.payload);
    const prefix = Buffer.alloc(5);
    prefix[0] = f.flags;
    prefix.writeUInt32BE(Math.max(0, Math.min(0xffffffff, payload.length + f.lie)), 1);
    parts.push(prefix, payload);
  }
  const all = Buffer.concat(parts);
  return all.subarray(0, Math.max(0, all.length - c.cut));
}

/** Sends one request on `session`; resolves with whatever came back (never rejects). */
function exchange(session: http2.ClientHttp2Session, c: Case): Promise<Exchange> {
  return new Promise((resolve) => {
    const stream = session.request({ ":method": c.method, ":path": c.path, ...c.headers });
    let status: number | undefined;
    let headers: Record<string, string> | undefined;
    let trailers: Record<string, string> | undefined;
    const chunks: Buffer[] = [];
    stream.on("response", (h) => {
      status = Number(h[":status"]);
      const { ":status": _s, ...rest } = h;
      headers = headerRecord(rest);
    });
    stream.on("trailers", (t) => {
      trailers = headerRecord(t);
    });
    stream.on("data", (d: Buffer) => chunks.push(d));
    stream.on("error", () => {});
    stream.on("close", () => {
      const code = stream.rstCode;
      resolve({
        status,
        headers,
        body: Buffer.concat(chunks),
        trailers,
        reset: code !== undefined && code !== http2.constants.NGHTTP2_NO_ERROR ? `rst ${code}` : undefined,
      });
    });
    stream.setTimeout(5000, () => stream.close(http2.constants.NGHTTP2_CANCEL));
    stream.end(bodyOf(c));
  });
}

/** What may differ between two answers to one request: fresh ids, an allowed Authorize's spent place. */
function normalized(c: Case, e: Exchange): Exchange {
  const text = (r: Record<string, string> | undefined) =>
    r === undefined ? undefined : Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v.replace(FRESH_ID, "req_fresh")]));
  let body = e.body === undefined ? undefined : Buffer.from(e.body.toString("latin1").replace(FRESH_ID, "req_fresh_______________________________"), "latin1");
  if (c.path === AUTHORIZE && body !== undefined && e.trailers?.["grpc-status"] === "0" && body.length >= 5 && body[0] === 0) {
    const res = fromBinary(AuthorizeResponseSchema, body.subarray(5, 5 + body.readUInt32BE(1)));
    for (const w of res.rateLimit?.windows ?? []) {
      w.remaining = 0n;
      w.resetTime = undefined;
    }
    body = Buffer.from(toBinary(AuthorizeResponseSchema, res));
  }
  return { status: e.status, headers: text(e.headers), body, trailers: text(e.trailers), reset: e.reset };
}

/** The counters a call moves, by series. */
function counters(text: string): Map<string, number> {
  const out = new Map<string, number>();
  const exp = new Exposition(text);
  for (const name of ["erplink_http_requests_total", "erplink_rpc_calls_total"]) {
    for (const m of exp.family(name).metrics) out.set(`${name}${JSON.stringify(m.labels ?? {})}`, Number(m.value));
  }
  return out;
}

function delta(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of after) if (v !== (before.get(k) ?? 0)) out[k] = v - (before.get(k) ?? 0);
  return out;
}

/** A unary call over grpc-js (h2c) with raw bytes; resolves with the response's header metadata and message. */
function grpcJsUnary(address: string, path: string, request: Uint8Array, metadata: Record<string, string>): Promise<{ headers: Record<string, string[]>; message: Buffer }> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  return within(
    5000,
    path,
    new Promise((resolve, reject) => {
      const md = new grpc.Metadata();
      for (const [k, v] of Object.entries(metadata)) md.set(k, v);
      let headers: Record<string, string[]> = {};
      const call = client.makeUnaryRequest(path, (b: Buffer) => b, (b: Buffer) => b, Buffer.from(request), md, { deadline: Date.now() + 5000 }, (err, message) => {
        client.close();
        if (err || message === undefined) reject(err ?? new Error("no message"));
        else resolve({ headers, message });
      });
      call.on("metadata", (m: grpc.Metadata) => {
        headers = Object.fromEntries(Object.keys(m.getMap()).map((k) => [k, m.get(k).map(String)]));
      });
    }),
  );
}

interface Ctx {
  server: RunningErplink;
  dual: DualProtocolServer;
  shortcut: Http2Shortcut;
  key: string;
  /** Calls the shortcut took. */
  taken: number;
}

const Direct = suite<Ctx>("e2e: gRPC calls served before Fastify routes them");

Direct.before(async (ctx) => {
  ctx.server = await startErplink({ ERPLINK_CORS_ORIGINS: ORIGIN, ERPLINK_DATA_RATE_PER_MINUTE: "100000000", ERPLINK_DATA_RATE_PER_DAY: "100000000" });
  const dual = ctx.server.erplink.app.server;
  assert.ok(isDualProtocolServer(dual), "erplink listens on the one-port server");
  ctx.dual = dual as DualProtocolServer;
  const shortcut = ctx.dual.http2Shortcut();
  assert.type(shortcut, "function", "the gateway set the shortcut");
  ctx.shortcut = shortcut!;
  ctx.taken = 0;
  ctx.dual.setHttp2Shortcut((req, res) => {
    const took = ctx.shortcut(req, res);
    if (took) ctx.taken++;
    return took;
  });
  const admin = createGrpcJsClient(ApiKeyService, ctx.server.address);
  try {
    const res = await admin.call.createApiKey(
      create(CreateApiKeyRequestSchema, {
        apiKey: create(ApiKeySchema, { name: "direct", type: ApiKeyType.DATA, permissions: { prod: { API_BP: { A_BusinessPartner: ["list", "get"] } } } }),
      }),
      { authorization: ctx.server.authorization },
    );
    ctx.key = res.key;
  } finally {
    admin.close();
  }
});

Direct.after(async (ctx) => {
  await ctx.server?.close();
});

Direct("Authorize over grpc-js is taken, with the request id the client sent or a fresh one", async (ctx) => {
  const before = ctx.taken;
  const request = toBinary(
    AuthorizeRequestSchema,
    create(AuthorizeRequestSchema, { apiKey: ctx.key, instance: "prod", service: "API_BP", entity: "A_BusinessPartner", operation: Operation.GET }),
  );
  const sent = await grpcJsUnary(ctx.server.address, AUTHORIZE, request, { "x-request-id": "client-chosen.id:1" });
  assert.is(fromBinary(AuthorizeResponseSchema, sent.message).allowed, true);
  assert.equal(sent.headers["x-request-id"], ["client-chosen.id:1"]);
  // Not a well-formed id: a fresh one.
  const fresh = await grpcJsUnary(ctx.server.address, AUTHORIZE, request, { "x-request-id": "not a valid id!" });
  assert.is(fresh.headers["x-request-id"]!.length, 1);
  assert.match(fresh.headers["x-request-id"]![0]!, REQ_ID);
  // CORS is on: answers vary by Origin, as the gateway's do.
  assert.equal(fresh.headers.vary, ["Origin"]);
  assert.is(ctx.taken - before, 2);
});

Direct("admin calls go through Fastify (the request log records them), as do calls with an Origin and Connect calls", async (ctx) => {
  const before = ctx.taken;
  const listed = await grpcJsUnary(ctx.server.address, LIST_SYSTEMS, toBinary(ListSystemsRequestSchema, create(ListSystemsRequestSchema, {})), {
    authorization: ctx.server.authorization,
  });
  const requestId = listed.headers["x-request-id"]![0]!;
  const session = http2.connect(ctx.server.baseUrl);
  try {
    const authorize = toBinary(AuthorizeRequestSchema, create(AuthorizeRequestSchema, { apiKey: "erpl_x" }));
    const withOrigin = await exchange(session, {
      method: "POST",
      path: AUTHORIZE,
      headers: { "content-type": "application/grpc", te: "trailers", origin: ORIGIN },
      frames: [{ flags: 0, payload: authorize, lie: 0, gzip: false }],
      cut: 0,
    });
    assert.is(withOrigin.status, 200);
    assert.is(withOrigin.headers!["access-control-allow-origin"], ORIGIN);
    const connect = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const s = session.request({ ":method": "POST", ":path": AUTHORIZE, "content-type": "application/json" });
      const chunks: Buffer[] = [];
      let status = 0;
      s.on("response", (h) => (status = Number(h[":status"])));
      s.on("data", (d: Buffer) => chunks.push(d));
      s.on("end", () => resolve({ status, body: Buffer.concat(chunks).toString("utf8") }));
      s.on("error", reject);
      s.end(JSON.stringify({ apiKey: "erpl_x", instance: "prod", service: "API_BP", entity: "A_BusinessPartner", operation: "OPERATION_GET" }));
    });
    assert.is(connect.status, 200);
    assert.is(JSON.parse(connect.body).denialStep, "DENIAL_STEP_KEY_INVALID");
  } finally {
    session.close();
  }
  assert.is(ctx.taken - before, 0, "none of these taken");
  await ctx.server.erplink.flushLogs();
  const logs = await httpRequest(`${ctx.server.baseUrl}/admin/logs?request_id=${requestId}`, { headers: { authorization: ctx.server.authorization } });
  assert.is(logs.status, 200);
  const entries = JSON.parse(logs.text).data as { path: string; status: number }[];
  assert.equal(
    entries.map((e) => [e.path, e.status]),
    [[LIST_SYSTEMS, 200]],
  );
});

Direct("a call whose authority makes no URL (Host `x:99999`, `[`, `a%zz`; an empty one nghttp2 resets) is refused INVALID_ARGUMENT, taken or not, not left unanswered", async (ctx) => {
  const session = http2.connect(ctx.server.baseUrl);
  session.on("error", () => {});
  const request = toBinary(AuthorizeRequestSchema, create(AuthorizeRequestSchema, { apiKey: "erpl_x" }));
  try {
    for (const host of ["x:99999", "[", "a%zz"]) {
      for (const shortcut of [true, false]) {
        const before = ctx.taken;
        if (!shortcut) ctx.dual.setHttp2Shortcut(undefined);
        let answer: Exchange;
        try {
          answer = await exchange(session, {
            method: "POST",
            path: AUTHORIZE,
            headers: { "content-type": "application/grpc", te: "trailers", host, "x-request-id": "bad-authority" },
            frames: [{ flags: 0, payload: request, lie: 0, gzip: false }],
            cut: 0,
          });
        } finally {
          if (!shortcut) ctx.dual.setHttp2Shortcut((req, res) => {
            const took = ctx.shortcut(req, res);
            if (took) ctx.taken++;
            return took;
          });
        }
        const what = `host ${JSON.stringify(host)}, ${shortcut ? "with" : "without"} the shortcut`;
        assert.is(answer.reset, undefined, what);
        assert.is(answer.status, 200, what);
        assert.equal(answer.headers, { "content-type": "application/grpc+proto", "x-request-id": "bad-authority", vary: "Origin" }, what);
        assert.is(answer.body!.length, 0, what);
        assert.equal(
          answer.trailers,
          // (grpc-message is percent-encoded.)
          { "grpc-status": "3", "grpc-message": "the%20request's%20authority%20(%3Aauthority%20or%20Host)%20is%20missing%20or%20not%20a%20valid%20host" },
          what,
        );
        assert.is(ctx.taken - before, shortcut ? 1 : 0, what);
      }
    }
  } finally {
    session.close();
  }
});

Direct("differential: every hostile gRPC request is answered alike with the shortcut and without it", async (ctx) => {
  const seed = fuzzSeed();
  const numRuns = envInt("ERPLINK_FUZZ_RUNS", 150);
  const key = ctx.key;
  const message = fc.oneof(
    fc
      .record({
        apiKey: fc.constantFrom(key, "", "erpl_malformed", `${key.slice(0, -1)}x`),
        instance: fc.constantFrom("prod", "", "*", "qa"),
        service: fc.constantFrom("API_BP", "", "*"),
        entity: fc.constantFrom("A_BusinessPartner", "A_Address", ""),
        operation: fc.integer({ min: 0, max: 7 }),
        dryRun: fc.boolean(),
      })
      .map((r) => toBinary(AuthorizeRequestSchema, create(AuthorizeRequestSchema, r))),
    fc.constantFrom("", "erplink.authz.v1.AuthorizationService", "nope").map((service) => toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema, { service }))),
    fc.constant(toBinary(ServerReflectionRequestSchema, create(ServerReflectionRequestSchema, { messageRequest: { case: "listServices", value: "" } }))),
    fc.constant(toBinary(CheckRequestSchema, create(CheckRequestSchema, {}))),
    fc.constantFrom('{"apiKey":"erpl_x"}', "{", "[]").map((s) => new TextEncoder().encode(s)),
    fc.uint8Array({ maxLength: 64 }),
  );
  const frame = fc.record({
    flags: fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, fc.constantFrom(1, 2, 0x80, 0xff)),
    payload: message,
    lie: fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, fc.integer({ min: -6, max: 6 }), fc.constant(0x7fffffff)),
    gzip: fc.boolean(),
  });
  const optional = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined, freq: 2 });
  const hostileCase: fc.Arbitrary<Case> = fc
    .record({
      method: fc.oneof({ weight: 20, arbitrary: fc.constant("POST") }, fc.constantFrom("GET", "PUT", "OPTIONS")),
      path: fc.oneof(
        { weight: 10, arbitrary: fc.constant(AUTHORIZE) },
        { weight: 4, arbitrary: fc.constantFrom(CHECK, HEALTH, REFLECTION) },
        fc.constantFrom(LIST_SYSTEMS, `${AUTHORIZE}?x=1`, `${AUTHORIZE}/`, "/erplink.authz.v1.AuthorizationService/Nope", AUTHORIZE.toLowerCase(), AUTHORIZE.replace("A", "%41")),
        // An admin method dressed up (the shortcut takes none of them; Fastify routes some of them), and a served one.
        fc.constantFrom(
          LIST_SYSTEMS.replace("/erplink", "/%65rplink"),
          LIST_SYSTEMS.replace("admin", "%61dmin"),
          LIST_SYSTEMS.replace("/erplink", "/Erplink"),
          `/${LIST_SYSTEMS}`,
          `${LIST_SYSTEMS}?x=${AUTHORIZE}`,
          `${LIST_SYSTEMS}#`,
          `${AUTHORIZE}/..${LIST_SYSTEMS}`,
          `${AUTHORIZE}%2F..%2F..${LIST_SYSTEMS}`,
          `/${AUTHORIZE}`,
          `${AUTHORIZE};x`,
          `${AUTHORIZE}%00`,
          "*",
          `http://127.0.0.1${AUTHORIZE}`,
        ),
      ),
      contentType: fc.option(
        fc.oneof(
          { weight: 12, arbitrary: fc.constant("application/grpc") },
          fc.constantFrom("application/grpc+proto", "application/grpc+json", "application/grpc;charset=utf-8", "application/grpc+bogus", "application/grpcx", "application/grpc-web", "application/grpc-web+proto", "Application/GRPC", "application/proto", "application/json"),
        ),
        { nil: undefined, freq: 10 },
      ),
      // (Node's HTTP/2 client sends no other TE value.)
      te: optional(fc.constant("trailers")),
      encoding: optional(fc.constantFrom("identity", "gzip", "br", "deflate", "bogus")),
      acceptEncoding: optional(fc.constantFrom("gzip", "br,gzip", "identity", "x")),
      timeout: optional(fc.constantFrom("1S", "200m", "99999999H", "0n", "abc", "1")),
      requestId: optional(fc.constantFrom("fixed-id.1", "bad id", "x".repeat(200))),
      origin: fc.oneof({ weight: 6, arbitrary: fc.constant(undefined) }, fc.constantFrom(ORIGIN, "https://evil.example", "null")),
      authorization: optional(fc.constantFrom("Bearer x", "Basic eDp5")),
      // Sent as `host` (Node's client then sends no `:authority`): well-formed, or making no URL.
      host: fc.oneof({ weight: 8, arbitrary: fc.constant(undefined) }, fc.constantFrom("ok.example:8080", "[::1]:1", "x:99999", "[", "a%zz", "")),
      frames: fc.array(frame, { minLength: 0, maxLength: 3 }),
      cut: fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, fc.integer({ min: 1, max: 8 })),
    })
    .map((r) => {
      const headers: Record<string, string> = {};
      if (r.contentType !== undefined) headers["content-type"] = r.contentType;
      if (r.te !== undefined) headers.te = r.te;
      if (r.encoding !== undefined) headers["grpc-encoding"] = r.encoding;
      if (r.acceptEncoding !== undefined) headers["grpc-accept-encoding"] = r.acceptEncoding;
      if (r.timeout !== undefined) headers["grpc-timeout"] = r.timeout;
      if (r.requestId !== undefined) headers["x-request-id"] = r.requestId;
      if (r.origin !== undefined) headers.origin = r.origin;
      if (r.authorization !== undefined) headers.authorization = r.authorization;
      if (r.host !== undefined) headers.host = r.host;
      return { method: r.method, path: r.path, headers, frames: r.frames, cut: r.cut };
    });

  const scrape = async () => {
    // The metrics move when the server has finished its answer, which the client may see a moment before.
    await new Promise((r) => setTimeout(r, 5));
    const res = await httpRequest(`${ctx.server.baseUrl}/metrics`);
    assert.is(res.status, 200);
    return counters(res.text);
  };
  const session = http2.connect(ctx.server.baseUrl);
  session.on("error", () => {});
  const before = ctx.taken;
  let cases = 0;
  try {
    await fc.assert(
      fc.asyncProperty(hostileCase, async (c) => {
        cases++;
        const m0 = await scrape();
        const direct = await exchange(session, c);
        const m1 = await scrape();
        ctx.dual.setHttp2Shortcut(undefined);
        let routed: Exchange;
        try {
          routed = await exchange(session, c);
        } finally {
          ctx.dual.setHttp2Shortcut((req, res) => {
            const took = ctx.shortcut(req, res);
            if (took) ctx.taken++;
            return took;
          });
        }
        const m2 = await scrape();
        const a = normalized(c, direct);
        const b = normalized(c, routed);
        assert.equal(a, b, "the same answer");
        assert.equal(delta(m0, m1), delta(m1, m2), "the same metrics");
      }),
      { seed, numRuns, endOnFailure: true },
    );
  } finally {
    session.close();
  }
  // The property was not met vacuously: a good share went the short way.
  assert.ok(ctx.taken - before >= cases / 3, `the shortcut took ${ctx.taken - before} of ${cases} calls`);
});

Direct.run();

const Logged = suite("e2e: a call served before Fastify routes it writes the same access-log line");

Logged("at debug, one `request` line per call with the request id, as Fastify's request logger writes it; a malformed authority logs no error", async () => {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _e, done) {
      for (const l of chunk.toString("utf8").split("\n")) if (l !== "") lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  const erplink = await createErplink(
    loadConfig({ HOST: "127.0.0.1", PORT: "0", ERPLINK_DATA_DIR: ":memory:", ERPLINK_MASTER_KEY: "erpl_test_master_key_0123456789abcdefghijklmnop", LOG_LEVEL: "debug" }),
    { logDestination: sink },
  );
  try {
    await erplink.app.listen({ host: "127.0.0.1", port: 0 });
    const port = (erplink.app.server.address() as { port: number }).port;
    const request = create(AuthorizeRequestSchema, { apiKey: "erpl_x", instance: "prod", service: "API_BP", entity: "A_BusinessPartner", operation: Operation.GET });
    await grpcJsUnary(`127.0.0.1:${port}`, AUTHORIZE, toBinary(AuthorizeRequestSchema, request), { "x-request-id": "logged-call-1" });
    // A client's malformed authority is its mistake: answered, not logged as a failure of ours.
    const session = http2.connect(`http://127.0.0.1:${port}`);
    try {
      const refused = await exchange(session, {
        method: "POST",
        path: AUTHORIZE,
        headers: { "content-type": "application/grpc", te: "trailers", host: "x:99999", "x-request-id": "logged-call-2" },
        frames: [{ flags: 0, payload: toBinary(AuthorizeRequestSchema, request), lie: 0, gzip: false }],
        cut: 0,
      });
      assert.is(refused.trailers?.["grpc-status"], "3");
    } finally {
      session.close();
    }
    erplink.logger.flush();
    await new Promise((r) => setTimeout(r, 50));
  } finally {
    await erplink.close();
  }
  const request = lines.filter((l) => l.msg === "request");
  assert.equal(
    request.map((l) => [l.level, l.reqId, l.method, l.url, l.status, typeof l.ms]),
    [
      [20, "logged-call-1", "POST", AUTHORIZE, 200, "number"],
      [20, "logged-call-2", "POST", AUTHORIZE, 200, "number"],
    ],
  );
  assert.equal(
    lines.filter((l) => (l.level as number) >= 40).map((l) => l.msg),
    [],
    "no warning or error",
  );
});

Logged.run();

const Shutdown = suite("e2e: an idle reflection stream does not hold erplink's close");

Shutdown("closed within a moment, the stream ended with status OK after its answer (shutdown timeout 8 s)", async () => {
  const server = await startErplink({ ERPLINK_SHUTDOWN_TIMEOUT_MS: "8000" });
  let closed = false;
  try {
    const session = http2.connect(server.baseUrl);
    session.on("error", () => {});
    const stream = session.request({ ":method": "POST", ":path": REFLECTION, "content-type": "application/grpc", te: "trailers" });
    const message = toBinary(ServerReflectionRequestSchema, create(ServerReflectionRequestSchema, { messageRequest: { case: "listServices", value: "" } }));
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(message.length, 1);
    // One request, and the stream left open, as an idle grpcurl session leaves it.
    stream.write(Buffer.concat([prefix, message]));
    // As gRPC clients do, the call ends once its status has come.
    const trailers = new Promise<http2.IncomingHttpHeaders>((resolve) =>
      stream.on("trailers", (t) => {
        stream.end();
        resolve(t);
      }),
    );
    await within(5000, "the first answer", new Promise((resolve) => stream.once("data", resolve)));
    const started = Date.now();
    await server.close();
    closed = true;
    const took = Date.now() - started;
    assert.ok(took < 3000, `close took ${took} ms`);
    assert.is((await within(1000, "trailers", trailers))["grpc-status"], "0");
    session.destroy();
  } finally {
    if (!closed) await server.close();
  }
});

Shutdown.run();
