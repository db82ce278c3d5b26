/**
 * /admin/sessions through `app.inject()` on both stores: tokens shown once
 * and stored as hashes, bearer sessions on REST and RPC, browser mode with
 * cookies and its CSRF / Origin / Sec-Fetch-Site refusals, idle and
 * absolute expiry on an injected clock, sessions that die with their admin
 * key or a changed master key, revocation across two processes, the admin
 * budget of the key a session acts for, listing and logging out, and the
 * request log naming the session.
 */
import { createHash, createHmac } from "node:crypto";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { SystemService } from "../../src/gen/erplink/admin/v1/system_pb.js";
import { createServiceLayer } from "../../src/services/layer.js";
import { generateSessionToken } from "../../src/schema/session-token.js";
import type { DocumentCollection } from "../../src/store/collection.js";
import { json, post } from "../../test-support/http.js";
import { rejects, worldTests, type TestWorld } from "../../test-support/rpc.js";
import { AUTH, ENCRYPTION_KEY, MASTER_KEY, createWorld } from "../../test-support/world.js";
import { Code } from "@connectrpc/connect";

type World = TestWorld;

const test = suite("admin sessions");
const it = worldTests(test);

const SES_ID = /^ses_[0-9A-HJKMNP-TV-Z]{26}$/;
const TOKEN = /^erpls_[0-9A-Za-z]{49}$/;
const MINUTE = 60_000;

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const sha256 = (s: string) => createHash("sha256").update(s, "utf8").digest("hex");
const csrfOf = (token: string) => createHmac("sha256", token).update("erplink csrf v1").digest("base64url");

function get(w: World, url: string, headers: Record<string, string> = AUTH) {
  return w.app.inject({ method: "GET", url, headers });
}

function del(w: World, url: string, headers: Record<string, string> = AUTH) {
  return w.app.inject({ method: "DELETE", url, headers });
}

/** Creates a session with `headers` (the master key by default); returns `data`. */
async function createSession(w: World, headers: Record<string, string> = AUTH, body?: object) {
  const res = await w.app.inject({ method: "POST", url: "/admin/sessions", headers, ...(body ? { payload: body } : {}) });
  assert.is(res.statusCode, 201, res.body);
  return json(res).data as { id: string; token: string; csrf_token: string; [k: string]: unknown };
}

async function createAdminKey(w: World, extra: object = {}) {
  const res = await post(w.app, "/admin/api-keys", { name: "ops", type: "admin", ...extra });
  assert.is(res.statusCode, 201, res.body);
  return json(res).data as { id: string; key: string };
}

function expectError(
  res: { statusCode: number; body: string; headers: Record<string, unknown> },
  status: number,
  code: string,
  message: string,
  details?: { field: string; message: string }[],
) {
  assert.is(res.statusCode, status, res.body);
  const body = json(res as never);
  assert.equal(body, { error: { code, message, requestId: res.headers["x-request-id"], ...(details ? { details } : {}) } });
  assert.is(res.headers["cache-control"], "no-store");
}

function rawSessions(w: World): DocumentCollection {
  return (w.store.sessions as unknown as { collection: DocumentCollection }).collection;
}

it("POST /admin/sessions with the master key: 201 with the token once (erpls_…), its CSRF token and the expiries; only the token's SHA-256 is stored", async (w) => {
  const res = await w.app.inject({ method: "POST", url: "/admin/sessions", headers: AUTH });
  assert.is(res.statusCode, 201, res.body);
  assert.is(res.headers["cache-control"], "no-store");
  assert.is(res.headers["set-cookie"], undefined);
  const body = json(res);
  const now = w.now.getTime();
  assert.match(body.data.id, SES_ID);
  assert.match(body.data.token, TOKEN);
  assert.equal(body, {
    data: {
      id: body.data.id,
      label: "",
      acts_for: "master",
      cookie: false,
      created_at: new Date(now).toISOString().replace(".000Z", "Z"),
      last_used_at: new Date(now).toISOString().replace(".000Z", "Z"),
      idle_expires_at: new Date(now + 30 * MINUTE).toISOString().replace(".000Z", "Z"),
      expires_at: new Date(now + 12 * 60 * MINUTE).toISOString().replace(".000Z", "Z"),
      current: false,
      token: body.data.token,
      csrf_token: csrfOf(body.data.token),
    },
    meta: { requestId: res.headers["x-request-id"] },
  });
  const doc = await rawSessions(w).get(body.data.id);
  assert.is(doc?.tokenHash, sha256(body.data.token));
  assert.not.ok(JSON.stringify(doc).includes(body.data.token), "the token itself is not stored");
  // Shown once: never in a list or a delete answer.
  const list = await get(w, "/admin/sessions");
  assert.not.ok(list.body.includes(body.data.token));
  assert.not.ok(list.body.includes("token"));
});

