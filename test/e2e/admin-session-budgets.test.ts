/**
 * Sessions have admin budgets of their own, end to end over a real port
 * (ERPLINK_ADMIN_RATE_PER_MINUTE=3, ERPLINK_ADMIN_SESSION_RATE_PER_MINUTE=4):
 * a call made with a session counts on `admin-session:<id>`, not on the key
 * the session acts for, so a script's burst with the master key leaves the
 * dashboard's session working; a session's own burst is refused with 429
 * and the rate-limit headers of the session's windows; two sessions of one
 * key count apart; and over gRPC a session token counts on the session too.
 * Each test starts its own erplink and waits out a UTC minute boundary first.
 */
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { Http2SessionManager, createGrpcTransport } from "@connectrpc/connect-node";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { SystemService } from "../../src/gen/erplink/admin/v1/system_pb.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";

const KEY_POLICY = `"minute";q=3;w=60, "day";q=10000;w=86400`;
const SESSION_POLICY = `"minute";q=4;w=60, "day";q=50000;w=86400`;

/** Waits until at least 3 s remain in the current UTC minute; returns the minute's end in Unix seconds. */
async function awayFromMinuteBoundary(): Promise<number> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 3_000) await new Promise((r) => setTimeout(r, left + 50));
  return Math.ceil(Date.now() / 60_000) * 60;
}

/** The rate-limit headers of an answer (the `RateLimit` field's reset seconds left out: they move with the clock). */
function rateHeaders(h: Headers): Record<string, string | null> {
  return {
    limit: h.get("x-ratelimit-limit"),
    remaining: h.get("x-ratelimit-remaining"),
    reset: h.get("x-ratelimit-reset"),
    policy: h.get("ratelimit-policy"),
    ratelimit: h.get("ratelimit")?.replace(/;t=\d+/g, ";t=…") ?? null,
  };
}

/** A browser session: the headers its page sends (cookies, CSRF token, own origin), and its id. */
async function browserSession(server: RunningErplink, authorization = server.authorization) {
  const res = await fetch(`${server.baseUrl}/admin/sessions?cookie=true`, { method: "POST", headers: { authorization } });
  assert.is(res.status, 201, await res.clone().text());
  const body = (await res.json()) as { data: { id: string; csrf_token: string } };
  const cookie = res.headers.getSetCookie().map((c) => c.split(";")[0]!).join("; ");
  return {
    id: body.data.id,
    headers: { cookie, "x-csrf-token": body.data.csrf_token, origin: server.baseUrl, "sec-fetch-site": "same-origin" },
  };
}

const E2E = suite<{ server: RunningErplink }>("e2e: sessions count on admin budgets of their own");

E2E.before.each(async (ctx) => {
  ctx.server = await startErplink({ ERPLINK_ADMIN_RATE_PER_MINUTE: "3", ERPLINK_ADMIN_SESSION_RATE_PER_MINUTE: "4" });
});
E2E.after.each(async (ctx) => {
  await ctx.server?.close();
});

E2E("a master-key burst that spends the key's budget leaves a session of the master key working", async ({ server }) => {
  const minuteEnd = await awayFromMinuteBoundary();
  const systems = (headers: Record<string, string>) => fetch(`${server.baseUrl}/admin/systems`, { headers });
  const session = await browserSession(server); // the key's 1st call: signing in is the key's
  for (const remaining of ["1", "0"]) {
    const res = await systems({ authorization: server.authorization });
    assert.is(res.status, 200);
    assert.equal(rateHeaders(res.headers), {
      limit: "3",
      remaining,
      reset: String(minuteEnd),
      policy: KEY_POLICY,
      ratelimit: `"minute";r=${remaining};t=…, "day";r=${remaining === "1" ? 9998 : 9997};t=…`,
    });
    await res.body?.cancel();
  }
  const refused = await systems({ authorization: server.authorization });
  assert.is(refused.status, 429);
  assert.is(refused.headers.get("x-ratelimit-remaining"), "0");
  await refused.body?.cancel();

  const viaSession = await systems(session.headers);
  assert.is(viaSession.status, 200, await viaSession.clone().text());
  assert.equal(await viaSession.json(), { data: [], meta: { requestId: viaSession.headers.get("x-request-id") } });
  assert.equal(rateHeaders(viaSession.headers), {
    limit: "4",
    remaining: "3",
    reset: String(minuteEnd),
    policy: SESSION_POLICY,
    ratelimit: `"minute";r=3;t=…, "day";r=49999;t=…`,
  });
  assert.is(viaSession.headers.get("retry-after"), null);
});

