/**
 * Envoy's external authorization (`envoy.service.auth.v3.Authorization/Check`)
 * over a real port, with gRPC clients (grpc-js, connect-node), against the
 * data path's own world and case table (test-support/data-cases.ts):
 *
 * - every case of the table is decided as the data path decides it (the
 *   same status, envelope, request-log denial step and accesses), except
 *   what Envoy cannot forward as authorized (method tunnels, `$batch`),
 *   which is refused; so is every call of a function or action
 *   (test-support/ext-authz.ts's operation cases), `invoke` accesses logged
 *   by the operation's name;
 * - the allowing answer: header hygiene, `If-Match: *`, `sap-client`, the
 *   rate-limit headers; the denying one: status, envelope, `Retry-After`;
 * - credential injection only for callers holding the token;
 * - back-end paths named by `context_extensions`, bodies Envoy buffered (or
 *   did not), and the request log.
 */
import { createClient, Code, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Authorization } from "../../src/gen/envoy/service/auth/v3/external_auth_pb.js";
import {
  BASIC,
  DATA_CASES,
  JSON_TYPE,
  SALES,
  UP,
  sendToDataPath,
  startCaseWorld,
  stopCaseWorld,
  type CaseWorld,
  type DataCase,
} from "../../test-support/data-cases.js";
import { createGrpcJsClient } from "../../test-support/e2e.js";
import {
  OPERATION_CASES,
  OPERATION_KEYS,
  RESPELT_CASES,
  caseRequest,
  checkRequest,
  decision,
  type Decision,
  type EnvoyRequest,
} from "../../test-support/ext-authz.js";
import { json, post } from "../../test-support/http.js";
import { AUTH } from "../../test-support/world.js";
import { rejects } from "../../test-support/rpc.js";

const TOKEN = "ext-authz-token-0123456789abcdefghijklmnop";

interface Ctx extends CaseWorld {
  client: Client<typeof Authorization>;
}

const ExtAuthz = suite<Ctx>("Envoy ext_authz Check");

ExtAuthz.before.each(async (ctx) => {
  Object.assign(ctx, await startCaseWorld({ dualProtocol: true, extAuthzToken: TOKEN }));
  ctx.client = createClient(Authorization, createGrpcTransport({ baseUrl: `http://127.0.0.1:${ctx.port}` }));
});

ExtAuthz.after.each(async (ctx) => {
  await stopCaseWorld(ctx);
});

/** Checks `r` with the connect-node gRPC client. */
async function check(ctx: Ctx, r: EnvoyRequest, token?: string): Promise<Decision> {
  const headers = token === undefined ? undefined : { authorization: `Bearer ${token}` };
  return decision(await ctx.client.check(checkRequest(r), headers ? { headers } : {}));
}

/** The request-log entry of a request id, once written. */
async function logged(ctx: Ctx, requestId: string) {
  await ctx.world.layer.logWriter.flush();
  return (await ctx.world.store.logs.query({ requestId, limit: 10 })).items;
}

const isBatch = (c: DataCase) => /\/\$batch(\?|$)/.test(c.url);
const isTunnel = (c: DataCase) => Object.keys(c.headers ?? {}).some((n) => /^x-http-method(-override)?$/i.test(n));

