/**
 * erplink's sessions with back ends, through the data path, against a small
 * SAP-like upstream of our own: the CSRF handshake (fetch before the first
 * modifying request, token and session cookies reused, one refetch and
 * replay on `403` + `X-CSRF-Token: Required`, nothing of it shown to the
 * client) and OAuth 2.0 client-credentials back ends (token fetched once,
 * cached, dropped and replaced when the back end refuses it; token endpoint
 * failures answered 502/504 without secrets). Token expiry is tested on
 * UpstreamSessions directly, with a moved clock.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { UpstreamSessions } from "../../src/gateway/upstream-session.js";
import { V4_METADATA } from "../../test-support/odata/fixtures.js";
import { createWorld, type World } from "../../test-support/world.js";
import { json, post } from "../../test-support/http.js";

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** The SAP-like back end: CSRF tokens bound to session cookies, an OAuth token endpoint. */
interface Upstream {
  server: http.Server;
  base: string;
  /** Requests to the service (not $metadata, not token requests). */
  seen: Seen[];
  /** Token requests. */
  tokenRequests: Seen[];
  /** Number of CSRF fetches answered. */
  fetches: number;
  /** Whether the service demands CSRF tokens. */
  csrf: boolean;
  /** The token and session the service currently accepts. */
  validToken: string;
  validSession: string;
  /** Whether every modifying request is refused, whatever its token. */
  alwaysRequired: boolean;
  /** Whether the next modifying request is refused (403 Required) whatever its token, once. */
  refuseNext: boolean;
  /** Whether a CSRF fetch sets the session cookies (else the token alone is the session). */
  fetchCookies: boolean;
  /** Access tokens the service accepts (OAuth instances). */
  acceptedBearer: Set<string>;
  tokensIssued: number;
  /** What the token endpoint answers: status and body (a function of the request count). */
  tokenAnswer: () => { status: number; body: unknown; delay?: number };
}

async function startUpstream(): Promise<Upstream> {
  const up = {
    seen: [],
    tokenRequests: [],
    fetches: 0,
    csrf: true,
    validToken: "",
    validSession: "",
    alwaysRequired: false,
    refuseNext: false,
    fetchCookies: true,
    acceptedBearer: new Set<string>(),
    tokensIssued: 0,
    tokenAnswer: () => {
      up.tokensIssued++;
      const token = `at-${up.tokensIssued}`;
      up.acceptedBearer.add(token);
      return { status: 200, body: { access_token: token, token_type: "bearer", expires_in: 3600 } };
    },
  } as unknown as Upstream;
  up.server = http.createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      const rec: Seen = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body };
      const url = req.url ?? "";
      if (url === "/oauth/token") {
        up.tokenRequests.push(rec);
        const answer = up.tokenAnswer();
        setTimeout(() => res.writeHead(answer.status, { "content-type": "application/json" }).end(JSON.stringify(answer.body)), answer.delay ?? 0);
        return;
      }
      const auth = req.headers.authorization ?? "";
      const authorized =
        auth === `Basic ${Buffer.from("erp-user:erp-pass").toString("base64")}` ||
        (auth.startsWith("Bearer ") && up.acceptedBearer.has(auth.slice(7)));
      if (!authorized) {
        if (!url.endsWith("/$metadata")) up.seen.push(rec);
        res.writeHead(401, { "content-type": "text/plain", "www-authenticate": "Bearer" }).end("token rejected");
        return;
      }
      if (url.endsWith("/$metadata")) {
        res.writeHead(200, { "content-type": "application/xml" }).end(V4_METADATA);
        return;
      }
      up.seen.push(rec);
      if (req.headers["x-csrf-token"] === "Fetch") {
        up.fetches++;
        if (!up.csrf) {
          res.writeHead(200, { "content-type": "application/json" }).end('{"value":[]}');
          return;
        }
        up.validToken = `csrf-${up.fetches}`;
        up.validSession = up.fetchCookies ? `sess-${up.fetches}` : "";
        if (up.fetchCookies) res.setHeader("set-cookie", [`SAP_SESSIONID_X=${up.validSession}; path=/; HttpOnly`, "sap-usercontext=sap-client=100; path=/"]);
        res.writeHead(200, { "content-type": "application/json", "x-csrf-token": up.validToken }).end('{"value":[]}');
        return;
      }
      if (req.method !== "GET" && up.refuseNext) {
        up.refuseNext = false;
        res.writeHead(403, { "content-type": "text/plain", "x-csrf-token": "Required" }).end("CSRF token validation failed");
        return;
      }
      if (req.method !== "GET" && up.csrf) {
        const cookie = req.headers.cookie ?? "";
        const ok =
          !up.alwaysRequired &&
          req.headers["x-csrf-token"] === up.validToken &&
          // A session without cookies: a request carrying an old session's cookie is refused.
          (up.validSession === "" ? !cookie.includes("SAP_SESSIONID_X") : cookie.split("; ").includes(`SAP_SESSIONID_X=${up.validSession}`));
        if (!ok) {
          res.writeHead(403, { "content-type": "text/plain", "x-csrf-token": "Required" }).end("CSRF token validation failed");
          return;
        }
      }
      res.writeHead(req.method === "POST" ? 201 : 200, {
        "content-type": "application/json",
        "set-cookie": "SAP_SESSIONID_X=rotated; path=/",
      });
      res.end(JSON.stringify({ method: req.method, url, body }));
    });
  });
  await new Promise<void>((r) => up.server.listen(0, "127.0.0.1", r));
  up.base = `http://127.0.0.1:${(up.server.address() as AddressInfo).port}`;
  return up;
}

