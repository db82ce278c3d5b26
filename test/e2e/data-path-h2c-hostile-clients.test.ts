/**
 * Hostile HTTP/2 (h2c) clients on the data path, against a recording back
 * end: bodies in several DATA frames with pauses, bodies that go on after
 * erplink answered (413, 401, 403), client resets mid-body and while the
 * back end answers, trailers, `$batch` bodies split across frames, a second
 * request racing the reset, `Expect`, GET/HEAD with undeclared data that
 * never ends. What the back end receives must be what the client sent in
 * full and erplink authorized, once; each request answered and logged once.
 *
 * A client that loses its session mid-body (no Content-Length): Node ends
 * the compat request at the close, so Fastify took the bytes received so
 * far for the whole body, so a truncated write would be forwarded and logged
 * 200. src/gateway/data/forward.ts therefore sends
 * nothing for a request whose client has reset it. Not tested here, because
 * it cannot be told apart: Node's client `stream.close(code)` ends its side
 * (END_STREAM) before it resets, so the server sees a complete body, and
 * the reset may only come after the request was forwarded. HTTP/1.1 (the
 * last test) forwards nothing when the connection drops mid-body.
 */
import http from "node:http";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { V4_METADATA } from "../../test-support/odata/fixtures.js";
import { addProdSales } from "../../test-support/sales-world.js";
import { createWorld, type World } from "../../test-support/world.js";

interface Rec { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }
interface Ctx { world: World; upstream: http.Server; received: Rec[]; logs: { status?: number }[]; baseUrl: string; key: string; session: http2.ClientHttp2Session }
interface Out { status?: number; body: string; rst?: number }

const P = "/odata/prod/SALES";
const SERVICE_ROOT = "/odata/sap/sales/0001/";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const within = <T>(p: Promise<T>, ms = 3000): Promise<T | "timeout"> => Promise.race([p, sleep(ms).then(() => "timeout" as const)]);

const Attack = suite<Ctx>("data path over h2c: hostile clients against a recording back end");

Attack.before.each(async (ctx) => {
  ctx.received = [];
  ctx.upstream = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.url!.endsWith("/$metadata")) return void res.writeHead(200, { "content-type": "application/xml" }).end(V4_METADATA);
      if (req.url !== SERVICE_ROOT) ctx.received.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString("latin1") });
      const answer = () => res.writeHead(200, { "content-type": "application/json" }).end(req.method === "HEAD" ? undefined : '{"value":[]}');
      if (req.url!.includes("SalesOrders(9)")) setTimeout(answer, 400);
      else answer();
    });
  });
  await new Promise<void>((r) => ctx.upstream.listen(0, "127.0.0.1", r));
  ctx.world = await createWorld({ dualProtocol: true, upstreamTimeoutMs: 2000 });
  ctx.logs = [];
  const writer = ctx.world.layer.logWriter as unknown as { record: (e: { status?: number }) => void };
  const record = writer.record.bind(writer);
  writer.record = (entry) => (ctx.logs.push(entry), record(entry));
  await ctx.world.app.listen({ port: 0, host: "127.0.0.1" });
  ctx.baseUrl = `http://127.0.0.1:${(ctx.world.app.server.address() as AddressInfo).port}`;
  ctx.key = await addProdSales(ctx.world.app, `http://127.0.0.1:${(ctx.upstream.address() as AddressInfo).port}/odata/`, {
    SalesOrders: ["list", "get", "create", "update"],
    Products: ["get", "update"],
  });
  ctx.logs.length = 0;
  ctx.session = http2.connect(ctx.baseUrl);
  ctx.session.on("error", () => {});
});

Attack.after.each(async (ctx) => {
  ctx.session.destroy();
  await ctx.world.close();
  ctx.upstream.closeAllConnections();
  await new Promise<void>((r) => ctx.upstream.close(() => r()));
});

function open(ctx: Ctx, headers: http2.OutgoingHttpHeaders, options: http2.ClientSessionRequestOptions = {}, session = ctx.session): { st: http2.ClientHttp2Stream; done: Promise<Out> } {
  const st = session.request({ authorization: `Bearer ${ctx.key}`, ...headers }, options);
  const out: Out = { body: "" };
  st.on("response", (h) => (out.status = Number(h[":status"])));
  st.setEncoding("utf8");
  st.on("data", (c: string) => (out.body += c));
  st.on("error", () => {});
  return { st, done: new Promise((r) => st.on("close", () => r({ ...out, rst: st.rstCode }))) };
}

async function frames(st: http2.ClientHttp2Stream, parts: string[], pauseMs = 60): Promise<void> {
  for (const p of parts) {
    st.write(p);
    await sleep(pauseMs);
  }
}

const batchPart = (n: number) =>
  `--b\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\nPOST SalesOrders HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{"Note":"n${n}"}\r\n`;

