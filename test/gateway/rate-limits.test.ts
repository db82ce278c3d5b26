/**
 * Admin rate limits on the REST facade through `app.inject()`: the headers
 * of every admitted answer (successes and errors alike), the 429 envelope,
 * separate budgets per admin token, and the UTC minute and day windows.
 * The world's clock stands at 2026-01-02T03:04:05.000Z unless moved.
 */
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { json, post } from "../../test-support/http.js";
import { AUTH, MASTER_KEY, createWorld, type World } from "../../test-support/world.js";

type TestWorld = Awaited<ReturnType<typeof createWorld>>;

/** End of the world's current UTC minute and day, in Unix seconds. */
const MINUTE_END = String(Date.parse("2026-01-02T03:05:00Z") / 1000);
const DAY_END = String(Date.parse("2026-01-03T00:00:00Z") / 1000);
/** Seconds from 03:04:05 to the end of the minute and of the day. */
const T_MINUTE = 55;
const T_DAY = 20 * 3600 + 55 * 60 + 55;

const RATE_HEADERS = ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "ratelimit-policy", "ratelimit", "retry-after"];

function rateHeaders(res: LightMyRequestResponse): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of RATE_HEADERS) {
    const v = res.headers[name];
    if (v !== undefined) out[name] = String(v);
  }
  return out;
}

function get(app: FastifyInstance, url: string, authorization: string = AUTH.authorization) {
  return app.inject({ method: "GET", url, headers: { authorization } });
}

/** Issues an admin API key with the master key; returns its secret. */
async function adminKey(world: World, name: string): Promise<string> {
  const res = await post(world.app, "/admin/api-keys", { name, type: "admin" });
  assert.is(res.statusCode, 201, res.body);
  return json(res).data.key as string;
}

// ------------------------------------------------------------------ 100 / 10000

const Limits = suite<{ world: TestWorld }>("admin rate limits (100/min, 10000/day)");

Limits.before.each(async (ctx) => {
  ctx.world = await createWorld({ adminLimits: { perMinute: 100, perDay: 10_000 } });
});
Limits.after.each(async (ctx) => {
  await ctx.world.close();
});

Limits("100 admin requests pass with the headers counting down; the 101st is 429 RATE_LIMITED and does nothing", async ({ world }) => {
  for (let i = 1; i <= 100; i++) {
    const res = await get(world.app, "/admin/systems");
    assert.is(res.statusCode, 200, `request ${i}`);
    assert.equal(
      rateHeaders(res),
      {
        "x-ratelimit-limit": "100",
        "x-ratelimit-remaining": String(100 - i),
        "x-ratelimit-reset": MINUTE_END,
        "ratelimit-policy": `"minute";q=100;w=60, "day";q=10000;w=86400`,
        ratelimit: `"minute";r=${100 - i};t=${T_MINUTE}, "day";r=${10_000 - i};t=${T_DAY}`,
      },
      `request ${i}`,
    );
  }

  // The 101st is a create: refused before anything is done.
  const refused = await post(world.app, "/admin/systems", { name: "too many" });
  assert.is(refused.statusCode, 429);
  assert.is(refused.headers["content-type"], "application/json; charset=utf-8");
  assert.equal(json(refused), {
    error: {
      code: "RATE_LIMITED",
      message: `admin rate limit exceeded; retry in ${T_MINUTE} s`,
      requestId: refused.headers["x-request-id"],
    },
  });
  assert.equal(rateHeaders(refused), {
    "x-ratelimit-limit": "100",
    "x-ratelimit-remaining": "0",
    "x-ratelimit-reset": MINUTE_END,
    "ratelimit-policy": `"minute";q=100;w=60, "day";q=10000;w=86400`,
    ratelimit: `"minute";r=0;t=${T_MINUTE}, "day";r=9900;t=${T_DAY}`,
    "retry-after": String(T_MINUTE),
  });
  assert.is(refused.headers["www-authenticate"], undefined);

  // Still refused later in the same minute, Retry-After shrinking with it.
  world.now = new Date("2026-01-02T03:04:59.200Z");
  const later = await get(world.app, "/admin/systems");
  assert.is(later.statusCode, 429);
  assert.is(later.headers["retry-after"], "1");
  assert.is(json(later).error.message, "admin rate limit exceeded; retry in 1 s");

  // Next minute: nothing was created by the refused POST.
  world.now = new Date("2026-01-02T03:05:00.000Z");
  const list = await get(world.app, "/admin/systems");
  assert.is(list.statusCode, 200);
  assert.equal(json(list).data, []);
  assert.equal(world.errors, []);
});

