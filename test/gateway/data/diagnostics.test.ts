/**
 * The data path's diagnostics through the REST facade, against a recording
 * upstream of our own:
 *
 * - explain is a differential of the data path: every case of the data
 *   path's own tables (test-support/data-cases.ts: data-path.test.ts,
 *   data/forward.test.ts) is sent to
 *   the data path over a raw socket (request lines as written) and explained
 *   for the same key; the data path's answer (status, code, message, the
 *   request log's denial step, accesses, upstream URL) must be exactly what
 *   explain says. Explaining forwards nothing, counts nothing and logs no
 *   data request.
 * - the catalog (entity sets, functions and actions with what a call needs)
 *   and the connection test read the same upstream, a closed port and
 *   refused credentials.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  BASIC,
  DATA_CASES as CASES,
  JSON_TYPE,
  SALES,
  UP,
  explainRequestOf,
  sendToDataPath as send,
  startCaseWorld,
  stopCaseWorld,
  type CaseWorld as Ctx,
  type DataCase as Case,
} from "../../../test-support/data-cases.js";
import { AUTH } from "../../../test-support/world.js";
import { json, post } from "../../../test-support/http.js";

const Diag = suite<Ctx>("data path diagnostics");

Diag.before.each(async (ctx) => {
  Object.assign(ctx, await startCaseWorld());
});

Diag.after.each(async (ctx) => {
  await stopCaseWorld(ctx);
});

/** Explains a case with its key through the REST facade. */
async function explain(ctx: Ctx, c: Case) {
  const res = await post(ctx.world.app, `/admin/api-keys/${ctx.keys[c.key ?? "app"]!.id}/explain`, explainRequestOf(c));
  assert.is(res.statusCode, 200, res.body);
  return json(res).data;
}

Diag("explain gives exactly the data path's decision on every case of the data path's tables (status, code, message, denial step, accesses, upstream URL)", async (ctx) => {
  let forwarded = 0;
  let refused = 0;
  for (const [i, c] of CASES.entries()) {
    const label = `case ${i + 1}: ${c.method} ${c.url}`;
    const { res, entry } = await send(ctx, c, `diff-${i}`);
    const ex = await explain(ctx, c);
    const sent = entry.upstreamMethod !== "";
    if (!sent && res.status === 200) {
      // A client's HEAD token fetch, answered by the data path itself: allowed, and nothing would be sent.
      assert.equal([c.method, c.headers?.["x-csrf-token"]?.toLowerCase(), ex.allowed, ex.request, ex.accesses], ["HEAD", "fetch", true, undefined, []], label);
      continue;
    }
    assert.is(ex.allowed, sent, `${label}: allowed (data path answered ${res.status} ${res.body})`);
    assert.equal(
      ex.accesses.slice(0, entry.accesses.length).map((a: { entity_set: string; operation: string }) => ({ entity: a.entity_set, operation: a.operation })),
      entry.accesses,
      `${label}: accesses`,
    );
    if (sent) {
      forwarded++;
      assert.is(ex.accesses.length, entry.accesses.length, `${label}: every access`);
      assert.is(ex.accesses.every((a: { allowed: boolean }) => a.allowed), true, label);
      assert.equal([ex.request.method, ex.request.upstream_url], [entry.upstreamMethod, entry.upstreamUrl], `${label}: what would be sent`);
      assert.equal([ex.status, ex.code, ex.message, ex.denial_step], [0, "", "", ""], label);
    } else {
      refused++;
      assert.equal([ex.status, ex.code, ex.denial_step], [res.status, entry.errorCode, entry.denialStep], `${label}: refusal`);
      // HEAD answers carry no body.
      if (c.method !== "HEAD") assert.is(ex.message, JSON.parse(res.body).error.message, `${label}: message`);
      if (ex.denial_step === "ENTITY" || ex.denial_step === "OPERATION") {
        const denied = ex.accesses.find((a: { allowed: boolean }) => !a.allowed);
        assert.equal([denied.denial_step, denied.message], [ex.denial_step, ex.message], `${label}: the first denied access is the answer`);
      }
    }
  }
  assert.ok(forwarded >= 15 && refused >= 50, `both outcomes are covered (${forwarded} forwarded, ${refused} refused)`);
});