interface Ctx {
  up: Upstream;
  world: World & { readonly errors: unknown[] };
  key: string;
}

const PERMISSIONS = { prod: { SALES: { SalesOrders: ["list", "get", "create", "update"], Customers: ["get"] } } };

async function setUp(ctx: Ctx, auth: (base: string) => Record<string, unknown>): Promise<void> {
  ctx.up = await startUpstream();
  ctx.world = await createWorld({ upstreamTimeoutMs: 500 });
  const sys = json(await post(ctx.world.app, "/admin/systems", { name: "S4" })).data.id;
  const ins = await post(ctx.world.app, `/admin/systems/${sys}/instances`, {
    name: "prod",
    base_url: `${ctx.up.base}/sap/opu/odata`,
    auth: auth(ctx.up.base),
  });
  assert.is(ins.statusCode, 201, ins.body);
  ctx.key = json(await post(ctx.world.app, "/admin/api-keys", { name: "app", permissions: PERMISSIONS })).data.key;
}

async function tearDown(ctx: Ctx): Promise<void> {
  await ctx.world.close();
  ctx.up.server.closeAllConnections();
  await new Promise<void>((r) => ctx.up.server.close(() => r()));
}

function send(ctx: Ctx, method: string, url: string, payload?: unknown, headers: Record<string, string> = {}) {
  return ctx.world.app.inject({
    method: method as "GET",
    url,
    headers: {
      authorization: `Bearer ${ctx.key}`,
      ...(payload !== undefined ? { "content-type": "application/json" } : {}),
      ...headers,
    },
    ...(payload !== undefined ? { payload: JSON.stringify(payload) } : {}),
  });
}

function assertEnvelope(res: { statusCode: number; body: string; headers: Record<string, unknown> }, status: number, code: string, message: string) {
  assert.is(res.statusCode, status, res.body);
  assert.equal(JSON.parse(res.body), { error: { code, message, requestId: res.headers["x-request-id"] } });
}

/** erplink's CSRF token for the suite's key, as a client fetches it (a HEAD of the service root). */
async function clientToken(ctx: Ctx, key = ctx.key): Promise<string> {
  const seen = ctx.up.seen.length;
  const res = await ctx.world.app.inject({ method: "HEAD", url: "/odata/prod/SALES", headers: { authorization: `Bearer ${key}`, "x-csrf-token": "Fetch" } });
  assert.is(res.statusCode, 200, res.body);
  assert.is(ctx.up.seen.length, seen, "a HEAD fetch forwards nothing");
  return String(res.headers["x-csrf-token"]);
}

// ---------------------------------------------------------------- CSRF

const Csrf = suite<Ctx>("SAP CSRF handshake");
Csrf.before.each((ctx) => setUp(ctx, () => ({ type: "basic", username: "erp-user", password: "erp-pass" })));
Csrf.after.each(tearDown);