ExtAuthz("every case of the data path's table is decided as the data path decides it (status, envelope, denial step, accesses), through grpc-js", async (ctx) => {
  const grpcJs = createGrpcJsClient(Authorization, `127.0.0.1:${ctx.port}`);
  let allowed = 0;
  let denied = 0;
  let envoyOnly = 0;
  try {
    for (const [i, c] of DATA_CASES.entries()) {
      const label = `case ${i + 1}: ${c.method} ${c.url}`;
      const { res, entry } = await sendToDataPath(ctx, c, `dp-${i}`);
      const id = `xa-${i}`;
      const d = decision(await grpcJs.call.check(checkRequest(caseRequest(c, ctx.keys[c.key ?? "app"]!.key, id))));
      const [log] = await logged(ctx, id);
      assert.ok(log, `${label}: the check is logged`);
      const forwarded = entry.upstreamMethod !== "";
      assert.equal(log!.accesses, entry.accesses, `${label}: accesses`);
      if (forwarded && (isBatch(c) || isTunnel(c) || RESPELT_CASES.has(c.url))) {
        // Envoy would forward the client's batch, its outer POST or its spelling, not what erplink authorized.
        envoyOnly++;
        assert.is(d.allowed, false, label);
        assert.is(d.status, 400, label);
        assert.match(d.body.error.message, RESPELT_CASES.has(c.url) ? /^erplink cannot authorize this request for Envoy: its request target is not written as erplink writes it / : /^erplink cannot authorize this request for Envoy: /, label);
        continue;
      }
      assert.not.ok(RESPELT_CASES.has(c.url), `${label}: the data path refuses a request listed as respelt`);
      assert.is(d.allowed, forwarded, `${label}: allowed (data path answered ${res.status} ${res.body})`);
      assert.is(log!.denialStep, entry.denialStep, `${label}: denial step`);
      if (forwarded) {
        allowed++;
        assert.equal([d.code, log!.status, log!.errorCode], [0, 200, ""], label);
        assert.ok(d.headersToRemove.includes("authorization"), `${label}: the key does not reach the back end`);
        assert.is(d.responseHeaders["x-ratelimit-limit"], res.headers["x-ratelimit-limit"], `${label}: rate-limit headers`);
        continue;
      }
      if (res.status === 200) {
        // A client's HEAD token fetch, answered by the data path itself: by the check too, with the same token.
        assert.equal([c.method, c.headers?.["x-csrf-token"]?.toLowerCase(), d.status, d.body], ["HEAD", "fetch", 200, ""], label);
        assert.is(d.headers["x-csrf-token"], res.headers["x-csrf-token"], `${label}: erplink's token`);
        continue;
      }
      denied++;
      assert.is(d.status, res.status, `${label}: status (${JSON.stringify(d.body)})`);
      assert.ok(d.code !== 0, `${label}: the check's status is not OK`);
      assert.equal([log!.status, log!.errorCode], [res.status, entry.errorCode], `${label}: logged`);
      const dpMessage = "errorMessage" in entry ? entry.errorMessage : JSON.parse(res.body).error.message;
      assert.is(log!.errorMessage, dpMessage, `${label}: logged message`);
      // A HEAD answer has no body; everything else carries the data path's envelope, with Envoy's request id.
      const expected = c.method === "HEAD" ? { ...d.body.error, code: entry.errorCode } : { ...JSON.parse(res.body).error, requestId: id };
      assert.equal(d.body, { error: expected }, `${label}: envelope`);
      assert.is(d.headers["content-type"], "application/json; charset=utf-8", label);
      assert.is(d.headers["www-authenticate"], res.headers["www-authenticate"], `${label}: WWW-Authenticate`);
      assert.is(d.headers["x-ratelimit-limit"], res.headers["x-ratelimit-limit"], `${label}: rate-limit headers once counted`);
    }
  } finally {
    grpcJs.close();
  }
  assert.ok(allowed >= 10 && denied >= 50 && envoyOnly >= 4, `every outcome is covered (${allowed} allowed, ${denied} denied, ${envoyOnly} Envoy-only)`);
});