it("a label is kept (at most 100 characters); other fields are output only", async (w) => {
  const s = await createSession(w, AUTH, { label: "Firefox on ops-laptop" });
  assert.is(s.label, "Firefox on ops-laptop");
  const long = await post(w.app, "/admin/sessions", { label: "x".repeat(101) });
  assert.is(long.statusCode, 400, long.body);
  assert.equal(json(long).error.details, [{ field: "label", message: "must be at most 100 characters (got 101)" }]);
  const output = await post(w.app, "/admin/sessions", { acts_for: "key_01KA0000000000000000000000" });
  assert.is(output.statusCode, 400, output.body);
  const cookie = await w.app.inject({ method: "POST", url: "/admin/sessions?cookie=maybe", headers: AUTH });
  expectError(cookie, 400, "VALIDATION_ERROR", "cookie: must be true or false", [{ field: "cookie", message: "must be true or false" }]);
});

it("a session token works on every admin route and RPC as the key it acts for, and the request log names both", async (w) => {
  const s = await createSession(w);
  const systems = await get(w, "/admin/systems", bearer(s.token));
  assert.is(systems.statusCode, 200, systems.body);
  assert.is(systems.headers["cache-control"], "no-store");
  // Over Connect/gRPC (the public router, counted): the same token.
  const client = createClient(
    SystemService,
    createRouterTransport(w.layer.routes, {
      router: { interceptors: [...w.layer.publicInterceptors] },
      transport: { interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${s.token}`), next(req))] },
    }),
  );
  assert.equal((await client.listSystems({})).systems, []);
  await w.layer.logWriter.flush();
  const logs = await w.store.logs.query({ limit: 10, requestId: systems.headers["x-request-id"] as string });
  assert.equal(
    logs.items.map((l) => [l.apiKeyId, l.sessionId, l.path]),
    [["master", s.id, "/admin/systems"]],
  );
  // An admin key's session: the log names the key and the session.
  const key = await createAdminKey(w);
  const ks = await createSession(w, bearer(key.key));
  assert.is(ks.acts_for, key.id);
  const res = await get(w, "/admin/systems", bearer(ks.token));
  assert.is(res.statusCode, 200, res.body);
  await w.layer.logWriter.flush();
  const entry = await w.store.logs.query({ limit: 10, requestId: res.headers["x-request-id"] as string });
  assert.equal(entry.items.map((l) => [l.apiKeyId, l.sessionId]), [[key.id, ks.id]]);
  const viaLogs = await get(w, `/admin/logs?request_id=${res.headers["x-request-id"]}`);
  assert.is(json(viaLogs).data[0].session_id, ks.id);
});

it("a session cannot create a session (it would outlive its absolute expiry): 403", async (w) => {
  const s = await createSession(w);
  const res = await w.app.inject({ method: "POST", url: "/admin/sessions", headers: bearer(s.token) });
  expectError(res, 403, "FORBIDDEN", "sessions are created with the master key or an admin key, not with another session");
});

it("idle expiry: each use moves it; 30 minutes without use end the session (401); the absolute expiry ends it however it is used", async (w) => {
  const s = await createSession(w);
  const start = w.now.getTime();
  // Used every 29 minutes, it lives on...
  for (let i = 1; i <= 24; i++) {
    w.now = new Date(start + i * 29 * MINUTE);
    if (w.now.getTime() >= start + 12 * 60 * MINUTE) break;
    const res = await get(w, "/admin/systems", bearer(s.token));
    assert.is(res.statusCode, 200, `use ${i}: ${res.body}`);
    await w.layer.deps.sessions.flush();
  }
  // ...until its absolute expiry.
  w.now = new Date(start + 12 * 60 * MINUTE);
  expectError(await get(w, "/admin/systems", bearer(s.token)), 401, "UNAUTHORIZED", "session expired: sign in again");

  const t = await createSession(w);
  const at = w.now.getTime();
  w.now = new Date(at + 30 * MINUTE - 1);
  assert.is((await get(w, "/admin/systems", bearer(t.token))).statusCode, 200);
  w.now = new Date(at + 60 * MINUTE - 2);
  assert.is((await get(w, "/admin/systems", bearer(t.token))).statusCode, 200, "the use at 30 min moved the idle expiry");
  await w.layer.deps.sessions.flush();
  w.now = new Date(at + 90 * MINUTE - 2);
  expectError(
    await get(w, "/admin/systems", bearer(t.token)),
    401,
    "UNAUTHORIZED",
    "session expired after 30 minutes without use: sign in again",
  );
});

it("a session dies with its admin key: revoked, or expired", async (w) => {
  const key = await createAdminKey(w);
  const s = await createSession(w, bearer(key.key));
  assert.is((await get(w, "/admin/systems", bearer(s.token))).statusCode, 200);
  assert.is((await del(w, `/admin/api-keys/${key.id}`)).statusCode, 200);
  expectError(await get(w, "/admin/systems", bearer(s.token)), 401, "UNAUTHORIZED", "session ended: its admin key was revoked");

  const expiring = await createAdminKey(w, { expires_at: new Date(w.now.getTime() + 60 * MINUTE).toISOString() });
  const e = await createSession(w, bearer(expiring.key));
  // Never past the key's own expiry.
  assert.is(e.expires_at, new Date(w.now.getTime() + 60 * MINUTE).toISOString().replace(".000Z", "Z"));
  w.now = new Date(w.now.getTime() + 20 * MINUTE);
  assert.is((await get(w, "/admin/systems", bearer(e.token))).statusCode, 200);
  w.now = new Date(w.now.getTime() + 20 * MINUTE);
  assert.is((await get(w, "/admin/systems", bearer(e.token))).statusCode, 200);
  w.now = new Date(w.now.getTime() + 20 * MINUTE);
  expectError(await get(w, "/admin/systems", bearer(e.token)), 401, "UNAUTHORIZED", "session expired: sign in again");
});

it("master sessions die when the master key changes (another process started with a new key, same store)", async (w) => {
  const s = await createSession(w);
  const other = createServiceLayer(w.store, {
    masterKey: `${MASTER_KEY}-rotated`,
    encryptionKey: ENCRYPTION_KEY,
    adminLimits: { perMinute: 1000, perDay: 1000 },
    dataLimits: { perMinute: 1000, perDay: 1000 },
    logRetentionMs: 86_400_000,
    clock: w.layer.deps.clock,
    log: { error: () => undefined },
  });
  await rejects(other.gate.admit(`Bearer ${s.token}`, { count: false }), Code.Unauthenticated, "session ended: the master key has changed; sign in again");
  // The process with the old key still accepts it.
  assert.is((await w.layer.gate.admit(`Bearer ${s.token}`, { count: false })).principal.kind, "master");
});

it("revocation reaches another process within the refresh bound (the key-sync interval)", async (w) => {
  const s = await createSession(w);
  const other = createServiceLayer(w.store, {
    masterKey: MASTER_KEY,
    encryptionKey: ENCRYPTION_KEY,
    adminLimits: { perMinute: 1000, perDay: 1000 },
    dataLimits: { perMinute: 1000, perDay: 1000 },
    logRetentionMs: 86_400_000,
    sessionRefreshMs: 2_000,
    clock: w.layer.deps.clock,
    log: { error: () => undefined },
  });
  assert.equal((await other.gate.admit(`Bearer ${s.token}`, { count: false })).principal, { kind: "master", sessionId: s.id });
  assert.is((await del(w, `/admin/sessions/${s.id}`)).statusCode, 200);
  // Here: at once.
  expectError(await get(w, "/admin/systems", bearer(s.token)), 401, "UNAUTHORIZED", "invalid session token: it was revoked, has expired or never existed");
  // There: once its cached copy is older than the bound.
  w.now = new Date(w.now.getTime() + 2_000);
  await rejects(other.gate.admit(`Bearer ${s.token}`, { count: false }), Code.Unauthenticated, "invalid session token: it was revoked, has expired or never existed");
});

it("listing: newest first, paged; the master key sees every session, an admin key only its own", async (w) => {
  const a = await createSession(w, AUTH, { label: "a" });
  const key = await createAdminKey(w);
  const b = await createSession(w, bearer(key.key), { label: "b" });
  const c = await createSession(w, AUTH, { label: "c" });
  const all = await get(w, "/admin/sessions");
  assert.is(all.statusCode, 200, all.body);
  assert.equal(json(all).data.map((s: { id: string }) => s.id), [c.id, b.id, a.id]);
  const first = await get(w, "/admin/sessions?page_size=2");
  assert.equal(json(first).data.map((s: { id: string }) => s.id), [c.id, b.id]);
  const next = await get(w, `/admin/sessions?page_size=2&page_token=${json(first).meta.nextPageToken}`);
  assert.equal(json(next).data.map((s: { id: string }) => s.id), [a.id]);
  assert.is(json(next).meta.nextPageToken, undefined);
  const own = await get(w, "/admin/sessions", bearer(key.key));
  assert.equal(json(own).data.map((s: { id: string; acts_for: string }) => [s.id, s.acts_for]), [[b.id, key.id]]);
  // `current` marks the session the call was made with.
  const mine = await get(w, "/admin/sessions", bearer(c.token));
  assert.equal(json(mine).data.map((s: { id: string; current: boolean }) => [s.id, s.current]), [[c.id, true], [b.id, false], [a.id, false]]);
});

it("DELETE /admin/sessions/{id} and /current: the token stops at once; an admin key cannot see or revoke another's sessions", async (w) => {
  const s = await createSession(w);
  const key = await createAdminKey(w);
  const notFound = await del(w, `/admin/sessions/${s.id}`, bearer(key.key));
  expectError(notFound, 404, "NOT_FOUND", `session "${s.id}" not found`);
  const gone = await del(w, `/admin/sessions/${s.id}`);
  assert.is(gone.statusCode, 200, gone.body);
  assert.is(json(gone).data.id, s.id);
  assert.not.ok(gone.body.includes(s.token));
  expectError(await get(w, "/admin/systems", bearer(s.token)), 401, "UNAUTHORIZED", "invalid session token: it was revoked, has expired or never existed");
  expectError(await del(w, `/admin/sessions/${s.id}`), 404, "NOT_FOUND", `session "${s.id}" not found`);
  // Logging out with the session itself.
  const t = await createSession(w, bearer(key.key));
  const out = await del(w, "/admin/sessions/current", bearer(t.token));
  assert.is(out.statusCode, 200, out.body);
  assert.is(json(out).data.id, t.id);
  assert.is(out.headers["set-cookie"], undefined, "a bearer session has no cookies to clear");
  expectError(await get(w, "/admin/systems", bearer(t.token)), 401, "UNAUTHORIZED", "invalid session token: it was revoked, has expired or never existed");
  // Without a session there is no current one: nothing to revoke (404, as any session that does not exist).
  expectError(
    await del(w, "/admin/sessions/current"),
    404,
    "NOT_FOUND",
    "no current session: 'current' names the calling session, and this call was not made with a session token",
  );
});

it("a session counts on its own admin budget, not on the key it acts for: each spends apart", async () => {
  const w = await createWorld({ adminLimits: { perMinute: 3, perDay: 1000 }, adminSessionLimits: { perMinute: 2, perDay: 1000 } });
  try {
    const s = await createSession(w); // the master key's 1st call
    const first = await get(w, "/admin/systems", bearer(s.token));
    assert.equal([first.statusCode, first.headers["x-ratelimit-limit"], first.headers["x-ratelimit-remaining"]], [200, "2", "1"]);
    assert.is((await get(w, "/admin/systems", bearer(s.token))).headers["x-ratelimit-remaining"], "0");
    expectError(await get(w, "/admin/systems", bearer(s.token)), 429, "RATE_LIMITED", "session rate limit exceeded; retry in 55 s");
    const master = await get(w, "/admin/systems");
    assert.equal([master.statusCode, master.headers["x-ratelimit-limit"], master.headers["x-ratelimit-remaining"]], [200, "3", "1"]);
    assert.is((await get(w, "/admin/systems")).statusCode, 200);
    expectError(await get(w, "/admin/systems"), 429, "RATE_LIMITED", "admin rate limit exceeded; retry in 55 s");
    // The session's budget is its own: the key's spent budget does not refuse it, nor did its own refusal spend the key's.
    expectError(await get(w, "/admin/systems", bearer(s.token)), 429, "RATE_LIMITED", "session rate limit exceeded; retry in 55 s");
  } finally {
    await w.close();
  }
});

// --- browser mode ------------------------------------------------------------

/** Creates a browser session; returns the cookie header to send and the CSRF token. */
async function browserSession(w: World) {
  const res = await w.app.inject({ method: "POST", url: "/admin/sessions?cookie=true", headers: AUTH });
  assert.is(res.statusCode, 201, res.body);
  const setCookie = res.headers["set-cookie"] as string[];
  const token = /^__Host-erplink_session=([^;]+);/.exec(setCookie[0]!)![1]!;
  const data = json(res).data;
  return { res, token, csrf: data.csrf_token as string, id: data.id as string, cookie: `__Host-erplink_session=${token}; __Host-erplink_csrf=${data.csrf_token}` };
}

it("?cookie=true sets the HttpOnly __Host- session cookie and the readable CSRF cookie (SameSite=Strict, Secure, Path=/), and leaves the token out of the body", async (w) => {
  const { res, token, csrf } = await browserSession(w);
  assert.match(token, TOKEN);
  assert.equal(res.headers["set-cookie"], [
    `__Host-erplink_session=${token}; Max-Age=43200; Path=/; HttpOnly; Secure; SameSite=Strict`,
    `__Host-erplink_csrf=${csrf}; Max-Age=43200; Path=/; Secure; SameSite=Strict`,
  ]);
  const data = json(res).data;
  assert.is(data.token, "");
  assert.is(data.cookie, true);
  assert.is(csrf, csrfOf(token));
  assert.is((await rawSessions(w).get(data.id))?.tokenHash, sha256(token));
});

it("a cookie request needs the matching X-CSRF-Token; a foreign Origin or Sec-Fetch-Site: cross-site is refused; erplink's own Origin passes", async (w) => {
  const { cookie, csrf } = await browserSession(w);
  const send = (headers: Record<string, string>) => w.app.inject({ method: "GET", url: "/admin/systems", headers: { cookie, ...headers } });
  expectError(
    await send({}),
    403,
    "FORBIDDEN",
    "missing X-CSRF-Token header: a request authenticated by the session cookie must echo the session's CSRF token",
  );
  expectError(await send({ "x-csrf-token": `${csrf}x` }), 403, "FORBIDDEN", "the X-CSRF-Token header does not match the session");
  expectError(await send({ "x-csrf-token": csrfOf("erpls_other") }), 403, "FORBIDDEN", "the X-CSRF-Token header does not match the session");
  expectError(
    await send({ "x-csrf-token": csrf, origin: "https://evil.example" }),
    403,
    "FORBIDDEN",
    'a request from another origin cannot use the session cookie (Origin "https://evil.example" is not erplink\'s http://localhost)',
  );
  expectError(
    await send({ "x-csrf-token": csrf, origin: "null" }),
    403,
    "FORBIDDEN",
    'a request from another origin cannot use the session cookie (Origin "null" is not erplink\'s http://localhost)',
  );
  expectError(await send({ "x-csrf-token": csrf, "sec-fetch-site": "cross-site" }), 403, "FORBIDDEN", "a cross-site request cannot use the session cookie");
  const passing: Record<string, string>[] = [{}, { origin: "http://localhost" }, { origin: "http://localhost:80", "sec-fetch-site": "same-origin" }];
  for (const headers of passing) {
    const ok = await send({ "x-csrf-token": csrf, ...headers });
    assert.is(ok.statusCode, 200, `${JSON.stringify(headers)}: ${ok.body}`);
  }
  // Writes too.
  const created = await w.app.inject({
    method: "POST",
    url: "/admin/systems",
    headers: { cookie, "x-csrf-token": csrf, origin: "http://localhost" },
    payload: { name: "S/4" },
  });
  assert.is(created.statusCode, 201, created.body);
  const forged = await w.app.inject({ method: "POST", url: "/admin/systems", headers: { cookie }, payload: { name: "evil" } });
  assert.is(forged.statusCode, 403, forged.body);
  assert.is((await w.store.systems.list({ limit: 10 })).items.length, 1, "the forged write changed nothing");
});

it("behind ERPLINK_PUBLIC_URL, erplink's origin is the public one", async () => {
  const w = await createWorld({ publicUrl: "https://erp.example.com/gw" });
  try {
    const { cookie, csrf } = await browserSession(w);
    const send = (origin: string) => w.app.inject({ method: "GET", url: "/admin/systems", headers: { cookie, "x-csrf-token": csrf, origin } });
    assert.is((await send("https://erp.example.com")).statusCode, 200);
    assert.is((await send("http://localhost")).statusCode, 403);
  } finally {
    await w.close();
  }
});

it("an Authorization header wins over the cookie (no CSRF needed, the cookie is ignored); an unknown cookie token is 401", async (w) => {
  const { cookie } = await browserSession(w);
  assert.is((await w.app.inject({ method: "GET", url: "/admin/systems", headers: { ...AUTH, cookie } })).statusCode, 200);
  const bad = await w.app.inject({ method: "GET", url: "/admin/systems", headers: { ...AUTH, cookie: "__Host-erplink_session=erpls_x" } });
  assert.is(bad.statusCode, 200, "the header decides");
  // Well-formed (checksum and all), never issued. (Malformed cookies: test/gateway/session-cookies.test.ts.)
  const forged = generateSessionToken();
  const unknown = await w.app.inject({
    method: "GET",
    url: "/admin/systems",
    headers: { cookie: `__Host-erplink_session=${forged}`, "x-csrf-token": csrfOf(forged) },
  });
  expectError(unknown, 401, "UNAUTHORIZED", "invalid session token: it was revoked, has expired or never existed");
});

it("logging out with the cookie clears both cookies and ends the session", async (w) => {
  const { cookie, csrf, id } = await browserSession(w);
  const out = await w.app.inject({ method: "DELETE", url: "/admin/sessions/current", headers: { cookie, "x-csrf-token": csrf } });
  assert.is(out.statusCode, 200, out.body);
  assert.is(json(out).data.id, id);
  assert.equal(out.headers["set-cookie"], [
    "__Host-erplink_session=; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Strict",
    "__Host-erplink_csrf=; Max-Age=0; Path=/; Secure; SameSite=Strict",
  ]);
  const after = await w.app.inject({ method: "GET", url: "/admin/systems", headers: { cookie, "x-csrf-token": csrf } });
  expectError(after, 401, "UNAUTHORIZED", "invalid session token: it was revoked, has expired or never existed");
});

it("every /admin answer carries Cache-Control: no-store (errors too); others do not", async (w) => {
  assert.is((await get(w, "/admin/systems")).headers["cache-control"], "no-store");
  assert.is((await get(w, "/admin/systems", {})).headers["cache-control"], "no-store");
  assert.is((await get(w, "/admin/nope")).headers["cache-control"], "no-store");
  assert.is((await get(w, "/healthz")).headers["cache-control"], undefined);
});

it("a percent-encoded path (/%61dmin/…, /%65rplink.admin.v1.…) reaches the same route: its answer (a session token) is still no-store, and the request log records it", async (w) => {
  const created = await w.app.inject({ method: "POST", url: "/%61dmin/sessions", headers: AUTH });
  assert.is(created.statusCode, 201, created.body);
  assert.match(json(created).data.token, TOKEN);
  assert.is(created.headers["cache-control"], "no-store");
  const rpc = await w.app.inject({
    method: "POST",
    url: "/%65rplink.admin.v1.SystemService/ListSystems",
    headers: { ...AUTH, "content-type": "application/json" },
    payload: "{}",
  });
  assert.is(rpc.statusCode, 200, rpc.body);
  await w.layer.logWriter.flush();
  for (const [res, path, status] of [[created, "/%61dmin/sessions", 201], [rpc, "/%65rplink.admin.v1.SystemService/ListSystems", 200]] as const) {
    const logged = await w.store.logs.query({ limit: 10, requestId: res.headers["x-request-id"] as string });
    assert.equal(logged.items.map((l) => [l.apiKeyId, l.path, l.status]), [["master", path, status]], path);
  }
});

test.run();