Csrf("the first modifying request fetches a token with its session cookies; later ones reuse it; the client sees neither", async (ctx) => {
  const first = await send(ctx, "POST", "/odata/prod/SALES/SalesOrders", { ID: 1 }, {
    // erplink's token for the client: checked, never forwarded.
    "x-csrf-token": await clientToken(ctx),
    cookie: "SAP_SESSIONID_X=stolen",
  });
  assert.is(first.statusCode, 201, first.body);
  assert.equal(JSON.parse(first.body), { method: "POST", url: "/sap/opu/odata/SALES/SalesOrders", body: '{"ID":1}' });
  assert.is(first.headers["x-csrf-token"], undefined);
  assert.is(first.headers["set-cookie"], undefined);
  assert.equal(
    ctx.up.seen.map((s) => [s.method, s.url, s.headers["x-csrf-token"], s.headers.cookie]),
    [
      ["GET", "/sap/opu/odata/SALES/", "Fetch", undefined],
      ["POST", "/sap/opu/odata/SALES/SalesOrders", "csrf-1", "SAP_SESSIONID_X=sess-1; sap-usercontext=sap-client=100"],
    ],
  );
  const second = await send(ctx, "PATCH", "/odata/prod/SALES/SalesOrders(1)", { Note: "x" }, { "if-match": "*" });
  assert.is(second.statusCode, 200, second.body);
  assert.is(ctx.up.fetches, 1, "the token is reused");
  assert.equal(ctx.up.seen.at(-1)!.headers["x-csrf-token"], "csrf-1");
});

Csrf("reads never fetch a back-end token nor carry one; a GET with X-CSRF-Token: Fetch is answered with erplink's token", async (ctx) => {
  const res = await send(ctx, "GET", "/odata/prod/SALES/SalesOrders?$top=1", undefined, { "x-csrf-token": "Fetch" });
  assert.is(res.statusCode, 200);
  assert.is(res.headers["x-csrf-token"], await clientToken(ctx));
  assert.is(ctx.up.fetches, 0);
  assert.equal(
    ctx.up.seen.map((s) => [s.method, s.headers["x-csrf-token"], s.headers.cookie]),
    [["GET", undefined, undefined]],
  );
});

Csrf("concurrent first writes share one fetch", async (ctx) => {
  const all = await Promise.all(
    Array.from({ length: 8 }, (_, i) => send(ctx, "POST", "/odata/prod/SALES/SalesOrders", { ID: i })),
  );
  assert.equal(all.map((r) => r.statusCode), Array(8).fill(201));
  assert.is(ctx.up.fetches, 1);
});

Csrf("a token the back end no longer accepts: refetched once and the same request replayed, body and all", async (ctx) => {
  assert.is((await send(ctx, "POST", "/odata/prod/SALES/SalesOrders", { ID: 1 })).statusCode, 201);
  // The back end's session expires: it now wants another token.
  ctx.up.validToken = "csrf-expired";
  ctx.up.seen = [];
  const res = await send(ctx, "POST", "/odata/prod/SALES/SalesOrders", { ID: 2, Note: "ü" });
  assert.is(res.statusCode, 201, res.body);
  assert.equal(JSON.parse(res.body), { method: "POST", url: "/sap/opu/odata/SALES/SalesOrders", body: '{"ID":2,"Note":"ü"}' });
  assert.is(res.headers["x-csrf-token"], undefined);
  assert.equal(
    ctx.up.seen.map((s) => [s.method, s.headers["x-csrf-token"], s.body]),
    [
      ["POST", "csrf-1", '{"ID":2,"Note":"ü"}'],
      ["GET", "Fetch", ""],
      ["POST", "csrf-2", '{"ID":2,"Note":"ü"}'],
    ],
  );
  // The request log shows the answer the client got.
  await ctx.world.layer.logWriter.flush();
  const entry = (await ctx.world.store.logs.query({ limit: 10 })).items.find((e) => e.requestId === res.headers["x-request-id"]);
  assert.is(entry?.upstreamStatus, 201);
});

Csrf("a back end that keeps refusing: one replay only, and its 403 passes through unchanged", async (ctx) => {
  ctx.up.alwaysRequired = true;
  const res = await send(ctx, "POST", "/odata/prod/SALES/SalesOrders", { ID: 1 });
  assert.is(res.statusCode, 403);
  assert.is(res.body, "CSRF token validation failed");
  assert.is(res.headers["content-type"], "text/plain");
  assert.is(res.headers["x-csrf-token"], undefined);
  assert.equal(
    ctx.up.seen.map((s) => [s.method, s.headers["x-csrf-token"]]),
    [
      ["GET", "Fetch"],
      ["POST", "csrf-1"],
      ["GET", "Fetch"],
      ["POST", "csrf-2"],
    ],
  );
});

