/**
 * GET /admin/usage over the REST facade through `app.inject()`, after real
 * data requests through the OData data path against a small upstream of our
 * own (every outcome: allowed, a `$batch`, back-end 4xx and 5xx, denials by
 * key, entity and operation, rate limited, an unknown instance, a back end
 * that cannot be reached) and admin requests: once the log writer has
 * flushed, the usage equals what the request log holds, with every
 * breakdown; admin requests are logged but not counted; the JSON is the
 * facade's (64-bit counts as strings, an empty group key left out); bad
 * parameters are 400s in the envelope.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { RequestLogRecord } from "../../src/store/index.js";
import { json, post } from "../../test-support/http.js";
import { V4_METADATA } from "../../test-support/odata/fixtures.js";
import { expectedUsage, type PlainCounts, type PlainUsage } from "../../test-support/usage.js";
import { AUTH, createWorld, testMongoUrl, type World } from "../../test-support/world.js";

interface Ctx {
  world: World;
  upstream: http.Server;
  key: string;
  limited: string;
}

const Usage = suite<Ctx>(`usage over REST (${testMongoUrl() === undefined ? "embedded (memory)" : "mongodb"})`);

Usage.before.each(async (ctx) => {
  // Answers by URL: Customers('404') and Customers('500') with those statuses, the rest 200.
  ctx.upstream = http.createServer(async (req, res) => {
    for await (const _ of req) void _;
    if (req.url?.endsWith("/$metadata")) {
      res.writeHead(200, { "content-type": "application/xml" }).end(V4_METADATA);
      return;
    }
    const status = req.url?.includes("Customers('404')") ? 404 : req.url?.includes("Customers('500')") ? 500 : 200;
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ value: [] }));
  });
  await new Promise<void>((r) => ctx.upstream.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${(ctx.upstream.address() as AddressInfo).port}/odata/`;
  ctx.world = await createWorld({ upstreamTimeoutMs: 2000 });
  const sys = json(await post(ctx.world.app, "/admin/systems", { name: "S4" })).data.id;
  for (const [name, baseUrl] of [["prod", base], ["down", "http://127.0.0.1:1/odata/"]] as const) {
    const res = await post(ctx.world.app, `/admin/systems/${sys}/instances`, {
      name,
      base_url: baseUrl,
      services: { SALES: { path: "sap/sales/0001" } },
    });
    assert.is(res.statusCode, 201, res.body);
  }
  const permissions = { prod: { SALES: { SalesOrders: ["list", "get"], Customers: ["get"] } }, down: { "*": { "*": ["list"] } }, ghost: { "*": { "*": ["list"] } } };
  ctx.key = json(await post(ctx.world.app, "/admin/api-keys", { name: "app", permissions })).data.key;
  ctx.limited = json(await post(ctx.world.app, "/admin/api-keys", { name: "slow", permissions, rate_limits: { per_minute: 1 } })).data.key;
});

Usage.after.each(async (ctx) => {
  await ctx.world.close();
  await new Promise<void>((r) => ctx.upstream.close(() => r()));
});

const BATCH = [
  "--b1",
  "Content-Type: application/http",
  "Content-Transfer-Encoding: binary",
  "",
  "GET SalesOrders?$top=1 HTTP/1.1",
  "",
  "",
  "--b1",
  "Content-Type: application/http",
  "Content-Transfer-Encoding: binary",
  "",
  "GET Customers('C1') HTTP/1.1",
  "",
  "",
  "--b1--",
  "",
].join("\r\n");

/** Data requests with every outcome, and two admin requests; returns the statuses seen. */
async function traffic(ctx: Ctx): Promise<number[]> {
  const app = ctx.world.app;
  const as = (key: string) => ({ authorization: `Bearer ${key}` });
  const requests = [
    () => app.inject({ method: "GET", url: "/odata/prod/SALES/SalesOrders", headers: as(ctx.key) }),
    () => app.inject({ method: "GET", url: "/odata/prod/SALES/SalesOrders(1)", headers: as(ctx.key) }),
    () => app.inject({ method: "GET", url: "/odata/prod/SALES/$metadata", headers: as(ctx.key) }),
    () => app.inject({ method: "POST", url: "/odata/prod/SALES/$batch", headers: { ...as(ctx.key), "content-type": "multipart/mixed; boundary=b1" }, payload: BATCH }),
    () => app.inject({ method: "GET", url: "/odata/prod/SALES/Customers('404')", headers: as(ctx.key) }),
    () => app.inject({ method: "GET", url: "/odata/prod/SALES/Customers('500')", headers: as(ctx.key) }),
    () => app.inject({ method: "GET", url: "/odata/prod/SALES/Products", headers: as(ctx.key) }),
    () => app.inject({ method: "DELETE", url: "/odata/prod/SALES/SalesOrders(1)", headers: as(ctx.key) }),
    () => app.inject({ method: "GET", url: "/odata/prod/SALES/SalesOrders", headers: { authorization: "Bearer erpl_nope" } }),
    () => app.inject({ method: "GET", url: "/odata/ghost/SALES/SalesOrders", headers: as(ctx.key) }),
    () => app.inject({ method: "GET", url: "/odata/down/SALES/SalesOrders", headers: as(ctx.key) }),
    () => app.inject({ method: "GET", url: "/odata/prod/SALES/SalesOrders", headers: as(ctx.limited) }),
    () => app.inject({ method: "GET", url: "/odata/prod/SALES/SalesOrders", headers: as(ctx.limited) }),
    () => app.inject({ method: "GET", url: "/admin/systems", headers: AUTH }),
    () => app.inject({ method: "GET", url: "/admin/usage", headers: AUTH }),
  ];
  const statuses: number[] = [];
  for (const r of requests) statuses.push((await r()).statusCode);
  return statuses;
}

