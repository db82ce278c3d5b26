/**
 * Property-based tests of sessions on the REST facade and the Connect path
 * (fast-check; bounded in runs and time): generated hostile Cookie,
 * X-CSRF-Token, Origin, Sec-Fetch-Site and Authorization headers against
 * live, revoked and forged session tokens and the master, admin and data
 * keys of one world.
 *
 * (a) A request is admitted through the cookie only if it carried the exact
 *     CSRF token of the very session it was authenticated as, was not cross-
 *     or same-site, and came from no foreign origin; an Authorization header
 *     alone decides when present. Answers and log lines hold no secret.
 * (b) Differential: erplink authenticates a cookie only where every reader
 *     of test-support/session-fuzz.ts (RFC 6265 first-wins, the `cookie`
 *     package, undici, Go) reads the same token from the Cookie header.
 * (c) Any string that is not a live session token is a 401 in the envelope,
 *     as a bearer token, in the cookie and over Connect; never a 500.
 *
 * Environment: ERPLINK_SESSIONS_FUZZ_SEED (fixed default),
 * ERPLINK_SESSIONS_FUZZ_RUNS (400 per property), ERPLINK_SESSIONS_FUZZ_TIME_MS
 * (5000 per property; a run that has not done its runs by then fails).
 */
import { Writable } from "node:stream";
import fc from "fast-check";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import pino from "pino";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createGateway, type AccessLogEntry } from "../../src/gateway/app.js";
import { generateSessionToken } from "../../src/schema/session-token.js";
import { json, post } from "../../test-support/http.js";
import {
  COOKIE_READERS,
  FETCH_SITES,
  ORIGINS,
  authorizationHeader,
  cleanCookieHeader,
  cookieHeader,
  csrfHeader,
  csrfOf,
  notASessionToken,
  secretsOf,
  type SessionFixtures,
} from "../../test-support/session-fuzz.js";
import type { TestWorld } from "../../test-support/rpc.js";
import { AUTH, MASTER_KEY, createWorld } from "../../test-support/world.js";

const SESSION_COOKIE = "__Host-erplink_session";