Csrf("a replay after a CSRF refusal carries only the new session: never the refused one's token or cookies, nor the client's", async (ctx) => {
  // The client's CSRF headers (erplink's token, a cookie): never forwarded, on the first attempt or the replay.
  const hostile = { "x-csrf-token": await clientToken(ctx), cookie: "SAP_SESSIONID_X=stolen" };
  assert.is((await send(ctx, "POST", "/odata/prod/SALES/SalesOrders", { ID: 1 }, hostile)).statusCode, 201);
  const row = (s: Seen) => [s.method, s.headers["x-csrf-token"], s.headers.cookie, s.headers.authorization];
  const BASIC = `Basic ${Buffer.from("erp-user:erp-pass").toString("base64")}`;

  // 1. The back end's session ends and the new one is the token alone (no cookies).
  ctx.up.seen = [];
  ctx.up.validToken = "csrf-expired";
  ctx.up.fetchCookies = false;
  const a = await send(ctx, "POST", "/odata/prod/SALES/SalesOrders", { ID: 2 }, hostile);
  assert.is(a.statusCode, 201, a.body);
  assert.equal(ctx.up.seen.map(row), [
    ["POST", "csrf-1", "SAP_SESSIONID_X=sess-1; sap-usercontext=sap-client=100", BASIC],
    ["GET", "Fetch", undefined, BASIC],
    ["POST", "csrf-2", undefined, BASIC],
  ]);

  // 2. The back end stops using CSRF tokens: the refetch brings none, and the replay carries none.
  ctx.up.seen = [];
  ctx.up.csrf = false;
  ctx.up.refuseNext = true;
  const b = await send(ctx, "PATCH", "/odata/prod/SALES/SalesOrders(2)", { Note: "x" }, { ...hostile, "if-match": "*" });
  assert.is(b.statusCode, 200, b.body);
  assert.equal(ctx.up.seen.map(row), [
    ["PATCH", "csrf-2", undefined, BASIC],
    ["GET", "Fetch", undefined, BASIC],
    ["PATCH", undefined, undefined, BASIC],
  ]);
});

Csrf("a back end without CSRF tokens is asked once and then left alone", async (ctx) => {
  ctx.up.csrf = false;
  for (let i = 0; i < 3; i++) assert.is((await send(ctx, "POST", "/odata/prod/SALES/SalesOrders", { ID: i })).statusCode, 201);
  assert.is(ctx.up.fetches, 1);
  assert.equal(
    ctx.up.seen.filter((s) => s.method === "POST").map((s) => [s.headers["x-csrf-token"], s.headers.cookie]),
    [
      [undefined, undefined],
      [undefined, undefined],
      [undefined, undefined],
    ],
  );
});

Csrf("a $batch is a modifying request: it carries the token and session", async (ctx) => {
  const batch = ["--b", "Content-Type: application/http", "", "GET SalesOrders HTTP/1.1", "", "", "--b--", ""].join("\r\n");
  const res = await ctx.world.app.inject({
    method: "POST",
    url: "/odata/prod/SALES/$batch",
    headers: { authorization: `Bearer ${ctx.key}`, "content-type": "multipart/mixed; boundary=b" },
    payload: batch,
  });
  assert.is(res.statusCode, 201, res.body);
  assert.equal(
    ctx.up.seen.map((s) => [s.method, s.url, s.headers["x-csrf-token"], s.headers.cookie]),
    [
      ["GET", "/sap/opu/odata/SALES/", "Fetch", undefined],
      ["POST", "/sap/opu/odata/SALES/$batch", "csrf-1", "SAP_SESSIONID_X=sess-1; sap-usercontext=sap-client=100"],
    ],
  );
});

Csrf("a denied write fetches nothing", async (ctx) => {
  const res = await send(ctx, "DELETE", "/odata/prod/SALES/SalesOrders(1)");
  assertEnvelope(res, 403, "FORBIDDEN", "API key lacks permission 'delete' for entity 'SalesOrders'");
  assert.is(ctx.up.fetches, 0);
  assert.equal(ctx.up.seen, []);
});

Csrf.run();

