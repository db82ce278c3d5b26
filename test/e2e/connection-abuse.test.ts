/**
 * Clients that use the protocols against erplink rather than to talk to it,
 * on a real port: HTTP/2 rapid reset (a request and its reset in one packet,
 * over and over) is never forwarded and gets its session closed with
 * ENHANCE_YOUR_CALM, its address is refused for a while while others are
 * served, and an HTTP/1.1 connection that pipelines hundreds of requests has
 * only a few in progress at once, every one answered in order, and one
 * whose headers drip in is cut off at the headers deadline.
 */
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AbuseGuard } from "../../src/gateway/abuse-guard.js";
import { createDualProtocolServer } from "../../src/gateway/server.js";
import { V4_METADATA } from "../../test-support/odata/fixtures.js";
import { PREFACE, rawHeaders, rawRst } from "../../test-support/raw-h2.js";
import { addProdSales } from "../../test-support/sales-world.js";
import { AUTH, createWorld, type World } from "../../test-support/world.js";

interface Ctx {
  world: World;
  upstream: http.Server;
  port: number;
  key: string;
  /** Data requests the back end received. */
  hits: number;
  /** Most data requests the back end had in progress at once. */
  maxInProgress: number;
  /** How long the back end takes to answer a data request (ms). */
  delayMs: number;
  /** Bytes of padding the back end adds to its answer. */
  answerBytes: number;
}

const PATH = "/odata/prod/SALES/SalesOrders";
const NGHTTP2_CANCEL = 0x8;
const ENHANCE_YOUR_CALM = 0xb;

const Abuse = suite<Ctx>("connection abuse: rapid reset, reconnecting, pipelining");

Abuse.before.each(async (ctx) => {
  ctx.hits = 0;
  ctx.maxInProgress = 0;
  ctx.delayMs = 0;
  ctx.answerBytes = 0;
  let inProgress = 0;
  ctx.upstream = http.createServer((req, res) => {
    if (req.url?.endsWith("/$metadata")) {
      res.writeHead(200, { "content-type": "application/xml" }).end(V4_METADATA);
      return;
    }
    ctx.hits++;
    inProgress++;
    ctx.maxInProgress = Math.max(ctx.maxInProgress, inProgress);
    setTimeout(() => {
      inProgress--;
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ value: [], echo: req.url, padding: " ".repeat(ctx.answerBytes) }));
    }, ctx.delayMs);
  });
  await new Promise<void>((r) => ctx.upstream.listen(0, "127.0.0.1", r));
  ctx.world = await createWorld({ dualProtocol: true });
  await ctx.world.app.listen({ port: 0, host: "127.0.0.1" });
  ctx.port = (ctx.world.app.server.address() as AddressInfo).port;
  ctx.key = await addProdSales(ctx.world.app, `http://127.0.0.1:${(ctx.upstream.address() as AddressInfo).port}/odata/`, { SalesOrders: ["list", "get"] });
  // The service's $metadata read once, so that every request below is decided at once.
  const warm = await ctx.world.app.inject({ method: "GET", url: PATH, headers: { authorization: `Bearer ${ctx.key}` } });
  assert.is(warm.statusCode, 200);
  ctx.hits = 0;
  ctx.maxInProgress = 0;
});

Abuse.after.each(async (ctx) => {
  await ctx.world.close();
  ctx.upstream.closeAllConnections();
  await new Promise<void>((r) => ctx.upstream.close(() => r()));
});

/** The frames of the server's answer, as [type, stream, payload]. */
function frames(bytes: Buffer): [number, number, Buffer][] {
  const out: [number, number, Buffer][] = [];
  for (let at = 0; at + 9 <= bytes.length; ) {
    const length = bytes.readUIntBE(at, 3);
    if (at + 9 + length > bytes.length) break;
    out.push([bytes[at + 3]!, bytes.readUInt32BE(at + 5) & 0x7fffffff, bytes.subarray(at + 9, at + 9 + length)]);
    at += 9 + length;
  }
  return out;
}

/**
 * Opens an h2c connection from `localAddress` and writes `pairs` requests,
 * each followed by its reset in the same packet; resolves with what the
 * server sent until it closed the connection (or 3 s passed), or with
 * "refused" when the connection was closed before any byte came back.
 */