function envInt(name: string, fallback: number): number {
  const v = process.env[name];
  if (v === undefined || v === "") return fallback;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, not '${v}'`);
  return n;
}

const SEED = envInt("ERPLINK_SESSIONS_FUZZ_SEED", 20260310);
const RUNS = envInt("ERPLINK_SESSIONS_FUZZ_RUNS", 400);
const TIME_MS = envInt("ERPLINK_SESSIONS_FUZZ_TIME_MS", 5_000);

interface Ctx {
  w: TestWorld;
  /** A gateway over the world's services that keeps its request-log entries and log lines. */
  app: FastifyInstance;
  entries: Map<string, AccessLogEntry>;
  lines: string[];
  f: SessionFixtures;
}

const test = suite<Ctx>("sessions: properties");

test.before(async (ctx) => {
  const w = await createWorld();
  ctx.w = w;
  ctx.entries = new Map();
  ctx.lines = [];
  const lines = ctx.lines;
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString("utf8"));
      done();
    },
  });
  ctx.app = await createGateway({
    transport: w.transport,
    connect: { routes: w.layer.routes, interceptors: w.layer.publicInterceptors },
    admit: (a) => w.layer.admitRest(a),
    record: (e) => ctx.entries.set(e.requestId, e),
    ready: () => w.store.ping(),
    logger: pino({ level: "trace" }, sink),
    bodyLimit: 1024 * 1024,
    clock: () => new Date(w.now.getTime()),
  });
  const created = async (url: string, body?: object) => {
    const res = body === undefined ? await ctx.app.inject({ method: "POST", url, headers: AUTH }) : await post(ctx.app, url, body);
    assert.is(res.statusCode, 201, res.body);
    return json(res).data;
  };
  const adminKey = await created("/admin/api-keys", { name: "ops", type: "admin" });
  const dataKey = await created("/admin/api-keys", { name: "app", type: "data" });
  const live = new Map<string, string>();
  for (const url of ["/admin/sessions?cookie=true", "/admin/sessions"]) {
    const res = await ctx.app.inject({ method: "POST", url, headers: AUTH });
    const token = (json(res).data.token as string) || /^__Host-erplink_session=([^;]+);/.exec((res.headers["set-cookie"] as string[])[0]!)![1]!;
    live.set(token, json(res).data.id);
  }
  const keySession = await ctx.app.inject({ method: "POST", url: "/admin/sessions?cookie=true", headers: { authorization: `Bearer ${adminKey.key}` } });
  live.set(/^__Host-erplink_session=([^;]+);/.exec((keySession.headers["set-cookie"] as string[])[0]!)![1]!, json(keySession).data.id);
  const revoked = await created("/admin/sessions");
  assert.is((await ctx.app.inject({ method: "DELETE", url: `/admin/sessions/${revoked.id}`, headers: AUTH })).statusCode, 200);
  ctx.f = {
    live,
    revoked: [revoked.token],
    forged: [generateSessionToken(), generateSessionToken()],
    masterKey: MASTER_KEY,
    adminKey: adminKey.key,
    dataKey: dataKey.key,
  };
});

test.after(async (ctx) => {
  await ctx.app?.close();
  await ctx.w?.close();
});

/** Runs a property under the suite's seed, runs and time bound; fails if the bound cut it short. */
async function check<T>(name: string, arb: fc.Arbitrary<T>, predicate: (v: T) => Promise<void>): Promise<void> {
  let runs = 0;
  const started = Date.now();
  try {
    await fc.assert(
      fc.asyncProperty(arb, async (v) => {
        runs++;
        await predicate(v);
      }),
      { seed: SEED, numRuns: RUNS, interruptAfterTimeLimit: TIME_MS, markInterruptAsFailure: true },
    );
  } catch (err) {
    // fast-check keeps the failed assertion as the cause, which uvu does not print.
    const cause = (err as Error).cause;
    throw new Error(`${(err as Error).message}\nFailed: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
  console.log(`sessions-properties ${name}: seed ${SEED}, ${runs} runs in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** Asserts an answer is an envelope error with `status` (401s challenge for a bearer token). */
function assertRefused(res: LightMyRequestResponse, status: number, what: string): void {
  assert.is(res.statusCode, status, `${what}: ${res.body}`);
  const body = json(res);
  assert.equal(Object.keys(body), ["error"], what);
  assert.is(body.error.code, status === 401 ? "UNAUTHORIZED" : "FORBIDDEN", what);
  assert.is(body.error.requestId, res.headers["x-request-id"], what);
  assert.is(res.headers["cache-control"], "no-store", what);
  if (status === 401) assert.is(res.headers["www-authenticate"], "Bearer", what);
}

/** No secret of the fixtures in an answer or in any log line so far. */
function assertNoSecrets(ctx: Ctx, res: LightMyRequestResponse, what: string): void {
  const seen = `${JSON.stringify(res.headers)}\n${res.body}\n${ctx.lines.join("")}\n${JSON.stringify(ctx.entries.get(res.headers["x-request-id"] as string) ?? {})}`;
  for (const secret of secretsOf(ctx.f)) assert.not.ok(seen.includes(secret), `${what}: a secret (${secret.slice(0, 9)}…) was echoed or logged`);
}

test("(a) a cookie admits only with the CSRF token of the very session authenticated, never cross-site or from a foreign origin; an Authorization header alone decides", async (ctx) => {
  const f = ctx.f;
  // Half the time the CSRF token is that of what some reader takes for the session cookie.
  const cookies = fc.oneof(cookieHeader(f), cleanCookieHeader(f).map((c) => c.cookie));
  const cookieAndCsrf = fc.option(cookies, { nil: undefined, freq: 5 }).chain((cookie) => {
    const readings = cookie === undefined ? [] : Object.values(COOKIE_READERS).map((read) => read(cookie, SESSION_COOKIE));
    const read = readings.filter((v): v is string => v !== undefined);
    return fc.tuple(fc.constant(cookie), read.length === 0 ? csrfHeader(f) : fc.oneof(csrfHeader(f), fc.constantFrom(...read).map(csrfOf)));
  });
  const half = <L,>(all: readonly { value: string | undefined; label: L }[], good: (l: L) => boolean) =>
    fc.oneof(fc.constantFrom(...all.filter((x) => good(x.label))), fc.constantFrom(...all.filter((x) => !good(x.label))));
  const arb = fc.record({
    auth: authorizationHeader(f),
    cookieAndCsrf,
    origin: half(ORIGINS, (l) => l !== "foreign"),
    site: half(FETCH_SITES, (l) => l === "allowed"),
  });
  const stats = { viaHeader: 0, viaCookie: 0, refused: 0 };
  await check("(a)", arb, async ({ auth, cookieAndCsrf: [cookie, csrf], origin, site }) => {
    const headers: Record<string, string> = {};
    if (auth.value !== undefined) headers.authorization = auth.value;
    if (cookie !== undefined) headers.cookie = cookie;
    if (csrf !== undefined) headers["x-csrf-token"] = csrf;
    if (origin.value !== undefined) headers.origin = origin.value;
    if (site.value !== undefined) headers["sec-fetch-site"] = site.value;
    const what = JSON.stringify(headers);
    ctx.lines.length = 0;
    const res = await ctx.app.inject({ method: "GET", url: "/admin/systems", headers });
    assertNoSecrets(ctx, res, what);
    const entry = ctx.entries.get(res.headers["x-request-id"] as string);
    if (auth.status !== undefined) {
      // The header decides, whatever the cookie.
      stats.viaHeader++;
      if (auth.status === 200) {
        assert.is(res.statusCode, 200, `${what}: ${res.body}`);
        assert.is(entry?.sessionId, auth.sessionId, what);
      } else {
        assertRefused(res, auth.status, what);
      }
      return;
    }
    if (res.statusCode !== 200) {
      stats.refused++;
      assert.ok(res.statusCode === 401 || res.statusCode === 403, `${what}: ${res.statusCode} ${res.body}`);
      assertRefused(res, res.statusCode, what);
      assert.is(entry?.sessionId ?? "", "", what);
      return;
    }
    // Admitted through the cookie: the session the log names is one whose
    // token every reader finds in the Cookie header, and the CSRF header is
    // that token's; the request was neither cross- nor same-site, and came
    // from erplink's own origin if it named one.
    stats.viaCookie++;
    assert.ok(cookie !== undefined, `${what}: admitted without a credential`);
    const token = [...f.live].find(([, id]) => id === entry?.sessionId)?.[0];
    assert.ok(token !== undefined, `${what}: admitted, but the log names no live session (${entry?.sessionId})`);
    for (const [reader, read] of Object.entries(COOKIE_READERS)) {
      assert.is(read(cookie!, SESSION_COOKIE), token, `${what}: ${reader} reads another session cookie than the one admitted`);
    }
    assert.is(csrf, csrfOf(token!), `${what}: admitted without the session's CSRF token`);
    assert.is.not(origin.label, "foreign", `${what}: admitted from a foreign origin`);
    assert.is(site.label, "allowed", `${what}: admitted with Sec-Fetch-Site ${site.value}`);
  });
  console.log(`sessions-properties (a): ${stats.viaHeader} decided by the Authorization header, ${stats.viaCookie} admitted by the cookie, ${stats.refused} refused`);
  assert.ok(stats.viaCookie > 0 && stats.refused > 0, "the generator reaches both admission by the cookie and refusal");
});

