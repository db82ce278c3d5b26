/**
 * UsageService through a typed Connect client over the in-process router
 * transport, on rollups written as the log writer writes them (several
 * writers): every answer equals what the log entries themselves say
 * (test-support/usage.ts), for hourly and daily series, ranges that do and
 * do not start and end at midnight, and every breakdown; defaults and
 * rounding; group order, limit and more_groups; every validation error;
 * the latency quantile estimate.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { GetUsageRequestSchema, UsageService } from "../../src/gen/erplink/admin/v1/usage_pb.js";
import { GROUP_KINDS } from "../../src/services/rollups.js";
import { estimateQuantile } from "../../src/services/usage-service.js";
import { rejects, violations, worldTests, type TestWorld } from "../../test-support/rpc.js";
import { expectedUsage, keyId, plainUsage, syntheticEntries, writeRollups } from "../../test-support/usage.js";

const test = suite("UsageService");
const it = worldTests(test);

const HOUR = 3_600_000;
const DAY = 86_400_000;
/** Midnight UTC, the start of the synthetic traffic. */
const D0 = Date.parse("2025-12-30T00:00:00.000Z");
const ts = (ms: number) => timestampFromDate(new Date(ms));

/** Three days of traffic from D0, over three writers. */
async function seed(w: TestWorld) {
  const entries = syntheticEntries(3000, { from: D0, spanMs: 3 * DAY, seed: 7 });
  await writeRollups(w.store.usageRollups, entries, 3);
  return entries;
}

function usage(w: TestWorld, req: MessageInitShape<typeof GetUsageRequestSchema>) {
  return w.client(UsageService).getUsage(req);
}

it("hourly and daily answers equal the log entries, with and without every breakdown, over whole and partial days", async (w) => {
  const entries = await seed(w);
  const ranges: [string, number, number, "hour" | "day"][] = [
    ["one partial day", D0 + 5 * HOUR, D0 + 17 * HOUR, "hour"],
    ["across midnight", D0 + 20 * HOUR, D0 + DAY + 7 * HOUR, "hour"],
    ["a whole day and both ends", D0 + 22 * HOUR, D0 + 2 * DAY + 3 * HOUR, "hour"],
    ["exactly two days", D0, D0 + 2 * DAY, "hour"],
    ["every day and an empty one", D0 - DAY, D0 + 3 * DAY, "day"],
  ];
  for (const [what, from, to, bucket] of ranges) {
    for (const groupBy of ["", ...GROUP_KINDS] as const) {
      const res = await usage(w, { from: ts(from), to: ts(to), bucket, groupBy, groupLimit: 100 });
      const expected = expectedUsage(entries, { from, to, bucket, groupBy: groupBy === "" ? undefined : groupBy, groupLimit: 100 });
      assert.ok(expected.total.requests > 0, `${what}: the range holds traffic`);
      assert.equal(plainUsage(res.usage!), expected, `${what}, group_by=${groupBy}`);
      assert.is(res.usage!.bucket, bucket);
      assert.is(res.usage!.groupBy, groupBy);
      // The per-request breakdowns add up to the total.
      if (groupBy !== "" && groupBy !== "entity" && groupBy !== "operation") {
        assert.is(expected.groups.reduce((n, g) => n + g.counts.requests, 0), expected.total.requests, `${what}, ${groupBy}: groups add up`);
      }
    }
  }
});

it("a partial day is read from its daily rollup when all its requests lie in the range, else from its hourly groups", async (w) => {
  // Traffic on one day from 08:00 to 12:00 only, over two writers.
  const entries = syntheticEntries(500, { from: D0 + 8 * HOUR, spanMs: 4 * HOUR - 1000, seed: 3 });
  await writeRollups(w.store.usageRollups, entries, 2);
  const reads: number[] = [];
  const hourGroups = w.store.usageRollups.hourGroups.bind(w.store.usageRollups);
  w.store.usageRollups.hourGroups = async (keys) => (reads.push(keys.length), hourGroups(keys));
  const check = async (from: number, to: number) => {
    const res = await usage(w, { from: ts(from), to: ts(to), groupBy: "entity", groupLimit: 100 });
    assert.equal(plainUsage(res.usage!), expectedUsage(entries, { from, to, bucket: "hour", groupBy: "entity", groupLimit: 100 }));
  };
  await check(D0 + 6 * HOUR, D0 + 14 * HOUR);
  assert.equal(reads, [0], "every request of the day is in the range: the daily rollup alone");
  await check(D0 + 9 * HOUR, D0 + 14 * HOUR);
  assert.equal(reads, [0, 2], "requests before 09:00: each writer's hourly groups of the day");
  await check(D0 - 2 * HOUR, D0 + 10 * HOUR);
  assert.equal(reads, [0, 2, 2]);
});