/** Every entry of the request log (flushed first). */
async function logEntries(w: World): Promise<RequestLogRecord[]> {
  await w.layer.logWriter.flush();
  const page = await w.store.logs.query({ limit: 1000 });
  assert.is(page.more, false);
  return page.items;
}

/** REST JSON counts in the plain form (64-bit counts arrive as strings). */
function plainRestCounts(c: Record<string, any>): PlainCounts {
  const n = (v: unknown) => {
    assert.type(v, "string", "64-bit counts are strings in JSON");
    return Number(v);
  };
  return {
    requests: n(c.requests),
    allowed: n(c.allowed),
    upstream_client_errors: n(c.upstream_client_errors),
    upstream_server_errors: n(c.upstream_server_errors),
    denied: n(c.denied),
    denied_by_step: Object.fromEntries(Object.entries(c.denied_by_step as Record<string, unknown>).map(([k, v]) => [k, n(v)])),
    rate_limited: n(c.rate_limited),
    client_errors: n(c.client_errors),
    gateway_errors: n(c.gateway_errors),
    latency: { count: n(c.upstream_latency.count), sum_ms: c.upstream_latency.sum_ms, buckets: c.upstream_latency.bucket_counts.map(n) },
  };
}

function plainRest(data: Record<string, any>): PlainUsage {
  return {
    from: new Date(data.from).toISOString(),
    to: new Date(data.to).toISOString(),
    total: plainRestCounts(data.total),
    series: data.series.map((p: any) => ({ start: new Date(p.start).toISOString(), counts: plainRestCounts(p.counts) })),
    // The facade leaves empty strings out of nested messages.
    groups: data.groups.map((g: any) => ({ key: g.key ?? "", counts: plainRestCounts(g.counts) })),
    more_groups: data.more_groups,
  };
}

Usage("after real traffic, the usage of every breakdown equals the request log's data entries; admin requests are not counted", async (ctx) => {
  const statuses = await traffic(ctx);
  assert.equal(statuses, [200, 200, 200, 200, 404, 500, 403, 403, 401, 404, 502, 200, 429, 200, 200]);
  const entries = await logEntries(ctx.world);
  const data = entries.filter((e) => e.path.startsWith("/odata/"));
  assert.is(data.length, 13);
  assert.is(entries.length - data.length, 2 + 5, "admin requests: two here, five in the set-up");

  const now = Date.now();
  const from = Math.floor((now - 3_600_000) / 3_600_000) * 3_600_000;
  const to = Math.ceil((now + 60_000) / 3_600_000) * 3_600_000;
  const range = `from=${new Date(now - 3_600_000).toISOString()}&to=${new Date(now + 60_000).toISOString()}`;
  for (const groupBy of ["", "api_key", "instance", "service", "entity", "operation", "outcome"] as const) {
    const res = await ctx.world.app.inject({ method: "GET", url: `/admin/usage?${range}&group_by=${groupBy}&group_limit=100`, headers: AUTH });
    assert.is(res.statusCode, 200, res.body);
    assert.match(res.headers["x-request-id"] as string, /^req_/);
    const body = json(res);
    assert.equal(Object.keys(body).sort(), ["data", "meta"]);
    assert.equal(body.meta, { requestId: res.headers["x-request-id"] });
    const expected = expectedUsage(entries, { from, to, bucket: "hour", groupBy: groupBy === "" ? undefined : groupBy, groupLimit: 100 });
    assert.equal(plainRest(body.data), expected, `group_by=${groupBy}`);
  }

  // Spelled out once: what the traffic above must count as.
  const usage = json(await ctx.world.app.inject({ method: "GET", url: `/admin/usage?${range}&group_by=outcome`, headers: AUTH })).data;
  const total = plainRestCounts(usage.total);
  assert.equal({ ...total, latency: undefined }, {
    requests: 13,
    allowed: 5,
    upstream_client_errors: 1,
    upstream_server_errors: 1,
    denied: 3,
    denied_by_step: { ENTITY: 1, KEY_INVALID: 1, OPERATION: 1 },
    rate_limited: 1,
    client_errors: 1,
    gateway_errors: 1,
    latency: undefined,
  });
  // The back end answered the allowed requests (the $metadata from erplink's cache or the back end) and the 404 and 500.
  assert.ok(total.latency.count >= 6 && total.latency.count <= 7, `latency count ${total.latency.count}`);
  assert.is(total.latency.buckets.reduce((a, b) => a + b, 0), total.latency.count);
  assert.equal(usage.groups.map((g: { key: string }) => g.key), ["allowed", "denied", "client_error", "gateway_error", "rate_limited", "upstream_client_error", "upstream_server_error"]);
  assert.equal(usage.groups[0].counts.upstream_latency.bucket_counts, [], "groups keep no histogram");
  // Entity sets: the $batch counts once under each of its two; requests that address none ($metadata) or are
  // refused before analysis (unknown key, unknown instance, unreachable back end) form the group without a key.
  const entities = json(await ctx.world.app.inject({ method: "GET", url: `/admin/usage?${range}&group_by=entity`, headers: AUTH })).data;
  const byEntity = Object.fromEntries(entities.groups.map((g: { key?: string; counts: { requests: string } }) => [g.key ?? "(none)", g.counts.requests]));
  assert.equal(byEntity, { SalesOrders: "6", Customers: "3", Products: "1", "(none)": "4" });
  assert.ok(entities.groups.some((g: object) => !("key" in g)), "the empty key is left out");
});