test("(a) completeness: one session cookie with its CSRF token, from erplink's own origin or none, same-origin or unlabelled, is admitted as that session", async (ctx) => {
  const f = ctx.f;
  const arb = fc.record({
    clean: cleanCookieHeader(f),
    origin: fc.constantFrom(...ORIGINS.filter((o) => o.label !== "foreign")),
    site: fc.constantFrom(...FETCH_SITES.filter((s) => s.label === "allowed")),
  });
  await check("(a) completeness", arb, async ({ clean: { cookie, token }, origin, site }) => {
    const headers: Record<string, string> = { cookie, "x-csrf-token": csrfOf(token) };
    if (origin.value !== undefined) headers.origin = origin.value;
    if (site.value !== undefined) headers["sec-fetch-site"] = site.value;
    const res = await ctx.app.inject({ method: "GET", url: "/admin/systems", headers });
    assert.is(res.statusCode, 200, `${JSON.stringify(headers)}: ${res.body}`);
    assert.is(ctx.entries.get(res.headers["x-request-id"] as string)?.sessionId, f.live.get(token));
  });
});

test("(b) differential: a Cookie header authenticates only where every reader (RFC 6265 first-wins, cookie, undici, Go) reads the same session token", async (ctx) => {
  const f = ctx.f;
  let admitted = 0;
  let disagreements = 0;
  const arb = cookieHeader(f).chain((cookie) => {
    // The CSRF token of whatever some reader takes for the session cookie, so that only the reading decides.
    const readings = Object.values(COOKIE_READERS)
      .map((read) => read(cookie, SESSION_COOKIE))
      .filter((v): v is string => v !== undefined);
    const candidates = [...new Set([...readings, ...f.live.keys()])];
    return fc.tuple(fc.constant(cookie), fc.constantFrom(...candidates));
  });
  await check("(b)", arb, async ([cookie, csrfFor]) => {
    const readings = Object.fromEntries(Object.entries(COOKIE_READERS).map(([name, read]) => [name, read(cookie, SESSION_COOKIE)]));
    const agreed = new Set(Object.values(readings)).size === 1;
    if (!agreed) disagreements++;
    const headers = { cookie, "x-csrf-token": csrfOf(csrfFor), origin: "http://localhost", "sec-fetch-site": "same-origin" };
    const res = await ctx.app.inject({ method: "GET", url: "/admin/systems", headers });
    const what = `${JSON.stringify(cookie)} read as ${JSON.stringify(readings)}`;
    if (res.statusCode !== 200) {
      assert.ok(res.statusCode === 401 || res.statusCode === 403, `${what}: ${res.statusCode} ${res.body}`);
      return;
    }
    admitted++;
    const sessionId = ctx.entries.get(res.headers["x-request-id"] as string)?.sessionId;
    const token = [...f.live].find(([, id]) => id === sessionId)?.[0];
    assert.ok(agreed, `${what}: erplink authenticated ${sessionId} where the readers disagree`);
    assert.is(readings.rfc6265First, token, `${what}: erplink authenticated ${sessionId}, not the token every reader reads`);
  });
  console.log(`sessions-properties (b): ${admitted} admitted, ${disagreements} headers the readers disagree on`);
  assert.ok(admitted > 0 && disagreements > 0, "the generator reaches both agreement and disagreement");
});