it("the range is rounded out to whole buckets and says so; defaults are the 24 hours up to now, by hour", async (w) => {
  const entries = await seed(w);
  const from = D0 + 5 * HOUR + 59 * 60_000;
  const to = D0 + 9 * HOUR + 1;
  const res = await usage(w, { from: ts(from), to: ts(to) });
  assert.equal(plainUsage(res.usage!), expectedUsage(entries, { from: D0 + 5 * HOUR, to: D0 + 10 * HOUR, bucket: "hour" }));
  const byDay = await usage(w, { from: ts(from), to: ts(to), bucket: "day" });
  assert.equal(plainUsage(byDay.usage!), expectedUsage(entries, { from: D0, to: D0 + DAY, bucket: "day" }));

  // The world's clock reads 2026-01-02T03:04:05Z: the 24 hours before it, rounded out.
  const defaults = (await usage(w, {})).usage!;
  assert.is(defaults.series.length, 25);
  assert.equal(
    plainUsage(defaults),
    expectedUsage(entries, { from: Date.parse("2026-01-01T03:00:00Z"), to: Date.parse("2026-01-02T04:00:00Z"), bucket: "hour" }),
  );
  assert.ok(plainUsage(defaults).total.requests > 0, "the default range holds traffic");
  const onlyTo = (await usage(w, { to: ts(D0 + DAY) })).usage!;
  assert.equal([plainUsage(onlyTo).from, plainUsage(onlyTo).to], [new Date(D0).toISOString(), new Date(D0 + DAY).toISOString()]);
  assert.equal(onlyTo.latencyBoundsMs, [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000]);
});

it("groups: most requests first, ties by key, group_limit of them (default 10), more_groups counts the rest", async (w) => {
  const entries = await seed(w);
  const range = { from: ts(D0), to: ts(D0 + 3 * DAY), bucket: "day" };
  const all = (await usage(w, { ...range, groupBy: "api_key", groupLimit: 100 })).usage!;
  // Twenty keys and the requests without one.
  assert.is(all.groups.length, 21);
  assert.is(all.moreGroups, 0);
  assert.ok(all.groups.some((g) => g.key === ""), "requests without a recognised key form a group");
  for (let i = 1; i < all.groups.length; i++) {
    const [a, b] = [all.groups[i - 1]!, all.groups[i]!];
    assert.ok(a.counts!.requests > b.counts!.requests || (a.counts!.requests === b.counts!.requests && a.key < b.key), `order at ${i}`);
  }
  const byDefault = (await usage(w, { ...range, groupBy: "api_key" })).usage!;
  assert.equal(byDefault.groups.map((g) => g.key), all.groups.slice(0, 10).map((g) => g.key));
  assert.is(byDefault.moreGroups, 11);
  const three = (await usage(w, { ...range, groupBy: "api_key", groupLimit: 3 })).usage!;
  assert.equal(plainUsage(three), expectedUsage(entries, { from: D0, to: D0 + 3 * DAY, bucket: "day", groupBy: "api_key", groupLimit: 3 }));
  assert.is(three.moreGroups, 18);
  assert.ok(three.groups[0]!.key === keyId(0), "the skew makes the first key the busiest");
  // Without group_by: no groups.
  const none = (await usage(w, range)).usage!;
  assert.equal([none.groups, none.moreGroups, none.groupBy], [[], 0, ""]);
});

it("a range without traffic is all zeros, one point per bucket", async (w) => {
  const res = (await usage(w, { from: ts(D0), to: ts(D0 + 6 * HOUR), groupBy: "entity" })).usage!;
  assert.is(res.series.length, 6);
  assert.is(res.total!.requests, 0n);
  assert.equal(res.groups, []);
  assert.equal(plainUsage(res).series.map((p) => p.counts.latency.buckets.length), Array(6).fill(13));
});

it("validation: bucket, group_by, group_limit and timestamps, every violation at once; a range that is empty, too long or too fine", async (w) => {
  const bad = await rejects(usage(w, { bucket: "week", groupBy: "customer", groupLimit: 101, from: { seconds: 0n, nanos: -1 } }), Code.InvalidArgument, "4 fields are invalid");
  assert.equal(violations(bad), [
    { field: "bucket", description: "must be hour or day" },
    { field: "group_by", description: "must be one of api_key, instance, service, entity, operation, outcome" },
    { field: "group_limit", description: "must be between 1 and 100 (0 means 10)" },
    { field: "from", description: "must be between 0001-01-01 and 9999-12-31" },
  ]);
  await rejects(usage(w, { groupLimit: -1 }), Code.InvalidArgument, "group_limit: must be between 1 and 100 (0 means 10)");
  await rejects(usage(w, { bucket: "Hour" }), Code.InvalidArgument, "bucket: must be hour or day");
});

