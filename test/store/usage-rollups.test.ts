/**
 * UsageRollupStore on the store tests run on (embedded in memory, or a
 * fresh MongoDB database per test when ERPLINK_TEST_MONGODB_URL is set):
 * what is added reads back per hour (totals), per day (totals and groups,
 * by range or by id) and per (day, writer) id (each hour's groups); adds
 * accumulate per writer; group values of any shape are field-safe and
 * round-trip; ranges are half-open; the purge keeps what the retention
 * still covers; names never become paths.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Counters, GroupCounts, RollupDelta, Store, StoredHourGroups, StoredRollup } from "../../src/store/index.js";
import { openTestStore, testMongoUrl } from "../../test-support/world.js";

type TestStore = Store & { dispose(): Promise<void> };

const test = suite<{ store: TestStore }>(`UsageRollupStore (${testMongoUrl() === undefined ? "embedded (memory)" : "mongodb"})`);

test.before.each(async (ctx) => {
  ctx.store = await openTestStore();
});
test.after.each(async (ctx) => {
  await ctx.store.dispose();
});

const H = (iso: string) => new Date(iso);
const H0 = H("2026-01-02T03:00:00.000Z");
const H1 = H("2026-01-02T04:00:00.000Z");
const H2 = H("2026-01-02T05:00:00.000Z");
const D0 = H("2026-01-02T00:00:00.000Z");
const D1 = H("2026-01-03T00:00:00.000Z");

/** Group values that must survive as field names: dots, `$`, `%`, empty, non-ASCII, a leading `v`. */
const ODD_VALUES = ["A_BusinessPartner", "a.b", "$where", "50%", "", "Kunde€", "v", "(other)", "x|y"];

function groups(entries: Record<string, Record<string, Counters>>): GroupCounts {
  return new Map(Object.entries(entries).map(([kind, values]) => [kind, new Map(Object.entries(values))]));
}

function delta(start: Date, writer: string, totals: Counters, g: Record<string, Record<string, Counters>> = {}): RollupDelta {
  return { start, writer, totals, groups: groups(g) };
}

/** Rollups as plain data, sorted by start then writer, for exact comparison. */
function plain(rollups: StoredRollup[]) {
  return rollups
    .map((r) => ({
      start: r.start.toISOString(),
      writer: r.writer,
      totals: r.totals,
      groups: Object.fromEntries([...r.groups].map(([k, v]) => [k, Object.fromEntries(v)])),
    }))
    .sort((a, b) => (a.start + a.writer < b.start + b.writer ? -1 : 1));
}

/** Hourly groups as plain data, sorted by day then writer. */
function plainHours(docs: StoredHourGroups[]) {
  return docs
    .map((d) => ({
      start: d.start.toISOString(),
      writer: d.writer,
      hours: Object.fromEntries(
        [...d.hours].map(([hour, g]) => [new Date(hour).toISOString(), Object.fromEntries([...g].map(([k, v]) => [k, Object.fromEntries(v)]))]),
      ),
    }))
    .sort((a, b) => (a.start + a.writer < b.start + b.writer ? -1 : 1));
}

test("add then read: hours carry totals, days totals and groups, hourGroups each hour's groups by (day, writer); odd values round-trip", async ({ store }) => {
  const entity = Object.fromEntries(ODD_VALUES.map((v, i) => [v, { n: i + 1 }]));
  await store.usageRollups.add({
    hours: [
      delta(H0, "w1", { n: 9, ls: 12.5 }, { entity, api_key: { "": { n: 9 } } }),
      delta(H2, "w1", { n: 1 }, { api_key: { k: { n: 1 } } }),
    ],
    days: [delta(D0, "w1", { n: 10, ls: 12.5 }, { entity, api_key: { "": { n: 9 }, k: { n: 1 } } })],
  });
  assert.equal(plain(await store.usageRollups.hours(H0, H1)), [
    { start: H0.toISOString(), writer: "w1", totals: { n: 9, ls: 12.5 }, groups: {} },
  ]);
  const day = { start: D0.toISOString(), writer: "w1", totals: { n: 10, ls: 12.5 }, groups: { entity, api_key: { "": { n: 9 }, k: { n: 1 } } } };
  assert.equal(plain(await store.usageRollups.days(D0, D1)), [day]);
  assert.equal(plain(await store.usageRollups.daysOf([{ start: D0, writer: "w1" }, { start: D1, writer: "w1" }, { start: D0, writer: "w2" }])), [day]);
  assert.equal(plainHours(await store.usageRollups.hourGroups([{ start: D0, writer: "w1" }, { start: D1, writer: "w1" }, { start: D0, writer: "w2" }])), [
    {
      start: D0.toISOString(),
      writer: "w1",
      hours: { [H0.toISOString()]: { entity, api_key: { "": { n: 9 } } }, [H2.toISOString()]: { api_key: { k: { n: 1 } } } },
    },
  ]);
});