test("(c) any string that is not a live session token is a 401 in the envelope: as a bearer token, in the cookie (with its CSRF token), and over Connect; never a 500", async (ctx) => {
  const f = ctx.f;
  const keys = new Map<string, number>([
    [f.masterKey, 200],
    [f.adminKey, 200],
    [f.dataKey, 403],
  ]);
  await check("(c)", notASessionToken(f), async (s) => {
    const what = JSON.stringify(s);
    const expected = keys.get(s.trim()) ?? 401;
    const bearer = await ctx.app.inject({ method: "GET", url: "/admin/systems", headers: { authorization: `Bearer ${s}` } });
    if (expected === 200) assert.is(bearer.statusCode, 200, what);
    else assertRefused(bearer, expected, `bearer ${what}`);
    // In the cookie, nothing but a live session token is a credential: not even a key.
    const cookie = await ctx.app.inject({
      method: "GET",
      url: "/admin/systems",
      headers: { cookie: `a=b; ${SESSION_COOKIE}=${s}`, "x-csrf-token": csrfOf(s) },
    });
    assertRefused(cookie, 401, `cookie ${what}`);
    const rpc = await ctx.app.inject({
      method: "POST",
      url: "/erplink.admin.v1.SystemService/ListSystems",
      headers: { "content-type": "application/json", authorization: `Bearer ${s}` },
      payload: "{}",
    });
    if (expected === 200) assert.is(rpc.statusCode, 200, what);
    else {
      assert.is(rpc.statusCode, expected, `rpc ${what}: ${rpc.body}`);
      assert.is(json(rpc).code, expected === 401 ? "unauthenticated" : "permission_denied", `rpc ${what}`);
    }
    for (const res of [bearer, cookie, rpc]) assertNoSecrets(ctx, res, what);
    ctx.lines.length = 0;
  });
  assert.equal(ctx.w.errors, [], "no masked internal errors");
});

test.run();