// ---------------------------------------------------------------- OAuth 2.0

const OAuth = suite<Ctx>("OAuth 2.0 client-credentials back ends");
OAuth.before.each(async (ctx) => {
  await setUp(ctx, (base) => ({
    type: "oauth2_client_credentials",
    token_url: `${base}/oauth/token`,
    client_id: "erplink client",
    client_secret: "s3cr3t:&=",
    scope: "API_BUSINESS_PARTNER",
  }));
  ctx.up.csrf = false;
});
OAuth.after.each(tearDown);

OAuth("a token is fetched once with the client's credentials, then used for $metadata and every request", async (ctx) => {
  for (let i = 0; i < 3; i++) assert.is((await send(ctx, "GET", "/odata/prod/SALES/SalesOrders")).statusCode, 200);
  assert.is(ctx.up.tokenRequests.length, 1);
  const t = ctx.up.tokenRequests[0]!;
  assert.equal(
    [t.method, t.headers["content-type"], t.headers.authorization, t.body],
    [
      "POST",
      "application/x-www-form-urlencoded",
      `Basic ${Buffer.from("erplink+client:s3cr3t%3A%26%3D").toString("base64")}`,
      "grant_type=client_credentials&scope=API_BUSINESS_PARTNER",
    ],
  );
  assert.equal(ctx.up.seen.map((s) => s.headers.authorization), ["Bearer at-1", "Bearer at-1", "Bearer at-1"]);
});

OAuth("concurrent first requests share one token request", async (ctx) => {
  const all = await Promise.all(Array.from({ length: 6 }, () => send(ctx, "GET", "/odata/prod/SALES/SalesOrders")));
  assert.equal(all.map((r) => r.statusCode), Array(6).fill(200));
  assert.is(ctx.up.tokenRequests.length, 1);
});

OAuth("a token the back end refuses is dropped, a new one fetched and the request replayed once", async (ctx) => {
  assert.is((await send(ctx, "GET", "/odata/prod/SALES/SalesOrders")).statusCode, 200);
  ctx.up.acceptedBearer.clear(); // revoked at the back end
  ctx.up.seen = [];
  const res = await send(ctx, "POST", "/odata/prod/SALES/SalesOrders", { ID: 7 });
  assert.is(res.statusCode, 201, res.body);
  assert.equal(
    ctx.up.seen.map((s) => [s.method, s.headers.authorization, s.body]),
    [
      // The CSRF fetch meets the refusal first; refused, it is not remembered, so the replay fetches again.
      ["GET", "Bearer at-1", ""],
      ["POST", "Bearer at-1", '{"ID":7}'],
      ["GET", "Bearer at-2", ""],
      ["POST", "Bearer at-2", '{"ID":7}'],
    ],
  );
  assert.is(ctx.up.tokenRequests.length, 2);
  // A back end that refuses every token: its 401 passes through after one replay.
  ctx.up.tokenAnswer = () => ({ status: 200, body: { access_token: "never-accepted", token_type: "Bearer", expires_in: 3600 } });
  ctx.up.acceptedBearer.clear();
  const refused = await send(ctx, "GET", "/odata/prod/SALES/SalesOrders");
  assert.is(refused.statusCode, 401);
  assert.is(refused.body, "token rejected");
  assert.is(refused.headers["www-authenticate"], undefined, "the back end's challenge is not the client's to answer");
});

OAuth("token endpoint failures are 502 or 504 in the envelope, naming no secret, and nothing is forwarded", async (ctx) => {
  ctx.up.tokenAnswer = () => ({ status: 401, body: { error: "invalid_client", error_description: "s3cr3t is wrong" } });
  const refused = await send(ctx, "GET", "/odata/prod/SALES/SalesOrders");
  assertEnvelope(refused, 502, "BAD_GATEWAY", "the back end's token endpoint refused the client credentials: HTTP 401 (invalid_client)");
  ctx.up.tokenAnswer = () => ({ status: 200, body: { token_type: "bearer" } });
  assertEnvelope(
    await send(ctx, "GET", "/odata/prod/SALES/SalesOrders"),
    502,
    "BAD_GATEWAY",
    "the back end's token endpoint did not answer with an access token",
  );
  ctx.up.tokenAnswer = () => ({ status: 200, body: { access_token: "x", token_type: "mac" } });
  assertEnvelope(
    await send(ctx, "GET", "/odata/prod/SALES/SalesOrders"),
    502,
    "BAD_GATEWAY",
    "the back end's token endpoint answered with a token type other than Bearer",
  );
  ctx.up.tokenAnswer = () => ({ status: 200, body: { access_token: "x", token_type: "bearer" }, delay: 1500 });
  assertEnvelope(
    await send(ctx, "GET", "/odata/prod/SALES/SalesOrders"),
    504,
    "GATEWAY_TIMEOUT",
    "the back end's token endpoint did not answer in time",
  );
  assert.equal(ctx.up.seen, []);
  assert.not.match(JSON.stringify(ctx.world.errors), /s3cr3t/);
});

