/**
 * The rate limiter over a real store with an injected clock: exact limits
 * (sequential and concurrent), UTC minute/day windows, refunds, peek,
 * Retry-After, purge; and the rate-limit response headers.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  RateLimiter,
  rateLimitHeaders,
  tightestWindow,
  type RateLimitResult,
  type WindowState,
} from "../../src/services/rate-limiter.js";
import type { Store } from "../../src/store/index.js";
import { openTestStore } from "../../test-support/world.js";

interface Ctx {
  store: Store & { readonly dispose: () => Promise<void> };
  now: Date;
  limiter: RateLimiter;
}

const at = (iso: string) => new Date(iso);
const unix = (iso: string) => Date.parse(iso) / 1000;

const Limiter = suite<Ctx>("rate limiter");

Limiter.before.each(async (ctx) => {
  ctx.store = await openTestStore();
  ctx.now = at("2026-03-04T12:00:30.500Z");
  ctx.limiter = new RateLimiter(ctx.store.rateWindows, () => new Date(ctx.now.getTime()));
});
Limiter.after.each(async (ctx) => {
  await ctx.store.dispose();
});

Limiter("exactly L of L+k sequential consumes pass, remaining counting down to 0", async ({ limiter }) => {
  const results: RateLimitResult[] = [];
  for (let i = 0; i < 8; i++) results.push(await limiter.consume("s", { perMinute: 5 }));
  assert.equal(results.map((r) => r.allowed), [true, true, true, true, true, false, false, false]);
  assert.equal(results.map((r) => r.windows[0]!.remaining), [4, 3, 2, 1, 0, 0, 0, 0]);
  for (const r of results.slice(0, 5)) assert.is(r.retryAfterSeconds, undefined);
  for (const r of results.slice(5)) assert.is(r.retryAfterSeconds, 30);
});

Limiter("exactly L of L+k concurrent consumes pass (minute window only)", async ({ limiter }) => {
  const results = await Promise.all(Array.from({ length: 25 }, () => limiter.consume("s", { perMinute: 10 })));
  assert.is(results.filter((r) => r.allowed).length, 10);
  // Every pass saw a distinct count: remaining 9..0 once each.
  assert.equal(
    results.filter((r) => r.allowed).map((r) => r.windows[0]!.remaining).sort((a, b) => a - b),
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
  );
});

Limiter("exactly L of L+k concurrent consumes pass with both windows, whichever binds", async (ctx) => {
  const minuteBinds = await Promise.all(
    Array.from({ length: 12 }, () => ctx.limiter.consume("a", { perMinute: 5, perDay: 100 })),
  );
  assert.is(minuteBinds.filter((r) => r.allowed).length, 5);
  // Refusals by the minute window never touched the day window.
  const a = await ctx.limiter.peek("a", { perMinute: 5, perDay: 100 });
  assert.equal(a.windows.map((w) => w.remaining), [0, 95]);

  const dayBinds = await Promise.all(
    Array.from({ length: 12 }, () => ctx.limiter.consume("b", { perMinute: 100, perDay: 5 })),
  );
  assert.is(dayBinds.filter((r) => r.allowed).length, 5);
  // Refusals by the day window gave their minute back.
  const b = await ctx.limiter.peek("b", { perMinute: 100, perDay: 5 });
  assert.equal(b.windows.map((w) => w.remaining), [95, 0]);
});

Limiter("subjects are counted separately", async ({ limiter }) => {
  for (let i = 0; i < 3; i++) assert.ok((await limiter.consume("one", { perMinute: 3 })).allowed);
  assert.not.ok((await limiter.consume("one", { perMinute: 3 })).allowed);
  const other = await limiter.consume("two", { perMinute: 3 });
  assert.ok(other.allowed);
  assert.is(other.windows[0]!.remaining, 2);
});

Limiter("windows align to the UTC minute and day: names, limits, lengths, resetAt", async ({ limiter }) => {
  const r = await limiter.consume("s", { perMinute: 100, perDay: 10_000 });
  assert.equal(r, {
    allowed: true,
    windows: [
      { name: "minute", limit: 100, remaining: 99, resetAt: at("2026-03-04T12:01:00.000Z"), seconds: 60 },
      { name: "day", limit: 10_000, remaining: 9_999, resetAt: at("2026-03-05T00:00:00.000Z"), seconds: 86_400 },
    ],
  });
});

Limiter("window ids are the subject, the window and the window's start in Unix seconds", async ({ store, limiter }) => {
  await limiter.consume("s", { perMinute: 100, perDay: 10_000 });
  assert.is(await store.rateWindows.used(`s|minute|${unix("2026-03-04T12:00:00Z")}|60`), 1);
  assert.is(await store.rateWindows.used(`s|day|${unix("2026-03-04T00:00:00Z")}|86400`), 1);
});

Limiter("an unset limit means no such window", async ({ limiter }) => {
  const dayOnly = await limiter.consume("s", { perDay: 7 });
  assert.equal(dayOnly.windows.map((w) => [w.name, w.remaining]), [["day", 6]]);
  const none = await limiter.consume("s", {});
  assert.equal(none, { allowed: true, windows: [] });
});

Limiter("12:00:59.999 and 12:01:00.000 fall in different minute windows but the same day", async (ctx) => {
  const limits = { perMinute: 2, perDay: 100 };
  ctx.now = at("2026-03-04T12:00:00.000Z");
  assert.ok((await ctx.limiter.consume("s", limits)).allowed);
  ctx.now = at("2026-03-04T12:00:59.999Z");
  const second = await ctx.limiter.consume("s", limits);
  assert.ok(second.allowed);
  assert.is(second.windows[0]!.remaining, 0);
  assert.equal(second.windows[0]!.resetAt, at("2026-03-04T12:01:00.000Z"));
  const refused = await ctx.limiter.consume("s", limits);
  assert.not.ok(refused.allowed);
  assert.is(refused.retryAfterSeconds, 1, "at least 1 s, rounded up");

  ctx.now = at("2026-03-04T12:01:00.000Z");
  const next = await ctx.limiter.consume("s", limits);
  assert.ok(next.allowed);
  assert.equal(
    next.windows.map((w) => [w.name, w.remaining, w.resetAt.toISOString()]),
    [
      ["minute", 1, "2026-03-04T12:02:00.000Z"],
      ["day", 97, "2026-03-05T00:00:00.000Z"],
    ],
  );
});

Limiter("23:59:59.999 and 00:00:00.000 UTC fall in different day windows", async (ctx) => {
  const limits = { perDay: 1 };
  ctx.now = at("2026-03-04T23:59:59.999Z");
  assert.ok((await ctx.limiter.consume("s", limits)).allowed);
  const refused = await ctx.limiter.consume("s", limits);
  assert.not.ok(refused.allowed);
  assert.is(refused.retryAfterSeconds, 1);
  ctx.now = at("2026-03-05T00:00:00.000Z");
  const next = await ctx.limiter.consume("s", limits);
  assert.ok(next.allowed);
  assert.equal(next.windows[0]!.resetAt, at("2026-03-06T00:00:00.000Z"));
});

Limiter("a request refused by the day window refunds the minute window (per_minute 10, per_day 3)", async ({ store, limiter }) => {
  const limits = { perMinute: 10, perDay: 3 };
  for (let i = 0; i < 3; i++) assert.ok((await limiter.consume("s", limits)).allowed);
  const fourth = await limiter.consume("s", limits);
  assert.not.ok(fourth.allowed);
  assert.equal(fourth.windows.map((w) => [w.name, w.remaining]), [["minute", 7], ["day", 0]]);
  // seconds to midnight UTC from 12:00:30.500, rounded up
  assert.is(fourth.retryAfterSeconds, 11 * 3600 + 59 * 60 + 30);
  assert.is(await store.rateWindows.used(`s|minute|${unix("2026-03-04T12:00:00Z")}|60`), 3);
  const fifth = await limiter.consume("s", limits);
  assert.not.ok(fifth.allowed);
  const peek = await limiter.peek("s", limits);
  assert.equal(peek.windows.map((w) => [w.name, w.remaining]), [["minute", 7], ["day", 0]]);
});

Limiter("a request refused by the minute window does not touch the day window", async ({ store, limiter }) => {
  const limits = { perMinute: 2, perDay: 10 };
  for (let i = 0; i < 2; i++) assert.ok((await limiter.consume("s", limits)).allowed);
  for (let i = 0; i < 3; i++) {
    const refused = await limiter.consume("s", limits);
    assert.not.ok(refused.allowed);
    assert.equal(refused.windows.map((w) => [w.name, w.remaining]), [["minute", 0], ["day", 8]]);
    assert.is(refused.retryAfterSeconds, 30);
  }
  assert.is(await store.rateWindows.used(`s|day|${unix("2026-03-04T00:00:00Z")}|86400`), 2);
});

Limiter("peek reports without consuming", async ({ store, limiter }) => {
  const limits = { perMinute: 2, perDay: 10 };
  const fresh = await limiter.peek("s", limits);
  assert.equal(fresh.allowed, true);
  assert.equal(fresh.windows.map((w) => [w.name, w.remaining]), [["minute", 2], ["day", 10]]);
  for (let i = 0; i < 5; i++) await limiter.peek("s", limits);
  assert.is(await store.rateWindows.used(`s|minute|${unix("2026-03-04T12:00:00Z")}|60`), 0);

  await limiter.consume("s", limits);
  const one = await limiter.peek("s", limits);
  assert.equal(one, {
    allowed: true,
    windows: [
      { name: "minute", limit: 2, remaining: 1, resetAt: at("2026-03-04T12:01:00.000Z"), seconds: 60 },
      { name: "day", limit: 10, remaining: 9, resetAt: at("2026-03-05T00:00:00.000Z"), seconds: 86_400 },
    ],
  });
  assert.ok((await limiter.consume("s", limits)).allowed, "peeks took nothing from the budget");
  const spent = await limiter.peek("s", limits);
  assert.is(spent.allowed, false);
  assert.is(spent.retryAfterSeconds, 30);
  assert.equal(spent.windows.map((w) => w.remaining), [0, 8]);
});

Limiter("retryAfterSeconds is the whole seconds to the window's end, at least 1", async (ctx) => {
  const cases: [string, number][] = [
    ["2026-03-04T12:00:00.000Z", 60],
    ["2026-03-04T12:00:00.001Z", 60],
    ["2026-03-04T12:00:30.500Z", 30],
    ["2026-03-04T12:00:58.000Z", 2],
    ["2026-03-04T12:00:59.000Z", 1],
    ["2026-03-04T12:00:59.999Z", 1],
  ];
  for (const [iso, expected] of cases) {
    ctx.now = at(iso);
    const subject = `s-${iso}`;
    await ctx.limiter.consume(subject, { perMinute: 1 });
    const refused = await ctx.limiter.consume(subject, { perMinute: 1 });
    assert.is(refused.allowed, false, iso);
    assert.is(refused.retryAfterSeconds, expected, iso);
  }
});

Limiter("purge removes expired counters only", async (ctx) => {
  const { store, limiter } = ctx;
  const minuteId = `s|minute|${unix("2026-03-04T12:00:00Z")}|60`;
  const dayId = `s|day|${unix("2026-03-04T00:00:00Z")}|86400`;
  await limiter.consume("s", { perMinute: 5, perDay: 50 });
  // The minute counter is kept until a minute after its window ends.
  assert.is(await store.rateWindows.purge(at("2026-03-04T12:01:59.999Z")), 0);
  assert.is(await store.rateWindows.used(minuteId), 1);
  assert.is(await store.rateWindows.purge(at("2026-03-04T12:02:00.001Z")), 1);
  assert.is(await store.rateWindows.used(minuteId), 0);
  assert.is(await store.rateWindows.used(dayId), 1, "the day counter has not expired");
  // The day counter still counts: the next request in that day sees it.
  ctx.now = at("2026-03-04T12:02:00.001Z");
  const next = await limiter.consume("s", { perMinute: 5, perDay: 50 });
  assert.equal(next.windows.map((w) => w.remaining), [4, 48]);
  // Counters: the day's and the 12:02 minute's; slots: two day places and one minute place.
  assert.is(await store.rateWindows.purge(at("2026-03-05T00:01:00.001Z")), store.kind === "embedded" ? 2 : 3);
  assert.is(await store.rateWindows.used(dayId), 0);
});

Limiter.run();

// ------------------------------------------------------------------ headers

const NOW = at("2026-03-04T12:00:30.500Z");
const MINUTE_END = at("2026-03-04T12:01:00.000Z");
const DAY_END = at("2026-03-05T00:00:00.000Z");

function w(name: "minute" | "day", limit: number, remaining: number): WindowState {
  return name === "minute"
    ? { name, limit, remaining, resetAt: MINUTE_END, seconds: 60 }
    : { name, limit, remaining, resetAt: DAY_END, seconds: 86_400 };
}

const POLICY = `"minute";q=100;w=60, "day";q=10000;w=86400`;

const HeaderSuite = suite("rateLimitHeaders");

HeaderSuite("an allowed result: the tightest window's X-RateLimit-*, both windows in RateLimit(-Policy), no Retry-After", () => {
  const headers = rateLimitHeaders({ allowed: true, windows: [w("minute", 100, 99), w("day", 10_000, 9_999)] }, NOW);
  assert.equal(headers, {
    "x-ratelimit-limit": "100",
    "x-ratelimit-remaining": "99",
    "x-ratelimit-reset": String(unix("2026-03-04T12:01:00Z")),
    "ratelimit-policy": POLICY,
    ratelimit: `"minute";r=99;t=30, "day";r=9999;t=43170`,
  });
});

HeaderSuite("the day window is the tightest when it has fewer remaining", () => {
  const headers = rateLimitHeaders({ allowed: true, windows: [w("minute", 100, 50), w("day", 10_000, 3)] }, NOW);
  assert.equal(headers, {
    "x-ratelimit-limit": "10000",
    "x-ratelimit-remaining": "3",
    "x-ratelimit-reset": String(unix("2026-03-05T00:00:00Z")),
    "ratelimit-policy": POLICY,
    ratelimit: `"minute";r=50;t=30, "day";r=3;t=43170`,
  });
});

HeaderSuite("a tie on remaining goes to the later reset", () => {
  const result: RateLimitResult = { allowed: true, windows: [w("minute", 100, 7), w("day", 10_000, 7)] };
  assert.is(tightestWindow(result)!.name, "day");
  const headers = rateLimitHeaders(result, NOW);
  assert.is(headers["x-ratelimit-limit"], "10000");
  assert.is(headers["x-ratelimit-remaining"], "7");
  assert.is(headers["x-ratelimit-reset"], String(unix("2026-03-05T00:00:00Z")));
  // Order of the windows does not matter.
  const reversed = rateLimitHeaders({ allowed: true, windows: [w("day", 10_000, 7), w("minute", 100, 7)] }, NOW);
  assert.is(reversed["x-ratelimit-limit"], "10000");
});

HeaderSuite("a refused result adds Retry-After", () => {
  const headers = rateLimitHeaders(
    { allowed: false, windows: [w("minute", 100, 0), w("day", 10_000, 9_900)], retryAfterSeconds: 30 },
    NOW,
  );
  assert.equal(headers, {
    "x-ratelimit-limit": "100",
    "x-ratelimit-remaining": "0",
    "x-ratelimit-reset": String(unix("2026-03-04T12:01:00Z")),
    "ratelimit-policy": POLICY,
    ratelimit: `"minute";r=0;t=30, "day";r=9900;t=43170`,
    "retry-after": "30",
  });
});

HeaderSuite("a single window lists only that window", () => {
  const headers = rateLimitHeaders({ allowed: true, windows: [w("minute", 5, 4)] }, at("2026-03-04T12:00:00.000Z"));
  assert.equal(headers, {
    "x-ratelimit-limit": "5",
    "x-ratelimit-remaining": "4",
    "x-ratelimit-reset": String(unix("2026-03-04T12:01:00Z")),
    "ratelimit-policy": `"minute";q=5;w=60`,
    ratelimit: `"minute";r=4;t=60`,
  });
});

HeaderSuite("no windows: no headers", () => {
  assert.equal(rateLimitHeaders({ allowed: true, windows: [] }, NOW), {});
  assert.is(tightestWindow({ allowed: true, windows: [] }), undefined);
});

HeaderSuite("headers of the limiter's own results (round trip)", async () => {
  const store = await openTestStore();
  try {
    let now = at("2026-03-04T12:00:30.500Z");
    const limiter = new RateLimiter(store.rateWindows, () => now);
    const limits = { perMinute: 2, perDay: 10_000 };
    await limiter.consume("s", limits);
    await limiter.consume("s", limits);
    const refused = await limiter.consume("s", limits);
    assert.equal(rateLimitHeaders(refused, now), {
      "x-ratelimit-limit": "2",
      "x-ratelimit-remaining": "0",
      "x-ratelimit-reset": String(unix("2026-03-04T12:01:00Z")),
      "ratelimit-policy": `"minute";q=2;w=60, "day";q=10000;w=86400`,
      ratelimit: `"minute";r=0;t=30, "day";r=9998;t=43170`,
      "retry-after": "30",
    });
    now = at("2026-03-04T12:01:00.000Z");
    assert.equal(rateLimitHeaders(await limiter.consume("s", limits), now).ratelimit, `"minute";r=1;t=60, "day";r=9997;t=43140`);
  } finally {
    await store.dispose();
  }
});

HeaderSuite.run();