Attack("a body in several DATA frames with pauses is forwarded whole, once, and logged once", async (ctx) => {
  const { st, done } = open(ctx, { ":method": "POST", ":path": `${P}/SalesOrders`, "content-type": "application/json" });
  await frames(st, ['{"No', 'te":"a', 'b"', "}"]);
  st.end();
  const out = await within(done);
  assert.equal(out, { status: 200, body: '{"value":[]}', rst: 0 });
  await sleep(100);
  assert.equal(ctx.received.map((r) => [r.method, r.url, r.body]), [["POST", `${SERVICE_ROOT}SalesOrders`, '{"Note":"ab"}']]);
  assert.equal(ctx.logs.map((l) => l.status), [200]);
});

Attack("$batch split across frames: complete is forwarded once; cut off by a reset (NO_ERROR, CANCEL) nothing is", async (ctx) => {
  const whole = open(ctx, { ":method": "POST", ":path": `${P}/$batch`, "content-type": "multipart/mixed; boundary=b" });
  await frames(whole.st, [batchPart(1), batchPart(2)]);
  whole.st.end("--b--\r\n");
  assert.is((await within(whole.done)) !== "timeout" && (await whole.done).status, 200);
  await sleep(100);
  assert.is(ctx.received.length, 1);
  assert.ok(ctx.received[0]!.body.includes("n2") && ctx.received[0]!.body.includes("--b--"));
  ctx.received.length = 0;
  for (const code of [http2.constants.NGHTTP2_NO_ERROR, http2.constants.NGHTTP2_CANCEL]) {
    const cut = open(ctx, { ":method": "POST", ":path": `${P}/$batch`, "content-type": "multipart/mixed; boundary=b" });
    await frames(cut.st, [batchPart(1), batchPart(2)]);
    cut.st.close(code);
    await within(cut.done);
    await sleep(200);
    assert.equal(ctx.received, [], `reset ${code}`);
  }
});

Attack("over the limit: 413 while the client keeps sending; nothing forwarded, the stream closes, a second request on the session is served once", async (ctx) => {
  const { st, done } = open(ctx, { ":method": "POST", ":path": `${P}/SalesOrders`, "content-type": "application/json" });
  let ended = false;
  void done.then(() => (ended = true));
  let second: Promise<Out> | undefined;
  st.on("response", () => {
    const s2 = open(ctx, { ":method": "GET", ":path": `${P}/SalesOrders` });
    s2.st.end();
    second = s2.done;
  });
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  for (let sent = 0; !ended && sent < 4 * 1024 * 1024; sent += chunk.length) {
    if (!st.write(chunk)) await Promise.race([new Promise((r) => st.once("drain", r)), sleep(100)]);
    await sleep(1);
  }
  const out = await within(done, 4000);
  assert.ok(out !== "timeout", "the 413 stream never closed");
  assert.is(out.status, 413);
  assert.ok(second !== undefined);
  const s = await within(second!);
  assert.ok(s !== "timeout" && s.status === 200);
  await sleep(100);
  assert.equal(ctx.received.map((r) => [r.method, r.url]), [["GET", `${SERVICE_ROOT}SalesOrders`]]);
});

Attack("401 and 403 with a body in frames and a late end: answered once, logged once, nothing forwarded", async (ctx) => {
  for (const [status, path, authorization] of [[401, `${P}/SalesOrders`, "Bearer erpl_nope"], [403, `${P}/Customers`, undefined]] as const) {
    const { st, done } = open(ctx, { ":method": "POST", ":path": path, "content-type": "application/json", ...(authorization ? { authorization } : {}) });
    await frames(st, ['{"Note":', '"x"', "}"], 150);
    st.end();
    const out = await within(done);
    assert.ok(out !== "timeout" && out.status === status, JSON.stringify(out));
  }
  await sleep(100);
  assert.equal(ctx.received, []);
  assert.equal(ctx.logs.map((l) => l.status), [401, 403]);
});

Attack("trailers from the client are neither forwarded nor read as headers", async (ctx) => {
  const { st, done } = open(ctx, { ":method": "PATCH", ":path": `${P}/SalesOrders(1)`, "content-type": "application/json" }, { waitForTrailers: true });
  st.on("wantTrailers", () => st.sendTrailers({ "x-http-method": "DELETE", "if-match": "W/\"x\"", "x-forwarded-path": "/evil", "content-type": "text/plain" }));
  st.end('{"Note":"t"}');
  assert.is(((await within(done)) as Out).status, 200);
  await sleep(100);
  assert.is(ctx.received.length, 1);
  const r = ctx.received[0]!;
  assert.equal([r.method, r.body, r.headers["content-type"], r.headers["if-match"], r.headers["x-http-method"]], ["PATCH", '{"Note":"t"}', "application/json", undefined, undefined]);
  assert.is(r.headers["x-forwarded-path"], `${P}/SalesOrders(1)`);
});