OAuth("an unreachable token endpoint is 502", async (ctx) => {
  ctx.up.server.closeAllConnections();
  await new Promise<void>((r) => ctx.up.server.close(() => r()));
  assertEnvelope(
    await send(ctx, "GET", "/odata/prod/SALES/SalesOrders"),
    502,
    "BAD_GATEWAY",
    "the back end's token endpoint could not be reached",
  );
  ctx.up.server = http.createServer();
});

OAuth.run();

// ---------------------------------------------------------------- token lifetime

const Lifetime = suite<{ up: Upstream; now: number; sessions: UpstreamSessions }>("OAuth token lifetime");
Lifetime.before.each(async (ctx) => {
  ctx.up = await startUpstream();
  ctx.now = 1_000_000;
  ctx.sessions = new UpstreamSessions({ timeoutMs: 1000, now: () => ctx.now });
});
Lifetime.after.each(async (ctx) => {
  ctx.up.server.closeAllConnections();
  await new Promise<void>((r) => ctx.up.server.close(() => r()));
});

const target = (base: string) => ({
  id: "ins_1",
  credentials: { type: "oauth2_client_credentials" as const, tokenUrl: `${base}/oauth/token`, clientId: "c", clientSecret: "s" },
});

Lifetime("a token is used until a tenth of its lifetime (at most 60 s) before expiry", async (ctx) => {
  const t = target(ctx.up.base);
  ctx.up.tokenAnswer = () => ({ status: 200, body: { access_token: `at-${++ctx.up.tokensIssued}`, token_type: "Bearer", expires_in: 100 } });
  assert.is(await ctx.sessions.authorization(t), "Bearer at-1");
  ctx.now += 89_999;
  assert.is(await ctx.sessions.authorization(t), "Bearer at-1");
  ctx.now += 1;
  assert.is(await ctx.sessions.authorization(t), "Bearer at-2");
  // An hour-long token: refreshed 60 s before it expires.
  ctx.up.tokenAnswer = () => ({ status: 200, body: { access_token: `at-${++ctx.up.tokensIssued}`, token_type: "Bearer", expires_in: "3600" } });
  ctx.now += 1_000_000;
  assert.is(await ctx.sessions.authorization(t), "Bearer at-3");
  ctx.now += 3_539_999;
  assert.is(await ctx.sessions.authorization(t), "Bearer at-3");
  ctx.now += 1;
  assert.is(await ctx.sessions.authorization(t), "Bearer at-4");
});

Lifetime("without expires_in a token lasts 5 minutes; other credentials get their own token", async (ctx) => {
  const t = target(ctx.up.base);
  ctx.up.tokenAnswer = () => ({ status: 200, body: { access_token: `at-${++ctx.up.tokensIssued}` } });
  assert.is(await ctx.sessions.authorization(t), "Bearer at-1");
  ctx.now += 269_999;
  assert.is(await ctx.sessions.authorization(t), "Bearer at-1");
  const other = { ...t, credentials: { ...t.credentials, clientSecret: "rotated" } };
  assert.is(await ctx.sessions.authorization(other), "Bearer at-2");
  ctx.now += 1;
  assert.is(await ctx.sessions.authorization(t), "Bearer at-3");
});

Lifetime("basic, bearer and none need no token endpoint", async (ctx) => {
  assert.is(await ctx.sessions.authorization({ id: "a", credentials: { type: "none" } }), undefined);
  assert.is(
    await ctx.sessions.authorization({ id: "a", credentials: { type: "basic", username: "u", password: "p:ü" } }),
    `Basic ${Buffer.from("u:p:ü").toString("base64")}`,
  );
  assert.is(await ctx.sessions.authorization({ id: "a", credentials: { type: "bearer", token: "tok" } }), "Bearer tok");
  assert.is(ctx.up.tokenRequests.length, 0);
});

