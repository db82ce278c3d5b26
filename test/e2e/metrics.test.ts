/**
 * `GET /metrics` end to end, over a real listening port: a scripted sequence
 * of admin calls (REST and gRPC), data requests allowed and denied at each
 * step, rate limited, and failing upstream in each way, `$metadata` cache
 * hits, misses and failures, OAuth and CSRF token fetches, and Authorize
 * calls with each outcome over gRPC; the exposition is scraped before and
 * after, parsed with a Prometheus text parser, and every counter must have
 * moved by exactly what the sequence did. Also: the token mode (401 in the
 * envelope), metrics off (404), and no key, secret, path or instance name in
 * any label. Embedded store, or MongoDB when ERPLINK_TEST_MONGODB_URL is set.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { Http2SessionManager, createGrpcTransport } from "@connectrpc/connect-node";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { SystemService } from "../../src/gen/erplink/admin/v1/system_pb.js";
import { Authorization } from "../../src/gen/envoy/service/auth/v3/external_auth_pb.js";
import { AuthorizationService, AuthorizeRequestSchema, DenialStep, Operation } from "../../src/gen/erplink/authz/v1/authorization_pb.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";
import { checkRequest } from "../../test-support/ext-authz.js";
import { Exposition } from "../../test-support/metrics.js";
import { V4_METADATA } from "../../test-support/odata/fixtures.js";
import { dropMongoDatabase, freshMongoUrl, testMongoUrl } from "../../test-support/world.js";

const CSRF_TOKEN = "csrf-tok-1";
const OAUTH_TOKEN = "oauth-at-1";
const METRICS_TOKEN = "metrics-scrape-token-0123456789abcdefghij";

/** A back end of our own: a V4 service, one without `$metadata`, failures of each kind, CSRF and an OAuth token endpoint. */
async function startUpstream(): Promise<{ server: http.Server; base: string; tokenRequests: () => number }> {
  let tokenRequests = 0;
  const server = http.createServer(async (req, res) => {
    for await (const _ of req); // read the body
    const url = req.url ?? "";
    if (url === "/token" && req.method === "POST") {
      tokenRequests++;
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ access_token: OAUTH_TOKEN, token_type: "Bearer", expires_in: 3600 }));
      return;
    }
    if (url === "/erp/NOMETA/$metadata") return void res.writeHead(500, { "content-type": "text/plain" }).end("broken");
    if (url.endsWith("/$metadata")) return void res.writeHead(200, { "content-type": "application/xml" }).end(V4_METADATA);
    if (url === "/erp/SALES/" && req.headers["x-csrf-token"] === "Fetch") {
      res.writeHead(200, { "x-csrf-token": CSRF_TOKEN, "set-cookie": "SAP_SESSIONID=s1; path=/", "content-type": "application/json" }).end("{}");
      return;
    }
    if (url.startsWith("/erp/SALES/Customers")) return void res.writeHead(500, { "content-type": "text/plain" }).end("upstream failure");
    if (url.startsWith("/erp/SALES/Products")) return void req.socket.destroy();
    if (url.startsWith("/erp/SALES/Countries")) {
      setTimeout(() => res.writeHead(200, { "content-type": "application/json" }).end('{"value":[]}'), 1500).unref();
      return;
    }
    if (req.method === "POST") {
      const ok = req.headers["x-csrf-token"] === CSRF_TOKEN;
      res.writeHead(ok ? 201 : 403, { "content-type": "application/json", ...(ok ? {} : { "x-csrf-token": "Required" }) }).end("{}");
      return;
    }
    res.writeHead(200, { "content-type": "application/json", "odata-version": "4.0" }).end('{"value":[{"ID":1}]}');
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, tokenRequests: () => tokenRequests };
}

async function closeServer(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
}

/** Starts erplink on the test store (a fresh MongoDB database when configured). */
async function start(env: Record<string, string>): Promise<RunningErplink & { dispose(): Promise<void> }> {
  const mongo = testMongoUrl();
  const url = mongo === undefined ? undefined : freshMongoUrl(mongo);
  const server = await startErplink({
    ...(url === undefined ? {} : { MONGODB_URL: url, ERPLINK_ENCRYPTION_KEY: "07".repeat(32) }),
    ...env,
  });
  return Object.assign(server, {
    async dispose() {
      await server.close();
      if (url !== undefined) await dropMongoDatabase(url);
    },
  });
}

