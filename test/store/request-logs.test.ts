/**
 * The request log on the store tests run on (embedded in memory: the capped
 * log of src/store/memory-request-log.ts; or a fresh MongoDB database per
 * test when ERPLINK_TEST_MONGODB_URL is set: RequestLogStore): the round
 * trip of every field, newest-first queries, every filter alone and
 * combined, half-open time and status ranges, beforeId paging, the
 * retention purge and the cap (trim).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createIdGenerator } from "../../src/services/ids.js";
import type { DocumentCollection } from "../../src/store/collection.js";
import { createEmbeddedBackend } from "../../src/store/embedded.js";
import { createStore, type LogQuery, type RequestLogRecord, type Store } from "../../src/store/index.js";
import { requestLogsCollection } from "../../src/store/request-logs.js";
import { logRecord } from "../../test-support/log-entries.js";
import { openTestStore, testMongoUrl } from "../../test-support/world.js";

type TestStore = Store & { dispose(): Promise<void> };

const test = suite<{ store: TestStore }>(`request log (${testMongoUrl() === undefined ? "embedded (memory)" : "mongodb"})`);

test.before.each(async (ctx) => {
  ctx.store = await openTestStore();
});
test.after.each(async (ctx) => {
  await ctx.store.dispose();
});

const T0 = Date.parse("2026-01-02T03:04:05.678Z");
const MINUTE = 60_000;
const KEY_A = "key_01KA0000000000000000000000";
const KEY_B = "key_01KB0000000000000000000000";

/** Ids in strictly ascending order, as the writer's generator makes them. */
const IDS = (() => {
  const newId = createIdGenerator(() => new Date(T0));
  const ids = Array.from({ length: 10 }, () => newId("log"));
  assert.equal([...ids].sort(), ids, "precondition: ids ascend");
  return ids;
})();

function entry(i: number, fields: Partial<RequestLogRecord> = {}): RequestLogRecord {
  return logRecord({
    id: IDS[i]!,
    requestId: `req-${i}`,
    timestamp: new Date(T0 + i * MINUTE),
    durationMs: 1.5,
    expiresAt: new Date(T0 + i * MINUTE + 30 * 86_400_000),
    ...fields,
  });
}

/**
 * Ten entries, oldest (0) to newest (9), one minute apart, with varied keys,
 * instances, services, accesses, methods and statuses.
 */
const FIXTURE: RequestLogRecord[] = [
  entry(0, { apiKeyId: "master", method: "GET", status: 200 }),
  entry(1, {
    apiKeyId: KEY_A,
    method: "GET",
    status: 200,
    instance: "prod",
    service: "API_BP",
    accesses: [
      { entity: "A_BusinessPartner", operation: "list" },
      { entity: "A_BusinessPartnerAddress", operation: "get" },
    ],
  }),
  entry(2, { apiKeyId: KEY_B, method: "GET", status: 404, instance: "dev", service: "API_BP", accesses: [{ entity: "A_SalesOrder", operation: "get" }] }),
  entry(3, {
    apiKeyId: KEY_A,
    method: "DELETE",
    status: 403,
    instance: "prod",
    service: "API_SO",
    accesses: [{ entity: "A_SalesOrder", operation: "delete" }],
    denialStep: "OPERATION",
    errorCode: "FORBIDDEN",
  }),
  entry(4, { apiKeyId: "", method: "GET", status: 401, errorCode: "UNAUTHORIZED" }),
  entry(5, { apiKeyId: KEY_A, method: "PATCH", status: 500, instance: "prod", service: "API_BP", accesses: [{ entity: "A_BusinessPartner", operation: "update" }] }),
  entry(6, { apiKeyId: "master", method: "POST", status: 400, errorCode: "VALIDATION_ERROR" }),
  entry(7, { apiKeyId: KEY_B, method: "GET", status: 499, instance: "prod", service: "API_BP", accesses: [{ entity: "A_BusinessPartner", operation: "get" }] }),
  entry(8, { apiKeyId: KEY_A, method: "GET", status: 304, instance: "dev", service: "API_SO", accesses: [{ entity: "A_SalesOrder", operation: "list" }] }),
  entry(9, { apiKeyId: "master", method: "DELETE", status: 503, requestId: "req-2", errorCode: "UNAVAILABLE" }),
];