// Explain differential (seed 112510): the router reads the path up to the first `?` or `#`; explain checked
// the percent-encoding up to `?` only, and refused a malformed escape after a `#` as the router would, where the
// data path's analyzer answered it with its own message.
Diag("a malformed escape after a '#' in the target: explain answers as the data path does (its analyzer, not the router)", async (ctx) => {
  const c: Case = { key: "reader", method: "GET", url: `${SALES}/Customers('a#%2e%2.')` };
  const { res } = await send(ctx, c, "diff-fragment");
  const ex = await explain(ctx, c);
  assert.is(res.status, 400);
  assert.match(JSON.parse(res.body).error.message, /^malformed percent-encoding in path segment/);
  assert.equal([ex.allowed, ex.status, ex.code, ex.message], [false, 400, "VALIDATION_ERROR", JSON.parse(res.body).error.message]);
});

// Explain differential (seed 1125222): the router routes a path with an empty service segment
// (`/odata/prodv2//…`, service ""), which the data path refuses by the service name's rule;
// explain refused the call itself ("url: must name a service").
Diag("an empty service segment: explain answers as the data path does (the service name's refusal), not as a call that names no service", async (ctx) => {
  for (const url of ["/odata/prod//SalesOrders", "/odata/prod/", "/odata/prodv2//..%2FCustomersSALES/$batch"]) {
    const c: Case = { key: "reader", method: "GET", url };
    const { res } = await send(ctx, c, "diff-empty-service");
    const ex = await explain(ctx, c);
    assert.is(res.status, 400, url);
    assert.match(JSON.parse(res.body).error.message, /^the service name may only contain/, url);
    assert.equal([ex.allowed, ex.status, ex.code, ex.message], [false, 400, "VALIDATION_ERROR", JSON.parse(res.body).error.message], url);
  }
});

Diag("explaining forwards nothing, counts nothing and writes no data-request log entry", async (ctx) => {
  const app = ctx.world.app;
  const limited = json(
    await post(app, "/admin/api-keys", { name: "limited", permissions: { prod: { SALES: { SalesOrders: ["get", "update"] } } }, rate_limits: { per_minute: 2 } }),
  ).data;
  const request = { instance: "prod", method: "PATCH", url: `${SALES}/SalesOrders(1)`, headers: JSON_TYPE, body: '{"Note":"x"}' };
  const before = ctx.all.length;
  for (let i = 0; i < 5; i++) {
    const ex = json(await post(app, `/admin/api-keys/${limited.id}/explain`, request)).data;
    assert.equal([ex.allowed, ex.within_rate_limits, ex.rate_limit.remaining, ex.request.if_match_added, ex.request.headers["if-match"]], [true, true, "2", true, "*"]);
  }
  // Only the service's $metadata was fetched (once, into the cache the data path shares).
  assert.equal(ctx.all.slice(before).map((s) => `${s.method} ${s.url}`), [`GET ${UP}/$metadata?sap-client=100`]);
  await ctx.world.layer.logWriter.flush();
  const logged = (await ctx.world.store.logs.query({ limit: 100 })).items;
  assert.equal(logged.filter((e) => e.instance !== "").length, 0, "no data request was logged");
  assert.is(logged.filter((e) => e.path === `/admin/api-keys/${limited.id}/explain`).length, 5, "each explain call is an admin request");
  // The data path still has the whole budget: two pass, the third is 429, and explain says so without counting.
  const patch = () =>
    app.inject({ method: "PATCH", url: `${SALES}/SalesOrders(1)`, headers: { authorization: `Bearer ${limited.key}`, ...JSON_TYPE }, payload: '{"Note":"x"}' });
  assert.is((await patch()).statusCode, 201);
  assert.is(json(await post(app, `/admin/api-keys/${limited.id}/explain`, request)).data.rate_limit.remaining, "1");
  assert.is((await patch()).statusCode, 201);
  const ex = json(await post(app, `/admin/api-keys/${limited.id}/explain`, request)).data;
  const third = await patch();
  assert.is(third.statusCode, 429);
  assert.equal(
    [ex.allowed, ex.status, ex.code, ex.message, ex.denial_step, ex.within_rate_limits, ex.rate_limit.remaining],
    [false, 429, "RATE_LIMITED", JSON.parse(third.body).error.message, "RATE_LIMITED", false, "0"],
  );
  assert.ok(ex.rate_limit.retry_after, "retry_after is set when limited");
  // A permission denial is the answer before the rate limit, as on the data path.
  const denied = json(await post(app, `/admin/api-keys/${limited.id}/explain`, { ...request, method: "DELETE", body: "", headers: {} })).data;
  assert.equal([denied.status, denied.denial_step, denied.within_rate_limits], [403, "OPERATION", false]);
});

