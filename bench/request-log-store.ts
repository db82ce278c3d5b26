/**
 * What the request log costs on the embedded store (nedb, in memory), at a
 * given size: memory per entry, insert and trim time per entry, and the
 * time of the admin API's listings. With `--indexes all` the collection
 * keeps every index of `requestLogsCollection` (as MongoDB does, and as an
 * embedded store with indexes would), with a list of fields those only
 * (`_id` is always indexed), to compare.
 *
 *   node --expose-gc --import tsx bench/request-log-store.ts [--entries 200000] [--indexes embedded|all|<field,…>]
 *
 * One process, no network; entries look like the data path's (bench/proxy.ts's
 * GET: ids from one generator, 10 % another key, 5 % another instance, 2 % 404).
 *
 * The embedded store has since moved its request log out of nedb into a
 * capped log of its own (src/store/memory-request-log.ts, measured by
 * bench/memory-request-log.ts): this measures the nedb collection it left.
 * Its trim then kept the ids in order beside nedb; that is gone with it
 * (no embedded collection is capped in production), and trim now sorts the
 * ids on each call, so its trim figure is no longer the one bench/README.md
 * reports.
 */
import { parseArgs } from "node:util";
import { createIdGenerator } from "../src/services/ids.js";
import { keptBy, type CollectionSpec } from "../src/store/collection.js";
import { createEmbeddedBackend } from "../src/store/embedded.js";
import { RequestLogStore, requestLogsCollection, type LogQuery, type RequestLogRecord } from "../src/store/request-logs.js";
import { intOption, median } from "./lib.js";

const { values } = parseArgs({ options: { entries: { type: "string", default: "200000" }, indexes: { type: "string", default: "embedded" } } });
const total = intOption("entries", values.entries, 5_000_000);
const fields = requestLogsCollection.indexes.map((i) => i.field);
const chosen = values.indexes!.split(",").filter((f) => f !== "");
if (values.indexes !== "embedded" && values.indexes !== "all" && chosen.some((f) => !fields.includes(f))) {
  throw new Error(`--indexes must be embedded, all, or a list of ${fields.join(", ")}`);
}
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with node --expose-gc");

const spec: CollectionSpec =
  values.indexes === "embedded"
    ? requestLogsCollection
    : {
        ...requestLogsCollection,
        indexes: requestLogsCollection.indexes
          .filter((i) => values.indexes === "all" || chosen.includes(i.field))
          .map((i) => ({ name: i.name, field: i.field, unique: i.unique })),
      };
const backend = await createEmbeddedBackend({ dataDir: ":memory:" });
const store = new RequestLogStore(await backend.collection(spec));
const newId = createIdGenerator();
const OTHER_KEY = "key_01KB0000000000000000000000";
let seq = 0;

function entry(): RequestLogRecord {
  const i = seq++;
  const timestamp = new Date();
  return {
    id: newId("log"),
    requestId: `${timestamp.getTime().toString(36)}-${i.toString(36).padStart(8, "0")}-bench`,
    timestamp,
    apiKeyId: i % 10 === 0 ? OTHER_KEY : "key_01KA0000000000000000000000",
    sessionId: "",
    method: "GET",
    path: `/odata/bench/ProductService/Products?$top=${12 + (i % 7)}`,
    status: i % 50 === 0 ? 404 : 200,
    durationMs: 1.234,
    instance: i % 20 === 0 ? "other" : "bench",
    service: "ProductService",
    accesses: [{ entity: "Products", operation: "list" }],
    denialStep: "",
    errorCode: "",
    errorMessage: "",
    upstreamStatus: 200,
    upstreamDurationMs: 0.8,
    clientIp: "127.0.0.1",
    userAgent: "undici",
    upstreamMethod: "GET",
    upstreamUrl: `http://127.0.0.1:40000/odata/ProductService/Products?$top=${12 + (i % 7)}`,
    responseBytes: 2048,
    expiresAt: new Date(timestamp.getTime() + 30 * 86_400_000),
  };
}

const BATCH = 500;
gc();
const before = process.memoryUsage();
let insertMs = 0;
for (let n = 0; n < total; n += BATCH) {
  const batch = Array.from({ length: Math.min(BATCH, total - n) }, entry);
  const t = performance.now();
  await store.append(batch);
  insertMs += performance.now() - t;
}
gc();
const after = process.memoryUsage();
console.log(
  `${total} entries, indexes: ${values.indexes} (${[...spec.indexes.filter((i) => keptBy(i, "embedded")).map((i) => i.field), "_id"].join(", ")})\n` +
    `  memory: heap ${((after.heapUsed - before.heapUsed) / total).toFixed(0)} B/entry, RSS ${((after.rss - before.rss) / total).toFixed(0)} B/entry ` +
    `(${((after.rss - before.rss) / 2 ** 20).toFixed(0)} MiB in all)\n` +
    `  insert: ${((insertMs * 1000) / total).toFixed(1)} µs/entry (batches of ${BATCH})`,
);

/** Median time of `runs` runs of `op` (ms). */
async function timed(runs: number, op: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await op();
    times.push(performance.now() - t);
  }
  return median(times);
}

const newest = await store.query({ limit: 100 });
const older = newest.items.at(-1)!.id;
const cases: [string, Omit<LogQuery, "limit">][] = [
  ["newest 100 (no filter)", {}],
  ["next page (before_id)", { beforeId: older }],
  ["api_key_id (10 % of entries)", { apiKeyId: OTHER_KEY }],
  ["instance (5 %)", { instance: "other" }],
  ["status=4xx (2 %)", { status: { gte: 400, lt: 500 } }],
  ["request_id (one entry)", { requestId: "none" }],
  ["from: the last second", { from: new Date(Date.now() - 1000) }],
];
for (const [name, q] of cases) {
  console.log(`  list ${name}: ${(await timed(5, () => store.query({ limit: 100, ...q }))).toFixed(1)} ms (median of 5)`);
}

// The cap: rounds of a batch in, the oldest batch out (as the writer does at a full cap); one
// with an index on a field of few values, where a round takes seconds.
const rounds = spec.indexes.some((i) => keptBy(i, "embedded") && ["apiKeyId", "instance", "status"].includes(i.field)) ? 1 : 10;
let trimMs = 0;
for (let round = 0; round < rounds; round++) {
  await store.append(Array.from({ length: BATCH }, entry));
  const t = performance.now();
  const { removed } = await store.trim(total);
  trimMs += performance.now() - t;
  if (removed !== BATCH) throw new Error(`trim removed ${removed}, not ${BATCH}`);
}
console.log(`  trim to ${total}: ${((trimMs * 1000) / (rounds * BATCH)).toFixed(1)} µs per entry removed (${(trimMs / rounds).toFixed(1)} ms per batch of ${BATCH})`);
await backend.close();