Lifetime.run();

// ---------------------------------------------------------------- erplink's CSRF token for clients

const ClientCsrf = suite<Ctx>("the clients' CSRF handshake with erplink");
ClientCsrf.before.each((ctx) => setUp(ctx, () => ({ type: "basic", username: "erp-user", password: "erp-pass" })));
ClientCsrf.after.each(tearDown);

/** The request-log entry of an answer. */
async function logged(ctx: Ctx, res: { headers: Record<string, unknown> }) {
  await ctx.world.layer.logWriter.flush();
  return (await ctx.world.store.logs.query({ limit: 50 })).items.find((e) => e.requestId === res.headers["x-request-id"]);
}

ClientCsrf("a HEAD with X-CSRF-Token: Fetch on any path of the service is answered by erplink: 200, no body, one token per key and instance, nothing forwarded", async (ctx) => {
  // The service root, the SDK's entity-set fetch (trailing slash), its $batch fetch, an entity set the key may not
  // list, one the service lacks: a fetch reads nothing, so all get the token.
  const paths = ["/odata/prod/SALES", "/odata/prod/SALES/", "/odata/prod/SALES/SalesOrders/", "/odata/prod/SALES/$batch/", "/odata/prod/SALES/Customers", "/odata/prod/SALES/Nothing('x')"];
  const tokens = new Set<string>();
  for (const url of paths) {
    for (const fetchValue of ["Fetch", "fetch"]) {
      const res = await ctx.world.app.inject({ method: "HEAD", url, headers: { authorization: `Bearer ${ctx.key}`, "x-csrf-token": fetchValue } });
      assert.is(res.statusCode, 200, `${url}: ${res.body}`);
      assert.is(res.body, "");
      const { "x-csrf-token": token, "x-request-id": requestId, date, connection, "keep-alive": keepAlive, ...rest } = res.headers;
      assert.match(String(token), /^[A-Za-z0-9_-]{43}$/);
      assert.match(String(requestId), /^req_/);
      // Counted as a request of the key: its rate-limit headers are on the answer.
      const limits = Object.keys(rest).filter((n) => /^(x-)?ratelimit/.test(n));
      assert.equal(limits.sort(), ["ratelimit", "ratelimit-policy", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"]);
      for (const n of limits) delete rest[n];
      assert.equal(rest, {
        "cache-control": "no-store",
        "content-security-policy": "sandbox; default-src 'none'; frame-ancestors 'none'",
        "x-content-type-options": "nosniff",
      }, url);
      tokens.add(String(token));
      const entry = await logged(ctx, res);
      assert.equal([entry?.method, entry?.status, entry?.denialStep, entry?.upstreamUrl, entry?.accesses], ["HEAD", 200, "", "", []]);
    }
  }
  assert.is(tokens.size, 1, "the same token for every path of the instance");
  assert.equal(ctx.up.seen, [], "nothing reached the back end");
  assert.is(ctx.up.fetches, 0);

  // Another key gets another token; neither is the back end's.
  const other = json(await post(ctx.world.app, "/admin/api-keys", { name: "other", permissions: PERMISSIONS })).data.key;
  const otherToken = await clientToken(ctx, other);
  assert.ok(!tokens.has(otherToken));
  // Without a valid key, no token: the fetch is authenticated like any request.
  const anonymous = await ctx.world.app.inject({ method: "HEAD", url: "/odata/prod/SALES", headers: { "x-csrf-token": "Fetch" } });
  assert.is(anonymous.statusCode, 401);
  assert.is(anonymous.headers["x-csrf-token"], undefined);
});

ClientCsrf("a write with erplink's token passes and the back end gets its own token and session, never the client's", async (ctx) => {
  const token = await clientToken(ctx);
  const res = await send(ctx, "POST", "/odata/prod/SALES/SalesOrders", { ID: 7 }, { "x-csrf-token": token });
  assert.is(res.statusCode, 201, res.body);
  assert.is(res.headers["x-csrf-token"], undefined, "the back end's token stays with erplink");
  assert.equal(
    ctx.up.seen.map((s) => [s.method, s.url, s.headers["x-csrf-token"], s.headers.cookie]),
    [
      ["GET", "/sap/opu/odata/SALES/", "Fetch", undefined],
      ["POST", "/sap/opu/odata/SALES/SalesOrders", "csrf-1", "SAP_SESSIONID_X=sess-1; sap-usercontext=sap-client=100"],
    ],
  );
  assert.ok(!JSON.stringify(ctx.up.seen).includes(token), "erplink's client token never reaches the back end");
});

ClientCsrf("a write with a token that is not erplink's for this key and instance: 403 CSRF token validation failed, X-CSRF-Token: Required, nothing forwarded", async (ctx) => {
  const other = json(await post(ctx.world.app, "/admin/api-keys", { name: "other", permissions: PERMISSIONS })).data.key;
  const mine = await clientToken(ctx);
  const wrong = [
    "client-made-up",
    "Fetch",
    await clientToken(ctx, other),
    `${mine.slice(0, -1)}${mine.endsWith("A") ? "B" : "A"}`,
    `${mine}=`,
    ` ${mine}x`,
  ];
  for (const token of wrong) {
    for (const [method, url, body] of [
      ["POST", "/odata/prod/SALES/SalesOrders", { ID: 8 }],
      ["PATCH", "/odata/prod/SALES/SalesOrders(1)", { Note: "x" }],
      ["DELETE", "/odata/prod/SALES/SalesOrders(1)", undefined],
    ] as const) {
      const res = await send(ctx, method, url, body, { "x-csrf-token": token });
      assertEnvelope(res, 403, "FORBIDDEN", "CSRF token validation failed: send the token erplink answers to X-CSRF-Token: Fetch, or no X-CSRF-Token at all");
      assert.is(res.headers["x-csrf-token"], "Required");
      assert.is((await logged(ctx, res))?.denialStep, "CSRF_TOKEN");
    }
  }
  // The same $batch with a wrong token on the outer request, then with erplink's.
  const batch = ["--b", "Content-Type: application/http", "", "GET SalesOrders HTTP/1.1", "", "", "--b--", ""].join("\r\n");
  const sendBatch = (token: string) =>
    ctx.world.app.inject({
      method: "POST",
      url: "/odata/prod/SALES/$batch",
      headers: { authorization: `Bearer ${ctx.key}`, "content-type": "multipart/mixed; boundary=b", "x-csrf-token": token },
      payload: batch,
    });
  const refused = await sendBatch("client-made-up");
  assertEnvelope(refused, 403, "FORBIDDEN", "CSRF token validation failed: send the token erplink answers to X-CSRF-Token: Fetch, or no X-CSRF-Token at all");
  assert.equal(ctx.up.seen, [], "nothing reached the back end");
  const passed = await sendBatch(mine);
  assert.is(passed.statusCode, 201, passed.body);
  assert.equal(
    ctx.up.seen.map((s) => [s.method, s.url, s.headers["x-csrf-token"]]),
    [
      ["GET", "/sap/opu/odata/SALES/", "Fetch"],
      ["POST", "/sap/opu/odata/SALES/$batch", "csrf-1"],
    ],
  );
});

ClientCsrf("a GET fetch is the read it names: forwarded when the key may read it, refused as any read when not, and both answers carry the token", async (ctx) => {
  const token = await clientToken(ctx);
  const root = await send(ctx, "GET", "/odata/prod/SALES/", undefined, { "x-csrf-token": "Fetch" });
  assert.is(root.statusCode, 200, root.body);
  assert.equal(JSON.parse(root.body), { method: "GET", url: "/sap/opu/odata/SALES/", body: "" });
  assert.is(root.headers["x-csrf-token"], token);
  const refused = await send(ctx, "GET", "/odata/prod/SALES/Customers", undefined, { "x-csrf-token": "Fetch" });
  assertEnvelope(refused, 403, "FORBIDDEN", "API key lacks permission 'list' for entity 'Customers'");
  assert.is(refused.headers["x-csrf-token"], token);
  assert.equal(ctx.up.seen.map((s) => [s.method, s.url, s.headers["x-csrf-token"]]), [["GET", "/sap/opu/odata/SALES/", undefined]]);
  // A read that sends a token, any token, is not checked: reads need none.
  assert.is((await send(ctx, "GET", "/odata/prod/SALES/SalesOrders", undefined, { "x-csrf-token": "client-made-up" })).statusCode, 200);
});

ClientCsrf.run();