ExtAuthz("functions and actions: each call is decided as the data path decides it (the invoke grant, the binding and result reads, the method), and logged with the same accesses, invoke included", async (ctx) => {
  for (const [name, permissions] of Object.entries(OPERATION_KEYS)) {
    const created = json(await post(ctx.world.app, "/admin/api-keys", { name, permissions })).data;
    ctx.keys[name] = { id: created.id, key: created.key };
  }
  const invoker = ctx.keys.invoker!;
  let allowed = 0;
  let denied = 0;
  for (const [i, c] of OPERATION_CASES.entries()) {
    const label = `operation case ${i + 1}: ${c.key} ${c.method} ${c.url}`;
    const { res, entry } = await sendToDataPath(ctx, c, `op-dp-${i}`);
    const id = `op-xa-${i}`;
    const d = await check(ctx, caseRequest(c, ctx.keys[c.key ?? "app"]!.key, id));
    const [log] = await logged(ctx, id);
    const forwarded = entry.upstreamMethod !== "";
    assert.is(d.allowed, forwarded, `${label}: allowed (data path answered ${res.status} ${res.body})`);
    assert.equal(log!.accesses, entry.accesses, `${label}: accesses`);
    assert.is(log!.denialStep, entry.denialStep, `${label}: denial step`);
    if (forwarded) {
      allowed++;
      assert.equal([d.code, log!.status], [0, 200], label);
      // An allowed call names the operation it invoked, by its grant name, in the log.
      assert.ok(log!.accesses.some((a) => a.operation === "invoke"), `${label}: an invoke access`);
      // Envoy is told nothing of the accesses: only header changes (no access list or operation name in them).
      assert.not.ok(/invoke|Approve|TopOrders|ReleaseOrder/.test(JSON.stringify([d.headers, d.responseHeaders])), label);
      continue;
    }
    denied++;
    assert.equal([d.status, d.body.error.message], [res.status, JSON.parse(res.body).error.message], `${label}: refusal`);
  }
  assert.equal([allowed, denied], [4, 8], "every case decided as listed");
  // The data path's words for a bound action the key does not name, and the accesses logged for an allowed call.
  const approve = OPERATION_CASES[1]!;
  const refused = await check(ctx, caseRequest(approve, ctx.keys.reader!.key, "op-refused"));
  assert.equal([refused.status, refused.body.error.message, (await logged(ctx, "op-refused"))[0]!.denialStep], [403, "API key has no access to operation 'Sales.Approve'", "ENTITY"]);
  const lacking = json(await post(ctx.world.app, "/admin/api-keys", { name: "no invoke", permissions: { prod: { SALES: { SalesOrders: ["get"], "Sales.Approve": ["get"] } } } })).data;
  const without = await check(ctx, caseRequest(approve, lacking.key, "op-lacking"));
  assert.equal([without.status, without.body.error.message, (await logged(ctx, "op-lacking"))[0]!.denialStep], [403, "API key lacks permission 'invoke' for operation 'Sales.Approve'", "OPERATION"]);
  const ok = await check(ctx, caseRequest(approve, invoker.key, "op-ok"));
  assert.is(ok.allowed, true);
  assert.equal((await logged(ctx, "op-ok"))[0]!.accesses, [
    { entity: "SalesOrders", operation: "get" },
    { entity: "Sales.Approve", operation: "invoke" },
  ]);
  // The request log finds the calls by the operation's name and invoke, checks and data requests alike, refused ones
  // when the invoke was checked (not after a refused read of the binding, nor for a method refused before the analysis).
  const found = await ctx.world.app.inject({ method: "GET", url: "/admin/logs?entity=Sales.Approve&operation=invoke&page_size=100", headers: AUTH });
  assert.is(found.statusCode, 200, found.body);
  assert.equal(
    json(found).data.map((e: { request_id: string }) => e.request_id).sort(),
    ["op-dp-0", "op-dp-1", "op-dp-5", "op-lacking", "op-ok", "op-refused", "op-xa-0", "op-xa-1", "op-xa-5"],
  );
});

