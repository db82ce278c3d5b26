/**
 * The analyses of bodiless reads remembered by the data path
 * (src/gateway/data/analysis-cache.ts): which requests are cached, the bound,
 * and, through the REST data path, that an answer never depends on what was
 * cached before: the same GETs by keys with different grants, each asked
 * before and after the others have been (exact envelopes, what was forwarded,
 * the request log's denial step and accesses).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AnalysisCache, MAX_ANALYSES_PER_MODEL, MAX_CACHED_TARGET } from "../../../src/gateway/data/analysis-cache.js";
import { parseMetadata } from "../../../src/gateway/odata/metadata.js";
import { analyzeRequest } from "../../../src/gateway/odata/request.js";
import { V4_METADATA } from "../../../test-support/odata/fixtures.js";
import { startSalesWorld, stopSalesWorld, type SalesWorld } from "../../../test-support/sales-world.js";

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

type Ctx = SalesWorld;

const Path = suite<Ctx>("data path: answers do not depend on the analyses cached before");

Path.before.each(async (ctx) => {
  Object.assign(ctx, await startSalesWorld({
    wild: { "*": ["list", "get"] },
    reader: { SalesOrders: ["list", "get"], Customers: ["get"] },
    writer: { SalesOrders: ["create"], Products: ["get"] },
  }));
});

Path.after.each(async (ctx) => {
  await stopSalesWorld(ctx);
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
