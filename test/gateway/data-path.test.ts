/**
 * The OData data path against a small upstream of our own that records what
 * reaches it: authentication, per-access authorization (nothing forwarded
 * on denial), credential injection and header hygiene, pass-through of
 * answers, rate limits, 502/504, and the request log.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { V4_METADATA } from "../../test-support/odata/fixtures.js";
import { MASTER_KEY, createWorld, type World } from "../../test-support/world.js";
import { json, post } from "../../test-support/http.js";

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

interface Ctx {
  world: World;
  upstream: http.Server;
  seen: Seen[];
  base: string;
  key: string;
  keyId: string;
  /** Milliseconds the upstream waits before answering. */
  delay: number;
  /** When set, the back end answers entity requests with this HTML page and its own CSP. */
  html?: string;
  /** When set, the back end answers entity requests 503 with its own Retry-After. */
  unavailable?: boolean;
}

/** Rate-limit headers a back end sends of its own (the limits of erplink's back-end credentials): none may reach the client. */
const UPSTREAM_RATE_LIMIT_HEADERS = {
  "x-ratelimit-limit": "999",
  "x-ratelimit-remaining": "998",
  "x-ratelimit-reset": "1",
  "ratelimit-policy": '"upstream";q=999;w=1',
  ratelimit: '"upstream";r=998;t=1',
  "ratelimit-limit": "999",
  "ratelimit-remaining": "998",
  "ratelimit-reset": "1",
  "x-rate-limit-limit": "999",
};

/** The names of the rate-limit headers of an answer, sorted. */
const rateLimitNames = (headers: Record<string, unknown>): string[] =>
  Object.keys(headers)
    .filter((n) => /^(x-)?rate-?limit(-|$)/.test(n))
    .sort();

const Data = suite<Ctx>("OData data path");

Data.before.each(async (ctx) => {
  ctx.seen = [];
  ctx.delay = 0;
  ctx.html = undefined;
  ctx.unavailable = undefined;
  ctx.upstream = http.createServer(async (req, res) => {
    const rec = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: "" };
    if (!req.url?.endsWith("/$metadata")) ctx.seen.push(rec);
    for await (const chunk of req) rec.body += String(chunk);
    setTimeout(() => {
      if (req.headers.authorization !== `Basic ${Buffer.from("erp-user:erp-pass").toString("base64")}`) {
        res.writeHead(401, { "content-type": "text/plain" }).end("no credentials");
        return;
      }
      if (req.url?.endsWith("/$metadata")) {
        res.writeHead(200, { "content-type": "application/xml" }).end(V4_METADATA);
        return;
      }
      if (ctx.html !== undefined) {
        res.writeHead(500, { "content-type": "text/html", "content-security-policy": "img-src *" }).end(ctx.html);
        return;
      }
      if (ctx.unavailable) {
        res.writeHead(503, { "content-type": "text/plain", "retry-after": "120", ...UPSTREAM_RATE_LIMIT_HEADERS }).end("busy");
        return;
      }
      res.writeHead(200, {
        "content-type": "application/json;odata.metadata=minimal",
        "odata-version": "4.0",
        "set-cookie": "SAP_SESSIONID=secret; path=/",
        "x-upstream": "yes",
        // Headers erplink sets itself: its own must reach the client, not these.
        "x-request-id": "upstream-rid",
        ...UPSTREAM_RATE_LIMIT_HEADERS,
        ...(req.method === "POST" ? { location: `${ctx.base}/sap/sales/0001/SalesOrders(1)`, "odata-entityid": "https://elsewhere/SalesOrders(1)" } : {}),
      });
      res.end(JSON.stringify({ value: [{ ID: 1 }], echo: req.url }));
    }, ctx.delay);
  });
  await new Promise<void>((r) => ctx.upstream.listen(0, "127.0.0.1", r));
  ctx.base = `http://127.0.0.1:${(ctx.upstream.address() as AddressInfo).port}/odata`;
  ctx.world = await createWorld({ dataLimits: { perMinute: 3, perDay: 1000 }, upstreamTimeoutMs: 300 });
  const key = await setUp(ctx.world, ctx.base);
  ctx.key = key.key;
  ctx.keyId = key.id;
});

/** The instance `prod` (service SALES on the recording back end at `base`) and the key `app`, whose secret and id it returns. */
async function setUp(world: World, base: string): Promise<{ key: string; id: string }> {
  const sys = json(await post(world.app, "/admin/systems", { name: "S4" })).data.id;
  const ins = await post(world.app, `/admin/systems/${sys}/instances`, {
    name: "prod",
    base_url: `${base}/`,
    services: { SALES: { path: "sap/sales/0001" } },
    auth: { type: "basic", username: "erp-user", password: "erp-pass" },
  });
  assert.is(ins.statusCode, 201);
  return json(
    await post(world.app, "/admin/api-keys", {
      name: "app",
      permissions: { prod: { SALES: { SalesOrders: ["list", "get"], Customers: ["get"] } }, ghost: { "*": { "*": ["list"] } } },
    }),
  ).data;
}