interface Ctx {
  server: RunningErplink & { dispose(): Promise<void> };
  upstream: Awaited<ReturnType<typeof startUpstream>>;
  sessions: Http2SessionManager;
  authz: Client<typeof AuthorizationService>;
  systems: Client<typeof SystemService>;
  /** The data key: its secret and id. */
  key: string;
  keyId: string;
  /** A data key allowed one request a day. */
  limited: string;
}

const E2E = suite<Ctx>("e2e: /metrics counts a scripted sequence exactly");

async function call(ctx: Ctx, method: string, path: string, init: { token?: string | null; body?: unknown } = {}) {
  const headers: Record<string, string> = {};
  const token = init.token === undefined ? ctx.server.masterKey : init.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (init.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${ctx.server.baseUrl}${path}`, {
    method,
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  return { status: res.status, text, headers: res.headers };
}

async function scrape(ctx: Ctx, token?: string): Promise<Exposition> {
  const res = await fetch(`${ctx.server.baseUrl}/metrics`, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
  assert.is(res.status, 200);
  assert.is(res.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  return new Exposition(await res.text());
}

E2E.before(async (ctx) => {
  ctx.upstream = await startUpstream();
  ctx.server = await start({ ERPLINK_UPSTREAM_TIMEOUT_MS: "500", ERPLINK_KEY_SYNC_MS: "200" });
  ctx.sessions = new Http2SessionManager(ctx.server.baseUrl);
  const transport = createGrpcTransport({ baseUrl: ctx.server.baseUrl, sessionManager: ctx.sessions });
  ctx.authz = createClient(AuthorizationService, transport);
  ctx.systems = createClient(SystemService, transport);
  const sys = JSON.parse((await call(ctx, "POST", "/admin/systems", { body: { name: "S4" } })).text).data.id;
  for (const [name, auth] of [
    ["prod", { type: "basic", username: "u", password: "p" }],
    ["tenant7", { type: "oauth2_client_credentials", token_url: `${ctx.upstream.base}/token`, client_id: "c", client_secret: "client-secret-1" }],
  ] as const) {
    const res = await call(ctx, "POST", `/admin/systems/${sys}/instances`, { body: { name, base_url: `${ctx.upstream.base}/erp/`, auth } });
    assert.is(res.status, 201, res.text);
  }
  const permissions = {
    prod: { SALES: { SalesOrders: ["list", "get", "create"], Customers: ["list"], Products: ["list"], Countries: ["list"] }, NOMETA: { "*": ["list"] } },
    tenant7: { SALES: { SalesOrders: ["list"] } },
  };
  const key = JSON.parse((await call(ctx, "POST", "/admin/api-keys", { body: { name: "app", permissions } })).text).data;
  ctx.key = key.key;
  ctx.keyId = key.id;
  const limited = await call(ctx, "POST", "/admin/api-keys", {
    body: { name: "limited", permissions: { prod: { SALES: { SalesOrders: ["list"] } } }, rate_limits: { per_minute: 1, per_day: 1 } },
  });
  ctx.limited = JSON.parse(limited.text).data.key;
});

E2E.after(async (ctx) => {
  ctx.sessions?.abort();
  await ctx.server?.dispose();
  if (ctx.upstream) await closeServer(ctx.upstream.server);
});

E2E("every counter moves by exactly what the sequence did", async (ctx) => {
  const before = await scrape(ctx);
  const data = (method: string, path: string, token: string | null = ctx.key, body?: unknown) => call(ctx, method, `/odata/${path}`, { token, body });
  const expectStatus = async (p: Promise<{ status: number; text: string }>, status: number) => {
    const res = await p;
    assert.is(res.status, status, res.text);
  };

  // Admin over REST: a read, a conflict (a duplicate name: a store error), a bad token, an unknown route.
  await expectStatus(call(ctx, "GET", "/admin/systems"), 200);
  await expectStatus(call(ctx, "POST", "/admin/systems", { body: { name: "S4" } }), 409);
  await expectStatus(call(ctx, "GET", "/admin/systems", { token: "erpl_not_a_key" }), 401);
  await expectStatus(call(ctx, "GET", "/admin/nowhere"), 404);
  // Admin over gRPC: one call, one refused without a credential.
  await ctx.systems.listSystems({}, { headers: { authorization: `Bearer ${ctx.server.masterKey}` } });
  await ctx.systems.listSystems({}).then(
    () => assert.unreachable("no credential accepted"),
    (err: unknown) => assert.is(ConnectError.from(err).code, Code.Unauthenticated),
  );

  // The data path.
  await expectStatus(data("GET", "prod/SALES/SalesOrders"), 200); // $metadata miss, fetched
  await expectStatus(data("GET", "prod/SALES/SalesOrders"), 200); // hit
  await expectStatus(data("GET", "prod/SALES/SalesOrders", null), 401);
  await expectStatus(data("GET", "qa/SALES/SalesOrders"), 403); // instance
  await expectStatus(data("GET", "prod/OTHER/SalesOrders"), 403); // service
  await expectStatus(data("GET", "prod/SALES/Employees"), 403); // entity (hit)
  await expectStatus(data("DELETE", "prod/SALES/SalesOrders(1)"), 403); // operation (hit)
  await expectStatus(data("GET", "prod/SALES/SalesOrders?sap-user=someone"), 403); // not allowed (hit)
  await expectStatus(data("GET", "prod/SALES/SalesOrders", ctx.limited), 200); // hit
  await expectStatus(data("GET", "prod/SALES/SalesOrders", ctx.limited), 429); // hit
  await expectStatus(data("POST", "prod/SALES/SalesOrders", ctx.key, { ID: 5 }), 201); // hit, CSRF fetched
  await expectStatus(data("GET", "prod/SALES/Customers"), 500); // hit, back end 5xx
  await expectStatus(data("GET", "prod/SALES/Products"), 502); // hit, back end unreachable
  await expectStatus(data("GET", "prod/SALES/Countries"), 504); // hit, back end too slow
  await expectStatus(data("GET", "prod/NOMETA/Things"), 502); // miss, $metadata refused
  await expectStatus(data("GET", "prod/NOMETA/Things"), 502); // negative hit
  await expectStatus(data("GET", "tenant7/SALES/SalesOrders"), 200); // miss, OAuth token fetched once

  // Authorize over gRPC: each outcome.
  const authorize = async (apiKey: string, extra: Record<string, unknown>, step: DenialStep | "allowed") => {
    const res = await ctx.authz.authorize(
      create(AuthorizeRequestSchema, { apiKey, instance: "prod", service: "SALES", entity: "SalesOrders", operation: Operation.GET, ...extra }),
    );
    if (step === "allowed") assert.ok(res.allowed, res.message);
    else assert.is(res.denialStep, step, res.message);
  };
  await authorize(ctx.key, {}, "allowed");
  await authorize(ctx.key, { operation: Operation.LIST }, "allowed");
  await authorize(`erpl_${"x".repeat(49)}`, {}, DenialStep.KEY_INVALID);
  await authorize(ctx.key, { instance: "qa" }, DenialStep.INSTANCE);
  await authorize(ctx.key, { service: "OTHER" }, DenialStep.SERVICE);
  await authorize(ctx.key, { entity: "Employees" }, DenialStep.ENTITY);
  await authorize(ctx.key, { operation: Operation.DELETE }, DenialStep.OPERATION);
  await authorize(ctx.limited, { operation: Operation.LIST }, DenialStep.RATE_LIMITED);
  await ctx.authz.authorize(create(AuthorizeRequestSchema, {})).then(
    () => assert.unreachable("an empty request was decided"),
    (err: unknown) => assert.is(ConnectError.from(err).code, Code.InvalidArgument),
  );

  await ctx.server.erplink.flushLogs();
  const after = await scrape(ctx);
  const delta = (name: string, labels: Record<string, string> = {}) => after.value(name, labels) - before.value(name, labels);
  const deltaCount = (name: string, labels: Record<string, string> = {}) => after.count(name, labels) - before.count(name, labels);
  /** The change of each series of a family (those with the labels of `where`), by the value of `label`. */
  const deltas = (name: string, label: string, where: Record<string, string> = {}) =>
    Object.fromEntries(
      after
        .family(name)
        .metrics.filter((s) => Object.entries(where).every(([k, v]) => s.labels![k] === v))
        .map((s) => [s.labels![label], Number(s.value) - before.value(name, s.labels!)]),
    );

  // HTTP requests by route class, service, method and status class.
  const http = (route: string, method: string, status_class: string, service = "") => delta("erplink_http_requests_total", { route, service, method, status_class });
  assert.equal(
    {
      admin: [http("admin", "GET", "2xx"), http("admin", "POST", "4xx"), http("admin", "GET", "4xx")],
      unrouted: http("unrouted", "GET", "4xx"),
      data: [http("data", "GET", "2xx"), http("data", "POST", "2xx"), http("data", "GET", "4xx"), http("data", "DELETE", "4xx"), http("data", "GET", "5xx")],
      // gRPC answers HTTP 200 whatever the outcome: the code is in erplink_rpc_calls_total.
      rpc: [http("rpc", "POST", "2xx", "erplink.admin.v1.SystemService"), http("rpc", "POST", "2xx", "erplink.authz.v1.AuthorizationService")],
      metrics: http("metrics", "GET", "2xx"), // the first scrape
    },
    { admin: [1, 1, 1], unrouted: 1, data: [4, 1, 6, 1, 5], rpc: [2, 9], metrics: 1 },
  );
  const dataSeconds = { route: "data", service: "", method: "GET", status_class: "5xx" };
  assert.is(deltaCount("erplink_http_request_duration_seconds", dataSeconds), 5);
  assert.ok(after.sum("erplink_http_request_duration_seconds", dataSeconds) - before.sum("erplink_http_request_duration_seconds", dataSeconds) >= 0.5, "the timeout took 0.5 s");

  // RPC calls by code.
  const rpc = (service: string, method: string, code: string) => delta("erplink_rpc_calls_total", { service, method, code });
  assert.equal(
    [
      rpc("erplink.admin.v1.SystemService", "ListSystems", "ok"),
      rpc("erplink.admin.v1.SystemService", "ListSystems", "unauthenticated"),
      rpc("erplink.authz.v1.AuthorizationService", "Authorize", "ok"),
      rpc("erplink.authz.v1.AuthorizationService", "Authorize", "invalid_argument"),
    ],
    [1, 1, 8, 1],
  );

  // The data path's record stage.
  assert.equal(deltas("erplink_data_denials_total", "step"), {
    key_invalid: 1,
    key_expired: 0,
    instance: 1,
    service: 1,
    entity: 1,
    operation: 1,
    not_allowed: 1,
    rate_limited: 1,
  });
  assert.equal(deltas("erplink_data_upstream_requests_total", "status_class"), {
    "1xx": 0,
    "2xx": 5,
    "3xx": 0,
    "4xx": 0,
    "5xx": 1,
    error: 1,
    timeout: 1,
  });
  assert.is(deltaCount("erplink_data_upstream_duration_seconds", { status_class: "2xx" }), 5);
  assert.is(deltaCount("erplink_data_upstream_duration_seconds", { status_class: "5xx" }), 1);

  // Caches and token fetches.
  assert.equal(deltas("erplink_metadata_cache_lookups_total", "result"), { hit: 10, negative_hit: 1, miss: 3 });
  assert.equal(deltas("erplink_metadata_fetches_total", "result"), { ok: 2, refused: 1, unreachable: 0, timeout: 0 });
  assert.is(deltaCount("erplink_metadata_fetch_duration_seconds"), 3);
  assert.is(after.value("erplink_metadata_cache_entries"), 3);
  const tokens = (kind: string, result: string) => delta("erplink_upstream_token_fetches_total", { kind, result });
  assert.equal([tokens("oauth", "ok"), tokens("csrf", "ok"), tokens("oauth", "refused"), tokens("csrf", "none")], [1, 1, 0, 0]);
  assert.is(ctx.upstream.tokenRequests(), 1);

  // Authorize by outcome.
  assert.equal(deltas("erplink_authorization_decisions_total", "outcome", { api: "authorize" }), {
    allowed: 2,
    key_invalid: 1,
    key_expired: 0,
    instance: 1,
    service: 1,
    entity: 1,
    operation: 1,
    not_allowed: 0,
    rate_limited: 1,
    invalid_request: 1,
    error: 0,
  });
  assert.equal(after.nonZero("erplink_authorization_decisions_total").filter((l) => l.api !== "authorize"), []);

  // The request log: 17 data requests, 4 admin requests, 2 admin RPCs (Authorize is not logged); all written.
  assert.is(after.value("erplink_request_log_queued"), 0);
  assert.is(delta("erplink_request_log_written_total") - before.value("erplink_request_log_queued"), 23);
  assert.is(after.value("erplink_request_log_dropped_total"), 0);

  // The key cache: the two data keys (cached when created); the sync runs every 200 ms.
  assert.is(after.value("erplink_api_key_cache_entries", { state: "known" }), 2);
  const lag = after.value("erplink_api_key_sync_lag_seconds");
  assert.ok(lag >= 0 && lag < 5, String(lag));
  assert.is(after.value("erplink_api_key_sync_failures_total"), 0);

  // The store: the duplicate system was one failed insert.
  assert.is(deltaCount("erplink_store_operation_duration_seconds", { collection: "systems", operation: "insert" }), 1);
  assert.is(delta("erplink_store_operation_errors_total", { collection: "systems", operation: "insert", error: "duplicate_key" }), 1);
  // Every counted request touched the rate windows (an increment embedded, unique inserts on MongoDB).
  const rateWindowOps = (e: Exposition) =>
    e.family("erplink_store_operation_duration_seconds").metrics.filter((m) => m.labels?.collection === "rate_windows").reduce((n, m) => n + Number(m.count), 0);
  assert.ok(rateWindowOps(after) - rateWindowOps(before) > 0);
  // The request log's writes are store operations too: a collection's insertMany on MongoDB, the embedded log's append.
  const logWrite = testMongoUrl() === undefined ? "append" : "insertMany";
  assert.ok(deltaCount("erplink_store_operation_duration_seconds", { collection: "request_logs", operation: logWrite }) >= 1, logWrite);
  assert.is(delta("erplink_store_operation_errors_total", { collection: "request_logs", operation: logWrite, error: "other" }), 0);

  // Process metrics.
  for (const name of ["process_cpu_user_seconds_total", "process_resident_memory_bytes", "nodejs_heap_size_used_bytes"]) {
    assert.ok(after.families.has(name), name);
  }

  // No identifier a client chose, and no secret, in any label or value.
  for (const secret of [ctx.key, ctx.keyId, ctx.limited, ctx.server.masterKey, CSRF_TOKEN, OAUTH_TOKEN, "client-secret-1", "prod", "tenant7", "NOMETA", "SalesOrders", "/odata", "nowhere", "sap-user"]) {
    assert.not.ok(after.text.includes(secret), `the exposition contains ${secret}`);
  }
});

E2E.run();

const Modes = suite("e2e: /metrics modes");

Modes("token mode: no token or a wrong one (the master key too) is 401 in the envelope; the token scrapes", async () => {
  const server = await start({ ERPLINK_METRICS: "token", ERPLINK_METRICS_TOKEN: METRICS_TOKEN });
  try {
    const cases: [string, Record<string, string>, string][] = [
      ["none", {}, "missing bearer token: send Authorization: Bearer <metrics token>"],
      ["not bearer", { authorization: `Basic ${METRICS_TOKEN}` }, "missing bearer token: send Authorization: Bearer <metrics token>"],
      ["wrong", { authorization: `Bearer ${METRICS_TOKEN}x` }, "invalid metrics token"],
      ["a prefix", { authorization: `Bearer ${METRICS_TOKEN.slice(0, -1)}` }, "invalid metrics token"],
      ["the master key", { authorization: server.authorization }, "invalid metrics token"],
    ];
    for (const [what, headers, message] of cases) {
      const res = await fetch(`${server.baseUrl}/metrics`, { headers: { ...headers, "x-request-id": `rid-${what.replace(/ /g, "-")}` } });
      assert.is(res.status, 401, what);
      assert.is(res.headers.get("www-authenticate"), 'Bearer realm="metrics"', what);
      assert.is(res.headers.get("content-type"), "application/json; charset=utf-8", what);
      assert.equal(await res.json(), { error: { code: "UNAUTHORIZED", message, requestId: `rid-${what.replace(/ /g, "-")}` } }, what);
    }
    const ok = await fetch(`${server.baseUrl}/metrics`, { headers: { authorization: `bearer ${METRICS_TOKEN}` } });
    assert.is(ok.status, 200);
    const e = new Exposition(await ok.text());
    // The refused scrapes were counted like any request.
    assert.is(e.value("erplink_http_requests_total", { route: "metrics", service: "", method: "GET", status_class: "4xx" }), 5);
  } finally {
    await server.dispose();
  }
});

Modes("off: /metrics is 404 in the envelope, as any unknown path", async () => {
  const server = await start({ ERPLINK_METRICS: "off" });
  try {
    const res = await fetch(`${server.baseUrl}/metrics`, { headers: { "x-request-id": "rid-off" } });
    assert.is(res.status, 404);
    assert.equal(await res.json(), { error: { code: "NOT_FOUND", message: "no route for GET /metrics", requestId: "rid-off" } });
    // The rest works as before.
    assert.is((await fetch(`${server.baseUrl}/admin/systems`, { headers: { authorization: server.authorization } })).status, 200);
  } finally {
    await server.dispose();
  }
});

Modes("Envoy's Check decisions count as api=\"ext_authz\" by outcome, Authorize's untouched", async () => {
  const upstream = await startUpstream();
  const server = await start({});
  try {
    const admin = (path: string, body: unknown) =>
      fetch(`${server.baseUrl}${path}`, { method: "POST", headers: { authorization: server.authorization, "content-type": "application/json" }, body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    const sys = await admin("/admin/systems", { name: "S4" });
    assert.is((await admin(`/admin/systems/${sys.body.data.id}/instances`, { name: "prod", base_url: `${upstream.base}/erp/` })).status, 201);
    const key = (await admin("/admin/api-keys", { name: "envoy", permissions: { prod: { SALES: { SalesOrders: ["list"] } } } })).body.data.key as string;
    const check = createClient(Authorization, createGrpcTransport({ baseUrl: server.baseUrl }));
    const before = await (await fetch(`${server.baseUrl}/metrics`)).text().then((t) => new Exposition(t));
    const outcomes: number[] = [];
    for (const [path, bearer] of [
      ["/odata/prod/SALES/SalesOrders", key],
      ["/odata/prod/SALES/SalesOrders", key],
      ["/odata/prod/SALES/Customers", key],
      ["/odata/prod/SALES/SalesOrders", "erpl_not_a_key"],
    ] as const) {
      const res = await check.check(checkRequest({ method: "GET", path, headers: { authorization: `Bearer ${bearer}` } }));
      outcomes.push(res.status?.code ?? 0);
    }
    assert.equal(outcomes, [0, 0, 7, 16], "allowed, allowed, PERMISSION_DENIED, UNAUTHENTICATED");
    const after = await (await fetch(`${server.baseUrl}/metrics`)).text().then((t) => new Exposition(t));
    const delta = (api: string, outcome: string) =>
      after.value("erplink_authorization_decisions_total", { api, outcome }) - before.value("erplink_authorization_decisions_total", { api, outcome });
    assert.equal(
      { allowed: delta("ext_authz", "allowed"), entity: delta("ext_authz", "entity"), key_invalid: delta("ext_authz", "key_invalid"), authorize: delta("authorize", "allowed") },
      { allowed: 2, entity: 1, key_invalid: 1, authorize: 0 },
    );
  } finally {
    await server.dispose();
    await closeServer(upstream.server);
  }
});

Modes.run();
