/**
 * A few seconds' measure of the embedded store's capped request log
 * (src/store/memory-request-log.ts), beside the nedb-backed log it
 * replaced: heap per entry kept, and CPU per appended entry (in memory,
 * and with the file), for entries shaped as a data request's.
 *
 *   node --expose-gc --import tsx bench/memory-request-log.ts [entries]
 *
 * Entries (default 100,000) are appended in batches of 500, as the
 * writer does; every string of an entry is made afresh, as each request
 * makes its own. Heap is measured after a full GC.
 */
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createIdGenerator } from "../src/services/ids.js";
import { createEmbeddedBackend } from "../src/store/embedded.js";
import type { RequestLogPort, RequestLogRecord } from "../src/store/index.js";
import { openMemoryRequestLog } from "../src/store/memory-request-log.js";
import { openRequestLogStore } from "../src/store/request-logs.js";

const N = Number(process.argv[2] ?? 100_000);
const BATCH = 500;
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with node --expose-gc");

const newId = createIdGenerator();
const UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

/** A string in one piece, as the HTTP parser's are (a template literal makes a rope, which serializing flattens). */
const flat = (s: string): string => Buffer.from(s).toString();

/** A data request's entry, every string its own (as the gateway's are: names are cut from the URL). */
function entry(i: number): RequestLogRecord {
  const now = Date.now();
  const query = `?$top=${i % 50}&$select=BusinessPartner,BusinessPartnerFullName&$filter=BusinessPartner eq '${1000 + i}'`;
  const path = flat(`/odata/prod/API_BUSINESS_PARTNER/A_BusinessPartner${query}`);
  return {
    id: newId("log"),
    requestId: flat(`req_${randomUUID()}`),
    timestamp: new Date(now),
    apiKeyId: `key_01KA${String(i % 97).padStart(22, "0")}`,
    sessionId: "",
    method: "GET",
    path,
    status: 200,
    durationMs: 3.125 + (i % 7),
    instance: path.slice(7, 11),
    service: path.slice(12, 32),
    accesses: [{ entity: path.slice(33, 50), operation: "list" }],
    denialStep: "",
    errorCode: "",
    errorMessage: "",
    upstreamStatus: 200,
    upstreamDurationMs: 2.5 + (i % 5),
    clientIp: flat(`10.1.${i % 255}.${(i >> 8) % 255}`),
    userAgent: flat(`${UA} ${i % 3}`),
    upstreamMethod: "GET",
    upstreamUrl: flat(`https://s4.example.com:44300/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_BusinessPartner${query}&sap-client=100`),
    responseBytes: 1800 + (i % 400),
    expiresAt: new Date(now + 30 * 86_400_000),
  };
}

function heap(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed;
}

/** Appends N entries (made before the clock starts) to `log`; prints CPU and heap kept per entry. */
async function measure(name: string, log: RequestLogPort, after: () => Promise<void> = async () => {}): Promise<void> {
  const before = heap();
  const batches: RequestLogRecord[][] = [];
  for (let i = 0; i < N; i += BATCH) batches.push(Array.from({ length: Math.min(BATCH, N - i) }, (_, k) => entry(i + k)));
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (const batch of batches) await log.append(batch);
  await after();
  const wall = performance.now() - started;
  const used = process.cpuUsage(cpu);
  batches.length = 0;
  console.log(
    `${name.padEnd(28)} ${((used.user + used.system) / N).toFixed(2)} µs CPU/entry to append (${((wall * 1000) / N).toFixed(2)} µs wall); ${((heap() - before) / N).toFixed(0)} bytes/entry kept`,
  );
}

console.log(`${N} entries, batches of ${BATCH}`);

{
  // The entries alone, in an array: what any log that keeps them pays.
  const before = heap();
  const kept: RequestLogRecord[] = [];
  for (let i = 0; i < N; i++) kept.push(entry(i));
  console.log(`${"entries alone".padEnd(28)} ${((heap() - before) / N).toFixed(0)} bytes/entry`);
  kept.length = 0;
}

{
  const log = await openMemoryRequestLog({ maxEntries: 2 * N });
  await measure("capped log, in memory", log);
  // A filter nothing matches reads every entry; a page of the newest reads one page.
  for (const [what, q] of [
    ["no match (reads all)", { limit: 100, apiKeyId: "key_none" }],
    ["newest 100", { limit: 100 }],
    ["newest 100 with 'GET'", { limit: 100, method: "GET", status: { gte: 200, lt: 300 } }],
  ] as const) {
    const started = performance.now();
    await log.query(q);
    console.log(`${"".padEnd(28)} query ${what}: ${(performance.now() - started).toFixed(2)} ms`);
  }
}

{
  const dir = await mkdtemp(join(tmpdir(), "erplink-bench-log-"));
  try {
    const log = await openMemoryRequestLog({ maxEntries: 2 * N, dataDir: dir });
    await measure("capped log, with its file", log, () => log.idle());
    await log.close();
    const started = performance.now();
    const again = await openMemoryRequestLog({ maxEntries: 2 * N, dataDir: dir });
    console.log(`${"".padEnd(28)} reopen: ${(performance.now() - started).toFixed(0)} ms for ${again.stats().entries} entries`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

{
  const backend = await createEmbeddedBackend({ dataDir: ":memory:" });
  await measure("nedb (before), in memory", await openRequestLogStore(backend));
  await backend.close();
}

{
  const dir = await mkdtemp(join(tmpdir(), "erplink-bench-log-"));
  try {
    const backend = await createEmbeddedBackend({ dataDir: dir });
    await measure("nedb (before), with its file", await openRequestLogStore(backend));
    await backend.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