ExtAuthz("allowed: the key and every header the data path would not forward are removed, If-Match and sap-client set, rate-limit headers for the answer; no credentials", async (ctx) => {
  const key = ctx.keys.app!.key;
  const d = await check(ctx, {
    id: "rid-1",
    method: "GET",
    path: `${SALES}/SalesOrders?$top=2`,
    headers: {
      authorization: `Bearer ${key}`,
      accept: "application/json",
      cookie: "SAP_SESSIONID=client",
      "x-original-url": "/erp/sap/other/Customers",
      "x-forwarded-host": "evil.example",
      "sap-client": "200",
      "x-request-id": "rid-1",
      "x-forwarded-for": "10.0.0.9",
      "user-agent": "envoy-test",
    },
  });
  assert.is(d.allowed, true);
  assert.equal([...d.headersToRemove].sort(), ["authorization", "cookie", "x-envoy-auth-partial-body", "x-forwarded-host", "x-original-url"]);
  assert.equal(d.headers, { "sap-client": "100" }, "the instance's SAP client replaces the client's");
  assert.equal(Object.keys(d.responseHeaders).sort(), ["ratelimit", "ratelimit-policy", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"]);
  assert.is(d.responseHeaders["x-ratelimit-remaining"], "99999");
  // The same budget as the data path.
  const res = await ctx.world.app.inject({ method: "GET", url: `${SALES}/SalesOrders`, headers: { authorization: `Bearer ${key}` } });
  assert.is(res.headers["x-ratelimit-remaining"], "99998");
  // An update that could create the entity (upsert) without `create`: If-Match: * as the data path adds it.
  const upsert = await check(ctx, {
    method: "PATCH",
    path: `${SALES}/SalesOrders(1)`,
    headers: { authorization: `Bearer ${key}`, ...JSON_TYPE, "content-length": "12" },
    body: '{"Note":"x"}',
  });
  assert.equal([upsert.allowed, upsert.headers["if-match"]], [true, "*"]);
  // Nothing here holds a secret of the back end.
  for (const answer of [d, upsert]) assert.not.ok(/erp-pass|Basic |tok-secret|cookie-secret/.test(JSON.stringify(answer)));
});

// Headers named like Object's own properties must not escape headers_to_remove: `__proto__` is lost writing the
// check's headers into a plain object, and `constructor` taken for a header erplink sets (Object's constructor),
// unless the check guards both; else Envoy forwards them to the back end, which the data path never does.
ExtAuthz("allowed: client headers named __proto__ and constructor are removed like any other the data path would not forward", async (ctx) => {
  const d = await check(ctx, {
    method: "GET",
    path: `${SALES}/SalesOrders`,
    headers: JSON.parse(`{"authorization": "Bearer ${ctx.keys.app!.key}", "__proto__": "x", "constructor": "y", "accept": "application/json"}`) as Record<string, string>,
  });
  assert.is(d.allowed, true);
  assert.equal([...d.headersToRemove].sort(), ["__proto__", "authorization", "constructor", "x-envoy-auth-partial-body"]);
  assert.equal(d.headers, { "sap-client": "100" });
});

ExtAuthz("denied: 401 with WWW-Authenticate, 403 with the step's message, 429 with Retry-After once the key's budget is spent (shared with the data path), Envoy's request id in the envelope", async (ctx) => {
  const none = await check(ctx, { id: "r-401", method: "GET", path: `${SALES}/SalesOrders` });
  assert.equal([none.allowed, none.status, none.code], [false, 401, Code.Unauthenticated]);
  assert.equal(none.body, { error: { code: "UNAUTHORIZED", message: "missing bearer token: send Authorization: Bearer <data key>", requestId: "r-401" } });
  assert.equal([none.headers["www-authenticate"], none.headers["x-request-id"]], ["Bearer", "r-401"]);

  const reader = ctx.keys.reader!.key;
  const forbidden = await check(ctx, { id: "r-403", method: "DELETE", path: `${SALES}/SalesOrders(1)`, headers: { authorization: `Bearer ${reader}` } });
  assert.equal([forbidden.status, forbidden.code, forbidden.body.error.code, forbidden.body.error.requestId], [403, Code.PermissionDenied, "FORBIDDEN", "r-403"]);
  assert.equal((await logged(ctx, "r-403"))[0]!.denialStep, "OPERATION");

  const limited = json(await post(ctx.world.app, "/admin/api-keys", { name: "limited", permissions: { prod: { SALES: { SalesOrders: ["list"] } } }, rate_limits: { per_minute: 2 } })).data;
  const get = (id: string) => check(ctx, { id, method: "GET", path: `${SALES}/SalesOrders`, headers: { authorization: `Bearer ${limited.key}` } });
  assert.is((await get("r-1")).responseHeaders["x-ratelimit-remaining"], "1");
  assert.is((await get("r-2")).responseHeaders["x-ratelimit-remaining"], "0");
  const over = await get("r-429");
  const data = await ctx.world.app.inject({ method: "GET", url: `${SALES}/SalesOrders`, headers: { authorization: `Bearer ${limited.key}` } });
  assert.is(data.statusCode, 429, "the data path shares the spent budget");
  assert.equal([over.allowed, over.status, over.code], [false, 429, Code.ResourceExhausted]);
  assert.equal(over.body, { error: { ...JSON.parse(data.body).error, requestId: "r-429" } });
  assert.is(over.headers["retry-after"], data.headers["retry-after"]);
  assert.ok(Number(over.headers["retry-after"]) > 0);
  assert.is(over.headers["x-ratelimit-remaining"], "0");
  const [log] = await logged(ctx, "r-429");
  assert.equal([log!.status, log!.errorCode, log!.denialStep, log!.apiKeyId], [429, "RATE_LIMITED", "RATE_LIMITED", limited.id]);
});

ExtAuthz("credential injection: only for callers with ERPLINK_EXT_AUTHZ_TOKEN; the back end's Authorization replaces the key, writes get a fresh CSRF session each", async (ctx) => {
  const key = ctx.keys.app!.key;
  const request = (method: string, extra: Partial<EnvoyRequest> = {}): EnvoyRequest => ({
    method,
    path: `${SALES}/SalesOrders(1)`,
    headers: { authorization: `Bearer ${key}`, ...(method === "GET" ? {} : { ...JSON_TYPE, "if-match": "*", "content-length": "12" }) },
    ...(method === "GET" ? {} : { body: '{"Note":"x"}' }),
    contextExtensions: { erplink_inject_credentials: "true" },
    ...extra,
  });
  await rejects(ctx.client.check(checkRequest(request("GET"))), Code.PermissionDenied);
  await rejects(ctx.client.check(checkRequest(request("GET")), { headers: { authorization: "Bearer not-the-token" } }), Code.PermissionDenied);
  await rejects(ctx.client.check(checkRequest(request("GET", { contextExtensions: { erplink_inject_credentials: "yes" } }))), Code.InvalidArgument);

  const read = await check(ctx, request("GET"), TOKEN);
  assert.equal(read.headers, { "sap-client": "100", authorization: BASIC });
  assert.not.ok(read.headersToRemove.includes("authorization"), "set, not removed: Envoy removes after it sets");
  const csrfFetches = () => ctx.all.filter((s) => s.headers["x-csrf-token"] === "Fetch").length;
  const before = csrfFetches();
  for (let i = 0; i < 2; i++) {
    const write = await check(ctx, request("PATCH"), TOKEN);
    assert.equal(write.headers, { "sap-client": "100", authorization: BASIC, "x-csrf-token": "tok-secret-1", cookie: "SAP_SESSIONID=cookie-secret" });
  }
  assert.is(csrfFetches() - before, 2, "a CSRF session per write: erplink never sees the back end refuse a stale one");
  assert.equal(ctx.all.filter((s) => s.headers["x-csrf-token"] === "Fetch").map((s) => s.url).slice(-1), [`${UP}/?sap-client=100`]);
  // Without the flag, or set to false, never.
  const plain = await check(ctx, request("GET", { contextExtensions: { erplink_inject_credentials: "false" } }), TOKEN);
  assert.equal([plain.headers, plain.headersToRemove.includes("authorization")], [{ "sap-client": "100" }, true]);
  // No secret in the request log.
  await ctx.world.layer.logWriter.flush();
  const logs = JSON.stringify((await ctx.world.store.logs.query({ limit: 100 })).items);
  for (const secret of ["erp-pass", BASIC, "tok-secret-1", "cookie-secret", key, TOKEN]) assert.not.ok(logs.includes(secret), "no secret logged");
});

ExtAuthz("the clients' CSRF handshake as on the data path: a HEAD fetch answered from the check (200, no body, erplink's token), a GET fetch's answer gets it, a write's token must be erplink's", async (ctx) => {
  const key = ctx.keys.app!.key;
  // erplink's token, as the data path hands it.
  const fetched = await ctx.world.app.inject({ method: "HEAD", url: `${SALES}/SalesOrders/`, headers: { authorization: `Bearer ${key}`, "x-csrf-token": "Fetch" } });
  const token = String(fetched.headers["x-csrf-token"]);
  assert.match(token, /^[A-Za-z0-9_-]{43}$/);
  const before = ctx.all.length;

  // A HEAD fetch, even of a path no analysis would take ($batch/): Envoy answers it with the check's 200.
  for (const path of [`${SALES}`, `${SALES}/SalesOrders/`, `${SALES}/$batch/`]) {
    const head = await check(ctx, { id: "r-fetch", method: "HEAD", path, headers: { authorization: `Bearer ${key}`, "x-csrf-token": "Fetch" } });
    assert.equal([head.allowed, head.status, head.body], [false, 200, ""], path);
    const { "x-csrf-token": t, ...rest } = head.headers;
    assert.is(t, token, path);
    assert.equal(Object.keys(rest).sort(), ["cache-control", "content-security-policy", "ratelimit", "ratelimit-policy", "x-content-type-options", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "x-request-id"]);
    assert.is(rest["cache-control"], "no-store");
  }
  const [entry] = await logged(ctx, "r-fetch");
  assert.equal([entry!.status, entry!.denialStep, entry!.errorCode], [200, "", ""]);

  // A GET fetch is the read: allowed, the token added to its answer.
  const read = await check(ctx, { method: "GET", path: `${SALES}/SalesOrders`, headers: { authorization: `Bearer ${key}`, "x-csrf-token": "Fetch" } });
  assert.equal([read.allowed, read.responseHeaders["x-csrf-token"]], [true, token]);
  assert.ok(read.headersToRemove.includes("x-csrf-token"), "the client's header never reaches the back end");

  // A write: with erplink's token allowed (and the header removed), with another refused as the data path refuses it.
  const write = (t: string) =>
    check(ctx, { id: "r-write", method: "PATCH", path: `${SALES}/SalesOrders(1)`, headers: { authorization: `Bearer ${key}`, ...JSON_TYPE, "if-match": "*", "content-length": "12", "x-csrf-token": t }, body: '{"Note":"x"}' });
  const ok = await write(token);
  assert.equal([ok.allowed, ok.headersToRemove.includes("x-csrf-token")], [true, true]);
  const refused = await write("client-made-up");
  assert.equal([refused.allowed, refused.status, refused.code, refused.headers["x-csrf-token"]], [false, 403, Code.PermissionDenied, "Required"]);
  assert.equal(refused.body, {
    error: { code: "FORBIDDEN", message: "CSRF token validation failed: send the token erplink answers to X-CSRF-Token: Fetch, or no X-CSRF-Token at all", requestId: "r-write" },
  });
  assert.equal((await logged(ctx, "r-write")).map((e) => e.denialStep).sort(), ["", "CSRF_TOKEN"]);
  assert.equal(ctx.all.slice(before).filter((r) => !r.url.includes("/$metadata")), [], "checks send nothing to the back end");
});

ExtAuthz("the back end's own paths with context_extensions: below the named service's root only; an /odata path must agree with them; a route naming half is a failed call", async (ctx) => {
  const auth = { authorization: `Bearer ${ctx.keys.reader!.key}` };
  const ext = { erplink_instance: "prod", erplink_service: "SALES" };
  const ok = await check(ctx, { id: "b-1", method: "GET", path: `${UP}/SalesOrders(1)?$expand=Customer`, headers: auth, contextExtensions: ext });
  assert.is(ok.allowed, true);
  const [log] = await logged(ctx, "b-1");
  assert.equal([log!.instance, log!.service, log!.path, log!.accesses], ["prod", "SALES", `${UP}/SalesOrders(1)?$expand=Customer`, [{ entity: "SalesOrders", operation: "get" }, { entity: "Customers", operation: "get" }]]);
  // Decided as the data path decides the same request under /odata.
  const denied = await check(ctx, { method: "GET", path: `${UP}/Products`, headers: auth, contextExtensions: ext });
  const data = await ctx.world.app.inject({ method: "GET", url: `${SALES}/Products`, headers: auth });
  assert.equal([denied.status, denied.body.error.message], [data.statusCode, JSON.parse(data.body).error.message]);
  assert.is(denied.status, 403);
  const elsewhere = await check(ctx, { method: "GET", path: "/erp/sap/other/SalesOrders", headers: auth, contextExtensions: ext });
  assert.equal([elsewhere.status, elsewhere.body.error.message], [400, "the request path is not below the service's root on the back end (/erp/sap/sales/0001/), which the route's context_extensions name"]);
  const dots = await check(ctx, { method: "GET", path: `${UP}/../other/SalesOrders`, headers: auth, contextExtensions: ext });
  assert.is(dots.status, 400, JSON.stringify(dots.body));
  const mismatch = await check(ctx, { method: "GET", path: "/odata/prod/SALES2/SalesOrderSet", headers: auth, contextExtensions: ext });
  assert.equal([mismatch.status, mismatch.body.error.message], [400, "the request path names instance 'prod' and service 'SALES2', but the route's context_extensions name 'prod' and 'SALES'"]);
  const nowhere = await check(ctx, { method: "GET", path: "/api/orders", headers: auth });
  assert.is(nowhere.status, 400);
  assert.match(nowhere.body.error.message, /^the request path names no erplink service/);
  await rejects(ctx.client.check(checkRequest({ method: "GET", path: "/x", contextExtensions: { erplink_instance: "prod" } })), Code.InvalidArgument);
  await rejects(ctx.client.check({ $typeName: "envoy.service.auth.v3.CheckRequest" } as never), Code.InvalidArgument, "the check names no HTTP request (attributes.request.http): erplink authorizes HTTP requests, with Envoy's ext_authz HTTP filter");
});

ExtAuthz("bodies: analyzed as buffered (raw_body, body, raw headers); a partial body is 413, a body Envoy did not send or could have altered ('!') is 400", async (ctx) => {
  const writer = { authorization: `Bearer ${ctx.keys.writer!.key}`, ...JSON_TYPE };
  const deep = '{"ID":1,"Customer":{"ID":"C9","Name":"New"}}';
  const data = await ctx.world.app.inject({ method: "POST", url: `${SALES}/SalesOrders`, headers: writer, payload: deep });
  assert.is(data.statusCode, 403);
  const request = { method: "POST", path: `${SALES}/SalesOrders`, headers: { ...writer, "content-length": String(deep.length) }, body: deep };
  for (const variant of [request, { ...request, asText: true }]) {
    const d = await check(ctx, variant);
    assert.equal([d.status, d.body.error.message], [403, JSON.parse(data.body).error.message], "a deep insert needs create on the nested set");
  }
  const flat = await check(ctx, { ...request, body: '{"ID":1}', headers: { ...writer, "content-length": "8" } });
  assert.is(flat.allowed, true, JSON.stringify(flat.body));
  // Raw headers (encode_raw_headers: true) read as the map.
  const raw = checkRequest({ ...request, body: '{"ID":1}' });
  const httpReq = raw.attributes!.request!.http!;
  httpReq.headerMap = {
    $typeName: "envoy.config.core.v3.HeaderMap",
    headers: Object.entries({ ...writer, "content-length": "8", "x-envoy-auth-partial-body": "false" }).map(([key, value]) => ({
      $typeName: "envoy.config.core.v3.HeaderValue" as const,
      key,
      value: "",
      rawValue: new Uint8Array(Buffer.from(value)),
    })),
  };
  httpReq.headers = {};
  assert.is(decision(await ctx.client.check(raw)).allowed, true);

  const partial = await check(ctx, { ...request, headers: { ...request.headers, "x-envoy-auth-partial-body": "true" } });
  assert.equal([partial.status, partial.body.error.code], [413, "PAYLOAD_TOO_LARGE"]);
  const missing = await check(ctx, { ...request, body: undefined });
  assert.equal([missing.status, missing.body.error.code], [400, "VALIDATION_ERROR"]);
  assert.match(missing.body.error.message, /^Envoy sent this request without its body/);
  const bang = await check(ctx, { ...request, body: '{"ID":1,"Note":"hi!"}', headers: { ...writer, "content-length": "21" }, asText: true });
  assert.is(bang.status, 400);
  assert.match(bang.body.error.message, /pack_as_bytes: true/);
  // The same body as bytes is read exactly.
  const exact = await check(ctx, { ...request, body: '{"ID":1,"Note":"hi!"}', headers: { ...writer, "content-length": "21" } });
  assert.is(exact.allowed, true, JSON.stringify(exact.body));
});

ExtAuthz("each check is one request-log entry, as a data request: id, method, path, status, key, instance, service, accesses, the client's address", async (ctx) => {
  const app = ctx.keys.app!;
  await check(ctx, {
    id: "log-1",
    method: "GET",
    path: `${SALES}/SalesOrders?$top=1`,
    headers: { authorization: `Bearer ${app.key}`, "user-agent": "curl/8" },
    sourceIp: "192.0.2.7",
  });
  const entries = await logged(ctx, "log-1");
  assert.is(entries.length, 1);
  const e = entries[0]!;
  assert.equal(
    [e.method, e.path, e.status, e.apiKeyId, e.instance, e.service, e.accesses, e.denialStep, e.errorCode, e.clientIp, e.userAgent, e.upstreamUrl],
    ["GET", `${SALES}/SalesOrders?$top=1`, 200, app.id, "prod", "SALES", [{ entity: "SalesOrders", operation: "list" }], "", "", "192.0.2.7", "curl/8", ""],
  );
  // Without a usable id (Envoy's stream ids are numbers, any id will do), one is made.
  await check(ctx, { id: "bad id with spaces", method: "GET", path: `${SALES}/SalesOrders` });
  await ctx.world.layer.logWriter.flush();
  const made = (await ctx.world.store.logs.query({ limit: 100 })).items.find((l) => l.path === `${SALES}/SalesOrders` && l.status === 401);
  assert.match(made!.requestId, /^req_[0-9a-f-]{36}$/);
});

ExtAuthz("a check without a key, with a huge request target and method, is logged bounded as a data request's entry is", async (ctx) => {
  // Anyone who reaches the gRPC port may call Check (its callers present no credential); each call is one
  // request-log entry, held in memory by the embedded store (50,000 of them) and appended to request_logs.jsonl.
  const path = `/odata/prod/API_BP/${"a".repeat(300_000)}`;
  const method = "G".repeat(300_000);
  const d = await check(ctx, { id: "xa-huge", method, path, headers: {} });
  assert.is(d.allowed, false);
  const [entry] = await logged(ctx, "xa-huge");
  assert.ok(entry, "the check is logged");
  // The data path's entries are bounded by the HTTP request head (16 KiB in Node), its message (1024) and user agent (512).
  assert.is(entry!.path, path.slice(0, 4096));
  assert.is(entry!.method, method.slice(0, 32));
  const size = JSON.stringify(entry).length;
  assert.ok(size <= 20_000, `one unauthenticated check made a ${size}-character log entry (path ${entry!.path.length}, method ${entry!.method.length})`);
});

ExtAuthz.run();