function rapidReset(ctx: Ctx, localAddress: string, pairs: number): Promise<Buffer | "refused"> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port: ctx.port, localAddress });
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", () => {});
    const timer = setTimeout(() => socket.destroy(), 3_000);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(chunks.length === 0 ? "refused" : Buffer.concat(chunks));
    });
    socket.on("connect", () => {
      const headers: [string, string][] = [
        [":method", "GET"],
        [":scheme", "http"],
        [":authority", `127.0.0.1:${ctx.port}`],
        [":path", PATH],
        ["authorization", `Bearer ${ctx.key}`],
      ];
      const packet: Buffer[] = [PREFACE];
      for (let i = 0; i < pairs; i++) packet.push(rawHeaders(1 + 2 * i, headers, true), rawRst(1 + 2 * i, NGHTTP2_CANCEL));
      socket.write(Buffer.concat(packet));
    });
  });
}

/** GET over a fresh HTTP/1.1 connection from `localAddress`: the status, or "refused". */
function getFrom(ctx: Ctx, localAddress: string): Promise<number | "refused"> {
  return new Promise((resolve) => {
    const req = http.get({ host: "127.0.0.1", port: ctx.port, path: PATH, localAddress, agent: false, headers: { authorization: `Bearer ${ctx.key}` } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode!));
    });
    req.on("error", () => resolve("refused"));
  });
}

Abuse("HTTP/2 rapid reset: no reset request is forwarded, the session is sent ENHANCE_YOUR_CALM, its address is refused for a while while others are served", async (ctx) => {
  const answer = await rapidReset(ctx, "127.0.0.2", 1_000);
  assert.ok(answer !== "refused");
  const goaway = frames(answer as Buffer).find(([type]) => type === 0x7);
  assert.ok(goaway !== undefined, "the session was sent GOAWAY");
  assert.is(goaway[2].readUInt32BE(4), ENHANCE_YOUR_CALM);
  assert.is(ctx.hits, 0, "no reset request reached the back end");
  // The address that did it is refused now; another is served.
  assert.is(await rapidReset(ctx, "127.0.0.2", 1), "refused");
  assert.is(await getFrom(ctx, "127.0.0.2"), "refused");
  assert.is(await getFrom(ctx, "127.0.0.1"), 200);
  // After its penalty (a second for a first strike) the address is served again.
  await new Promise((r) => setTimeout(r, 1_100));
  assert.is(await getFrom(ctx, "127.0.0.2"), 200);
});

