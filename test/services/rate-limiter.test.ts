/**
 * The rate limiter over a real store with an injected clock: exact limits
 * (sequential and concurrent), UTC minute/day windows, refunds, peek,
 * Retry-After, purge; leases (store operations per lease, not per request;
 * small limits per request; give-backs; two limiters on one database never
 * over-admit); and the rate-limit response headers.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  IDLE_MS,
  LEASE_MIN_LIMIT,
  RateLimiter,
  rateLimitHeaders,
  tightestWindow,
  type RateLimitResult,
  type WindowState,
} from "../../src/services/rate-limiter.js";
import { createStore, type RateWindowStore, type Store } from "../../src/store/index.js";
import { dropMongoDatabase, freshMongoUrl, openTestStore, testMongoUrl } from "../../test-support/world.js";

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

// ------------------------------------------------------------------ leases

/** The store's rate windows, counting the leases asked for. */
function counting(inner: RateWindowStore): RateWindowStore & { leases: number[] } {
  const leases: number[] = [];
  return {
    leases,
    lease: (id, want, limit, exp) => {
      leases.push(want);
      return inner.lease(id, want, limit, exp);
    },
    giveBack: (id, count, exp) => inner.giveBack(id, count, exp),
    used: (id) => inner.used(id),
    purge: (now) => inner.purge(now),
  };
}

const Leases = suite<Ctx>("rate limiter leases");

Leases.before.each(async (ctx) => {
  ctx.store = await openTestStore();
  ctx.now = at("2026-03-04T12:00:30.500Z");
});
Leases.after.each(async (ctx) => {
  await ctx.store.dispose();
});

const MINUTE = `s|minute|${unix("2026-03-04T12:00:00Z")}|60`;

Leases("a busy key with a large limit: 2000 requests take 11 leases (1, 2, 4 … 1024 places), remaining counts down exactly", async (ctx) => {
  const windows = counting(ctx.store.rateWindows);
  const limiter = new RateLimiter(windows, () => ctx.now);
  const remaining: number[] = [];
  for (let i = 0; i < 2000; i++) {
    const r = await limiter.consume("s", { perMinute: 100_000 });
    assert.ok(r.allowed);
    remaining.push(r.windows[0]!.remaining);
  }
  assert.equal(remaining, Array.from({ length: 2000 }, (_, i) => 99_999 - i));
  assert.equal(windows.leases, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]);
  // The store holds the places leased (2047), the limiter reports the ones spent.
  assert.is(await ctx.store.rateWindows.used(MINUTE), 2047);
  assert.equal((await limiter.peek("s", { perMinute: 100_000 })).windows[0]!.remaining, 98_000);
});

Leases(`limits below ${LEASE_MIN_LIMIT} are counted in the store request by request: the store's count is exact after each`, async (ctx) => {
  const windows = counting(ctx.store.rateWindows);
  const limiter = new RateLimiter(windows, () => ctx.now);
  for (let i = 1; i <= 30; i++) {
    assert.ok((await limiter.consume("s", { perMinute: LEASE_MIN_LIMIT - 1 })).allowed);
    assert.is(await ctx.store.rateWindows.used(MINUTE), i);
  }
  assert.equal(windows.leases, Array(30).fill(1));
  // Requests arriving together share one store operation, one place each.
  const burst = await Promise.all(Array.from({ length: 20 }, () => limiter.consume("s", { perMinute: LEASE_MIN_LIMIT - 1 })));
  assert.ok(burst.every((r) => r.allowed));
  assert.is(await ctx.store.rateWindows.used(MINUTE), 50);
  assert.ok(windows.leases.length < 50, `${windows.leases.length} leases`);
  assert.equal(burst.map((r) => r.windows[0]!.remaining).sort((a, b) => b - a), Array.from({ length: 20 }, (_, i) => LEASE_MIN_LIMIT - 1 - 30 - 1 - i));
});

