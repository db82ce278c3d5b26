/**
 * The embedded request log in its worker thread (src/store/request-log-worker.ts):
 * what only the crossing between threads can break. Errors come back as the
 * store's classes with the in-thread log's messages (a duplicate id, a
 * filter that is not a scalar, a data directory it cannot write); the log's
 * own problems reach `onProblem`; a worker that stops fails the calls under
 * way with StoreUnavailableError, is reported, and the next call starts one
 * again that has every acknowledged entry; after `close` calls fail; an idle
 * worker does not keep the process alive; and `createStore` puts the log in
 * a thread only when asked and when it has a data directory. The answers
 * themselves are the differential suite's (memory-request-log-differential).
 */
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { appendFile, mkdir, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createIdGenerator } from "../../src/services/ids.js";
import { createStore, DuplicateKeyError, type RequestLogRecord } from "../../src/store/index.js";
import { StoreUnavailableError } from "../../src/store/errors.js";
import { MemoryRequestLog, openMemoryRequestLog, REQUEST_LOG_FILE } from "../../src/store/memory-request-log.js";
import { openRequestLogWorker, RequestLogWorker } from "../../src/store/request-log-worker.js";
import { logRecord } from "../../test-support/log-entries.js";
import { rejection } from "../../test-support/store-contract.js";

const root = await mkdtemp(join(tmpdir(), "erplink-log-worker-test-"));
process.on("exit", () => rmSync(root, { recursive: true, force: true }));

const T0 = Date.parse("2026-01-02T03:04:05.678Z");
const newId = createIdGenerator(() => new Date(T0));
const IDS = Array.from({ length: 6 }, () => newId("log"));
let dirs = 0;
const freshDir = () => join(root, `d${dirs++}`);

function entry(i: number): RequestLogRecord {
  return logRecord({
    id: IDS[i]!,
    requestId: `req-${i}`,
    timestamp: new Date(T0 + i * 1000),
    accesses: [{ entity: "A_Order", operation: "list" }],
    expiresAt: new Date(T0 + 86_400_000),
  });
}

/** The private worker, to stop it behind the log's back as a crash would. */
function threadOf(log: RequestLogWorker): { terminate(): Promise<number> } {
  return (log as unknown as { worker: { terminate(): Promise<number> } }).worker;
}

const test = suite("request log in a worker thread");

test("a duplicate id is a DuplicateKeyError, as in this thread, and nothing of its batch is kept", async () => {
  const log = await openRequestLogWorker({ dataDir: freshDir() });
  const here = new MemoryRequestLog();
  try {
    for (const l of [log, here]) await l.append([entry(0), entry(1)]);
    const errors = [];
    for (const l of [log, here]) errors.push(await rejection(() => l.append([entry(2), entry(1)]), "a batch holding a held id"));
    for (const err of errors) assert.instance(err, DuplicateKeyError);
    assert.equal(
      errors.map((e) => [(e as DuplicateKeyError).collection, (e as DuplicateKeyError).field, (e as Error).message]),
      [
        ["request_logs", "id", "duplicate value for request_logs.id"],
        ["request_logs", "id", "duplicate value for request_logs.id"],
      ],
    );
    assert.equal((await log.query({ limit: 10 })).items.map((r) => r.id), [IDS[1], IDS[0]]);
    assert.equal(await log.query({ limit: 10 }), await here.query({ limit: 10 }), "every field, dates as dates");
  } finally {
    await log.close();
  }
});

test("a filter that is not a scalar is the in-thread log's TypeError", async () => {
  const log = await openRequestLogWorker({ dataDir: freshDir() });
  try {
    const q = { apiKeyId: { $ne: "" } as unknown as string, limit: 5 };
    const there = await rejection(() => log.query(q));
    const here = await rejection(() => new MemoryRequestLog().query(q));
    assert.instance(there, TypeError);
    assert.is((there as Error).message, (here as Error).message);
    const get = await rejection(() => log.get({ $gt: "" } as unknown as string));
    assert.instance(get, TypeError);
    assert.is((get as Error).message, "filter on _id must be a scalar");
  } finally {
    await log.close();
  }
});

