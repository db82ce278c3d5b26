/**
 * The capped request log (src/store/memory-request-log.ts) against the
 * nedb-backed RequestLogStore it replaces on the embedded store, property
 * based (fast-check, bounded): random sequences of appends (ids in order,
 * out of order, shuffled, small and large batches), queries (every filter,
 * alone and together, time and status ranges, `beforeId` on held and
 * unheld ids, limits from 0), gets, purges (expiries in and out of id
 * order), trims to a smaller cap and, for a file-backed log, close and
 * reopen; both must answer alike. The same runs (fewer) on the log in its
 * worker thread (src/store/request-log-worker.ts), every answer and error
 * having crossed between the threads. The cap is mirrored on the nedb side by removing the oldest
 * entries beyond it after each append (nedb has none), and what the cap
 * removed must be what the log counts.
 *
 * Environment: ERPLINK_FUZZ_SEED (default fixed), ERPLINK_LOG_DIFF_RUNS (300),
 * ERPLINK_LOG_THREAD_DIFF_RUNS (20).
 */
import { rmSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createIdGenerator } from "../../src/services/ids.js";
import type { DocumentCollection } from "../../src/store/collection.js";
import { createEmbeddedBackend } from "../../src/store/embedded.js";
import type { LogQuery, RequestLogRecord } from "../../src/store/index.js";
import { MemoryRequestLog, openMemoryRequestLog } from "../../src/store/memory-request-log.js";
import { openRequestLogWorker, type RequestLogWorker } from "../../src/store/request-log-worker.js";
import { openRequestLogStore, type RequestLogStore } from "../../src/store/request-logs.js";
import { envInt, fuzzSeed } from "../../test-support/fuzz/harness.js";
import { logRecord } from "../../test-support/log-entries.js";

const root = await mkdtemp(join(tmpdir(), "erplink-memory-log-diff-"));
process.on("exit", () => rmSync(root, { recursive: true, force: true }));

const RUNS = envInt("ERPLINK_LOG_DIFF_RUNS", 300);
const T0 = Date.parse("2026-01-02T03:04:05.678Z");
const MINUTE = 60_000;
const POOL = (() => {
  const newId = createIdGenerator(() => new Date(T0));
  return Array.from({ length: 80 }, () => newId("log"));
})();

// ------------------------------------------------------------------ generators

const KEYS = ["master", "key_01KA0000000000000000000000", "key_01KB0000000000000000000000", ""];
const INSTANCES = ["prod", "dev", ""];
const SERVICES = ["API_BP", "API_SO", ""];
const METHODS = ["GET", "POST", "DELETE"];
const STATUSES = [200, 204, 304, 400, 403, 404, 499, 500, 503];
const ENTITIES = ["A", "B", "C"];
const OPERATIONS = ["get", "list", "update"];
const REQUEST_IDS = ["r1", "r2", "r3"];

/** An entry's fields but its id; times in minutes after T0 (timestamps and expiries in any order relative to ids). */
const fieldsArb = fc.record({
  requestId: fc.constantFrom(...REQUEST_IDS),
  minute: fc.integer({ min: 0, max: 20 }),
  apiKeyId: fc.constantFrom(...KEYS),
  method: fc.constantFrom(...METHODS),
  status: fc.constantFrom(...STATUSES),
  instance: fc.constantFrom(...INSTANCES),
  service: fc.constantFrom(...SERVICES),
  accesses: fc.array(fc.record({ entity: fc.constantFrom(...ENTITIES), operation: fc.constantFrom(...OPERATIONS) }), { maxLength: 3 }),
  expiresMinute: fc.integer({ min: 0, max: 30 }),
});
type Fields = typeof fieldsArb extends fc.Arbitrary<infer T> ? T : never;

function record(id: string, f: Fields): RequestLogRecord {
  return logRecord({
    id,
    requestId: f.requestId,
    timestamp: new Date(T0 + f.minute * MINUTE),
    apiKeyId: f.apiKeyId,
    method: f.method,
    path: "/odata/x",
    status: f.status,
    durationMs: 1.5,
    instance: f.instance,
    service: f.service,
    // Plain objects, as the gateway makes them (fast-check's have no prototype).
    accesses: f.accesses.map((a) => ({ entity: a.entity, operation: a.operation })),
    expiresAt: new Date(T0 + f.expiresMinute * MINUTE),
  });
}

/** Every filter's value; a query takes a few of them (many together would rarely match anything). */
const filterValuesArb = fc.record({
  from: fc.integer({ min: 0, max: 21 }),
  to: fc.integer({ min: 0, max: 21 }),
  apiKeyId: fc.constantFrom(...KEYS, "key_01KC0000000000000000000000"),
  instance: fc.constantFrom(...INSTANCES),
  service: fc.constantFrom(...SERVICES),
  entity: fc.constantFrom(...ENTITIES, "D"),
  operation: fc.constantFrom(...OPERATIONS, "delete"),
  method: fc.constantFrom(...METHODS),
  status: fc.constantFrom(
    { gte: 200, lt: 300 },
    { gte: 400, lt: 500 },
    { gte: 404, lt: 405 },
    { gte: 500, lt: 600 },
    { gte: 100, lt: 200 },
  ),
  requestId: fc.constantFrom(...REQUEST_IDS, "r9"),
  beforeId: fc.nat(POOL.length - 1),
});
type FilterName = keyof (typeof filterValuesArb extends fc.Arbitrary<infer T> ? T : never);
const FILTER_NAMES: FilterName[] = [
  "from",
  "to",
  "apiKeyId",
  "instance",
  "service",
  "entity",
  "operation",
  "method",
  "status",
  "requestId",
  "beforeId",
];