async function seed(store: Store): Promise<void> {
  // Two batches, out of order, to show order comes from the ids, not insertion.
  await store.logs.append(FIXTURE.slice(5));
  await store.logs.append(FIXTURE.slice(0, 5));
}

/** The fixture indexes of a query's result, in the order returned. */
async function indexes(store: Store, q: Omit<LogQuery, "limit"> & { limit?: number }): Promise<number[]> {
  const page = await store.logs.query({ limit: 100, ...q });
  return page.items.map((r) => IDS.indexOf(r.id));
}

test("append/get round-trips every field (accesses, fractional durations, dates to the millisecond, the upstream method and URL as sent)", async ({ store }) => {
  const rec: RequestLogRecord = {
    id: IDS[0]!,
    requestId: "req_7f0c6a8e-0000-4000-8000-000000000001",
    timestamp: new Date("2026-01-02T03:04:05.678Z"),
    apiKeyId: KEY_A,
    sessionId: "ses_01KA0000000000000000000000",
    method: "PATCH",
    path: "/odata/prod/API_BP/A_BusinessPartner('1')?$select=Name",
    status: 403,
    durationMs: 12.345,
    instance: "prod",
    service: "API_BP",
    accesses: [
      { entity: "A_BusinessPartner", operation: "update" },
      { entity: "A_BusinessPartnerAddress", operation: "get" },
    ],
    denialStep: "OPERATION",
    errorCode: "FORBIDDEN",
    errorMessage: "API key may not 'update' entity set 'A_BusinessPartner' of service 'API_BP' on instance 'prod'",
    upstreamStatus: 502,
    upstreamDurationMs: 7.25,
    clientIp: "2001:db8::1",
    userAgent: "curl/8.5.0",
    upstreamMethod: "PATCH",
    // Percent-encoding, `$` and `'` exactly as sent: stored verbatim, never normalised.
    upstreamUrl: "https://s4.example.com:8443/sap/opu/odata/sap/API_BP/A_BusinessPartner('1%2F2')?$select=Name&sap-client=100",
    responseBytes: 70_000,
    expiresAt: new Date("2026-02-01T03:04:05.679Z"),
  };
  await store.logs.append([rec]);
  const got = await store.logs.get(rec.id);
  assert.ok(got, "found");
  assert.equal(got, rec);
  assert.equal(Object.keys(got).sort(), Object.keys(rec).sort(), "no extra fields");
  assert.instance(got.timestamp, Date);
  assert.instance(got.expiresAt, Date);
  assert.is(await store.logs.get(IDS[1]!), undefined, "unknown id");
});

test("an entry written before upstream_method and upstream_url existed reads them as empty", async ({ store }) => {
  // Far from expiry: the embedded store leaves out expired entries when it reads an old file.
  // The upstream method and URL empty: what the old document (without them) must read back as.
  const rec = entry(0, {
    instance: "prod",
    service: "API_BP",
    upstreamStatus: 200,
    upstreamMethod: "",
    upstreamUrl: "",
    expiresAt: new Date("2999-01-01T00:00:00.000Z"),
  });
  const { id, upstreamMethod: _m, upstreamUrl: _u, accesses, ...rest } = rec;
  // The document as an older release wrote it.
  const doc = { _id: id, ...rest, accesses: [...accesses], accessKeys: [] };
  let reader: Store = store;
  let dispose = async () => {};
  if (store.kind === "mongodb") {
    // Straight into the adapter's collection.
    const collection = (store.logs as unknown as { readonly collection: DocumentCollection }).collection;
    assert.type(collection?.insertMany, "function", "RequestLogStore has no `collection`");
    await collection.insertMany([doc]);
  } else {
    // The embedded store kept the log in nedb (request_logs.db); it reads that file once, at open.
    const dir = await mkdtemp(join(tmpdir(), "erplink-request-logs-test-"));
    const backend = await createEmbeddedBackend({ dataDir: dir });
    await (await backend.collection(requestLogsCollection)).insertMany([doc]);
    await backend.close();
    reader = await createStore({ kind: "embedded", dataDir: dir });
    dispose = async () => {
      await reader.close();
      await rm(dir, { recursive: true, force: true });
    };
  }
  try {
    assert.equal(await reader.logs.get(id), rec);
    assert.equal((await reader.logs.query({ limit: 10 })).items, [rec]);
  } finally {
    await dispose();
  }
});

