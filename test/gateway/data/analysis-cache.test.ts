/**
 * The analyses of bodiless reads remembered by the data path
 * (src/gateway/data/analysis-cache.ts): which requests are cached, the bound,
 * and, through the REST data path, that an answer never depends on what was
 * cached before: the same GETs by keys with different grants, each asked
 * before and after the others have been (exact envelopes, what was forwarded,
 * the request log's denial step and accesses).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AnalysisCache, MAX_ANALYSES_PER_MODEL, MAX_CACHED_TARGET } from "../../../src/gateway/data/analysis-cache.js";
import { parseMetadata } from "../../../src/gateway/odata/metadata.js";
import { analyzeRequest } from "../../../src/gateway/odata/request.js";
import { json, post } from "../../../test-support/http.js";
import { V4_METADATA } from "../../../test-support/odata/fixtures.js";
import { createWorld, type World } from "../../../test-support/world.js";

const Unit = suite("analysis cache");

Unit("only GET and HEAD without the headers that change the analysis are cached; the key holds method, SAP client, path and query", () => {
  const cache = new AnalysisCache();
  assert.is(cache.keyOf("GET", "/SalesOrders", "$top=1", undefined, {}), "GET\n\n/SalesOrders\n$top=1");
  assert.is(cache.keyOf("HEAD", "/SalesOrders", "", "100", { accept: "application/json" }), "HEAD\n100\n/SalesOrders\n");
  for (const method of ["POST", "PUT", "PATCH", "MERGE", "DELETE"]) assert.is(cache.keyOf(method, "/SalesOrders", "", undefined, {}), undefined, method);
  for (const header of ["x-http-method", "x-http-method-override", "if-match", "if-none-match"]) {
    assert.is(cache.keyOf("GET", "/SalesOrders", "", undefined, { [header]: "*" }), undefined, header);
  }
  assert.is.not(cache.keyOf("GET", "/a", "b", undefined, {}), cache.keyOf("GET", "/a\nb", "", undefined, {}));
  // Targets up to MAX_CACHED_TARGET characters (path and query) only.
  const query = (n: number) => "$filter=" + "x".repeat(n - "/SalesOrders".length - "$filter=".length);
  assert.ok(cache.keyOf("GET", "/SalesOrders", query(MAX_CACHED_TARGET), undefined, {})?.endsWith("x"));
  assert.is(cache.keyOf("GET", "/SalesOrders", query(MAX_CACHED_TARGET + 1), undefined, {}), undefined);
});

Unit(`at most ${MAX_ANALYSES_PER_MODEL} analyses per model, the oldest dropped first; models apart`, () => {
  const cache = new AnalysisCache();
  const model = parseMetadata(V4_METADATA);
  const other = parseMetadata(V4_METADATA);
  const analysis = analyzeRequest({ method: "GET", path: "/SalesOrders", query: "", headers: {}, model });
  for (let i = 0; i <= MAX_ANALYSES_PER_MODEL; i++) cache.set(model, `k${i}`, analysis, ["SalesOrders"]);
  assert.is(cache.sizeOf(model), MAX_ANALYSES_PER_MODEL);
  assert.is(cache.get(model, "k0"), undefined);
  assert.ok(cache.get(model, "k1") !== undefined && cache.get(model, `k${MAX_ANALYSES_PER_MODEL}`) !== undefined);
  assert.is(cache.get(other, "k1"), undefined);
  assert.is(cache.sizeOf(other), 0);
});

Unit.run();

// ---------------------------------------------------------------------------

interface Ctx {
  world: World;
  upstream: http.Server;
  seen: string[];
  keys: Record<string, string>;
}

const Path = suite<Ctx>("data path: answers do not depend on the analyses cached before");

Path.before.each(async (ctx) => {
  ctx.seen = [];
  ctx.upstream = http.createServer(async (req, res) => {
    for await (const _ of req);
    if (req.url?.endsWith("/$metadata")) {
      res.writeHead(200, { "content-type": "application/xml" }).end(V4_METADATA);
      return;
    }
    ctx.seen.push(`${req.method} ${req.url}`);
    res.writeHead(200, { "content-type": "application/json" }).end('{"value":[]}');
  });
  await new Promise<void>((r) => ctx.upstream.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${(ctx.upstream.address() as AddressInfo).port}/erp/`;
  ctx.world = await createWorld();
  const app = ctx.world.app;
  const sys = json(await post(app, "/admin/systems", { name: "S4" })).data.id;
  assert.is((await post(app, `/admin/systems/${sys}/instances`, { name: "prod", base_url: base })).statusCode, 201);
  ctx.keys = {};
  const key = async (name: string, sales: Record<string, string[]>) => {
    const res = await post(app, "/admin/api-keys", { name, permissions: { prod: { SALES: sales } } });
    assert.is(res.statusCode, 201, res.body);
    ctx.keys[name] = json(res).data.key;
  };
  await key("wild", { "*": ["list", "get"] });
  await key("reader", { SalesOrders: ["list", "get"], Customers: ["get"] });
  await key("writer", { SalesOrders: ["create"], Products: ["get"] });
});

Path.after.each(async (ctx) => {
  await ctx.world.close();
  ctx.upstream.closeAllConnections();
  await new Promise<void>((r) => ctx.upstream.close(() => r()));
});

const S = "/odata/prod/SALES";
const TARGETS = [
  `${S}/SalesOrders?$top=1`,
  `${S}/SalesOrders?$top=2`,
  `${S}/SalesOrders?%24top=2`,
  `${S}/SalesOrders(1)`,
  `${S}/Products`,
  `${S}/Products(1)?$select=Name`,
  `${S}/SalesOrders(1)?$expand=Items($expand=Product)`,
  `${S}/Customers('A')`,
  `${S}/Secrets`,
];

Path("each GET by each key answers the same whether it comes first or after every key has sent it (envelope, forwarded target, request log)", async (ctx) => {
  let n = 0;
  const ask = async (key: string, url: string, headers: Record<string, string> = {}) => {
    const id = `c-${n++}`;
    const before = ctx.seen.length;
    const res = await ctx.world.app.inject({ method: "GET", url, headers: { authorization: `Bearer ${ctx.keys[key]}`, "x-request-id": id, ...headers } });
    await ctx.world.layer.logWriter.flush();
    const entry = (await ctx.world.store.logs.query({ limit: 1000 })).items.find((e) => e.requestId === id);
    return JSON.stringify({
      status: res.statusCode,
      body: res.statusCode === 200 ? res.body : res.body.replace(id, ""),
      forwarded: ctx.seen.slice(before),
      log: [entry?.status, entry?.denialStep, entry?.accesses.map((a) => `${a.operation} ${a.entity}`), entry?.upstreamUrl.replace(/^http:\/\/[^/]+/, "")],
    });
  };
  const keys = ["reader", "writer", "wild"];
  const first = new Map<string, string>();
  for (const url of TARGETS) for (const key of keys) first.set(`${key} ${url}`, await ask(key, url));
  // Every target has been analyzed by every key (and cached where allowed): ask again, in the other order.
  for (const url of [...TARGETS].reverse()) {
    for (const key of [...keys].reverse()) {
      assert.is(await ask(key, url), first.get(`${key} ${url}`), `${key} GET ${url}`);
      // With a header that changes the analysis, it is analyzed afresh: the same answer here (a GET ignores If-None-Match: *).
      assert.is(await ask(key, url, { "if-none-match": "*" }), first.get(`${key} ${url}`), `${key} GET ${url} with If-None-Match`);
    }
  }
  // What was forwarded is each request's own target.
  assert.ok(ctx.seen.includes("GET /erp/SALES/SalesOrders?$top=1") && ctx.seen.includes("GET /erp/SALES/SalesOrders?$top=2"), ctx.seen.join("\n"));
  assert.equal(JSON.parse(first.get(`reader ${S}/Products`)!).status, 403);
  assert.equal(JSON.parse(first.get(`wild ${S}/Products`)!).forwarded, ["GET /erp/SALES/Products"]);
});

Path.run();