Diag("explain: an expired key is 401 and an admin key 403, as on the data path; the master key's Authorization header is ignored", async (ctx) => {
  const app = ctx.world.app;
  const soon = json(
    await post(app, "/admin/api-keys", {
      name: "soon",
      permissions: { prod: { SALES: { SalesOrders: ["list"] } } },
      expires_at: new Date(ctx.world.now.getTime() + 60_000).toISOString(),
    }),
  ).data;
  ctx.world.now = new Date(ctx.world.now.getTime() + 61_000);
  const request = { instance: "prod", method: "GET", url: `${SALES}/SalesOrders`, headers: { Authorization: AUTH.authorization } };
  const data = await app.inject({ method: "GET", url: `${SALES}/SalesOrders`, headers: { authorization: `Bearer ${soon.key}` } });
  const ex = json(await post(app, `/admin/api-keys/${soon.id}/explain`, request)).data;
  assert.equal([ex.allowed, ex.status, ex.code, ex.message, ex.denial_step], [false, 401, "UNAUTHORIZED", JSON.parse(data.body).error.message, "KEY_INVALID"]);
  assert.is(ex.message, "API key expired");
  assert.is(ex.request, undefined, "nothing was analyzed");
  const admin = json(await post(app, `/admin/api-keys/${ctx.keys.admin!.id}/explain`, request)).data;
  assert.equal([admin.status, admin.code, admin.message, admin.denial_step, admin.rate_limit], [403, "FORBIDDEN", "API key is not a data key: data access needs a data key", "KEY_INVALID", undefined]);
});

Diag("explain reads the URL forms: /odata/…, a full URL, <service>/…, or relative to the service root with service set; a URL for another instance or service is a 400", async (ctx) => {
  const id = ctx.keys.reader!.id;
  const forms = [
    { instance: "prod", method: "get", url: `${SALES}/SalesOrders(1)?$expand=Customer` },
    { instance: "prod", method: "GET", url: `https://erplink.example.com${SALES}/SalesOrders(1)?$expand=Customer` },
    { instance: "prod", method: "GET", url: "SALES/SalesOrders(1)?$expand=Customer" },
    { instance: "prod", service: "SALES", method: "GET", url: "SalesOrders(1)?$expand=Customer" },
    { instance: "prod", service: "SALES", method: "GET", url: `${SALES}/SalesOrders(1)?$expand=Customer` },
  ];
  for (const form of forms) {
    const res = await post(ctx.world.app, `/admin/api-keys/${id}/explain`, form);
    assert.is(res.statusCode, 200, res.body);
    const ex = json(res).data;
    assert.equal(
      [ex.allowed, ex.instance, ex.service, ex.request.method, ex.request.target, ex.request.upstream_url],
      [true, "prod", "SALES", "GET", "SalesOrders(1)?$expand=Customer", `${ctx.origin}${UP}/SalesOrders(1)?$expand=Customer&sap-client=100`],
      JSON.stringify(form),
    );
  }
  const bad = async (body: object, message: string) => {
    const res = await post(ctx.world.app, `/admin/api-keys/${id}/explain`, body);
    assert.is(res.statusCode, 400, res.body);
    assert.is(json(res).error.message, message);
  };
  await bad({ instance: "qa", method: "GET", url: `${SALES}/SalesOrders` }, "url: names instance 'prod', not 'qa'");
  await bad({ instance: "prod", service: "OTHER", method: "GET", url: `${SALES}/SalesOrders` }, "url: names service 'SALES', not 'OTHER'");
  await bad({ instance: "prod", method: "GET", url: "/admin/systems" }, "url: must be /odata/<instance>/<service>/…, <service>/…, or a path relative to the service root when service is set");
  await bad({ instance: "prod", method: "GET", url: "/odata/prod" }, "url: must name a service: /odata/<instance>/<service>/…");
  await bad({ instance: "prod", method: "OPTIONS", url: `${SALES}/SalesOrders` }, "method: must be GET, HEAD, POST, PUT, PATCH, DELETE or MERGE");
  await bad({ instance: "prod", method: "GET", url: `${SALES}/SalesOrders`, headers: { "bad name": "x" } }, "headers.bad name: is not a valid header name");
  const missing = await post(ctx.world.app, `/admin/api-keys/${id}/explain`, {});
  assert.is(missing.statusCode, 400);
  assert.equal(json(missing).error.details, [
    { field: "instance", message: "is required" },
    { field: "method", message: "is required" },
    { field: "url", message: "is required" },
  ]);
  const unknown = await post(ctx.world.app, "/admin/api-keys/key_00000000000000000000000000/explain", forms[0]);
  assert.equal([unknown.statusCode, json(unknown).error.code, json(unknown).error.message], [404, "NOT_FOUND", 'API key "key_00000000000000000000000000" not found']);
  const malformed = await post(ctx.world.app, "/admin/api-keys/nope/explain", forms[0]);
  assert.equal([malformed.statusCode, json(malformed).error.message], [404, 'API key "nope" not found']);
  const wrongType = await post(ctx.world.app, `/admin/api-keys/${id}/explain`, { ...forms[0], headers: { accept: 1 } });
  assert.equal([wrongType.statusCode, json(wrongType).error.message], [400, "headers.accept: must be a string"]);
});

