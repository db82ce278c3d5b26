/**
 * The data path over a real port, HTTP/1.1 and h2c alike. Answers from a
 * back end of our own that writes its answers byte by byte: answers that
 * HTTP/2 cannot carry as they are (a connection-specific `HTTP2-Settings`, a
 * repeated single-value header such as `Content-Type`), answers that break
 * off (before their body, in the middle of it, or stall), a 304 with the
 * representation's `Content-Length`, and a status HTTP does not define.
 * Each is read by a client of either protocol, which must get the same
 * status, the same headers and the same body (or, when the back end broke
 * off mid-body, the same signal that the answer is incomplete), and erplink
 * must stay up. And the request's own host: HTTP/2 names it in
 * `:authority`, which a `Host` header may not contradict.
 */
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { V4_METADATA } from "../../test-support/odata/fixtures.js";
import { addProdSales } from "../../test-support/sales-world.js";
import { createWorld, type World } from "../../test-support/world.js";

interface Ctx {
  world: World;
  upstream: net.Server;
  /** The back end's open connections, ended with it. */
  sockets: Set<net.Socket>;
  /** What the back end writes in answer to a data request; `end` closes the connection after it. */
  answer: { bytes: string; end?: boolean };
  /** The head of every data request the back end received. */
  received: string[];
  baseUrl: string;
  key: string;
}

/** An answer as a client read it. */
interface Answer {
  status: number;
  /** Lower-case names, without those that differ per request or per protocol. */
  headers: Record<string, string | string[]>;
  body: string;
  /** How the answer ended: `complete`, or how the client learnt it was not. */
  ending: string;
}

const PATH = "/odata/prod/SALES/SalesOrders";
const BODY = '{"value":[]}';

const Answers = suite<Ctx>("data path over HTTP/1.1 and h2c alike: back-end answers, the request's host");

