/**
 * The composition root (src/app.ts), where a setting must reach the part it
 * configures: ERPLINK_LOG_THREAD=on puts the embedded store's request log in a
 * worker thread of its own (src/store/request-log-worker.ts), `off` (the
 * default) keeps it in the serving thread, and either way a request is listed
 * by GET /admin/logs once the writer has flushed; a log in the serving thread
 * too large for the heap limit is warned of at start.
 */
import { rmSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { Writable } from "node:stream";
import { join } from "node:path";
import { getHeapStatistics } from "node:v8";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createErplink } from "../src/app.js";
import { loadConfig } from "../src/config.js";
import { ENTRY_HEAP_BYTES, MemoryRequestLog } from "../src/store/memory-request-log.js";
import { RequestLogWorker } from "../src/store/request-log-worker.js";

const MASTER = "erpl_test_master_key_0123456789abcdefghijklmnop";
const root = await mkdtemp(join(tmpdir(), "erplink-app-test-"));
process.on("exit", () => rmSync(root, { recursive: true, force: true }));
let dirs = 0;

const LogThread = suite("composition: ERPLINK_LOG_THREAD");

for (const [setting, env, kind] of [
  ["unset (off by default)", {}, MemoryRequestLog],
  ["on", { ERPLINK_LOG_THREAD: "on" }, RequestLogWorker],
  ["off", { ERPLINK_LOG_THREAD: "off" }, MemoryRequestLog],
] as const) {
  LogThread(`${setting}: the embedded log with a data directory is a ${kind.name}, and lists what was requested`, async () => {
    const erplink = await createErplink(
      loadConfig({
        ERPLINK_DATA_DIR: join(root, `d${dirs++}`),
        ERPLINK_MASTER_KEY: MASTER,
        ERPLINK_ENCRYPTION_KEY: "cd".repeat(32),
        LOG_LEVEL: "silent",
        // Metrics wrap the log in their timing (src/store/instrumented.ts): off, its class is seen.
        ERPLINK_METRICS: "off",
        ...env,
      }),
    );
    try {
      assert.instance(erplink.store.logs, kind);
      const auth = { authorization: `Bearer ${MASTER}` };
      const listed = await erplink.app.inject({ method: "GET", url: "/admin/systems?app-test=1", headers: auth });
      assert.is(listed.statusCode, 200);
      await erplink.flushLogs();
      const logs = await erplink.app.inject({ method: "GET", url: "/admin/logs?page_size=10", headers: auth });
      assert.is(logs.statusCode, 200, logs.body);
      const paths = (JSON.parse(logs.body) as { data: { path: string }[] }).data.map((e) => e.path);
      assert.equal(paths, ["/admin/systems?app-test=1"]);
    } finally {
      await erplink.close();
    }
  });
}

LogThread.run();

const Heap = suite("composition: the request log against the heap limit");

/** The warnings createErplink logs for `env` (pino's JSON lines at level 40). */
async function startWarnings(env: Record<string, string>): Promise<string[]> {
  const lines: string[] = [];
  const erplink = await createErplink(
    loadConfig({ ERPLINK_DATA_DIR: ":memory:", ERPLINK_MASTER_KEY: MASTER, ERPLINK_ENCRYPTION_KEY: "cd".repeat(32), LOG_LEVEL: "warn", ERPLINK_METRICS: "off", ...env }),
    {
      logDestination: new Writable({
        write(chunk: Buffer, _e, done) {
          for (const l of chunk.toString("utf8").split("\n")) if (l !== "") lines.push(l);
          done();
        },
      }),
    },
  );
  await erplink.close();
  return lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.level === 40).map((l) => l.msg);
}

Heap("the default cap fits this heap: no warning; no cap, or a cap whose entries outgrow half the heap: a warning that says what to change", async () => {
  const limitMiB = Math.round(getHeapStatistics().heap_size_limit / 2 ** 20);
  assert.equal(await startWarnings({}), []);
  assert.equal(await startWarnings({ ERPLINK_LOG_MAX_ENTRIES: "0" }), [
    "the request log has no cap (ERPLINK_LOG_MAX_ENTRIES=0) and is kept in the heap until the retention purge: set a cap, or ERPLINK_LOG_THREAD=on",
  ]);
  // Entries enough for more than half of this heap, within the setting's range.
  const entries = Math.ceil((getHeapStatistics().heap_size_limit * 0.6) / ENTRY_HEAP_BYTES);
  const warned = await startWarnings({ ERPLINK_LOG_MAX_ENTRIES: String(entries) });
  assert.equal(warned, [
    `a full request log takes about ${Math.round((entries * ENTRY_HEAP_BYTES) / 2 ** 20)} MiB of a ${limitMiB} MiB heap: lower ERPLINK_LOG_MAX_ENTRIES or raise node's --max-old-space-size`,
  ]);
  const dir = join(root, `d${dirs++}`);
  assert.equal(await startWarnings({ ERPLINK_LOG_MAX_ENTRIES: "0", ERPLINK_LOG_THREAD: "on", ERPLINK_DATA_DIR: dir }), [], "a log in a thread of its own has its own heap");
});

Heap.run();