test("a data directory it cannot write fails the open with the in-thread log's message", async () => {
  const file = join(root, `plain-file-${dirs++}`);
  await writeFile(file, "not a directory");
  const dir = join(file, "data");
  const there = await rejection(() => openRequestLogWorker({ dataDir: dir }), "opening under a file");
  const here = await rejection(() => openMemoryRequestLog({ dataDir: dir }), "opening under a file, in this thread");
  assert.instance(there, Error);
  assert.is((there as Error).message, (here as Error).message);
  assert.match((there as Error).message, /ENOTDIR/);
});

test("the log's own problems reach onProblem: unreadable lines skipped at open", async () => {
  const dir = freshDir();
  await mkdir(dir, { recursive: true });
  const line = JSON.stringify({ ...entry(0), timestamp: entry(0).timestamp.toISOString(), expiresAt: entry(0).expiresAt.toISOString() });
  await appendFile(join(dir, REQUEST_LOG_FILE), `${line}\n{"torn`);
  const problems: [Record<string, unknown>, string][] = [];
  const log = await openRequestLogWorker({ dataDir: dir, onProblem: (fields, message) => problems.push([fields, message]), clock: () => new Date(T0) });
  try {
    assert.equal(problems, [
      [
        { file: join(dir, REQUEST_LOG_FILE), unreadable: 1, lines: 2 },
        "request log: lines of the file that are not entries were skipped (a torn last line after a crash is one)",
      ],
    ]);
    assert.equal((await log.query({ limit: 5 })).items.map((r) => r.id), [IDS[0]]);
    assert.equal((await log.stats()).load, { lines: 2, unreadable: 1, expired: 0, duplicates: 0, overCap: 0, migrated: 0 });
  } finally {
    await log.close();
  }
});

test("a worker that stops fails the calls under way, is reported, and the next call has every acknowledged entry", async () => {
  const problems: [Record<string, unknown>, string][] = [];
  const log = await openRequestLogWorker({ dataDir: freshDir(), onProblem: (fields, message) => problems.push([fields, message]), clock: () => new Date(T0) });
  try {
    await log.append([entry(0), entry(1)]);
    const underWay = log.query({ limit: 5 });
    await threadOf(log).terminate();
    assert.instance(await rejection(() => underWay, "a query under way"), StoreUnavailableError);
    assert.equal(problems, [[{ exitCode: 1, failedCalls: 1 }, "request log: its worker thread stopped; it is started again at the next call"]]);
    assert.equal((await log.query({ limit: 5 })).items.map((r) => r.id), [IDS[1], IDS[0]], "read again from the file");
    await log.append([entry(2)]);
    assert.equal((await log.query({ limit: 5 })).items.map((r) => r.id), [IDS[2], IDS[1], IDS[0]]);
  } finally {
    await log.close();
  }
});

test("a worker that cannot be started again (its data directory gone, a file in its place): calls fail with StoreUnavailableError, reported once per attempt", async () => {
  const problems: [Record<string, unknown>, string][] = [];
  const dir = freshDir();
  const log = await openRequestLogWorker({ dataDir: dir, onProblem: (fields, message) => problems.push([fields, message]), clock: () => new Date(T0) });
  try {
    await log.append([entry(0)]);
    await threadOf(log).terminate();
    await rm(dir, { recursive: true });
    await writeFile(dir, "not a directory");
    const calls = await Promise.all([rejection(() => log.query({ limit: 5 })), rejection(() => log.append([entry(1)]))]);
    for (const err of calls) {
      assert.instance(err, StoreUnavailableError);
      assert.match(String((err as Error).cause), `EEXIST: file already exists, mkdir '${dir}'`);
    }
    assert.equal(problems, [
      [{ exitCode: 1, failedCalls: 0 }, "request log: its worker thread stopped; it is started again at the next call"],
      [
        { err: { name: "Error", message: `EEXIST: file already exists, mkdir '${dir}'` } },
        "request log: its worker thread could not be started again; the next call tries again",
      ],
    ]);
    // Once the directory is back, the next call starts a worker that reads it.
    await rm(dir);
    assert.equal((await log.query({ limit: 5 })).items, []);
    // Closed while its worker cannot start: nothing is under way to wait for, and the stop goes on.
    await threadOf(log).terminate();
    await rm(dir, { recursive: true });
    await writeFile(dir, "not a directory");
    const starting = rejection(() => log.query({ limit: 5 }));
    await log.close();
    assert.instance(await starting, StoreUnavailableError);
  } finally {
    await log.close();
  }
});