Diag("explain reads a percent-encoded /odata prefix as the router does: /%6Fdata/… reaches the data path, so explain decides it too, not refuses the URL (explain-differential finding)", async (ctx) => {
  const c: Case = { key: "reader", method: "GET", url: "/%6Fdata/prod/SALES/SalesOrders(1)?$expand=Customer" };
  const { res, entry } = await send(ctx, c, "encoded-prefix");
  // The upstream answers 201 to every data request.
  assert.is(res.status, 201, res.body);
  assert.is(entry.upstreamUrl, `${ctx.origin}${UP}/SalesOrders(1)?$expand=Customer&sap-client=100`);
  const call = await post(ctx.world.app, `/admin/api-keys/${ctx.keys.reader!.id}/explain`, explainRequestOf(c));
  assert.is(call.statusCode, 200, call.body);
  const ex = json(call).data;
  assert.equal(
    [ex.allowed, ex.instance, ex.service, ex.request.method, ex.request.target, ex.request.upstream_url],
    [true, "prod", "SALES", "GET", "SalesOrders(1)?$expand=Customer", entry.upstreamUrl],
  );
});

Diag("catalog: a service's entity sets, keys, navigations with their targets, media sets, singletons and imports", async (ctx) => {
  const res = await ctx.world.app.inject({ method: "GET", url: `/admin/instances/${ctx.instanceId}/services/SALES/catalog`, headers: AUTH });
  assert.is(res.statusCode, 200, res.body);
  const catalog = json(res).data;
  assert.equal([catalog.instance_id, catalog.service, catalog.odata_version], [ctx.instanceId, "SALES", "4.0"]);
  const byName = Object.fromEntries(catalog.entity_sets.map((s: { name: string }) => [s.name, s]));
  assert.equal(byName.SalesOrders, {
    name: "SalesOrders",
    singleton: false,
    entity_type: "Sales.SalesOrder",
    key_properties: ["ID"],
    media: false,
    navigation_properties: [
      { name: "Items", target_entity_set: "SalesOrders", collection: true },
      { name: "Customer", target_entity_set: "Customers", collection: false },
      // No binding in the document: requests through it are denied.
      { name: "Approver", collection: false },
      { name: "ShipTo/CountryInfo", target_entity_set: "Countries", collection: false },
    ],
  });
  assert.equal([byName.Products.media, byName.Me.singleton, byName.PriceConditions.key_properties], [true, true, ["OrderID", "Type"]]);
  assert.equal([catalog.function_imports, catalog.action_imports], [["Search"], ["ResetAll"]]);
  // The $metadata came from the back end once, with the instance's credentials and SAP client, into the data path's cache.
  const v2 = json(await ctx.world.app.inject({ method: "GET", url: `/admin/instances/${ctx.instanceId}/services/SALES2/catalog`, headers: AUTH })).data;
  assert.is(v2.odata_version, "2.0");
  assert.ok(v2.entity_sets.some((s: { name: string }) => s.name === "SalesOrderSet"));
  const reader = ctx.keys.reader!.key;
  assert.is((await ctx.world.app.inject({ method: "GET", url: `${SALES}/SalesOrders`, headers: { authorization: `Bearer ${reader}` } })).statusCode, 201);
  assert.equal(
    ctx.all.filter((s) => s.url.includes("$metadata")).map((s) => [s.url, s.headers.authorization]),
    [
      [`${UP}/$metadata?sap-client=100`, BASIC],
      [`/erp/v2/ZSALES_SRV/$metadata?sap-client=100`, BASIC],
    ],
  );
});