Answers.before.each(async (ctx) => {
  ctx.answer = { bytes: `HTTP/1.1 200 OK\r\ncontent-length: ${BODY.length}\r\n\r\n${BODY}` };
  ctx.sockets = new Set();
  ctx.received = [];
  ctx.upstream = net.createServer((socket) => {
    ctx.sockets.add(socket);
    socket.on("close", () => ctx.sockets.delete(socket));
    let received = "";
    socket.on("error", () => {});
    socket.on("data", (chunk) => {
      received += chunk.toString("latin1");
      const end = received.indexOf("\r\n\r\n");
      if (end < 0) return;
      const length = Number(/\r\ncontent-length: *([0-9]+)/i.exec(received.slice(0, end))?.[1] ?? 0);
      if (received.length < end + 4 + length) return;
      const target = received.split(" ")[1]!;
      if (!target.endsWith("/$metadata")) ctx.received.push(received.slice(0, end));
      received = "";
      if (target.endsWith("/$metadata")) {
        socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/xml\r\ncontent-length: ${Buffer.byteLength(V4_METADATA)}\r\n\r\n${V4_METADATA}`);
        return;
      }
      if (ctx.answer.end) socket.end(ctx.answer.bytes, "latin1");
      else socket.write(ctx.answer.bytes, "latin1");
    });
  });
  await new Promise<void>((r) => ctx.upstream.listen(0, "127.0.0.1", r));
  ctx.world = await createWorld({ dualProtocol: true, upstreamTimeoutMs: 300 });
  await ctx.world.app.listen({ port: 0, host: "127.0.0.1" });
  ctx.baseUrl = `http://127.0.0.1:${(ctx.world.app.server.address() as AddressInfo).port}`;
  ctx.key = await addProdSales(ctx.world.app, `http://127.0.0.1:${(ctx.upstream.address() as AddressInfo).port}/odata/`, { SalesOrders: ["list", "get"] });
});

Answers.after.each(async (ctx) => {
  await ctx.world.close();
  for (const socket of ctx.sockets) socket.destroy();
  await new Promise<void>((r) => ctx.upstream.close(() => r()));
});

/** Headers that differ per request (`date`, the request id, the remaining rate) or per protocol (HTTP/1.1's connection management). */
const VARYING = new Set(["date", "x-request-id", "ratelimit", "x-ratelimit-remaining", "connection", "keep-alive", "transfer-encoding"]);

function kept(headers: Record<string, string | string[] | number | undefined>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (name.startsWith(":") || VARYING.has(name) || value === undefined) continue;
    out[name] = typeof value === "number" ? String(value) : value;
  }
  return out;
}

/** GET `path` over HTTP/1.1 (node:http, no pooling). */
function overHttp1(ctx: Ctx, path = PATH): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${ctx.baseUrl}${path}`, { agent: false, headers: { authorization: `Bearer ${ctx.key}` } }, (res) => {
      let body = "";
      let ending = "complete";
      res.setEncoding("latin1");
      res.on("data", (c: string) => (body += c));
      res.on("aborted", () => (ending = "incomplete"));
      res.on("error", () => (ending = "incomplete"));
      res.on("close", () => resolve({ status: res.statusCode!, headers: kept(res.headers), body, ending: res.complete ? ending : "incomplete" }));
    });
    req.on("error", reject);
  });
}

/** GET `path` over h2c, on a session of its own. */
function overH2c(ctx: Ctx, path = PATH): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(ctx.baseUrl);
    session.on("error", reject);
    const stream = session.request({ ":method": "GET", ":path": path, authorization: `Bearer ${ctx.key}` });
    let head: http2.IncomingHttpHeaders = {};
    let body = "";
    stream.setEncoding("latin1");
    stream.on("response", (h) => (head = h));
    stream.on("data", (c: string) => (body += c));
    stream.on("error", () => {});
    stream.on("close", () => {
      session.close();
      // A stream reset with NO_ERROR after the headers is an end like any other to an HTTP/2 client.
      const ending = stream.rstCode === undefined || stream.rstCode === http2.constants.NGHTTP2_NO_ERROR ? "complete" : "incomplete";
      resolve({ status: Number(head[":status"]), headers: kept(head), body, ending });
    });
  });
}

/** Both protocols' answers, asserted equal; the HTTP/1.1 one. */
async function same(ctx: Ctx, path = PATH): Promise<Answer> {
  const h1 = await overHttp1(ctx, path);
  const h2 = await overH2c(ctx, path);
  // erplink's envelopes name each request's own id.
  const comparable = (a: Answer) => ({ ...a, headers: sorted(a.headers), body: a.body.replace(/"requestId":"req_[^"]*"/, '"requestId":"…"') });
  assert.equal(comparable(h2), comparable(h1), "h2c and HTTP/1.1 clients must get the same answer");
  return h1;
}

function sorted(headers: Record<string, string | string[]>): Record<string, string | string[]> {
  return Object.fromEntries(Object.entries(headers).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** erplink's own headers of a passed answer, beside the back end's. */
const OURS = {
  "content-security-policy": "sandbox; default-src 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "ratelimit-policy": '"minute";q=100000;w=60, "day";q=1000000;w=86400',
  "x-ratelimit-limit": "100000",
  "x-ratelimit-reset": "1767323100",
};

/** The envelope of erplink's own error answers, with its request id left out. */
function envelope(answer: Answer): unknown {
  const parsed = JSON.parse(answer.body) as { error: { requestId?: string } };
  delete parsed.error.requestId;
  return parsed;
}

/** Still serving: the next ordinary answer passes. */
async function stillUp(ctx: Ctx): Promise<void> {
  ctx.answer = { bytes: `HTTP/1.1 200 OK\r\ncontent-length: ${BODY.length}\r\n\r\n${BODY}` };
  const after = await same(ctx);
  assert.is(after.status, 200);
  assert.is(after.body, BODY);
}

// Node's HTTP/2 refuses connection-specific headers in an answer (it throws from the response's
// writeHead, in the stream's data handler): one back-end answer naming HTTP2-Settings would crash the whole process
// as soon as the client spoke h2c. Unguarded, the process exits with ERR_HTTP2_INVALID_CONNECTION_HEADERS.
/** One request over h2c, on a session of its own: status, headers, body. */
function h2Request(ctx: Ctx, headers: http2.OutgoingHttpHeaders, body?: string): Promise<{ status: number; headers: http2.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(ctx.baseUrl);
    session.on("error", reject);
    const stream = session.request({ authorization: `Bearer ${ctx.key}`, ...headers });
    let head: http2.IncomingHttpHeaders = {};
    let text = "";
    stream.setEncoding("utf8");
    stream.on("response", (h) => (head = h));
    stream.on("data", (c: string) => (text += c));
    stream.on("error", reject);
    stream.on("close", () => {
      session.close();
      resolve({ status: Number(head[":status"]), headers: head, body: text });
    });
    stream.end(body);
  });
}

Answers("the clients' CSRF handshake over h2c: a HEAD fetch gets erplink's token (the HTTP/1.1 one), a write's token is checked", async (ctx) => {
  const fetched = await h2Request(ctx, { ":method": "HEAD", ":path": "/odata/prod/SALES/SalesOrders/", "x-csrf-token": "Fetch" });
  assert.equal([fetched.status, fetched.body, fetched.headers["cache-control"]], [200, "", "no-store"]);
  const token = String(fetched.headers["x-csrf-token"]);
  assert.match(token, /^[A-Za-z0-9_-]{43}$/);
  const h1 = await fetch(`${ctx.baseUrl}/odata/prod/SALES`, { method: "HEAD", headers: { authorization: `Bearer ${ctx.key}`, "x-csrf-token": "Fetch" } });
  assert.equal([h1.status, h1.headers.get("x-csrf-token")], [200, token], "one token per key and instance, whatever the protocol");
  const write = (t: string) =>
    h2Request(ctx, { ":method": "POST", ":path": "/odata/prod/SALES/SalesOrders", "content-type": "application/json", "x-csrf-token": t }, '{"ID":9}');
  const refused = await write("not-erplinks");
  assert.equal([refused.status, refused.headers["x-csrf-token"], JSON.parse(refused.body).error.message], [403, "Required", "CSRF token validation failed: send the token erplink answers to X-CSRF-Token: Fetch, or no X-CSRF-Token at all"]);
  // erplink's token passes the CSRF stage; this key may not create, which the next stage says.
  const passed = await write(token);
  assert.equal([passed.status, passed.headers["x-csrf-token"], JSON.parse(passed.body).error.message], [403, undefined, "API key lacks permission 'create' for entity 'SalesOrders'"]);
  assert.equal(ctx.received, [], "nothing reached the back end");
});

Answers("a back end's HTTP2-Settings (connection-specific, RFC 9113 §8.2.2) is left out, for either protocol; erplink stays up", async (ctx) => {
  ctx.answer = { bytes: `HTTP/1.1 200 OK\r\ncontent-length: ${BODY.length}\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\nX-Upstream: yes\r\n\r\n${BODY}` };
  const answer = await same(ctx);
  assert.equal(answer, { status: 200, headers: sorted({ ...OURS, "content-length": "12", "x-upstream": "yes" }), body: BODY, ending: "complete" });
  await stillUp(ctx);
});

// undici hands a repeated header over as an array, which Node's HTTP/2 refuses for the headers it
// holds single-valued (it throws from writeHead: a back end's two Content-Types would crash the process).
// Unguarded, the process exits with ERR_HTTP2_HEADER_SINGLE_VALUE.
Answers("a back end's repeated single-value headers (Content-Type, ETag, Location, …) pass with their first value, for either protocol", async (ctx) => {
  ctx.answer = {
    bytes:
      `HTTP/1.1 200 OK\r\ncontent-length: ${BODY.length}\r\n` +
      "Content-Type: application/json\r\nContent-Type: text/html\r\n" +
      'ETag: W/"1"\r\nETag: W/"2"\r\n' +
      "Last-Modified: Thu, 01 Jan 2026 00:00:00 GMT\r\nLast-Modified: Fri, 02 Jan 2026 00:00:00 GMT\r\n" +
      "Location: /odata/sap/sales/0001/SalesOrders(1)\r\nLocation: /elsewhere\r\n" +
      "Content-Language: en\r\nContent-Language: de\r\n" +
      "Vary: Accept\r\nVary: Accept-Language\r\n" +
      `\r\n${BODY}`,
  };
  const answer = await same(ctx);
  assert.equal(answer, {
    status: 200,
    headers: sorted({
      ...OURS,
      "content-length": "12",
      "content-type": "application/json",
      etag: 'W/"1"',
      "last-modified": "Thu, 01 Jan 2026 00:00:00 GMT",
      location: `${ctx.baseUrl}/odata/prod/SALES/SalesOrders(1)`,
      "content-language": "en",
      // A list-valued header keeps every value.
      vary: "Accept, Accept-Language",
    }),
    body: BODY,
    ending: "complete",
  });
  await stillUp(ctx);
});

// undici's body stream fails when the back end closes before the body it announced; Fastify then
// calls the error handler, which would answer 500 INTERNAL (a client would think erplink broke), with the back end's
// headers (its Content-Encoding, ETag, …) still on the envelope. Unguarded: 500.
Answers("a back end that breaks off before its body: 502 BAD_GATEWAY in the envelope, without the back end's headers", async (ctx) => {
  ctx.answer = { bytes: "HTTP/1.1 200 OK\r\ncontent-length: 100\r\ncontent-encoding: gzip\r\netag: W/\"1\"\r\n\r\n", end: true };
  const answer = await same(ctx);
  assert.is(answer.status, 502);
  assert.equal(answer.headers["content-encoding"], undefined);
  assert.equal(answer.headers.etag, undefined);
  assert.is(answer.headers["content-type"], "application/json; charset=utf-8");
  assert.equal(envelope(answer), { error: { code: "BAD_GATEWAY", message: "the back end's answer broke off" } });
  await stillUp(ctx);
});

// Unguarded: 500 INTERNAL (undici's body timeout took the same way as a broken-off answer).
Answers("a back end that sends its headers, then nothing within the timeout: 504 GATEWAY_TIMEOUT in the envelope", async (ctx) => {
  ctx.answer = { bytes: "HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n" };
  const answer = await same(ctx);
  assert.is(answer.status, 504);
  assert.equal(envelope(answer), { error: { code: "GATEWAY_TIMEOUT", message: "the back end did not answer in time" } });
  await stillUp(ctx);
});

// A 304 may carry the Content-Length of the representation it stands for (RFC 9110 §8.6), which
// undici takes for a body that never came. Unguarded: 500 INTERNAL instead of the back end's 304.
Answers("a back end's 304 with the representation's Content-Length passes as a 304", async (ctx) => {
  ctx.answer = { bytes: 'HTTP/1.1 304 Not Modified\r\ncontent-length: 5\r\netag: W/"1"\r\n\r\n' };
  const answer = await same(ctx);
  assert.equal(answer, { status: 304, headers: sorted({ ...OURS, "content-length": "5", etag: 'W/"1"' }), body: "", ending: "complete" });
  await stillUp(ctx);
});

// Unguarded: 500 INTERNAL (Fastify refuses to set the status).
Answers("a status HTTP does not define (600) is 502 BAD_GATEWAY in the envelope", async (ctx) => {
  ctx.answer = { bytes: `HTTP/1.1 600 Odd\r\ncontent-length: ${BODY.length}\r\n\r\n${BODY}` };
  const answer = await same(ctx);
  assert.is(answer.status, 502);
  assert.equal(envelope(answer), { error: { code: "BAD_GATEWAY", message: "the back end answered with status 600, which HTTP does not define" } });
  await stillUp(ctx);
});

// Over HTTP/1.1 a broken-off answer ends the connection, so the client knows it is incomplete; over
// h2c Fastify's res.destroy() resets the stream with NO_ERROR, which ends an HTTP/2 answer like any other: a client
// would take a truncated JSON (or $batch) answer without Content-Length for the whole. Unguarded: h2c 'complete'.
Answers("an answer broken off in the middle of its body is incomplete to the client, for either protocol", async (ctx) => {
  ctx.answer = { bytes: 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nb\r\n{"value":[{\r\n', end: true };
  const answer = await same(ctx);
  assert.equal(answer, { status: 200, headers: sorted(OURS), body: '{"value":[{', ending: "incomplete" });
  await stillUp(ctx);
});

// Fastify's request.host prefers Host to :authority, so an h2c request naming one host in :authority
// and another in Host would have erplink tell the back end (Forwarded, X-Forwarded-Host) and the client (the back end's
// URLs rewritten to erplink's) the Host one. RFC 9113 §8.3.1: a server should treat such a request as malformed.
// Unguarded: 200, and the back end is told 'evil.example'.
Answers("an h2c request whose Host header contradicts its :authority is refused (400), nothing forwarded; one that agrees passes", async (ctx) => {
  const ask = (headers: http2.OutgoingHttpHeaders) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const session = http2.connect(ctx.baseUrl);
      session.on("error", reject);
      const stream = session.request({ ":method": "GET", ":path": PATH, authorization: `Bearer ${ctx.key}`, ...headers });
      let status = 0;
      let body = "";
      stream.setEncoding("utf8");
      stream.on("response", (h) => (status = Number(h[":status"])));
      stream.on("data", (c: string) => (body += c));
      stream.on("close", () => {
        session.close();
        resolve({ status, body });
      });
    });
  const authority = new URL(ctx.baseUrl).host;
  const contradicted = await ask({ ":authority": authority, host: "evil.example" });
  assert.is(contradicted.status, 400, contradicted.body);
  const parsed = JSON.parse(contradicted.body) as { error: { code: string; message: string } };
  assert.equal([parsed.error.code, parsed.error.message], ["VALIDATION_ERROR", "the request's Host header names another host than its :authority"]);
  assert.equal(ctx.received, []);
  const agreeing = await ask({ ":authority": authority, host: authority.toUpperCase() });
  assert.is(agreeing.status, 200, agreeing.body);
  assert.is(ctx.received.length, 1);
  assert.match(ctx.received[0]!, new RegExp(`\\r\\nx-forwarded-host: ${authority.replace(/[.]/g, "\\.")}\\r\\n`, "i"));
});

Answers.run();