test("a batch under way when the worker stopped, part of it already in the file: sent again, it is written (no DuplicateKeyError) and read back once", async () => {
  const dir = freshDir();
  const file = join(dir, REQUEST_LOG_FILE);
  const log = await openRequestLogWorker({ dataDir: dir, clock: () => new Date(T0) });
  try {
    await log.append([entry(0)]);
    // Large enough to be written in several chunks: the worker is stopped once
    // the first is in the file, before it can answer (as a crash would).
    const batch = Array.from({ length: 4000 }, (_, i) => logRecord({ id: newId("log"), requestId: `big-${i}`, path: `/admin/systems/${"x".repeat(600)}`, expiresAt: entry(0).expiresAt }));
    const before = (await stat(file)).size;
    const underWay = log.append(batch);
    while ((await stat(file)).size === before) await new Promise((resolve) => setImmediate(resolve));
    await threadOf(log).terminate();
    // Stopped mid-write, the append fails as an unavailable store would; a worker that
    // finished the write just before it was stopped answered it. Either way the batch
    // is sent again below, as the log writer does when it is not sure.
    const outcome = await underWay.then(
      () => "written",
      (err: unknown) => err,
    );
    if (outcome !== "written") assert.instance(outcome, StoreUnavailableError);
    // As the log writer does: the same batch again, to a worker that read the file back.
    await log.append(batch);
    assert.ok((await log.stats()).load.lines > 1, "the new worker read some of the batch from the file");
    const ids = [entry(0).id, ...batch.map((r) => r.id)];
    assert.equal((await log.query({ limit: 5000 })).items.map((r) => r.id).reverse(), ids);
    await log.close();
    const again = await openMemoryRequestLog({ dataDir: dir, clock: () => new Date(T0) });
    assert.equal((await again.query({ limit: 5000 })).items.map((r) => r.id).reverse(), ids, "the file, read back: each entry once");
  } finally {
    await log.close();
  }
});

test("after close every call fails with StoreUnavailableError, and the file holds what was appended", async () => {
  const dir = freshDir();
  const log = await openRequestLogWorker({ dataDir: dir });
  await log.append([entry(0)]);
  await log.close();
  await log.close();
  assert.instance(await rejection(() => log.query({ limit: 1 })), StoreUnavailableError);
  assert.instance(await rejection(() => log.append([entry(1)])), StoreUnavailableError);
  const again = await openMemoryRequestLog({ dataDir: dir, clock: () => new Date(T0) });
  assert.equal((await again.query({ limit: 5 })).items.map((r) => r.id), [IDS[0]]);
});

test("an idle worker does not keep the process alive", async () => {
  const dir = freshDir();
  const script = [
    `import { openRequestLogWorker } from ${JSON.stringify(new URL("../../src/store/request-log-worker.ts", import.meta.url).href)};`,
    `const log = await openRequestLogWorker({ dataDir: ${JSON.stringify(dir)} });`,
    `await log.append([${JSON.stringify({ ...entry(0) })}].map((r) => ({ ...r, timestamp: new Date(r.timestamp), expiresAt: new Date(r.expiresAt) })));`,
    `console.log((await log.query({ limit: 5 })).items.length);`,
  ].join("\n");
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | string>((resolve) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      resolve("still running after 20 s");
    }, 20_000);
    child.once("exit", (c) => {
      clearTimeout(timer);
      resolve(c ?? -1);
    });
  });
  assert.is(code, 0, err);
  assert.is(out.trim(), "1");
});

test("createStore puts the log in a thread only when asked, and never for a :memory: store", async () => {
  const threaded = await createStore({ kind: "embedded", dataDir: freshDir(), logThread: true });
  const inThread = await createStore({ kind: "embedded", dataDir: freshDir() });
  const memory = await createStore({ kind: "embedded", dataDir: ":memory:", logThread: true });
  try {
    assert.instance(threaded.logs, RequestLogWorker);
    assert.instance(inThread.logs, MemoryRequestLog);
    assert.instance(memory.logs, MemoryRequestLog);
    await threaded.logs.append([entry(0)]);
    assert.equal((await threaded.logs.query({ limit: 5 })).items.map((r) => r.id), [IDS[0]]);
  } finally {
    for (const s of [threaded, inThread, memory]) await s.close();
  }
});

test.run();