Data.after.each(async (ctx) => {
  await ctx.world.close();
  await new Promise<void>((r) => ctx.upstream.close(() => r()));
});

const get = (ctx: Ctx, url: string, headers: Record<string, string> = {}) =>
  ctx.world.app.inject({ method: "GET", url, headers: { authorization: `Bearer ${ctx.key}`, ...headers } });

Data("a back end's HTML page is passed sandboxed: it cannot run as a page of erplink's origin (the dashboard's CSRF cookie lives there)", async (ctx) => {
  ctx.html = "<script>fetch('/admin/api-keys', {method: 'POST'})</script>";
  const res = await get(ctx, "/odata/prod/SALES/SalesOrders");
  assert.is(res.statusCode, 500);
  assert.is(res.body, ctx.html);
  assert.is(res.headers["content-type"], "text/html");
  // The back end's policy stays, beside erplink's: a browser enforces both.
  assert.equal(res.headers["content-security-policy"], ["img-src *", "sandbox; default-src 'none'; frame-ancestors 'none'"]);
  assert.is(res.headers["x-content-type-options"], "nosniff");
});

function assertEnvelope(res: { statusCode: number; body: string; headers: Record<string, unknown> }, status: number, code: string, message: string) {
  assert.is(res.statusCode, status, res.body);
  assert.equal(JSON.parse(res.body), { error: { code, message, requestId: res.headers["x-request-id"] } });
}