Diag("catalog: every function and action by the name a key grants it by (invoke), its kind, the sets it is called on and the sets its result lies in; a V2 function import with its method", async (ctx) => {
  const get = async (service: string) => {
    const res = await ctx.world.app.inject({ method: "GET", url: `/admin/instances/${ctx.instanceId}/services/${service}/catalog`, headers: AUTH });
    assert.is(res.statusCode, 200, res.body);
    return json(res).data;
  };
  const v4 = await get("SALES");
  // REST leaves out empty strings (http_method but for V2 function imports), as for every resource.
  assert.equal(v4.operations, [
    // The import's EntitySet holds its result.
    { name: "Search", kind: "function", bound: false, binding_entity_sets: [], result_entity_sets: ["Products"], result_unknown: false },
    { name: "ResetAll", kind: "action", bound: false, binding_entity_sets: [], result_entity_sets: [], result_unknown: false },
    // Bound operations by their namespace-qualified name, as the document declares it (not the alias S).
    { name: "Sales.GetTotal", kind: "function", bound: true, binding_entity_sets: ["SalesOrders"], result_entity_sets: [], result_unknown: false },
    // No EntitySetPath: every set of the returned type.
    { name: "Sales.TopOrders", kind: "function", bound: true, binding_entity_sets: ["SalesOrders"], result_entity_sets: ["SalesOrders"], result_unknown: false },
    { name: "Sales.Approve", kind: "action", bound: true, binding_entity_sets: ["SalesOrders"], result_entity_sets: [], result_unknown: false },
  ]);
  const v2 = await get("SALES2");
  assert.equal(v2.operations, [
    { name: "ReleaseOrder", kind: "action", bound: false, binding_entity_sets: [], result_entity_sets: ["SalesOrderSet"], http_method: "POST", result_unknown: false },
  ]);
  // What the catalog names is what a call needs on the data path: the grant, the binding read, the result's read.
  const key = json(
    await post(ctx.world.app, "/admin/api-keys", {
      name: "caller",
      permissions: { prod: { SALES: { "Sales.TopOrders": ["invoke"], SalesOrders: ["list"] }, SALES2: { ReleaseOrder: ["invoke"], SalesOrderSet: ["get"] } } },
    }),
  ).data;
  const explained = async (url: string, method: string) => {
    const res = await post(ctx.world.app, `/admin/api-keys/${key.id}/explain`, { instance: "prod", method, url });
    assert.is(res.statusCode, 200, res.body);
    const ex = json(res).data;
    return [ex.allowed, ex.accesses.map((a: { entity_set: string; operation: string }) => `${a.operation} ${a.entity_set}`)];
  };
  assert.equal(await explained(`${SALES}/SalesOrders/Sales.TopOrders(count=3)`, "GET"), [true, ["list SalesOrders", "invoke Sales.TopOrders"]]);
  assert.equal(await explained("/odata/prod/SALES2/ReleaseOrder?SalesOrderID='1'", "POST"), [true, ["invoke ReleaseOrder", "get SalesOrderSet"]]);
});