const queryArb = fc
  .tuple(
    fc.oneof(
      fc.subarray(FILTER_NAMES, { maxLength: 3 }),
      // Entity and operation together: one access must have both.
      fc.constant<FilterName[]>(["entity", "operation"]),
    ),
    filterValuesArb,
  )
  .map(([names, values]) => Object.fromEntries(names.map((n) => [n, values[n]])) as Partial<typeof values>);

type QueryFields = typeof queryArb extends fc.Arbitrary<infer T> ? T : never;

type Op =
  | { kind: "append"; mode: "next" | "any"; picks: number[]; fields: Fields[] }
  | { kind: "query"; q: QueryFields; limit: number }
  | { kind: "get"; pick: number }
  | { kind: "purge"; minute: number }
  | { kind: "trim"; keep: number }
  | { kind: "reopen"; minute: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("append" as const),
      mode: fc.constantFrom("next" as const, "any" as const),
      picks: fc.array(fc.nat(1000), { minLength: 1, maxLength: 20 }),
      fields: fc.array(fieldsArb, { minLength: 20, maxLength: 20 }),
    }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("query" as const), q: queryArb, limit: fc.integer({ min: 0, max: 8 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("get" as const), pick: fc.nat(POOL.length - 1) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("purge" as const), minute: fc.integer({ min: 0, max: 31 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("reopen" as const), minute: fc.integer({ min: 0, max: 31 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("trim" as const), keep: fc.integer({ min: 0, max: 40 }) }) },
);

// ------------------------------------------------------------------ the run

/** The query an op describes (times and ids resolved). */
function queryOf(op: Extract<Op, { kind: "query" }>): LogQuery {
  const { from, to, beforeId, ...rest } = op.q;
  return {
    ...rest,
    ...(from !== undefined ? { from: new Date(T0 + from * MINUTE) } : {}),
    ...(to !== undefined ? { to: new Date(T0 + to * MINUTE) } : {}),
    ...(beforeId !== undefined ? { beforeId: POOL[beforeId] } : {}),
    limit: op.limit,
  };
}

let runs = 0;

/** What the runs exercised, checked at the end so that the generators cannot drift into testing nothing. */
const seen = { nonEmptyAnswers: 0, morePages: 0, evictions: 0, outOfOrderBatches: 0, purged: 0, reopens: 0, trims: 0 };

/** Runs `ops` on a capped log and on nedb (capped by hand), comparing every answer. */
async function differential(maxEntries: number, persisted: boolean, ops: Op[], threaded = false): Promise<void> {
  const dir = persisted || threaded ? join(root, `run${runs++}`) : undefined;
  const openMine = (minute: number): Promise<MemoryRequestLog | RequestLogWorker> =>
    dir === undefined
      ? Promise.resolve(new MemoryRequestLog({ maxEntries }))
      : threaded
        ? openRequestLogWorker({ dataDir: dir, maxEntries, clock: () => new Date(T0 + minute * MINUTE) })
        : openMemoryRequestLog({ dataDir: dir, maxEntries, clock: () => new Date(T0 + minute * MINUTE) });
  let mine = await openMine(0);
  const backend = await createEmbeddedBackend({ dataDir: ":memory:" });
  const nedb: RequestLogStore = await openRequestLogStore(backend);
  const collection = (nedb as unknown as { readonly collection: DocumentCollection }).collection;
  /** Ids held (the model of the cap), ascending. */
  let held: string[] = [];
  let evicted = 0;
  /** What the cap removed since the last trim, which the log's trim reports with its own. */
  let evictedSinceTrim = 0;
  /** The clock of purges and reopens (minutes after T0); it never goes back. */
  let now = 0;
  const used = new Set<string>();
  const trace: string[] = [];
  try {
    for (const op of ops) {
      trace.push(JSON.stringify(op.kind === "append" ? { ...op, fields: op.fields.length } : op));
      switch (op.kind) {
        case "append": {
          // Ids never used before (a writer's ids are new), so neither side refuses one.
          const unused = POOL.filter((id) => !used.has(id));
          const newest = [...used].sort().at(-1);
          let ids: string[];
          if (op.mode === "next") {
            // Ascending, after every id used: the writer's case.
            const after = newest === undefined ? 0 : POOL.indexOf(newest) + 1;
            ids = POOL.slice(after, after + op.picks.length);
          } else {
            // Any unused ids, in any order.
            const pool = [...unused];
            ids = op.picks.slice(0, pool.length).map((p) => pool.splice(p % pool.length, 1)[0]!);
          }
          if (ids.length === 0) break;
          const batch = ids.map((id, k) => record(id, op.fields[k % op.fields.length]!));
          if (newest !== undefined && ids.some((id) => id < newest)) seen.outOfOrderBatches++;
          for (const id of ids) used.add(id);
          trace.push(`  ids ${batch.map((r) => `${POOL.indexOf(r.id)} (expires ${(r.expiresAt.getTime() - T0) / MINUTE})`).join(", ")}`);
          await mine.append(batch);
          await nedb.append(batch);
          held = [...held, ...ids].sort();
          while (held.length > maxEntries) {
            const oldest = held.shift()!;
            await collection.delete(oldest);
            evicted++;
            evictedSinceTrim++;
            seen.evictions++;
          }
          assert.is((await mine.stats()).evicted, evicted, `evicted\n${trace.join("\n")}`);
          assert.is((await mine.stats()).entries, held.length, `entries\n${trace.join("\n")}`);
          break;
        }
        case "query": {
          const q = queryOf(op);
          const expected = await nedb.query(q);
          assert.equal(await mine.query(q), expected, `query ${JSON.stringify(q)}\n${trace.join("\n")}`);
          if (expected.items.length > 0) seen.nonEmptyAnswers++;
          if (expected.more) seen.morePages++;
          break;
        }
        case "get": {
          const id = POOL[op.pick]!;
          assert.equal(await mine.get(id), await nedb.get(id), `get ${op.pick}\n${trace.join("\n")}`);
          break;
        }
        case "purge": {
          now = Math.max(now, op.minute);
          const at = new Date(T0 + now * MINUTE);
          const expected = await nedb.purge(at);
          assert.is(await mine.purge(at), expected, `purge ${now}\n${trace.join("\n")}`);
          seen.purged += expected;
          held = (await nedb.query({ limit: 1000 })).items.map((r) => r.id).reverse();
          break;
        }
        case "trim": {
          const expected = await nedb.trim(op.keep);
          assert.equal(
            await mine.trim(op.keep),
            { removed: expected.removed + evictedSinceTrim, remaining: expected.remaining },
            `trim ${op.keep}\n${trace.join("\n")}`,
          );
          evictedSinceTrim = 0;
          seen.trims += expected.removed;
          held = (await nedb.query({ limit: 1000 })).items.map((r) => r.id).reverse();
          break;
        }
        case "reopen": {
          if (dir === undefined) break;
          // A restart at `minute`: what is expired then is not loaded; nedb purges it.
          now = Math.max(now, op.minute);
          await mine.close();
          mine = await openMine(now);
          seen.reopens++;
          await nedb.purge(new Date(T0 + now * MINUTE));
          held = (await nedb.query({ limit: 1000 })).items.map((r) => r.id).reverse();
          evicted = 0;
          evictedSinceTrim = 0;
          assert.equal(await mine.query({ limit: 1000 }), await nedb.query({ limit: 1000 }), `after reopen\n${trace.join("\n")}`);
          assert.is((await mine.stats()).entries, held.length);
          break;
        }
      }
    }
    // Everything, at the end.
    assert.equal(await mine.query({ limit: 1000 }), await nedb.query({ limit: 1000 }), `at the end\n${trace.join("\n")}`);
  } finally {
    await mine.close();
    await backend.close();
  }
}

const test = suite("capped request log vs the nedb-backed store (differential)");

test(`random appends, queries, gets, purges, trims and reopens: the same answers (${RUNS} runs, caps 1 to 40 and 10,000)`, async () => {
  const started = Date.now();
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constant(10_000)),
      fc.boolean(),
      fc.array(opArb, { minLength: 10, maxLength: 40, size: "max" }),
      (maxEntries, persisted, ops) => differential(maxEntries, persisted, ops),
    ),
    { seed: fuzzSeed(), numRuns: RUNS, includeErrorInReport: true },
  );
  assert.ok(Date.now() - started < 60_000, `took ${Date.now() - started} ms`);
  // Each at least once every other run on average (most come to several times a run).
  for (const [what, n] of Object.entries(seen)) assert.ok(n >= RUNS / 2, `${what}: only ${n} in ${RUNS} runs (${JSON.stringify(seen)})`);
});

const THREAD_RUNS = envInt("ERPLINK_LOG_THREAD_DIFF_RUNS", 20);

test(`the same log in a worker thread (src/store/request-log-worker.ts): the same answers (${THREAD_RUNS} runs)`, async () => {
  const before = { ...seen };
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constant(10_000)),
      fc.array(opArb, { minLength: 10, maxLength: 40, size: "max" }),
      (maxEntries, ops) => differential(maxEntries, true, ops, true),
    ),
    { seed: fuzzSeed() + 1, numRuns: THREAD_RUNS, includeErrorInReport: true },
  );
  for (const [what, n] of Object.entries(seen)) {
    const here = n - before[what as keyof typeof seen];
    assert.ok(here >= THREAD_RUNS / 4, `${what}: only ${here} in ${THREAD_RUNS} runs`);
  }
});

test.run();