E2E("a session's burst is refused at the session's own limit: 429 RATE_LIMITED, Retry-After and the headers; the key's budget is untouched", async ({ server }) => {
  const minuteEnd = await awayFromMinuteBoundary();
  const session = await browserSession(server);
  const systems = (headers: Record<string, string>) => fetch(`${server.baseUrl}/admin/systems`, { headers });
  for (let i = 1; i <= 4; i++) {
    const res = await systems(session.headers);
    assert.is(res.status, 200, `call ${i}`);
    assert.is(res.headers.get("x-ratelimit-remaining"), String(4 - i), `call ${i}`);
    await res.body?.cancel();
  }
  const refused = await systems(session.headers);
  assert.is(refused.status, 429);
  const retryAfter = refused.headers.get("retry-after");
  const expected = minuteEnd - Date.now() / 1000;
  assert.ok(retryAfter !== null && Math.abs(Number(retryAfter) - expected) <= 2, `retry-after ${retryAfter}, expected ~${expected}`);
  assert.equal(await refused.json(), {
    error: {
      code: "RATE_LIMITED",
      message: `session rate limit exceeded; retry in ${retryAfter} s`,
      requestId: refused.headers.get("x-request-id"),
    },
  });
  assert.equal(rateHeaders(refused.headers), {
    limit: "4",
    remaining: "0",
    reset: String(minuteEnd),
    policy: SESSION_POLICY,
    ratelimit: `"minute";r=0;t=…, "day";r=49996;t=…`,
  });
  assert.is(refused.headers.get("content-type"), "application/json; charset=utf-8");

  // The master key spent one call (signing in) of its three.
  const master = await systems({ authorization: server.authorization });
  assert.is(master.status, 200);
  assert.equal(rateHeaders(master.headers), {
    limit: "3",
    remaining: "1",
    reset: String(minuteEnd),
    policy: KEY_POLICY,
    ratelimit: `"minute";r=1;t=…, "day";r=9998;t=…`,
  });
  await master.body?.cancel();
});

E2E("two sessions of one admin key have separate budgets; over gRPC a session token counts on its session", async ({ server }) => {
  await awayFromMinuteBoundary();
  const created = await fetch(`${server.baseUrl}/admin/api-keys`, {
    method: "POST",
    headers: { authorization: server.authorization, "content-type": "application/json" },
    body: JSON.stringify({ name: "operator", type: "admin" }),
  });
  assert.is(created.status, 201, await created.clone().text());
  const key = ((await created.json()) as { data: { key: string } }).data.key;
  const signIn = async () => {
    const res = await fetch(`${server.baseUrl}/admin/sessions`, { method: "POST", headers: { authorization: `Bearer ${key}` } });
    assert.is(res.status, 201, await res.clone().text());
    return ((await res.json()) as { data: { id: string; token: string } }).data;
  };
  const a = await signIn(); // the key's 1st and 2nd calls
  const b = await signIn();
  const systems = (token: string) => fetch(`${server.baseUrl}/admin/systems`, { headers: { authorization: `Bearer ${token}` } });
  for (let i = 1; i <= 4; i++) await (await systems(a.token)).body?.cancel();
  const refusedA = await systems(a.token);
  assert.is(refusedA.status, 429);
  await refusedA.body?.cancel();

  const okB = await systems(b.token);
  assert.is(okB.status, 200);
  assert.equal([okB.headers.get("x-ratelimit-limit"), okB.headers.get("x-ratelimit-remaining")], ["4", "3"]);
  await okB.body?.cancel();
  // The key itself still has its third call.
  const okKey = await systems(key);
  assert.equal([okKey.status, okKey.headers.get("x-ratelimit-limit"), okKey.headers.get("x-ratelimit-remaining")], [200, "3", "0"]);
  await okKey.body?.cancel();

  const h2 = new Http2SessionManager(server.baseUrl);
  try {
    const grpc = createClient(SystemService, createGrpcTransport({ baseUrl: server.baseUrl, sessionManager: h2 }));
    let headers: Headers | undefined;
    await grpc.listSystems({}, { headers: { authorization: `Bearer ${b.token}` }, onHeader: (h) => (headers = h) });
    assert.equal([headers?.get("x-ratelimit-limit"), headers?.get("x-ratelimit-remaining")], ["4", "2"]);
    let err: unknown;
    try {
      await grpc.listSystems({}, { headers: { authorization: `Bearer ${a.token}` } });
    } catch (e) {
      err = e;
    }
    assert.instance(err, ConnectError);
    const ce = err as ConnectError;
    assert.is(ce.code, Code.ResourceExhausted);
    assert.is(ce.rawMessage, `session rate limit exceeded; retry in ${ce.metadata.get("retry-after")} s`);
    assert.equal([ce.metadata.get("x-ratelimit-limit"), ce.metadata.get("x-ratelimit-remaining")], ["4", "0"]);
  } finally {
    h2.abort();
  }
});

E2E.run();