Limits("errors after admission (404, 400, 409, 415) carry the headers and count", async ({ world }) => {
  const created = await post(world.app, "/admin/systems", { name: "ECC" });
  assert.is(created.statusCode, 201);
  assert.is(created.headers["x-ratelimit-remaining"], "99");

  const cases: [string, () => Promise<LightMyRequestResponse>, number, string][] = [
    ["missing system", () => get(world.app, "/admin/systems/sys_00000000000000000000000000"), 404, "NOT_FOUND"],
    ["malformed id", () => get(world.app, "/admin/systems/nope"), 404, "NOT_FOUND"],
    ["bad filter", () => get(world.app, "/admin/logs?status=abc"), 400, "VALIDATION_ERROR"],
    ["bad JSON body", () => world.app.inject({
      method: "POST",
      url: "/admin/systems",
      headers: { ...AUTH, "content-type": "application/json" },
      payload: "{not json",
    }), 400, "VALIDATION_ERROR"],
    ["unknown field", () => post(world.app, "/admin/systems", { name: "x", colour: "red" }), 400, "VALIDATION_ERROR"],
    ["missing name", () => post(world.app, "/admin/systems", { description: "no name" }), 400, "VALIDATION_ERROR"],
    ["duplicate name", () => post(world.app, "/admin/systems", { name: "ECC" }), 409, "CONFLICT"],
    ["not JSON", () => world.app.inject({
      method: "POST",
      url: "/admin/systems",
      headers: { ...AUTH, "content-type": "text/plain" },
      payload: "name=x",
    }), 415, "UNSUPPORTED_MEDIA_TYPE"],
  ];
  let remaining = 99;
  for (const [what, send, status, code] of cases) {
    const res = await send();
    remaining--;
    assert.is(res.statusCode, status, `${what}: ${res.body}`);
    assert.is(json(res).error.code, code, what);
    assert.equal(
      rateHeaders(res),
      {
        "x-ratelimit-limit": "100",
        "x-ratelimit-remaining": String(remaining),
        "x-ratelimit-reset": MINUTE_END,
        "ratelimit-policy": `"minute";q=100;w=60, "day";q=10000;w=86400`,
        ratelimit: `"minute";r=${remaining};t=${T_MINUTE}, "day";r=${9_900 + remaining};t=${T_DAY}`,
      },
      what,
    );
  }
  const after = await get(world.app, "/admin/systems");
  assert.is(after.headers["x-ratelimit-remaining"], String(remaining - 1), "every error above was counted once");
});

Limits("401 answers carry no rate-limit headers and count nothing", async ({ world }) => {
  const bad: [string, Record<string, string>][] = [
    ["no token", {}],
    ["wrong token", { authorization: "Bearer erpl_wrong_key_0123456789abcdefghijklmnopqrst" }],
    ["not bearer", { authorization: `Basic ${MASTER_KEY}` }],
    ["unknown API key", { authorization: "Bearer erpl_0123456789abcdefghijklmnopqrstuvwxyzABCDEF" }],
  ];
  for (let i = 0; i < 3; i++) {
    for (const [what, headers] of bad) {
      const res = await world.app.inject({ method: "GET", url: "/admin/systems", headers });
      assert.is(res.statusCode, 401, what);
      assert.is(json(res).error.code, "UNAUTHORIZED", what);
      assert.equal(rateHeaders(res), {}, what);
    }
  }
  const first = await get(world.app, "/admin/systems");
  assert.is(first.statusCode, 200);
  assert.is(first.headers["x-ratelimit-remaining"], "99");
  assert.is(first.headers.ratelimit, `"minute";r=99;t=${T_MINUTE}, "day";r=9999;t=${T_DAY}`);
});

Limits("a non-admin route (/healthz) carries no rate-limit headers and counts nothing", async ({ world }) => {
  const health = await world.app.inject({ method: "GET", url: "/healthz", headers: AUTH });
  assert.is(health.statusCode, 200);
  assert.equal(rateHeaders(health), {});
  assert.is((await get(world.app, "/admin/systems")).headers["x-ratelimit-remaining"], "99");
});

Limits.run();

// ------------------------------------------------------------------ budgets per token

const Budgets = suite<{ world: TestWorld }>("admin rate limits: one budget per admin token");

Budgets.before.each(async (ctx) => {
  ctx.world = await createWorld({ adminLimits: { perMinute: 4, perDay: 1000 } });
});
Budgets.after.each(async (ctx) => {
  await ctx.world.close();
});