test("append writes a whole batch; query returns everything newest first (by id)", async ({ store }) => {
  await seed(store);
  assert.equal(await indexes(store, {}), [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
  const page = await store.logs.query({ limit: 100 });
  assert.equal(page.items, [...FIXTURE].reverse(), "every field of every entry");
  assert.is(page.more, false);
});

test("query on an empty log: no items, no more", async ({ store }) => {
  assert.equal(await store.logs.query({ limit: 10 }), { items: [], more: false });
});

test("each filter alone", async ({ store }) => {
  await seed(store);
  const cases: [string, Omit<LogQuery, "limit">, number[]][] = [
    ["apiKeyId key A", { apiKeyId: KEY_A }, [8, 5, 3, 1]],
    ["apiKeyId master", { apiKeyId: "master" }, [9, 6, 0]],
    ["apiKeyId empty string (unrecognised credential)", { apiKeyId: "" }, [4]],
    ["instance prod", { instance: "prod" }, [7, 5, 3, 1]],
    ["instance dev", { instance: "dev" }, [8, 2]],
    ["service API_SO", { service: "API_SO" }, [8, 3]],
    ["entity: any element of accesses (first element)", { entity: "A_BusinessPartner" }, [7, 5, 1]],
    ["entity: any element of accesses (second element)", { entity: "A_BusinessPartnerAddress" }, [1]],
    ["entity A_SalesOrder", { entity: "A_SalesOrder" }, [8, 3, 2]],
    ["operation get: any element of accesses", { operation: "get" }, [7, 2, 1]],
    ["operation list", { operation: "list" }, [8, 1]],
    ["operation delete", { operation: "delete" }, [3]],
    ["method GET", { method: "GET" }, [8, 7, 4, 2, 1, 0]],
    ["method DELETE", { method: "DELETE" }, [9, 3]],
    ["requestId", { requestId: "req-2" }, [9, 2]],
    ["status exactly 404", { status: { gte: 404, lt: 405 } }, [2]],
    ["status exactly 400", { status: { gte: 400, lt: 401 } }, [6]],
    ["status class 4xx: 400 and 499 in, 304 and 500 out", { status: { gte: 400, lt: 500 } }, [7, 6, 4, 3, 2]],
    ["status class 5xx", { status: { gte: 500, lt: 600 } }, [9, 5]],
    ["status class 3xx", { status: { gte: 300, lt: 400 } }, [8]],
    ["status class 2xx", { status: { gte: 200, lt: 300 } }, [1, 0]],
    ["status class 1xx: none", { status: { gte: 100, lt: 200 } }, []],
    ["no match", { instance: "nope" }, []],
    ["entity matching is exact (no prefix match)", { entity: "A_Business" }, []],
  ];
  const actual = [];
  for (const [name, q] of cases) actual.push([name, q, await indexes(store, q)]);
  assert.equal(actual, cases);
});

test("from/to are half-open [from, to): from inclusive, to exclusive, either alone", async ({ store }) => {
  await seed(store);
  const at = (i: number) => new Date(T0 + i * MINUTE);
  const cases: [string, Omit<LogQuery, "limit">, number[]][] = [
    ["from 2 to 5", { from: at(2), to: at(5) }, [4, 3, 2]],
    ["from alone (inclusive)", { from: at(7) }, [9, 8, 7]],
    ["to alone (exclusive)", { to: at(2) }, [1, 0]],
    ["from 1 ms after an entry excludes it", { from: new Date(T0 + 7 * MINUTE + 1) }, [9, 8]],
    ["to 1 ms after an entry includes it", { to: new Date(T0 + 1 * MINUTE + 1) }, [1, 0]],
    ["empty window", { from: at(3), to: at(3) }, []],
  ];
  const actual = [];
  for (const [name, q] of cases) actual.push([name, q, await indexes(store, q)]);
  assert.equal(actual, cases);
});

test("filters combine: every one given must match", async ({ store }) => {
  await seed(store);
  const at = (i: number) => new Date(T0 + i * MINUTE);
  const cases: [string, Omit<LogQuery, "limit">, number[]][] = [
    ["key A + instance prod", { apiKeyId: KEY_A, instance: "prod" }, [5, 3, 1]],
    ["key A + instance prod + 4xx", { apiKeyId: KEY_A, instance: "prod", status: { gte: 400, lt: 500 } }, [3]],
    ["entity + operation (same element)", { entity: "A_BusinessPartner", operation: "update" }, [5]],
    ["entity + service", { entity: "A_SalesOrder", service: "API_BP" }, [2]],
    ["method + status class", { method: "GET", status: { gte: 400, lt: 500 } }, [7, 4, 2]],
    ["time window + key", { from: at(2), to: at(9), apiKeyId: KEY_B }, [7, 2]],
    ["time window + status class", { from: at(3), to: at(8), status: { gte: 400, lt: 500 } }, [7, 6, 4, 3]],
    ["requestId + method", { requestId: "req-2", method: "GET" }, [2]],
    ["everything for one entry", {
      from: at(3),
      to: at(4),
      apiKeyId: KEY_A,
      instance: "prod",
      service: "API_SO",
      entity: "A_SalesOrder",
      operation: "delete",
      method: "DELETE",
      status: { gte: 403, lt: 404 },
      requestId: "req-3",
    }, [3]],
    ["contradictory", { apiKeyId: "master", instance: "prod" }, []],
  ];
  const actual = [];
  for (const [name, q] of cases) actual.push([name, q, await indexes(store, q)]);
  assert.equal(actual, cases);
});

test("paging: limit with more, then beforeId = the last id of the page, until more is false", async ({ store }) => {
  await seed(store);
  const pages: [number[], boolean][] = [];
  let beforeId: string | undefined;
  for (let i = 0; i < 10; i++) {
    const page = await store.logs.query({ limit: 3, beforeId });
    pages.push([page.items.map((r) => IDS.indexOf(r.id)), page.more]);
    if (!page.more) break;
    beforeId = page.items[page.items.length - 1]!.id;
  }
  assert.equal(pages, [
    [[9, 8, 7], true],
    [[6, 5, 4], true],
    [[3, 2, 1], true],
    [[0], false],
  ]);
});

test("paging: a page that ends exactly at the last entry has more = false; beforeId combines with filters", async ({ store }) => {
  await seed(store);
  const all = await store.logs.query({ limit: 10 });
  assert.is(all.items.length, 10);
  assert.is(all.more, false, "exactly limit entries: no more");
  const nine = await store.logs.query({ limit: 9 });
  assert.is(nine.more, true);
  const filtered = await store.logs.query({ apiKeyId: KEY_A, limit: 2 });
  assert.equal([filtered.items.map((r) => IDS.indexOf(r.id)), filtered.more], [[8, 5], true]);
  const next = await store.logs.query({ apiKeyId: KEY_A, limit: 2, beforeId: IDS[5] });
  assert.equal([next.items.map((r) => IDS.indexOf(r.id)), next.more], [[3, 1], false]);
  // beforeId is exclusive: the entry itself is not repeated.
  assert.equal(await indexes(store, { beforeId: IDS[3] }), [2, 1, 0]);
  assert.equal(await indexes(store, { beforeId: IDS[0] }), []);
});

test("purge(now) removes exactly the entries whose expiresAt is before now (one at now stays) and returns the count", async ({ store }) => {
  await seed(store);
  // Expiry of entry i is T0 + i min + 30 days; `now` equal to entry 4's expiry.
  const now = FIXTURE[4]!.expiresAt;
  assert.is(await store.logs.purge(now), 4, "entries 0..3 removed");
  assert.equal(await indexes(store, {}), [9, 8, 7, 6, 5, 4]);
  assert.is(await store.logs.get(IDS[3]!), undefined);
  assert.ok(await store.logs.get(IDS[4]!), "expiresAt == now is kept");
  assert.is(await store.logs.purge(now), 0, "idempotent");
  assert.is(await store.logs.purge(new Date(FIXTURE[9]!.expiresAt.getTime() + 1)), 6);
  assert.equal(await store.logs.query({ limit: 10 }), { items: [], more: false });
});

/** `n` entries with ascending ids (one generator), numbered by their requestId `cap-<i>`. */
function many(n: number): RequestLogRecord[] {
  const newId = createIdGenerator(() => new Date(T0));
  return Array.from({ length: n }, (_, i) => entry(0, { id: newId("log"), requestId: `cap-${i}`, timestamp: new Date(T0 + i) }));
}

/** The requestIds of every entry, newest first, read page by page. */
async function allRequestIds(store: Store): Promise<string[]> {
  const ids: string[] = [];
  let beforeId: string | undefined;
  for (;;) {
    const page = await store.logs.query({ limit: 40, beforeId });
    ids.push(...page.items.map((r) => r.requestId));
    if (!page.more) return ids;
    beforeId = page.items[page.items.length - 1]!.id;
  }
}

/** `cap-<to - 1>` down to `cap-<from>`: the listing of entries from..to-1. */
function newestFirst(from: number, to: number): string[] {
  return Array.from({ length: to - from }, (_, i) => `cap-${to - 1 - i}`);
}

test("trim(50) after 120 entries in batches: exactly the newest 50 remain, listed newest first; it says how many went and how many remain", async ({ store }) => {
  const entries = many(120);
  const results = [];
  for (let i = 0; i < 120; i += 30) {
    await store.logs.append(entries.slice(i, i + 30));
    results.push(await store.logs.trim(50));
  }
  assert.equal(results, [
    { removed: 0, remaining: 30 },
    { removed: 10, remaining: 50 },
    { removed: 30, remaining: 50 },
    { removed: 30, remaining: 50 },
  ]);
  assert.equal(await allRequestIds(store), newestFirst(70, 120));
  assert.is(await store.logs.get(entries[69]!.id), undefined, "the 70 oldest are gone");
  assert.ok(await store.logs.get(entries[70]!.id));
  assert.equal(await store.logs.trim(50), { removed: 0, remaining: 50 }, "nothing more to do");
  assert.equal(await store.logs.trim(1000), { removed: 0, remaining: 50 });
});

test("trim in chunks: a chunk smaller than the excess removes it all in several steps, oldest first", async ({ store }) => {
  const entries = many(120);
  await store.logs.append(entries);
  assert.equal(await store.logs.trim(50, 20), { removed: 70, remaining: 50 });
  assert.equal(await allRequestIds(store), newestFirst(70, 120));
});

test("trim goes by id, not by the order of writes: batches appended out of order, then more after a purge", async ({ store }) => {
  const entries = many(60);
  // Newer first, then older, then a middle slice: the oldest ids are still the ones to go.
  await store.logs.append(entries.slice(40, 60));
  await store.logs.append(entries.slice(0, 20));
  assert.equal(await store.logs.trim(30), { removed: 10, remaining: 30 });
  await store.logs.append(entries.slice(20, 40));
  assert.equal(await store.logs.trim(30), { removed: 20, remaining: 30 });
  assert.equal(await allRequestIds(store), newestFirst(30, 60));
  // Retention removes some (every fixture entry expires at the same time here: all of them), then new entries come.
  assert.is(await store.logs.purge(new Date(entries[0]!.expiresAt.getTime() + 1)), 30);
  const later = createIdGenerator(() => new Date(T0 + MINUTE));
  const fresh = Array.from({ length: 25 }, (_, i) => entry(0, { id: later("log"), requestId: `late-${i}` }));
  await store.logs.append(fresh);
  assert.equal(await store.logs.trim(20), { removed: 5, remaining: 20 });
  assert.equal((await store.logs.query({ limit: 100 })).items.map((r) => r.requestId), fresh.slice(5).map((r) => r.requestId).reverse());
});

test.run();