Diag("catalog: a back end that refuses the credentials is 502, one that cannot be reached 502, a slow one 504; bad names are 400, unknown instances 404", async (ctx) => {
  const app = ctx.world.app;
  const sys = json(await post(app, "/admin/systems", { name: "S4b" })).data.id;
  const wrong = json(
    await post(app, `/admin/systems/${sys}/instances`, { name: "wrong", base_url: `${ctx.origin}/erp/`, auth: { type: "basic", username: "erp-user", password: "not-the-password" } }),
  ).data.id;
  const closed = http.createServer();
  await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
  const closedPort = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const down = json(await post(app, `/admin/systems/${sys}/instances`, { name: "down", base_url: `http://127.0.0.1:${closedPort}/erp/` })).data.id;
  const get = (url: string) => app.inject({ method: "GET", url, headers: AUTH });
  const assertError = (res: { statusCode: number; body: string; headers: Record<string, unknown> }, status: number, code: string, message: string) => {
    assert.is(res.statusCode, status, res.body);
    const details = status === 400 ? { details: [{ field: "service", message: message.replace(/^service: /, "") }] } : {};
    assert.equal(json(res as never), { error: { code, message, requestId: res.headers["x-request-id"], ...details } });
  };
  assertError(await get(`/admin/instances/${wrong}/services/SALES/catalog`), 502, "BAD_GATEWAY", "cannot read the service's catalog: the back end answered HTTP 401 to $metadata");
  assertError(await get(`/admin/instances/${down}/services/SALES/catalog`), 502, "BAD_GATEWAY", "cannot read the service's catalog: the back end could not be reached for the service's $metadata");
  assertError(await get(`/admin/instances/${ctx.instanceId}/services/a%3Fb/catalog`), 400, "VALIDATION_ERROR", "service: the service name may only contain letters, digits and the characters _ . ~ ! $ & ' ( ) * + , ; = : @ -");
  // Dot segments are resolved before routing (a '..' service name reaches the service only over gRPC: see the services' suite).
  assertError(await get(`/admin/instances/${ctx.instanceId}/services/../catalog`), 404, "NOT_FOUND", "no route for GET /admin/instances/" + ctx.instanceId + "/catalog");
  assertError(await get("/admin/instances/ins_00000000000000000000000000/services/SALES/catalog"), 404, "NOT_FOUND", 'instance "ins_00000000000000000000000000" not found');
  // A slow back end: 504, within the upstream timeout.
  const slow = http.createServer((_req, res) => setTimeout(() => res.end(), 3_000));
  await new Promise<void>((r) => slow.listen(0, "127.0.0.1", r));
  try {
    const slowId = json(await post(app, `/admin/systems/${sys}/instances`, { name: "slow", base_url: `http://127.0.0.1:${(slow.address() as AddressInfo).port}/` })).data.id;
    const started = Date.now();
    assertError(await get(`/admin/instances/${slowId}/services/X/catalog`), 504, "GATEWAY_TIMEOUT", "cannot read the service's catalog: the back end did not send the service's $metadata in time");
    assert.ok(Date.now() - started < 2_900, "bounded by the upstream timeout (2 s in test worlds)");
  } finally {
    slow.closeAllConnections();
    await new Promise<void>((r) => slow.close(() => r()));
  }
});

