/**
 * The worker thread that keeps the embedded store's request log
 * (./request-log-worker.ts starts it): a {@link MemoryRequestLog} of its
 * own, opened from `workerData`, answering the port's calls in the order
 * they come. Nothing else runs here.
 */
import { parentPort, workerData } from "node:worker_threads";
import { openMemoryRequestLog, type MemoryRequestLog } from "./memory-request-log.js";
import { wireError, type LogCall, type LogThreadData, type FromLogThread } from "./request-log-worker.js";
import type { RequestLogRecord } from "./request-logs.js";

const port = parentPort;
if (port === null) throw new Error("request-log-thread.ts runs as a worker thread (see ./request-log-worker.ts)");

function post(message: FromLogThread): void {
  port!.postMessage(message);
}

/** A problem's fields as they can cross to the main thread (an error as its name and message). */
function cloneable(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) out[k] = v instanceof Error ? wireError(v) : v;
  return out;
}

/**
 * `records` but those of `again` the log holds: read back from the file,
 * where a worker that stopped before answering had written them (see
 * RequestLogWorker's `inDoubt`).
 */
async function notHeld(log: MemoryRequestLog, records: readonly RequestLogRecord[], again: readonly string[]): Promise<readonly RequestLogRecord[]> {
  const held = new Set<string>();
  for (const id of again) if ((await log.get(id)) !== undefined) held.add(id);
  return held.size === 0 ? records : records.filter((r) => !held.has(r.id));
}

async function run(log: MemoryRequestLog, call: LogCall): Promise<unknown> {
  switch (call.op) {
    case "append":
      return log.append(call.again === undefined ? call.records : await notHeld(log, call.records, call.again));
    case "get":
      return log.get(call.id);
    case "query":
      return log.query(call.query);
    case "purge":
      return log.purge(call.now);
    case "trim":
      return log.trim(call.maxEntries);
    case "idle":
      return log.idle();
    case "stats":
      return log.stats();
  }
}

const data = workerData as LogThreadData;
let log: MemoryRequestLog;
try {
  log = await openMemoryRequestLog({
    dataDir: data.dataDir,
    maxEntries: data.maxEntries,
    clock: () => new Date(data.openedAtMs),
    onProblem: (fields, message) => post({ kind: "problem", fields: cloneable(fields), message }),
  });
} catch (err) {
  post({ kind: "failed", error: wireError(err) });
  process.exit(1);
}
port.on("message", (call: LogCall) => {
  run(log, call).then(
    (value) => post({ kind: "reply", seq: call.seq, value }),
    (err: unknown) => post({ kind: "reply", seq: call.seq, error: wireError(err) }),
  );
});
post({ kind: "ready" });