test("adds accumulate per (bucket, writer); another writer's counts stay in their own documents", async ({ store }) => {
  const once = { hours: [delta(H0, "w1", { n: 1, ok: 1 }, { entity: { E: { n: 1 } } })], days: [delta(D0, "w1", { n: 1, ok: 1 })] };
  await store.usageRollups.add(once);
  await store.usageRollups.add(once);
  await store.usageRollups.add({
    hours: [
      delta(H0, "w1", { n: 1, dn: 1, d_ENTITY: 1 }, { entity: { F: { n: 1 } } }),
      delta(H1, "w1", { n: 1 }, { entity: { E: { n: 1 } } }),
      delta(H0, "w2", { n: 5 }, { entity: { E: { n: 5 } } }),
    ],
    days: [delta(D0, "w2", { n: 5 })],
  });
  assert.equal(plain(await store.usageRollups.hours(H0, H1)), [
    { start: H0.toISOString(), writer: "w1", totals: { n: 3, ok: 2, dn: 1, d_ENTITY: 1 }, groups: {} },
    { start: H0.toISOString(), writer: "w2", totals: { n: 5 }, groups: {} },
  ]);
  assert.equal(plainHours(await store.usageRollups.hourGroups([{ start: D0, writer: "w1" }, { start: D0, writer: "w2" }])), [
    {
      start: D0.toISOString(),
      writer: "w1",
      hours: { [H0.toISOString()]: { entity: { E: { n: 2 }, F: { n: 1 } } }, [H1.toISOString()]: { entity: { E: { n: 1 } } } },
    },
    { start: D0.toISOString(), writer: "w2", hours: { [H0.toISOString()]: { entity: { E: { n: 5 } } } } },
  ]);
  assert.equal(plain(await store.usageRollups.days(D0, D1)).map((r) => [r.writer, r.totals]), [
    ["w1", { n: 2, ok: 2 }],
    ["w2", { n: 5 }],
  ]);
});

test("ranges are half-open on the bucket start: [from, to)", async ({ store }) => {
  await store.usageRollups.add({
    hours: [H0, H1, H2].map((h, i) => delta(h, "w1", { requests: i + 1 })),
    days: [D0, D1].map((d, i) => delta(d, "w1", { requests: i + 1 })),
  });
  const starts = (rs: StoredRollup[]) => plain(rs).map((r) => r.start);
  assert.equal(starts(await store.usageRollups.hours(H0, H2)), [H0.toISOString(), H1.toISOString()]);
  assert.equal(starts(await store.usageRollups.hours(H1, new Date(H1.getTime() + 1))), [H1.toISOString()]);
  assert.equal(starts(await store.usageRollups.hours(new Date(H0.getTime() + 1), H1)), []);
  assert.equal(starts(await store.usageRollups.days(D0, D1)), [D0.toISOString()]);
  assert.equal(starts(await store.usageRollups.days(D0, new Date(D1.getTime() + 1))), [D0.toISOString(), D1.toISOString()]);
});

test("purge(before) removes the hours and days that ended before it, and nothing the retention still covers", async ({ store }) => {
  await store.usageRollups.add({
    hours: [H0, H1, H2].map((h) => delta(h, "w1", { n: 1 }, { entity: { E: { n: 1 } } })),
    days: [D0, D1].map((d) => delta(d, "w1", { n: 1 })),
  });
  await store.usageRollups.add({ hours: [delta(new Date(D1.getTime() + 3_600_000), "w1", { n: 1 }, { entity: { E: { n: 1 } } })], days: [] });
  // H0 ended at 04:00, before 04:30; H1 ends at 05:00; the day D0 has not ended, nor have its hourly groups.
  assert.is(await store.usageRollups.purge(H("2026-01-02T04:30:00.000Z")), 1);
  assert.equal(plain(await store.usageRollups.hours(D0, D1)).map((r) => r.start), [H1.toISOString(), H2.toISOString()]);
  assert.equal(plainHours(await store.usageRollups.hourGroups([{ start: D0, writer: "w1" }])).map((d) => Object.keys(d.hours).length), [3]);
  assert.is((await store.usageRollups.days(D0, D1)).length, 1);
  // Once the day D0 has ended (and everything in it), it goes: two hours, its hourly groups and the day.
  assert.is(await store.usageRollups.purge(H("2026-01-03T00:30:00.000Z")), 4);
  assert.equal(await store.usageRollups.hourGroups([{ start: D0, writer: "w1" }]), []);
  assert.equal(plain(await store.usageRollups.days(D0, new Date(D1.getTime() + 86_400_000))).map((r) => r.start), [D1.toISOString()]);
  assert.equal(plain(await store.usageRollups.hours(D1, new Date(D1.getTime() + 86_400_000))).map((r) => r.start), [
    new Date(D1.getTime() + 3_600_000).toISOString(),
  ]);
});

test("names never become paths: counters, group kinds and writer ids that are not plain names throw TypeError and write nothing", async ({ store }) => {
  const bad: [string, () => Promise<void>][] = [
    ["counter with a dot", () => store.usageRollups.add({ hours: [delta(H0, "w1", { "c.x": 1 })], days: [] })],
    ["value-looking counter", () => store.usageRollups.add({ hours: [], days: [delta(D0, "w1", { "": 1 })] })],
    ["counter with $", () => store.usageRollups.add({ hours: [], days: [delta(D0, "w1", { $inc: 1 })] })],
    ["group counter with a dot", () => store.usageRollups.add({ hours: [delta(H0, "w1", {}, { entity: { E: { "a.b": 1 } } })], days: [] })],
    ["group kind with a dot", () => store.usageRollups.add({ hours: [delta(H0, "w1", {}, { "g.x": { E: { requests: 1 } } })], days: [] })],
    ["writer with a |", () => store.usageRollups.add({ hours: [delta(H0, "w|1", { requests: 1 })], days: [] })],
    ["empty writer", async () => void (await store.usageRollups.hourGroups([{ start: D0, writer: "" }]))],
    ["writer with a space", async () => void (await store.usageRollups.daysOf([{ start: D0, writer: "w 1" }]))],
  ];
  for (const [what, op] of bad) {
    let err: unknown;
    try {
      await op();
    } catch (e) {
      err = e;
    }
    assert.instance(err, TypeError, what);
  }
  assert.equal(await store.usageRollups.hours(D0, D1), []);
  assert.equal(await store.usageRollups.days(D0, D1), []);
});

test.run();