Data("an allowed GET reaches the mapped service path with the back-end credentials, not the client's", async (ctx) => {
  const res = await get(ctx, "/odata/prod/SALES/SalesOrders?$top=2&$select=ID", {
    cookie: "erplink=1",
    "x-request-id": "rid-42",
    connection: "keep-alive, x-drop-me",
    "x-drop-me": "1",
  });
  assert.is(res.statusCode, 200);
  assert.equal(JSON.parse(res.body), { value: [{ ID: 1 }], echo: "/odata/sap/sales/0001/SalesOrders?$top=2&$select=ID" });
  assert.is(res.headers["x-upstream"], "yes");
  assert.is(res.headers["odata-version"], "4.0");
  assert.is(res.headers["set-cookie"], undefined, "the back end's session cookie stays with erplink");
  assert.is(res.headers["content-security-policy"], "sandbox; default-src 'none'; frame-ancestors 'none'");
  assert.is(res.headers["x-content-type-options"], "nosniff");
  assert.is(res.headers["x-request-id"], "rid-42");
  assert.is(res.headers["x-ratelimit-limit"], "3");
  assert.is(res.headers["x-ratelimit-remaining"], "2");
  assert.match(String(res.headers["x-ratelimit-reset"]), /^\d{10}$/);
  assert.is(res.headers["ratelimit-policy"], '"minute";q=3;w=60, "day";q=1000;w=86400');
  assert.match(String(res.headers.ratelimit), /^"minute";r=2;t=\d+, "day";r=999;t=\d+$/);
  // erplink's five, and none of the back end's others (RateLimit-Limit, X-Rate-Limit-Limit, …).
  assert.equal(rateLimitNames(res.headers), ["ratelimit", "ratelimit-policy", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"]);
  assert.is(ctx.seen.length, 1);
  const h = ctx.seen[0]!.headers;
  assert.is(h.authorization, `Basic ${Buffer.from("erp-user:erp-pass").toString("base64")}`);
  assert.is(h.cookie, undefined);
  assert.is(h["x-drop-me"], undefined);
  assert.is(h["x-request-id"], "rid-42");
  assert.is(h["x-forwarded-for"], "127.0.0.1");
  assert.is(h["x-forwarded-proto"], "http");
  assert.match(String(h.forwarded), /^for="127\.0\.0\.1";proto=http;host="/);
});

Data("credentials: none is 401, the master key and admin keys are 403", async (ctx) => {
  const none = await ctx.world.app.inject({ method: "GET", url: "/odata/prod/SALES/SalesOrders" });
  assertEnvelope(none, 401, "UNAUTHORIZED", "missing bearer token: send Authorization: Bearer <data key>");
  const master = await get(ctx, "/odata/prod/SALES/SalesOrders", { authorization: `Bearer ${MASTER_KEY}` });
  assertEnvelope(master, 403, "FORBIDDEN", "the master key cannot access data: use a data key");
  const admin = json(await post(ctx.world.app, "/admin/api-keys", { name: "ops", type: "admin" })).data.key;
  const adminRes = await get(ctx, "/odata/prod/SALES/SalesOrders", { authorization: `Bearer ${admin}` });
  assertEnvelope(adminRes, 403, "FORBIDDEN", "API key is not a data key: data access needs a data key");
  const forged = await get(ctx, "/odata/prod/SALES/SalesOrders", { authorization: "Bearer erpl_nope" });
  assertEnvelope(forged, 401, "UNAUTHORIZED", "invalid bearer token");
  assert.is(ctx.seen.length, 0);
});

Data("instances the key cannot see are 403 on the instance step; unknown ones it may see are 404", async (ctx) => {
  assertEnvelope(await get(ctx, "/odata/qa/SALES/SalesOrders"), 403, "FORBIDDEN", "API key has no access to instance 'qa'");
  assertEnvelope(await get(ctx, "/odata/ghost/SALES/SalesOrders"), 404, "NOT_FOUND", "instance 'ghost' not found");
  assertEnvelope(await get(ctx, "/odata/prod/OTHER/SalesOrders"), 403, "FORBIDDEN", "API key has no access to service 'OTHER'");
  assert.is(ctx.seen.length, 0);
});

Data("every access is authorized: a forbidden entity, operation or $expand target forwards nothing", async (ctx) => {
  assertEnvelope(await get(ctx, "/odata/prod/SALES/Products"), 403, "FORBIDDEN", "API key has no access to entity 'Products'");
  const del = await ctx.world.app.inject({
    method: "DELETE",
    url: "/odata/prod/SALES/SalesOrders(1)",
    headers: { authorization: `Bearer ${ctx.key}` },
  });
  assertEnvelope(del, 403, "FORBIDDEN", "API key lacks permission 'delete' for entity 'SalesOrders'");
  assertEnvelope(
    await get(ctx, "/odata/prod/SALES/SalesOrders(1)?$expand=Items($expand=Product)"),
    403,
    "FORBIDDEN",
    "API key has no access to entity 'Products'",
  );
  assert.is(ctx.seen.length, 0, "nothing reached the back end");
  // A permitted navigation target passes.
  const ok = await get(ctx, "/odata/prod/SALES/SalesOrders(1)?$expand=Customer");
  assert.is(ok.statusCode, 200);
  assert.is(ctx.seen.length, 1);
});

Data("$metadata passes for a key with any permission on the service", async (ctx) => {
  const meta = await get(ctx, "/odata/prod/SALES/$metadata");
  assert.is(meta.statusCode, 200);
  assert.match(meta.body, /<EntitySet Name="SalesOrders"/);
});

const BATCH = [
  "--batch_1",
  "Content-Type: application/http",
  "Content-Transfer-Encoding: binary",
  "",
  "GET SalesOrders?$top=1 HTTP/1.1",
  "Accept: application/json",
  "",
  "",
  "--batch_1",
  "Content-Type: application/http",
  "Content-Transfer-Encoding: binary",
  "",
  "GET /odata/prod/SALES/Customers('C1') HTTP/1.1",
  "",
  "",
  "--batch_1--",
  "",
].join("\r\n");

Data("$batch: every part is authorized, absolute part URLs are rewritten for the back end's root", async (ctx) => {
  const res = await ctx.world.app.inject({
    method: "POST",
    url: "/odata/prod/SALES/$batch",
    headers: { authorization: `Bearer ${ctx.key}`, "content-type": "multipart/mixed; boundary=batch_1" },
    payload: BATCH,
  });
  assert.is(res.statusCode, 200, res.body);
  assert.equal(JSON.parse(res.body), { value: [{ ID: 1 }], echo: "/odata/sap/sales/0001/$batch" });
  const forwarded = ctx.seen.filter((s) => s.method === "POST");
  assert.is(forwarded.length, 1);
  assert.is(forwarded[0]!.headers["content-type"], "multipart/mixed; boundary=batch_1");
  assert.is(forwarded[0]!.body, BATCH.replace("GET /odata/prod/SALES/Customers('C1')", "GET Customers('C1')"));
  await ctx.world.layer.logWriter.flush();
  const entry = (await ctx.world.store.logs.query({ limit: 10 })).items.find((e) => e.requestId === res.headers["x-request-id"]);
  assert.equal(entry?.accesses, [
    { entity: "SalesOrders", operation: "list" },
    { entity: "Customers", operation: "get" },
  ]);
});

// Parts must not forward every header but credentials and method tunnels, or URL overrides, forwarding
// headers, sap-language and vendor headers reach the back end inside a part while the top level drops them.
Data("$batch: part headers follow the allowlist: URL overrides, forwarding, SAP and custom headers never reach the back end (multipart and JSON)", async (ctx) => {
  const send = (contentType: string, payload: string) =>
    ctx.world.app.inject({ method: "POST", url: "/odata/prod/SALES/$batch", headers: { authorization: `Bearer ${ctx.key}`, "content-type": contentType }, payload });
  const multipart = [
    "--batch_1",
    "Content-Type: application/http",
    "Content-Transfer-Encoding: binary",
    "Content-ID: r1",
    "X-Original-URL: /odata/prod/SALES/Products",
    "",
    "GET SalesOrders?$top=1 HTTP/1.1",
    "Accept: application/json",
    "X-Original-URL: /sap/opu/odata/sap/OTHER/Secrets",
    "Prefer: odata.maxpagesize=1",
    "X-Forwarded-Host: evil.example",
    "sap-language: DE",
    "X-Custom: 1",
    "",
    "",
    "--batch_1",
    "Content-Type: application/http",
    "Content-ID: r2",
    "X-Custom: m",
    "",
    "GET Customers('C1') HTTP/1.1",
    'If-Match: W/"1"',
    "X-Rewrite-URL: /Secrets",
    "Content-ID: r2",
    "Host: erp.internal",
    "",
    "",
    "--batch_1--",
    "",
  ].join("\r\n");
  const multipartSent = [
    "--batch_1",
    "Content-Type: application/http",
    "Content-Transfer-Encoding: binary",
    "Content-ID: r1",
    "",
    "GET SalesOrders?$top=1 HTTP/1.1",
    "Accept: application/json",
    "Prefer: odata.maxpagesize=1",
    "",
    "",
    "--batch_1",
    "Content-Type: application/http",
    "Content-ID: r2",
    "",
    "GET Customers('C1') HTTP/1.1",
    'If-Match: W/"1"',
    "Content-ID: r2",
    "",
    "",
    "--batch_1--",
    "",
  ].join("\r\n");
  const mp = await send("multipart/mixed; boundary=batch_1", multipart);
  assert.is(mp.statusCode, 200, mp.body);
  const jsonBatch = JSON.stringify({
    requests: [
      {
        id: "r1",
        method: "GET",
        url: "SalesOrders?$top=1",
        headers: { Accept: "application/json", "X-Original-URL": "/x", Prefer: "odata.maxpagesize=1", "X-Forwarded-Host": "evil.example", "sap-language": "DE", "X-Custom": "1" },
      },
      { id: "r2", method: "GET", url: "Customers('C1')", headers: { "If-Match": 'W/"1"', "Content-ID": "r2", "X-Custom": "2" } },
    ],
  });
  const js = await send("application/json", jsonBatch);
  assert.is(js.statusCode, 200, js.body);
  // (The GETs before them are erplink's CSRF token fetches.)
  assert.equal(
    ctx.seen.filter((r) => r.method === "POST").map((r) => [r.method, r.url, r.headers["content-type"], r.body]),
    [
      ["POST", "/odata/sap/sales/0001/$batch", "multipart/mixed; boundary=batch_1", multipartSent],
      [
        "POST",
        "/odata/sap/sales/0001/$batch",
        "application/json",
        `{"requests":[{"id":"r1","method":"GET","url":"SalesOrders?$top=1","headers":{"accept":"application/json","prefer":"odata.maxpagesize=1"}},` +
          `{"id":"r2","method":"GET","url":"Customers('C1')","headers":{"if-match":"W/\\"1\\""}}]}`,
      ],
    ],
  );
});

Data("$batch: one forbidden part denies the whole batch and nothing reaches the back end", async (ctx) => {
  const res = await ctx.world.app.inject({
    method: "POST",
    url: "/odata/prod/SALES/$batch",
    headers: { authorization: `Bearer ${ctx.key}`, "content-type": "multipart/mixed; boundary=batch_1" },
    payload: BATCH.replace("Customers('C1')", "Products('P1')"),
  });
  assertEnvelope(res, 403, "FORBIDDEN", "API key has no access to entity 'Products' (batch part 2: resource path)");
  const malformed = await ctx.world.app.inject({
    method: "POST",
    url: "/odata/prod/SALES/$batch",
    headers: { authorization: `Bearer ${ctx.key}`, "content-type": "multipart/mixed; boundary=b" },
    payload: "--b--",
  });
  assertEnvelope(malformed, 400, "VALIDATION_ERROR", "the batch body has no body parts");
  assert.equal(ctx.seen, []);
});

Data("bodies are authorized: a deep insert needs create on the nested set, a bind get on its target; bad bodies forward nothing", async (ctx) => {
  const writer = json(
    await post(ctx.world.app, "/admin/api-keys", {
      name: "writer",
      permissions: { prod: { SALES: { SalesOrders: ["create"], Customers: ["get"] } } },
    }),
  ).data.key;
  const write = (payload: string, contentType = "application/json") =>
    ctx.world.app.inject({
      method: "POST",
      url: "/odata/prod/SALES/SalesOrders",
      headers: { authorization: `Bearer ${writer}`, "content-type": contentType },
      payload,
    });
  assertEnvelope(
    await write('{"ID":1,"Customer":{"ID":"C9","Name":"New"}}'),
    403,
    "FORBIDDEN",
    "API key lacks permission 'create' for entity 'Customers'",
  );
  assertEnvelope(
    await write('{"ID":1,"Note":"a","ID":2}'),
    400,
    "VALIDATION_ERROR",
    "request body is not valid JSON: duplicate member 'ID' at offset 19",
  );
  assertEnvelope(await write('{"ID":1,'), 400, "VALIDATION_ERROR", "request body is not valid JSON: expected a member name at offset 8");
  assertEnvelope(
    await write("<entry/>", "application/atom+xml"),
    403,
    "FORBIDDEN",
    "only JSON request bodies can be authorized for entity writes; got application/atom+xml",
  );
  assertEnvelope(await write(`{"Note":"${"x".repeat(1024 * 1024)}"}`), 413, "PAYLOAD_TOO_LARGE", "request body is larger than the limit");
  assert.equal(ctx.seen, [], "nothing reached the back end");
  // A bind to a readable customer passes, byte for byte.
  const body = '{"ID":1, "Customer@odata.bind":"Customers(\'C1\')"}';
  const ok = await write(body);
  assert.is(ok.statusCode, 200, ok.body);
  const forwarded = ctx.seen.filter((r) => r.method === "POST");
  assert.equal(forwarded.map((r) => [r.url, r.body]), [["/odata/sap/sales/0001/SalesOrders", body]]);
  // The back end's own URL in Location names erplink's service root; other URLs are left alone.
  assert.is(ok.headers.location, "http://localhost:80/odata/prod/SALES/SalesOrders(1)");
  assert.is(ok.headers["odata-entityid"], "https://elsewhere/SalesOrders(1)");
});

Data("a media entity is created from raw bytes (HasStream), forwarded byte for byte with its Slug", async (ctx) => {
  const writer = json(
    // SalesOrders: the key may touch it, so that the body is read there (a set it may not touch stops at the entity step).
    await post(ctx.world.app, "/admin/api-keys", { name: "uploader", permissions: { prod: { SALES: { Products: ["create"], SalesOrders: ["get"] } } } }),
  ).data.key;
  const pdf = Buffer.from([0x25, 0x50, 0x44, 0x46, 0x2d, 0x31, 0x2e, 0x37, 0x0a, 0x00, 0xff, 0xfe]);
  const res = await ctx.world.app.inject({
    method: "POST",
    url: "/odata/prod/SALES/Products",
    headers: { authorization: `Bearer ${writer}`, "content-type": "application/pdf", slug: "manual.pdf" },
    payload: pdf,
  });
  assert.is(res.statusCode, 200, res.body);
  const forwarded = ctx.seen.filter((r) => r.method === "POST");
  assert.equal(
    forwarded.map((r) => [r.url, r.headers["content-type"], r.headers.slug, r.headers["content-length"]]),
    [["/odata/sap/sales/0001/Products", "application/pdf", "manual.pdf", String(pdf.length)]],
  );
  // A "media" body that is a JSON object is read as an entity (back ends like CAP parse it whatever its type).
  assertEnvelope(
    await ctx.world.app.inject({
      method: "POST",
      url: "/odata/prod/SALES/Products",
      headers: { authorization: `Bearer ${writer}`, "content-type": "text/plain" },
      payload: '{"ID":"P9","Category":{"ID":9}}',
    }),
    403,
    "FORBIDDEN",
    "API key has no access to entity 'Categories'",
  );
  // The same bytes to a set without a stream are not an entity the gateway can check.
  const refused = await ctx.world.app.inject({
    method: "POST",
    url: "/odata/prod/SALES/SalesOrders",
    headers: { authorization: `Bearer ${writer}`, "content-type": "application/pdf" },
    payload: pdf,
  });
  assertEnvelope(refused, 403, "FORBIDDEN", "only JSON request bodies can be authorized for entity writes; got application/pdf");
  assert.is(forwarded.length, 1);
});

Data("what a back end could read differently is refused: other charsets, bad UTF-8, odd service names, SAP client switches", async (ctx) => {
  const writer = json(
    await post(ctx.world.app, "/admin/api-keys", { name: "w2", permissions: { prod: { "*": { "*": ["list", "create"] } } } }),
  ).data.key;
  const send = (url: string, payload: string | Buffer, headers: Record<string, string> = {}) =>
    ctx.world.app.inject({
      method: "POST",
      url,
      headers: { authorization: `Bearer ${writer}`, "content-type": "application/json", ...headers },
      payload,
    });
  // UTF-7 would turn this string into a deep insert at a back end that honours the charset.
  assertEnvelope(
    await send("/odata/prod/SALES/SalesOrders", '{"Note":"a+ACI-,+ACI-Items+ACI-:[{+ACI-ItemNo+ACI-:1}],+ACI-x+ACI-:+ACI-y"}', {
      "content-type": "application/json; charset=utf-7",
    }),
    415,
    "UNSUPPORTED_MEDIA_TYPE",
    "JSON request bodies must be UTF-8, not 'utf-7'",
  );
  // A second charset (CAP decodes with the last one) or one hidden in a quoted value.
  assertEnvelope(
    await send("/odata/prod/SALES/SalesOrders", '{"Note":"a"}', {
      "content-type": "application/json;charset=UTF-8;odata.metadata=minimal;charset=utf-7",
    }),
    400,
    "VALIDATION_ERROR",
    "the request's Content-Type gives parameter 'charset' twice",
  );
  assertEnvelope(
    await send("/odata/prod/SALES/SalesOrders", '{"Note":"a"}', { "content-type": 'application/json; x="; charset=utf-8"; charset=utf-7' }),
    415,
    "UNSUPPORTED_MEDIA_TYPE",
    "JSON request bodies must be UTF-8, not 'utf-7'",
  );
  assertEnvelope(
    await send("/odata/prod/SALES/SalesOrders", Buffer.from([0x7b, 0x22, 0x4e, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d])),
    400,
    "VALIDATION_ERROR",
    "request body is not valid UTF-8",
  );
  assertEnvelope(
    await send("/odata/prod/x%3Fy=1/SalesOrders", "{}"),
    400,
    "VALIDATION_ERROR",
    "the service name may only contain letters, digits and the characters _ . ~ ! $ & ' ( ) * + , ; = : @ -",
  );
  assertEnvelope(
    await get(ctx, "/odata/prod/SALES/SalesOrders?sap-client=200", {}),
    403,
    "FORBIDDEN",
    "query option 'sap-client' is not allowed: the instance decides it",
  );
  assert.equal(ctx.seen, []);
  // SAP session headers do not pass in either direction; UTF-8 with its charset named does.
  const ok = await send("/odata/prod/SALES/SalesOrders", '{"Note":"ü"}', {
    "content-type": "application/json;charset=UTF-8",
    "sap-client": "200",
    "sap-contextid-accept": "header",
  });
  assert.is(ok.statusCode, 200, ok.body);
  const forwarded = ctx.seen.filter((r) => r.method === "POST");
  assert.equal(forwarded.map((r) => [r.headers["sap-client"], r.headers["sap-contextid-accept"], r.body]), [[undefined, undefined, '{"Note":"ü"}']]);
});

Data("the key's rate limit applies: the fourth request in the minute is 429 and forwards nothing", async (ctx) => {
  for (let i = 0; i < 3; i++) assert.is((await get(ctx, "/odata/prod/SALES/SalesOrders")).statusCode, 200);
  const limited = await get(ctx, "/odata/prod/SALES/SalesOrders");
  assertEnvelope(limited, 429, "RATE_LIMITED", "rate limit exceeded for this API key");
  assert.is(limited.headers["x-ratelimit-remaining"], "0");
  assert.ok(Number(limited.headers["retry-after"]) >= 1);
  assert.is(ctx.seen.length, 3);
});

// With no limits for the key (and no defaults) erplink sends no rate-limit header, and the back end's
// (the limits of erplink's shared back-end credentials) must not reach the client as if they were the key's.
Data("a key without rate limits gets no rate-limit header at all: the back end's never pass; its Retry-After on a 503 does", async (ctx) => {
  const world = await createWorld({ dataLimits: {}, upstreamTimeoutMs: 300 });
  try {
    const { key } = await setUp(world, ctx.base);
    const send = () => world.app.inject({ method: "GET", url: "/odata/prod/SALES/SalesOrders", headers: { authorization: `Bearer ${key}` } });
    const ok = await send();
    assert.is(ok.statusCode, 200, ok.body);
    assert.is(ok.headers["x-upstream"], "yes");
    assert.equal(rateLimitNames(ok.headers), []);
    ctx.unavailable = true;
    const busy = await send();
    assert.is(busy.statusCode, 503);
    assert.is(busy.body, "busy");
    assert.is(busy.headers["retry-after"], "120");
    assert.equal(rateLimitNames(busy.headers), []);
    assert.is(ctx.seen.length, 2);
  } finally {
    await world.close();
  }
});

Data("a key with rate limits gets exactly erplink's rate-limit headers, also on a back end's 503 (whose Retry-After passes)", async (ctx) => {
  ctx.unavailable = true;
  const busy = await get(ctx, "/odata/prod/SALES/SalesOrders");
  assert.is(busy.statusCode, 503);
  assert.is(busy.headers["retry-after"], "120");
  assert.equal(rateLimitNames(busy.headers), ["ratelimit", "ratelimit-policy", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"]);
  assert.is(busy.headers["x-ratelimit-limit"], "3");
  assert.is(busy.headers["x-ratelimit-remaining"], "2");
  assert.match(String(busy.headers["x-ratelimit-reset"]), /^\d{10}$/);
  assert.is(busy.headers["ratelimit-policy"], '"minute";q=3;w=60, "day";q=1000;w=86400');
  assert.match(String(busy.headers.ratelimit), /^"minute";r=2;t=\d+, "day";r=999;t=\d+$/);
});

Data("an unreachable back end is 502 and a slow one 504, in the envelope", async (ctx) => {
  // $metadata is fetched (and cached) first; then the request itself is slow.
  assert.is((await get(ctx, "/odata/prod/SALES/SalesOrders")).statusCode, 200);
  ctx.delay = 1000;
  assertEnvelope(await get(ctx, "/odata/prod/SALES/SalesOrders"), 504, "GATEWAY_TIMEOUT", "the back end did not answer in time");
  ctx.delay = 0;
  ctx.html = undefined;
  await new Promise<void>((r) => ctx.upstream.close(() => r()));
  ctx.upstream.closeAllConnections();
  ctx.upstream = http.createServer();
  assertEnvelope(await get(ctx, "/odata/prod/SALES/SalesOrders"), 502, "BAD_GATEWAY", "the back end could not be reached");
});

Data("without the service's $metadata nothing below the root is authorized: 502/504 naming why, cached briefly", async (ctx) => {
  ctx.delay = 1000;
  assertEnvelope(
    await get(ctx, "/odata/prod/SALES/SalesOrders"),
    504,
    "GATEWAY_TIMEOUT",
    "cannot authorize the request: the back end did not send the service's $metadata in time",
  );
  ctx.delay = 0;
  ctx.html = undefined;
  // The failure is remembered for a few seconds: the back end is not asked again at once.
  assertEnvelope(
    await get(ctx, "/odata/prod/SALES/SalesOrders"),
    504,
    "GATEWAY_TIMEOUT",
    "cannot authorize the request: the back end did not send the service's $metadata in time",
  );
  // A service whose $metadata the back end refuses (here: no credentials for it).
  const sys = json(await post(ctx.world.app, "/admin/systems", { name: "S4c" })).data.id;
  await post(ctx.world.app, `/admin/systems/${sys}/instances`, { name: "bare", base_url: `${ctx.base}/` });
  const key = json(
    await post(ctx.world.app, "/admin/api-keys", { name: "k3", permissions: { bare: { "*": { "*": ["list"] } } } }),
  ).data.key;
  const refused = await ctx.world.app.inject({ method: "GET", url: "/odata/bare/X/Orders", headers: { authorization: `Bearer ${key}` } });
  assertEnvelope(refused, 502, "BAD_GATEWAY", "cannot authorize the request: the back end answered HTTP 401 to $metadata");
  assert.is(ctx.seen.length, 0, "nothing was forwarded");
  // The service document and $metadata need no model: they are passed through.
  const doc = await ctx.world.app.inject({ method: "GET", url: "/odata/bare/X/", headers: { authorization: `Bearer ${key}` } });
  assert.is(doc.statusCode, 401);
  assert.is(doc.body, "no credentials");
});

Data("each data request produces one log entry with its instance, service, accesses and upstream status", async (ctx) => {
  const ok = await get(ctx, "/odata/prod/SALES/SalesOrders(1)?$expand=Customer");
  const denied = await get(ctx, "/odata/prod/SALES/Products");
  await ctx.world.layer.logWriter.flush();
  const page = await ctx.world.store.logs.query({ limit: 10 });
  const byRequest = new Map(page.items.map((e) => [e.requestId, e]));
  const first = byRequest.get(ok.headers["x-request-id"] as string)!;
  assert.equal(
    {
      apiKeyId: first.apiKeyId,
      instance: first.instance,
      service: first.service,
      accesses: first.accesses,
      status: first.status,
      upstreamStatus: first.upstreamStatus,
      denialStep: first.denialStep,
      errorCode: first.errorCode,
    },
    {
      apiKeyId: ctx.keyId,
      instance: "prod",
      service: "SALES",
      accesses: [
        { entity: "SalesOrders", operation: "get" },
        { entity: "Customers", operation: "get" },
      ],
      status: 200,
      upstreamStatus: 200,
      denialStep: "",
      errorCode: "",
    },
  );
  const second = byRequest.get(denied.headers["x-request-id"] as string)!;
  assert.equal(
    [second.status, second.denialStep, second.errorCode, second.errorMessage, second.upstreamStatus],
    [403, "ENTITY", "FORBIDDEN", JSON.parse(denied.body).error.message, 0],
  );
  assert.match(second.errorMessage, /Products/);
  assert.is(first.errorMessage, "");
  assert.ok(first.upstreamDurationMs > 0);
});

Data("a data request refused while its body is read (over the limit) is logged too: its status and error, no key, nothing sent", async (ctx) => {
  const send = (headers: Record<string, string>, payload: string) =>
    ctx.world.app.inject({
      method: "POST",
      url: "/odata/prod/SALES/SalesOrders",
      headers: { authorization: `Bearer ${ctx.key}`, "content-type": "application/json", "user-agent": "big-writer/1", ...headers },
      payload,
    });
  const big = await send({}, `{"Note":"${"x".repeat(1024 * 1024)}"}`);
  assertEnvelope(big, 413, "PAYLOAD_TOO_LARGE", "request body is larger than the limit");
  const seenBefore = ctx.seen.length;
  await ctx.world.layer.logWriter.flush();
  const entry = (await ctx.world.store.logs.query({ limit: 10 })).items.find((e) => e.requestId === big.headers["x-request-id"]);
  assert.ok(entry !== undefined, "the 413 has a log entry");
  assert.equal(
    {
      method: entry.method,
      path: entry.path,
      status: entry.status,
      errorCode: entry.errorCode,
      errorMessage: entry.errorMessage,
      // The body was never read, so the key was never checked.
      apiKeyId: entry.apiKeyId,
      // Named by its path, as every data request's entry is: found by the instance's filter.
      instance: entry.instance,
      service: entry.service,
      accesses: entry.accesses,
      upstreamStatus: entry.upstreamStatus,
      upstreamUrl: entry.upstreamUrl,
      userAgent: entry.userAgent,
    },
    {
      method: "POST",
      path: "/odata/prod/SALES/SalesOrders",
      status: 413,
      errorCode: "PAYLOAD_TOO_LARGE",
      errorMessage: "request body is larger than the limit",
      apiKeyId: "",
      instance: "prod",
      service: "SALES",
      accesses: [],
      upstreamStatus: 0,
      upstreamUrl: "",
      userAgent: "big-writer/1",
    },
  );
  assert.is(ctx.seen.length, seenBefore, "nothing reached the back end");
  // Exactly one entry per request: a request the handler served is not logged twice.
  const ok = await get(ctx, "/odata/prod/SALES/SalesOrders(1)");
  await ctx.world.layer.logWriter.flush();
  const mine = (await ctx.world.store.logs.query({ limit: 50 })).items.filter((e) => e.requestId === big.headers["x-request-id"] || e.requestId === ok.headers["x-request-id"]);
  assert.equal(mine.map((e) => e.status).sort(), [200, 413]);
});

Data("a service name with ';' sent unencoded: the resource path is taken raw and forwarded as received", async (ctx) => {
  const sys = json(await post(ctx.world.app, "/admin/systems", { name: "S4b" })).data.id;
  await post(ctx.world.app, `/admin/systems/${sys}/instances`, {
    name: "v2",
    base_url: `${ctx.base}/`,
    auth: { type: "basic", username: "erp-user", password: "erp-pass" },
  });
  const key = json(
    await post(ctx.world.app, "/admin/api-keys", { name: "k2", permissions: { v2: { "ZSRV;v=2": { "*": ["get"] } } } }),
  ).data.key;
  const res = await ctx.world.app.inject({
    method: "GET",
    url: "/odata/v2/ZSRV;v=2/Customers('a%3Bb')",
    headers: { authorization: `Bearer ${key}` },
  });
  assert.is(res.statusCode, 200, res.body);
  assert.is(ctx.seen.at(-1)!.url, "/odata/ZSRV;v=2/Customers('a%3Bb')");
});

Data.run();