Usage("bad parameters are 400 VALIDATION_ERROR in the envelope, naming each parameter", async (ctx) => {
  const cases: [string, string, { field: string; message: string }[]][] = [
    ["bucket=week", "bucket: must be hour or day", [{ field: "bucket", message: "must be hour or day" }]],
    [
      "group_by=customer&group_limit=500",
      "2 fields are invalid",
      [
        { field: "group_by", message: "must be one of api_key, instance, service, entity, operation, outcome" },
        { field: "group_limit", message: "must be between 1 and 100 (0 means 10)" },
      ],
    ],
    ["group_limit=ten", "group_limit: must be a non-negative integer", [{ field: "group_limit", message: "must be a non-negative integer" }]],
    [
      "from=yesterday",
      "from: must be an RFC 3339 date-time between 0001 and 9999, such as 2026-01-02T03:04:05Z",
      [{ field: "from", message: "must be an RFC 3339 date-time between 0001 and 9999, such as 2026-01-02T03:04:05Z" }],
    ],
  ];
  for (const [query, message, details] of cases) {
    const res = await ctx.world.app.inject({ method: "GET", url: `/admin/usage?${query}`, headers: AUTH });
    assert.is(res.statusCode, 400, query);
    assert.equal(json(res), { error: { code: "VALIDATION_ERROR", message, requestId: res.headers["x-request-id"], details } }, query);
  }
  // By day, 61 days are kept whole; by hour, their most recent 1000 hours. The answer's range says which.
  const ok = await ctx.world.app.inject({ method: "GET", url: "/admin/usage?from=2025-11-01T00:00:00Z&to=2026-01-01T00:00:00Z&bucket=day", headers: AUTH });
  assert.is(ok.statusCode, 200, ok.body);
  assert.equal([json(ok).data.from, json(ok).data.series.length], ["2025-11-01T00:00:00Z", 61]);
  const hours = await ctx.world.app.inject({ method: "GET", url: "/admin/usage?from=2025-11-01T00:00:00Z&to=2026-01-01T00:00:00Z", headers: AUTH });
  assert.equal([hours.statusCode, json(hours).data.from, json(hours).data.to, json(hours).data.series.length], [200, "2025-11-20T08:00:00Z", "2026-01-01T00:00:00Z", 1000]);
  const long = await ctx.world.app.inject({ method: "GET", url: "/admin/usage?from=2025-01-01T00:00:00Z&to=2026-03-01T00:00:00Z&bucket=day", headers: AUTH });
  assert.equal([long.statusCode, json(long).data.from, json(long).data.series.length], [200, "2025-01-25T00:00:00Z", 400]);
  // `to` before `from`: an empty range.
  const empty = await ctx.world.app.inject({ method: "GET", url: "/admin/usage?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", headers: AUTH });
  assert.equal([empty.statusCode, json(empty).data.from, json(empty).data.to, json(empty).data.series], [200, "2026-01-02T00:00:00Z", "2026-01-02T00:00:00Z", []]);
});

Usage.run();