it("ranges: one whose `to` is not after its `from` is empty; a longer one is cut to its most recent 400 days and 1000 buckets; the answer says which", async (w) => {
  const range = async (req: Parameters<typeof usage>[1]) => {
    const res = (await usage(w, req)).usage!;
    return [new Date(Number(res.from!.seconds) * 1000).toISOString(), new Date(Number(res.to!.seconds) * 1000).toISOString(), res.series.length, res.total!.requests];
  };
  const iso = (t: number) => new Date(t).toISOString();
  // Empty: at the start of `from`'s bucket, nothing counted.
  assert.equal(await range({ from: ts(D0), to: ts(D0) }), [iso(D0), iso(D0), 0, 0n]);
  assert.equal(await range({ from: ts(D0 + 90 * 60_000), to: ts(D0) }), [iso(D0 + HOUR), iso(D0 + HOUR), 0, 0n]);
  // Only `from`, in the future: `to` defaults to now, so the range is empty too.
  const future = await range({ from: ts(w.now.getTime() + HOUR) });
  assert.equal([future[0] === future[1], future[2]], [true, 0]);
  // 400 days exactly is kept by day; rounding counts (400 days and a minute is 401 days, cut to 400).
  assert.equal(await range({ from: ts(D0), to: ts(D0 + 400 * DAY), bucket: "day" }), [iso(D0), iso(D0 + 400 * DAY), 400, 0n]);
  assert.equal(await range({ from: ts(D0), to: ts(D0 + 400 * DAY + 60_000), bucket: "day" }), [iso(D0 + DAY), iso(D0 + 401 * DAY), 400, 0n]);
  assert.equal(await range({ from: ts(D0 - 3650 * DAY), to: ts(D0), bucket: "day" }), [iso(D0 - 400 * DAY), iso(D0), 400, 0n]);
  // By hour: at most 1000 buckets, the most recent.
  assert.equal(await range({ from: ts(D0), to: ts(D0 + 1000 * HOUR) }), [iso(D0), iso(D0 + 1000 * HOUR), 1000, 0n]);
  assert.equal(await range({ from: ts(D0), to: ts(D0 + 1000 * HOUR + 1) }), [iso(D0 + HOUR), iso(D0 + 1001 * HOUR), 1000, 0n]);
  // At the ends of what a timestamp can be: the default `from` stays in year 1, `to` in year 9999 (its last bucket left out).
  const first = -62_135_596_800_000;
  assert.equal(await range({ to: ts(first) }), [iso(first), iso(first), 0, 0n]);
  const last = 253_402_300_799_000;
  assert.equal(await range({ to: ts(last - 30 * 60_000) }), [iso(last + 1000 - 25 * HOUR), iso(last + 1000 - HOUR), 24, 0n]);
});

test("latency quantiles: linear inside the bucket they fall in, from 0 in the first, the last bound above it, 0 without answers", () => {
  const counts = (entries: Record<number, number>) => Array.from({ length: 13 }, (_, i) => entries[i] ?? 0);
  assert.is(estimateQuantile(0.5, counts({})), 0);
  // Ten answers in (50, 100]: the median is halfway through the bucket.
  assert.is(estimateQuantile(0.5, counts({ 4: 10 })), 75);
  assert.is(estimateQuantile(0.95, counts({ 4: 10 })), 97.5);
  // First bucket starts at 0.
  assert.is(estimateQuantile(0.5, counts({ 0: 4 })), 2.5);
  // 90 fast, 10 slow: p50 among the fast, p95 and p99 among the slow.
  const mixed = counts({ 1: 90, 9: 10 });
  // (Rounded to the microsecond.)
  assert.is(estimateQuantile(0.5, mixed), 7.778);
  assert.is(estimateQuantile(0.95, mixed), 2500 + 2500 * 0.5);
  assert.is(estimateQuantile(0.99, mixed), 2500 + 2500 * 0.9);
  // Above the last bound: the last bound.
  assert.is(estimateQuantile(0.99, counts({ 12: 5 })), 30000);
  assert.is(estimateQuantile(0.5, counts({ 0: 1, 12: 9 })), 30000);
});

test.run();
