/**
 * The embedded store's request log across a restart, end to end: an erplink
 * process (`src/main.ts`) on a data directory answers N requests, stops on
 * SIGTERM, and a new process on the same directory lists every one of them
 * exactly once, read back from `request_logs.jsonl`. Runs in the embedded
 * pass only (the MongoDB pass has its own, in store-faults.test.ts).
 */
import { rmSync } from "node:fs";
import { mkdtemp, readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { within } from "../../test-support/e2e.js";
import { rest, startErplinkProcess, type ErplinkProcess } from "../../test-support/processes.js";
import { testMongoUrl } from "../../test-support/world.js";

const MASTER = "erpl_request_log_restart_master_key_0123456789";

if (testMongoUrl() === undefined) {
  const test = suite<{ erplink?: ErplinkProcess }>("e2e: the embedded request log across a restart");
  const dir = await mkdtemp(join(tmpdir(), "erplink-log-restart-"));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  const env = { ERPLINK_DATA_DIR: dir, ERPLINK_MASTER_KEY: MASTER, ERPLINK_ENCRYPTION_KEY: "cd".repeat(32), LOG_LEVEL: "warn" };

  test.after(async (ctx) => {
    await ctx.erplink?.kill();
  });

  test("N requests, SIGTERM, a new process on the same data directory: all N listed once, with their fields", async (ctx) => {
    const first = await startErplinkProcess(env);
    ctx.erplink = first;
    const N = 30;
    const answers = await Promise.all(
      Array.from({ length: N }, (_, i) => rest(first.baseUrl, "GET", `/admin/systems?restart=${i}`, { auth: MASTER })),
    );
    assert.equal(
      answers.map((r) => r.status),
      Array(N).fill(200),
    );
    const expected = answers.map((r, i) => [r.headers.get("x-request-id") ?? "", "GET", `/admin/systems?restart=${i}`, 200, "master"]);
    first.main.child.kill("SIGTERM");
    assert.is(await within(20_000, "erplink exits after SIGTERM", first.main.exited), 0, first.output());
    assert.ok((await readdir(dir)).includes("request_logs.jsonl"), `files: ${(await readdir(dir)).join(", ")}`);

    const second = await startErplinkProcess(env);
    ctx.erplink = second;
    const res = await rest(second.baseUrl, "GET", "/admin/logs?page_size=1000", { auth: MASTER });
    assert.is(res.status, 200, res.text);
    const rids = new Set(expected.map((e) => e[0]));
    const found = (res.body.data as { request_id: string; method: string; path: string; status: number; api_key_id: string }[])
      .filter((e) => rids.has(e.request_id))
      .map((e) => [e.request_id, e.method, e.path, e.status, e.api_key_id]);
    assert.is(found.length, N, `found ${found.length} of ${N} (duplicates or losses)`);
    const byRid = new Map(found.map((e) => [e[0], e]));
    assert.equal(
      expected.map((e) => byRid.get(e[0]) ?? [e[0], "(missing)"]),
      expected,
    );
  });

  test.run();
}
