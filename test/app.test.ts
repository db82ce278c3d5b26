/**
 * The composition root (src/app.ts), where a setting must reach the part it
 * configures: ERPLINK_LOG_THREAD=on puts the embedded store's request log in a
 * worker thread of its own (src/store/request-log-worker.ts), `off` (the
 * default) keeps it in the serving thread, and either way a request is listed
 * by GET /admin/logs once the writer has flushed.
 */
import { rmSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createErplink } from "../src/app.js";
import { loadConfig } from "../src/config.js";
import { MemoryRequestLog } from "../src/store/memory-request-log.js";
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