Diag("connection test: every step against a working back end with a service (CSRF token obtained), and the base URL alone; never a secret", async (ctx) => {
  const res = await post(ctx.world.app, `/admin/instances/${ctx.instanceId}/test`, { service: "SALES" });
  assert.is(res.statusCode, 200, res.body);
  const t = json(res).data;
  assert.equal(
    [t.ok, t.error, t.url, t.http_status, t.odata_version, t.csrf_token],
    [true, "", `${ctx.origin}${UP}/$metadata`, 200, "4.0", true],
  );
  assert.equal(t.steps.map((s: { name: string; ok: boolean }) => [s.name, s.ok]), [
    ["dns", true],
    ["tcp", true],
    ["http", true],
    ["odata_version", true],
    ["csrf", true],
  ]);
  assert.is(t.steps[4].detail, "obtained a CSRF token with 1 session cookie");
  assert.match(t.steps[3].detail, /^OData 4\.0: \$metadata with 8 entity sets, 1 singletons, 2 function and action imports$/);
  for (const secret of ["erp-pass", BASIC, "tok-secret-1", "cookie-secret", Buffer.from("erp-user:erp-pass").toString("base64")]) {
    assert.not.ok(res.body.includes(secret), `the answer holds no secret (${secret})`);
  }
  // Fresh sessions: the token fetch reached the back end with the instance's credentials and SAP client.
  assert.equal(
    ctx.all.slice(-2).map((s) => [s.url, s.headers.authorization, s.headers["x-csrf-token"]]),
    [
      [`${UP}/$metadata?sap-client=100`, BASIC, undefined],
      [`${UP}/?sap-client=100`, BASIC, "Fetch"],
    ],
  );
  // Without a body (or with {}), only the base URL.
  const bare = await ctx.world.app.inject({ method: "POST", url: `/admin/instances/${ctx.instanceId}/test`, headers: AUTH });
  assert.is(bare.statusCode, 200, bare.body);
  const b = json(bare).data;
  assert.equal([b.ok, b.url, b.http_status, b.steps.map((s: { name: string }) => s.name)], [true, `${ctx.origin}/erp/`, 201, ["dns", "tcp", "http", "odata_version"]]);
  assert.is(ctx.all.at(-1)!.url, "/erp/?sap-client=100");
  // A Content-Type announces a body: an empty one is refused, as on every route with a body.
  const withType = await ctx.world.app.inject({ method: "POST", url: `/admin/instances/${ctx.instanceId}/test`, headers: { ...AUTH, "content-type": "application/json" } });
  assert.equal([withType.statusCode, json(withType).error.message], [400, "request body is empty; send a JSON object"]);
  const unknownField = await post(ctx.world.app, `/admin/instances/${ctx.instanceId}/test`, { servce: "SALES" });
  assert.equal([unknownField.statusCode, json(unknownField).error.message], [400, "servce: is not a known field"]);
  const notJson = await ctx.world.app.inject({ method: "POST", url: `/admin/instances/${ctx.instanceId}/test`, headers: { ...AUTH, "content-type": "text/plain" }, payload: "SALES" });
  assert.is(notJson.statusCode, 415);
});

Diag("connection test: a bad password fails the http step with the status in words; a closed port fails tcp; an unknown host fails dns", async (ctx) => {
  const app = ctx.world.app;
  const sys = json(await post(app, "/admin/systems", { name: "S4c" })).data.id;
  const make = async (name: string, body: Record<string, unknown>) =>
    json(await post(app, `/admin/systems/${sys}/instances`, { name, ...body })).data.id as string;
  const wrong = await make("wrong", { base_url: `${ctx.origin}/erp/`, services: { SALES: { path: "sap/sales/0001" } }, auth: { type: "basic", username: "erp-user", password: "p4ss-w0rd-secret" } });
  const res = await post(app, `/admin/instances/${wrong}/test`, { service: "SALES" });
  const t = json(res).data;
  assert.equal([t.ok, t.http_status, t.steps.map((s: { name: string; ok: boolean }) => [s.name, s.ok])], [false, 401, [["dns", true], ["tcp", true], ["http", false]]]);
  assert.match(t.error, new RegExp(`^http: the back end refused the credentials: HTTP 401 from GET ${ctx.origin}${UP}/\\$metadata in \\d+ ms \\(it asks for Basic\\)$`));
  assert.not.ok(res.body.includes("p4ss-w0rd-secret"));

  const closed = http.createServer();
  await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const down = await make("down", { base_url: `http://127.0.0.1:${port}/erp/` });
  const d = json(await post(app, `/admin/instances/${down}/test`, {})).data;
  assert.equal([d.ok, d.http_status, d.error, d.steps.map((s: { name: string }) => s.name)], [
    false,
    0,
    `tcp: cannot connect to 127.0.0.1:${port}: connection refused (ECONNREFUSED)`,
    ["dns", "tcp"],
  ]);

  const nowhere = await make("nowhere", { base_url: "http://erplink-test.invalid/erp/" });
  const n = json(await post(app, `/admin/instances/${nowhere}/test`, {})).data;
  assert.equal([n.ok, n.steps.length, n.steps[0].name], [false, 1, "dns"]);
  assert.match(n.error, /^dns: cannot resolve erplink-test\.invalid: /);
});

Diag.run();
