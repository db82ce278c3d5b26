/**
 * LogWriter's cap (`maxEntries`) over the real store the tests run on
 * (embedded in memory, or MongoDB when ERPLINK_TEST_MONGODB_URL is set):
 * after each batch the oldest entries beyond the cap leave the store,
 * counted as evicted (not dropped: they were written); the newest remain,
 * listed newest first; the first flush trims what is already there; a
 * failed trim is reported and retried after the next batch; without a cap
 * nothing is removed.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createIdGenerator } from "../../src/services/ids.js";
import { LogWriter, type LogEntry } from "../../src/services/log-writer.js";
import type { RequestLogPort, Store } from "../../src/store/index.js";
import { logEntry } from "../../test-support/log-entries.js";
import { openTestStore, testMongoUrl } from "../../test-support/world.js";

type TestStore = Store & { dispose(): Promise<void> };

const test = suite<{ store: TestStore }>(`LogWriter with a cap (${testMongoUrl() === undefined ? "embedded (memory)" : "mongodb"})`);

test.before.each(async (ctx) => {
  ctx.store = await openTestStore();
});
test.after.each(async (ctx) => {
  await ctx.store.dispose();
});

const T0 = Date.parse("2026-01-02T03:04:05.000Z");

function entry(i: number): LogEntry {
  return logEntry({ requestId: `r${i}`, timestamp: new Date(T0 + i), path: `/admin/systems?i=${i}` });
}

/** A writer on `logs` with ids from one generator (ascending, as in erplink); problems go to `problems`. */
function writerOn(logs: RequestLogPort, maxEntries: number | undefined, problems: string[] = []): LogWriter {
  let t = T0;
  return new LogWriter({
    store: logs,
    // One millisecond per id, as a busy erplink would make them.
    newId: createIdGenerator(() => new Date(t++)),
    retentionMs: 86_400_000,
    maxEntries,
    maxQueued: 10_000,
    batchSize: 25,
    onProblem: (_fields, message) => problems.push(message),
  });
}

/** The requestIds in the log, newest first, page by page as the admin API reads them. */
async function listed(store: Store): Promise<string[]> {
  const ids: string[] = [];
  let beforeId: string | undefined;
  for (;;) {
    const page = await store.logs.query({ limit: 30, beforeId });
    ids.push(...page.items.map((r) => r.requestId));
    if (!page.more) return ids;
    beforeId = page.items[page.items.length - 1]!.id;
  }
}

/** r<to-1> down to r<from>. */
function newestFirst(from: number, to: number): string[] {
  return Array.from({ length: to - from }, (_, k) => `r${to - 1 - k}`);
}

test("cap 50, 120 entries in batches of 25 over three flushes: exactly the newest 50 remain, newest first; 70 evicted, none dropped", async ({ store }) => {
  const problems: string[] = [];
  const writer = writerOn(store.logs, 50, problems);
  for (const [from, to] of [[0, 40], [40, 90], [90, 120]] as const) {
    for (let i = from; i < to; i++) writer.record(entry(i));
    await writer.flush();
  }
  assert.equal(await listed(store), newestFirst(70, 120));
  assert.equal(writer.stats(), { queued: 0, written: 120, dropped: 0, evicted: 70, entries: 50 });
  assert.equal(problems, []);
});

test("the cap holds after every batch, not only at the end of a flush", async ({ store }) => {
  const writer = writerOn(store.logs, 30);
  const sizes: number[] = [];
  // Watch the store's size after each append (the trim follows it, before the next batch).
  const logs = store.logs;
  const append = logs.append.bind(logs);
  logs.append = async (records) => {
    sizes.push((await logs.query({ limit: 1000 })).items.length);
    await append(records);
  };
  for (let i = 0; i < 100; i++) writer.record(entry(i));
  await writer.flush();
  assert.equal(sizes, [0, 25, 30, 30], "before each of the four batches");
  assert.equal(await listed(store), newestFirst(70, 100));
  assert.equal(writer.stats().evicted, 70);
});

test("the first flush trims what was there before (an earlier run, a larger cap), even with nothing queued", async ({ store }) => {
  const before = writerOn(store.logs, undefined);
  for (let i = 0; i < 80; i++) before.record(entry(i));
  await before.flush();
  assert.equal(before.stats(), { queued: 0, written: 80, dropped: 0, evicted: 0, entries: null }, "no cap: nothing removed");
  assert.is((await listed(store)).length, 80);

  const writer = writerOn(store.logs, 50);
  assert.is(writer.stats().entries, null, "not known before the first flush");
  await writer.flush();
  assert.equal(writer.stats(), { queued: 0, written: 0, dropped: 0, evicted: 30, entries: 50 });
  assert.equal(await listed(store), newestFirst(30, 80));
});

test("a failed trim is reported, the batch stays written, and the next batch trims again", async ({ store }) => {
  const problems: string[] = [];
  const writer = writerOn(store.logs, 20, problems);
  const logs = store.logs;
  const trim = logs.trim.bind(logs);
  let failures = 1;
  logs.trim = async (max, chunk) => {
    if (failures-- > 0) throw new Error("store down");
    return trim(max, chunk);
  };
  for (let i = 0; i < 25; i++) writer.record(entry(i));
  await writer.flush();
  assert.equal(problems, ["request log trim failed; will retry after the next batch"]);
  // The first flush's opening trim failed; the batch was written and trimmed after it.
  assert.equal(writer.stats(), { queued: 0, written: 25, dropped: 0, evicted: 5, entries: 20 });
  failures = 1;
  for (let i = 25; i < 30; i++) writer.record(entry(i));
  await writer.flush();
  assert.is(problems.length, 2);
  assert.equal(writer.stats(), { queued: 0, written: 30, dropped: 0, evicted: 5, entries: 20 }, "the count of the last good trim");
  assert.is((await listed(store)).length, 25, "over the cap until the next batch");
  writer.record(entry(30));
  await writer.flush();
  assert.equal(await listed(store), newestFirst(11, 31));
  assert.equal(writer.stats(), { queued: 0, written: 31, dropped: 0, evicted: 11, entries: 20 });
});

test.run();