Abuse("HTTP/1.1 pipelining: hundreds of requests on one connection, a few in progress at once, all answered in order", async (ctx) => {
  ctx.delayMs = 20;
  const count = 200;
  const socket = net.connect({ host: "127.0.0.1", port: ctx.port });
  await new Promise((r) => socket.once("connect", r));
  let received = "";
  socket.setEncoding("latin1");
  socket.on("data", (s: string) => (received += s));
  const requests: string[] = [];
  for (let i = 0; i < count; i++) requests.push(`GET ${PATH}?$top=${i} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ctx.key}\r\n\r\n`);
  socket.write(requests.join(""));
  const deadline = Date.now() + 20_000;
  while ((received.match(/HTTP\/1\.1 200 OK/g)?.length ?? 0) < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  socket.destroy();
  const echoes = [...received.matchAll(/"echo":"[^"]*\$top=(\d+)"/g)].map((m) => Number(m[1]));
  assert.equal(echoes, Array.from({ length: count }, (_, i) => i), "every request answered, in order");
  assert.is(ctx.hits, count);
  assert.ok(ctx.maxInProgress <= 8, `at most 8 in progress at the back end, saw ${ctx.maxInProgress}`);
});

Abuse("HTTP/1.1 pipelining: a client that leaves with requests in progress gets one request-log entry per forwarded request, each 499", async (ctx) => {
  ctx.delayMs = 400;
  const socket = net.connect(ctx.port, "127.0.0.1");
  socket.on("error", () => {});
  await new Promise((r) => socket.once("connect", r));
  const ids = ["pl-0", "pl-1", "pl-2"];
  socket.write(ids.map((id) => `GET ${PATH}?$top=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ctx.key}\r\nX-Request-Id: ${id}\r\n\r\n`).join(""));
  await new Promise((r) => setTimeout(r, 150));
  assert.is(ctx.hits, 3, "all three were forwarded before the client left");
  socket.destroy();
  await new Promise((r) => setTimeout(r, 600));
  await ctx.world.layer.logWriter.flush();
  for (const id of ids) {
    const res = await ctx.world.app.inject({ method: "GET", url: `/admin/logs?request_id=${id}`, headers: AUTH });
    const entries = (JSON.parse(res.body) as { data: { status: number; error_code: string; upstream_method: string }[] }).data;
    assert.equal(
      entries.map((e) => [e.status, e.error_code, e.upstream_method]),
      [[499, "CLIENT_CLOSED_REQUEST", "GET"]],
      id,
    );
  }
});

Abuse("HTTP/1.1 pipelining: 20,000 requests sent ahead while answers stream in parts are not all read and held: the connection is read a chunk at a time", async () => {
  // Answers written in two parts, as the data path streams a back end's body: each part of an answer queued
  // behind the one being sent makes Node resume a socket it paused, whatever waits in the pipeline.
  let handled = 0;
  let serverSocket: net.Socket | undefined;
  const server = createDualProtocolServer(
    (_req, res) => {
      handled++;
      const answer = res as http.ServerResponse;
      setTimeout(() => {
        answer.writeHead(200, { "content-type": "text/plain" });
        answer.write("a".repeat(1000));
        setTimeout(() => answer.end("b".repeat(1300)), 1);
      }, 1);
    },
    { firstByteTimeoutMs: 10_000, keepAliveTimeoutMs: 10_000, http2SessionTimeoutMs: 10_000 },
  );
  server.on("connection", (s: net.Socket) => (serverSocket = s));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const client = net.connect((server.address() as AddressInfo).port, "127.0.0.1");
  try {
    client.on("error", () => {});
    await new Promise((r) => client.once("connect", r));
    const request = "GET /odata/prod/SALES/SalesOrders?$top=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer erpl_0123456789abcdefghijklmnopqrstuvwxyz0123456789ab\r\n\r\n";
    const all = Buffer.from(request.repeat(20_000), "latin1");
    // Read answers for a while, then stop reading: the answers back up and the connection must stop being read.
    client.on("data", () => {});
    client.write(all);
    await new Promise((r) => setTimeout(r, 300));
    client.pause();
    await new Promise((r) => setTimeout(r, 1_000));
    const read = serverSocket!.bytesRead;
    const served = handled;
    await new Promise((r) => setTimeout(r, 500));
    assert.is(handled, served, "nothing more is served while the client reads nothing");
    // What was served, the answers that back up in the kernel's buffers, and one chunk more.
    assert.ok(read < served * request.length + 256 * 1024, `read ${read} bytes of ${all.length} for ${served} requests served`);
    assert.ok(read < all.length / 2, `read ${read} bytes of ${all.length}`);
  } finally {
    client.destroy();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

Abuse("HTTP/1.1 slowloris: headers that drip in byte by byte are cut off at the headers deadline with 408 in the envelope, and the connection closed", async () => {
  let handled = 0;
  const server = createDualProtocolServer(
    (_req, res) => {
      handled++;
      res.end();
    },
    { firstByteTimeoutMs: 10_000, keepAliveTimeoutMs: 10_000, http2SessionTimeoutMs: 10_000, headersTimeoutMs: 1_000 },
  );
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const client = net.connect((server.address() as AddressInfo).port, "127.0.0.1");
  const drip = setInterval(() => client.writable && client.write("x"), 100);
  try {
    client.on("error", () => {});
    await new Promise((r) => client.once("connect", r));
    const started = performance.now();
    client.write("GET /odata/prod/SALES/SalesOrders HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
    let received = "";
    client.on("data", (chunk: Buffer) => (received += chunk.toString("latin1")));
    await new Promise((r) => client.once("close", r));
    const elapsed = performance.now() - started;
    // The deadline, checked every quarter of it: cut off between 1 and 1.25 s after the first byte (plus scheduling).
    assert.ok(elapsed >= 950 && elapsed < 2_000, `closed after ${Math.round(elapsed)} ms`);
    assert.match(received, /^HTTP\/1\.1 408 Request Timeout\r\n/, JSON.stringify(received));
    const body = JSON.parse(received.slice(received.indexOf("\r\n\r\n") + 4)) as { error: { code: string; message: string; requestId: string } };
    assert.is(body.error.code, "REQUEST_TIMEOUT");
    assert.is(body.error.message, "the request did not arrive in time");
    assert.is(handled, 0);
  } finally {
    clearInterval(drip);
    client.destroy();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

Abuse("HTTP/2 streams beyond the process's limit are refused with REFUSED_STREAM, and the server lives on to serve the next", async () => {
  const guard = new AbuseGuard({ maxProcessStreams: 4 });
  const server = createDualProtocolServer(
    (req, res) => {
      // Held open until the client ends its body: each stream stays counted.
      req.on("end", () => res.end("ok"));
      req.resume();
    },
    { firstByteTimeoutMs: 10_000, keepAliveTimeoutMs: 10_000, http2SessionTimeoutMs: 10_000, guard },
  );
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const session = http2.connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  session.on("error", () => {});
  try {
    const open = Array.from({ length: 4 }, () => session.request({ ":method": "POST", ":path": "/held", "content-length": "1" }));
    for (const s of open) s.on("error", () => {}).resume();
    await new Promise((r) => setTimeout(r, 200));
    assert.is(guard.streams(), 4);
    const refused = session.request({ ":method": "POST", ":path": "/one-too-many", "content-length": "1" });
    const code = await new Promise<number>((resolve) => {
      refused.on("error", () => {});
      refused.on("close", () => resolve(refused.rstCode ?? -1));
    });
    assert.is(code, http2.constants.NGHTTP2_REFUSED_STREAM);
    assert.is(guard.counts.refusedStreams, 1);
    // The held streams finish, and a new one is served.
    const done = open.map((s) => new Promise((r) => s.on("close", r)));
    for (const s of open) s.end("x");
    await Promise.all(done);
    const next = session.request({ ":method": "POST", ":path": "/next", "content-length": "1" });
    next.end("x");
    let body = "";
    next.setEncoding("utf8");
    next.on("data", (c: string) => (body += c));
    await new Promise((r) => next.on("end", r));
    assert.is(body, "ok");
  } finally {
    session.destroy();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

Abuse("HTTP/2: a client that cancels answer after answer is asked to go away gracefully (GOAWAY NO_ERROR) and carries on over a new session, never refused", async (ctx) => {
  ctx.answerBytes = 256 * 1024;
  const url = `http://127.0.0.1:${ctx.port}`;
  let session = http2.connect(url);
  const goaways: number[] = [];
  const watch = (s: http2.ClientHttp2Session) => {
    s.on("error", () => {});
    s.on("goaway", (code: number) => goaways.push(code));
  };
  watch(session);
  const outcomes = new Map<string, number>();
  try {
    for (let i = 0; i < 260; i++) {
      if (session.closed || session.destroyed) {
        session.destroy();
        session = http2.connect(url);
        watch(session);
      }
      const stream = session.request({ ":path": `${PATH}?$top=${i}`, authorization: `Bearer ${ctx.key}` });
      const outcome = await new Promise<string>((resolve) => {
        stream.on("response", () => {
          // The answer began: cut it short, as a gRPC deadline or a closed tab does.
          stream.close(http2.constants.NGHTTP2_CANCEL);
          resolve("answered");
        });
        stream.on("error", (e: NodeJS.ErrnoException) => resolve(e.message));
        stream.on("close", () => resolve(`closed ${stream.rstCode}`));
      });
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    }
    assert.equal([...outcomes], [["answered", 260]], "every stream answered, none refused");
    assert.equal(goaways, [0], "one graceful GOAWAY, after 200 answers cut short");
  } finally {
    session.destroy();
  }
});

Abuse("strikes: a first refusal lasts a second, each further one twice as long, up to a minute; a quiet minute forgets them", () => {
  let now = 0;
  const guard = new AbuseGuard({ now: () => now });
  guard.strike("10.0.0.1");
  assert.ok(guard.refuses("10.0.0.1"));
  assert.not.ok(guard.refuses("10.0.0.2"));
  now = 1_001;
  assert.not.ok(guard.refuses("10.0.0.1"));
  guard.strike("10.0.0.1");
  now += 1_999;
  assert.ok(guard.refuses("10.0.0.1"), "two seconds for a second strike");
  for (let i = 0; i < 10; i++) guard.strike("10.0.0.1");
  now += 59_999;
  assert.ok(guard.refuses("10.0.0.1"), "capped at a minute");
  now += 2;
  assert.not.ok(guard.refuses("10.0.0.1"));
  now += 60_001;
  guard.strike("10.0.0.1");
  now += 1_001;
  assert.not.ok(guard.refuses("10.0.0.1"), "forgotten after a quiet minute: a first strike again");
});

Abuse.run();