Budgets("each admin key and the master key have separate budgets", async ({ world }) => {
  const a = await adminKey(world, "admin a");
  const b = await adminKey(world, "admin b");
  // The master key spent 2 of 4 on issuing the keys.

  for (let i = 1; i <= 4; i++) {
    const res = await get(world.app, "/admin/systems", `Bearer ${a}`);
    assert.is(res.statusCode, 200, `key a, request ${i}`);
    assert.is(res.headers["x-ratelimit-remaining"], String(4 - i), `key a, request ${i}`);
  }
  const aRefused = await get(world.app, "/admin/systems", `Bearer ${a}`);
  assert.is(aRefused.statusCode, 429);
  assert.is(aRefused.headers["retry-after"], String(T_MINUTE));

  const bFirst = await get(world.app, "/admin/systems", `Bearer ${b}`);
  assert.is(bFirst.statusCode, 200, "key b is not limited by key a");
  assert.is(bFirst.headers["x-ratelimit-remaining"], "3");
  assert.is(bFirst.headers.ratelimit, `"minute";r=3;t=${T_MINUTE}, "day";r=999;t=${T_DAY}`);

  const master = await get(world.app, "/admin/systems");
  assert.is(master.statusCode, 200, "the master key is not limited by the admin keys");
  assert.is(master.headers["x-ratelimit-remaining"], "1");
  assert.is((await get(world.app, "/admin/systems")).headers["x-ratelimit-remaining"], "0");
  const masterRefused = await get(world.app, "/admin/systems");
  assert.is(masterRefused.statusCode, 429);
  assert.is(json(masterRefused).error.code, "RATE_LIMITED");

  // Key b still has its own.
  const bSecond = await get(world.app, "/admin/systems", `Bearer ${b}`);
  assert.is(bSecond.statusCode, 200);
  assert.is(bSecond.headers["x-ratelimit-remaining"], "2");
});

Budgets("the next UTC minute resets the minute window but not the day window", async ({ world }) => {
  for (let i = 0; i < 4; i++) assert.is((await get(world.app, "/admin/systems")).statusCode, 200);
  world.now = new Date("2026-01-02T03:04:59.999Z");
  const refused = await get(world.app, "/admin/systems");
  assert.is(refused.statusCode, 429);
  assert.is(refused.headers["retry-after"], "1");

  world.now = new Date("2026-01-02T03:05:00.000Z");
  const next = await get(world.app, "/admin/systems");
  assert.is(next.statusCode, 200);
  assert.equal(rateHeaders(next), {
    "x-ratelimit-limit": "4",
    "x-ratelimit-remaining": "3",
    "x-ratelimit-reset": String(Date.parse("2026-01-02T03:06:00Z") / 1000),
    "ratelimit-policy": `"minute";q=4;w=60, "day";q=1000;w=86400`,
    // The day window kept the 4 passes of the previous minute (not the refusal).
    ratelimit: `"minute";r=3;t=60, "day";r=995;t=${T_DAY - 55}`,
  });
});

Budgets.run();

// ------------------------------------------------------------------ day limit

const Day = suite<{ world: TestWorld }>("admin rate limits: the day limit binds (1000/min, 5/day)");

Day.before.each(async (ctx) => {
  ctx.world = await createWorld({ adminLimits: { perMinute: 1000, perDay: 5 } });
});
Day.after.each(async (ctx) => {
  await ctx.world.close();
});

Day("5 requests a day pass; then 429 until the next UTC day, whatever the minute", async ({ world }) => {
  for (let i = 1; i <= 5; i++) {
    const res = await get(world.app, "/admin/systems");
    assert.is(res.statusCode, 200, `request ${i}`);
    assert.equal(rateHeaders(res), {
      "x-ratelimit-limit": "5",
      "x-ratelimit-remaining": String(5 - i),
      "x-ratelimit-reset": DAY_END,
      "ratelimit-policy": `"minute";q=1000;w=60, "day";q=5;w=86400`,
      ratelimit: `"minute";r=${1000 - i};t=${T_MINUTE}, "day";r=${5 - i};t=${T_DAY}`,
    });
  }
  const refused = await get(world.app, "/admin/systems");
  assert.is(refused.statusCode, 429);
  assert.equal(json(refused), {
    error: {
      code: "RATE_LIMITED",
      message: `admin rate limit exceeded; retry in ${T_DAY} s`,
      requestId: refused.headers["x-request-id"],
    },
  });
  assert.equal(rateHeaders(refused), {
    "x-ratelimit-limit": "5",
    "x-ratelimit-remaining": "0",
    "x-ratelimit-reset": DAY_END,
    "ratelimit-policy": `"minute";q=1000;w=60, "day";q=5;w=86400`,
    // The refused request gave its minute back.
    ratelimit: `"minute";r=995;t=${T_MINUTE}, "day";r=0;t=${T_DAY}`,
    "retry-after": String(T_DAY),
  });

  world.now = new Date("2026-01-02T03:05:00.000Z");
  const nextMinute = await get(world.app, "/admin/systems");
  assert.is(nextMinute.statusCode, 429, "a new minute does not reset the day");
  assert.is(nextMinute.headers["retry-after"], String(T_DAY - 55));

  world.now = new Date("2026-01-02T23:59:59.999Z");
  assert.is((await get(world.app, "/admin/systems")).headers["retry-after"], "1");

  world.now = new Date("2026-01-03T00:00:00.000Z");
  const nextDay = await get(world.app, "/admin/systems");
  assert.is(nextDay.statusCode, 200);
  assert.is(nextDay.headers["x-ratelimit-remaining"], "4");
  assert.is(nextDay.headers["x-ratelimit-reset"], String(Date.parse("2026-01-04T00:00:00Z") / 1000));
});

Day.run();