Leases(`unspent places go back to the window after ${IDLE_MS} ms without a request (sweep), and all of them at stop`, async (ctx) => {
  const limiter = new RateLimiter(ctx.store.rateWindows, () => ctx.now);
  const limits = { perMinute: 100_000 };
  for (let i = 0; i < 100; i++) await limiter.consume("s", limits);
  assert.is(await ctx.store.rateWindows.used(MINUTE), 127);
  await limiter.sweep();
  assert.is(await ctx.store.rateWindows.used(MINUTE), 127, "not idle yet");
  ctx.now = new Date(ctx.now.getTime() + IDLE_MS + 1);
  await limiter.sweep();
  assert.is(await ctx.store.rateWindows.used(MINUTE), 100);
  // After a pause the rate is unknown again: leases of 1, then 2 (doubled within the horizon).
  for (let i = 0; i < 2; i++) await limiter.consume("s", limits);
  assert.is(await ctx.store.rateWindows.used(MINUTE), 103);
  // One place spare, given back at stop.
  await limiter.stop();
  assert.is(await ctx.store.rateWindows.used(MINUTE), 102);
  await limiter.consume("s", limits);
  await limiter.stop();
  assert.is(await ctx.store.rateWindows.used(MINUTE), 103);
  assert.equal((await limiter.peek("s", limits)).windows[0]!.remaining, 100_000 - 103);
});

Leases("a request refused by the day window gives its minute place back to the lease, not to the store (large minute limit)", async (ctx) => {
  const limiter = new RateLimiter(ctx.store.rateWindows, () => ctx.now);
  const limits = { perMinute: 100_000, perDay: 2 };
  assert.ok((await limiter.consume("s", limits)).allowed);
  assert.ok((await limiter.consume("s", limits)).allowed);
  const refused = await limiter.consume("s", limits);
  assert.not.ok(refused.allowed);
  assert.equal(refused.windows.map((w) => [w.name, w.remaining]), [["minute", 99_998], ["day", 0]]);
  await limiter.stop();
  assert.is(await ctx.store.rateWindows.used(MINUTE), 2);
});

Leases.run();

// ------------------------------------------------------------------ two processes

/**
 * Two limiters on one database, as two processes have: on MongoDB two
 * stores (each with its own view of the windows), embedded one store.
 */
async function twoProcesses(): Promise<{ a: RateWindowStore; b: RateWindowStore; dispose(): Promise<void> }> {
  const base = testMongoUrl();
  if (base === undefined) {
    const store = await openTestStore();
    return { a: store.rateWindows, b: store.rateWindows, dispose: () => store.dispose() };
  }
  const url = freshMongoUrl(base);
  const one = await createStore({ kind: "mongodb", url, serverSelectionTimeoutMs: 5000 });
  const two = await createStore({ kind: "mongodb", url, serverSelectionTimeoutMs: 5000 });
  return {
    a: one.rateWindows,
    b: two.rateWindows,
    dispose: async () => {
      await one.close();
      await two.close();
      await dropMongoDatabase(url);
    },
  };
}

const Shared = suite("rate limiter: two processes on one database");

for (const [limit, demand] of [
  [50, 150],
  [2000, 6000],
] as const) {
  Shared(`per_minute ${limit}, ${demand} requests at once split over both: never more than ${limit} pass${limit < LEASE_MIN_LIMIT ? " (exactly)" : ""}; after both stop, the window holds exactly what passed`, async () => {
    const stores = await twoProcesses();
    try {
      const now = at("2026-03-04T12:00:30.500Z");
      const a = new RateLimiter(stores.a, () => now);
      const b = new RateLimiter(stores.b, () => now);
      // In waves, so that leases grow and the two compete for the window's end.
      let allowed = 0;
      for (let wave = 0; wave < 10; wave++) {
        const results = await Promise.all(
          Array.from({ length: demand / 10 }, (_, i) => (i % 2 === 0 ? a : b).consume("k", { perMinute: limit })),
        );
        allowed += results.filter((r) => r.allowed).length;
      }
      assert.ok(allowed <= limit, `${allowed} passed`);
      if (limit < LEASE_MIN_LIMIT) assert.is(allowed, limit);
      else assert.ok(allowed >= limit - 2 * (limit / 8), `${allowed} passed: too few`);
      await a.stop();
      await b.stop();
      assert.is(await stores.a.used(`k|minute|${unix("2026-03-04T12:00:00Z")}|60`), allowed);
    } finally {
      await stores.dispose();
    }
  });
}

Shared.run();

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