Attack("Expect: 100-continue is served once; another expectation is 417 and reaches nothing", async (ctx) => {
  const a = open(ctx, { ":method": "PATCH", ":path": `${P}/SalesOrders(1)`, "content-type": "application/json", expect: "100-continue" });
  a.st.on("continue", () => a.st.end('{"Note":"c"}'));
  assert.is(((await within(a.done)) as Out).status, 200);
  const b = open(ctx, { ":method": "PATCH", ":path": `${P}/SalesOrders(1)`, "content-type": "application/json", expect: "foo" });
  b.st.end('{"Note":"d"}');
  assert.is(((await within(b.done)) as Out).status, 417);
  await sleep(100);
  assert.equal(ctx.received.map((r) => r.body), ['{"Note":"c"}']);
});

Attack("GET and HEAD with undeclared data that never ends: answered, closed, forwarded without a body, logged once", async (ctx) => {
  for (const method of ["GET", "HEAD"]) {
    const { st, done } = open(ctx, { ":method": method, ":path": `${P}/SalesOrders` });
    st.write("xxxx");
    const out = await within(done, 1500);
    assert.ok(out !== "timeout" && out.status === 200, `${method}: ${JSON.stringify(out)}`);
  }
  await sleep(100);
  assert.equal(ctx.received.map((r) => [r.method, r.body]), [["GET", ""], ["HEAD", ""]]);
  assert.equal(ctx.logs.map((l) => l.status), [200, 200]);
});

Attack("a reset while the back end answers: forwarded once, logged once, and the next request on the session is served", async (ctx) => {
  for (const code of [http2.constants.NGHTTP2_NO_ERROR, http2.constants.NGHTTP2_CANCEL]) {
    const { st, done } = open(ctx, { ":method": "PATCH", ":path": `${P}/SalesOrders(9)`, "content-type": "application/json" });
    st.end('{"Note":"s"}');
    await sleep(150);
    st.close(code);
    const next = open(ctx, { ":method": "GET", ":path": `${P}/SalesOrders(1)` });
    next.st.end();
    await within(done);
    assert.is(((await within(next.done)) as Out).status, 200);
    await sleep(600);
  }
  assert.equal(ctx.received.map((r) => [r.method, r.body]), [["PATCH", '{"Note":"s"}'], ["GET", ""], ["PATCH", '{"Note":"s"}'], ["GET", ""]]);
  assert.is(ctx.logs.length, 4);
});

// A client that gives up mid-body must not have the part it sent written to the ERP.
const CUT: [string, http2.OutgoingHttpHeaders, string[]][] = [
  ["media upload", { ":method": "PUT", ":path": `${P}/Products('P1')/$value`, "content-type": "application/octet-stream" }, ["AAAA", "BBBB"]],
  ["primitive $value", { ":method": "PUT", ":path": `${P}/SalesOrders(1)/Amount/$value`, "content-type": "text/plain" }, ["1000"]],
  ["JSON whose prefix parses", { ":method": "PATCH", ":path": `${P}/SalesOrders(1)`, "content-type": "application/json" }, ['{"Note":"a"}', " "]],
];
// (A stream closed with a code by Node's client is not a case: see the file's header.)
for (const [how, cut] of [["the session destroyed", (ctx: Ctx, _st: http2.ClientHttp2Stream) => ctx.session.destroy()]] as const) {
  Attack(`reset mid-body (${how}): nothing of an unfinished body reaches the back end`, async (ctx) => {
    const seen: string[] = [];
    for (const [what, headers, parts] of CUT) {
      ctx.received.length = 0;
      if (ctx.session.destroyed) (ctx.session = http2.connect(ctx.baseUrl)).on("error", () => {});
      const { st, done } = open(ctx, headers, { endStream: false });
      await frames(st, parts);
      cut(ctx, st);
      await within(done);
      await sleep(300);
      for (const r of ctx.received) seen.push(`${what}: ${r.method} ${r.url} body ${JSON.stringify(r.body)}`);
    }
    assert.equal(seen, [], `forwarded although the client reset its stream mid-body:\n${seen.join("\n")}`);
  });
}

Attack("for comparison, HTTP/1.1: a client that drops its connection mid-body (chunked) forwards nothing", async (ctx) => {
  await new Promise<void>((resolve) => {
    const req = http.request(`${ctx.baseUrl}${P}/Products('P1')/$value`, { method: "PUT", agent: false, headers: { authorization: `Bearer ${ctx.key}`, "content-type": "application/octet-stream" } });
    req.on("error", () => resolve());
    req.write("AAAA");
    setTimeout(() => (req.destroy(), resolve()), 100);
  });
  await sleep(300);
  assert.equal(ctx.received, []);
});

Attack.run();
