/**
 * LogWriter over a fake RequestLogStore whose writes the tests succeed, fail
 * or hold open: record() is a queue push, flush() writes in ordered batches,
 * failed writes keep their entries (in order, once), the bound drops the
 * oldest entries and reports them, concurrent flushes share one write, and
 * stop() writes everything within its timeout. With a fake rollup store:
 * each batch is counted once it is in the log, right after it; a failed
 * rollup write is retried with the next, never doubled; stop() writes
 * pending counts.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { LOG_FIELD_LIMITS, LogWriter, type LogEntry, type LogWriterOptions } from "../../src/services/log-writer.js";
import type { RequestLogRecord, RequestLogStore, RollupBatch, UsageRollupStore } from "../../src/store/index.js";
import { logEntry } from "../../test-support/log-entries.js";

const T0 = Date.parse("2026-01-02T03:04:05.000Z");
const RETENTION_MS = 7 * 86_400_000;

/** A promise with its resolve/reject in hand. */
interface Deferred {
  readonly promise: Promise<void>;
  resolve(): void;
  reject(err: Error): void;
}
function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** What one append does: succeed, fail, or wait for a deferred (then do what it says). */
type Behaviour = "ok" | "fail" | Deferred;

/** A RequestLogStore that keeps what it is given and behaves as scripted. */
class FakeLogStore {
  /** The request ids of every append attempt, in call order. */
  readonly attempts: string[][] = [];
  /** What was written, in order. */
  readonly stored: RequestLogRecord[] = [];
  /** Scripted behaviours of the next appends; then `otherwise`. */
  readonly script: Behaviour[] = [];
  otherwise: "ok" | "fail" | "hang" = "ok";

  async append(records: readonly RequestLogRecord[]): Promise<void> {
    // A copy: the writer must not rely on the store keeping its array.
    const batch = records.map((r) => ({ ...r }));
    this.attempts.push(batch.map((r) => r.requestId));
    const behaviour = this.script.shift() ?? this.otherwise;
    if (behaviour === "hang") return new Promise<void>(() => {});
    if (typeof behaviour === "object") await behaviour.promise;
    else if (behaviour === "fail") throw new Error("store down");
    this.stored.push(...batch);
  }

  /** Request ids written, in order. */
  ids(): string[] {
    return this.stored.map((r) => r.requestId);
  }
  get(): Promise<undefined> {
    throw new Error("not used");
  }
  query(): Promise<never> {
    throw new Error("not used");
  }
  purge(): Promise<number> {
    throw new Error("not used");
  }
}

/** A UsageRollupStore that keeps the batches it is given and fails as scripted. */
class FakeRollupStore {
  /** Batches written, in order. */
  readonly added: RollupBatch[] = [];
  /** The log's size at each write attempt (to see that counts follow the log). */
  readonly attemptsAtLogSize: number[] = [];
  /** Scripted behaviours of the next adds; then "ok". */
  readonly script: ("ok" | "fail")[] = [];

  constructor(private readonly log: FakeLogStore) {}

  async add(batch: RollupBatch): Promise<void> {
    this.attemptsAtLogSize.push(this.log.stored.length);
    if (this.script.shift() === "fail") throw new Error("store down");
    this.added.push(batch);
  }

  /** Requests counted in every written batch, hourly and daily (they must agree). */
  counted(): number {
    const sum = (grain: "hours" | "days") =>
      this.added.flatMap((b) => b[grain]).reduce((n, d) => n + (d.totals.n ?? 0), 0);
    assert.is(sum("hours"), sum("days"), "hours and days count the same requests");
    return sum("hours");
  }
}

interface Harness {
  readonly writer: LogWriter;
  readonly store: FakeLogStore;
  readonly rollups: FakeRollupStore;
  /** Every onProblem report: [fields, message]. */
  readonly problems: [Record<string, unknown>, string][];
}

function harness(options: Partial<Pick<LogWriterOptions, "maxQueued" | "batchSize">> & { rollups?: boolean } = {}): Harness {
  const store = new FakeLogStore();
  const rollups = new FakeRollupStore(store);
  const problems: [Record<string, unknown>, string][] = [];
  let n = 0;
  const writer = new LogWriter({
    store: store as unknown as RequestLogStore,
    newId: (prefix) => `${prefix}_${String(++n).padStart(26, "0")}`,
    retentionMs: RETENTION_MS,
    maxQueued: options.maxQueued ?? 100,
    batchSize: options.batchSize ?? 10,
    onProblem: (fields, message) => problems.push([fields, message]),
    ...(options.rollups ? { rollups: { store: rollups as unknown as UsageRollupStore, writerId: "w1" } } : {}),
  });
  return { writer, store, rollups, problems };
}

function entry(i: number): LogEntry {
  // A fractional duration: the writer keeps it as given.
  return logEntry({ requestId: `r${i}`, timestamp: new Date(T0 + i * 1000), path: `/admin/systems?i=${i}`, durationMs: 1.25 });
}

/** A data request (the admin entries of {@link entry} are not rolled up). */
function dataEntry(i: number): LogEntry {
  return { ...entry(i), path: `/odata/prod/API_BP/A_BusinessPartner?i=${i}`, instance: "prod", service: "API_BP" };
}

function recordRange(writer: LogWriter, from: number, to: number): void {
  for (let i = from; i < to; i++) writer.record(entry(i));
}

function range(from: number, to: number): string[] {
  return Array.from({ length: to - from }, (_, k) => `r${from + k}`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Lets pending promise callbacks run. */
const settle = () => new Promise((r) => setImmediate(r));

const WRITE_FAILED = "request log write failed; will retry";
const DROPPED = "request log entries dropped: the queue was full";

const test = suite("LogWriter");

test("record() cuts method, path, user agent, error message and upstream URL to LOG_FIELD_LIMITS, leaving values within them as given", async () => {
  const { writer, store } = harness();
  const long = (n: number, c: string) => c.repeat(n);
  writer.record({
    ...entry(0),
    method: long(33, "M"),
    path: `/odata/${long(5000, "p")}`,
    userAgent: long(513, "u"),
    errorMessage: long(1025, "e"),
    upstreamUrl: `https://erp.example/${long(9000, "q")}`,
  });
  const exact = {
    ...entry(1),
    method: long(32, "M"),
    path: long(4096, "p"),
    userAgent: long(512, "u"),
    errorMessage: long(1024, "e"),
    upstreamUrl: long(8192, "q"),
  };
  writer.record({ ...exact });
  await writer.flush();
  const [cut, kept] = store.stored;
  assert.equal(
    [cut!.method, cut!.path, cut!.userAgent, cut!.errorMessage, cut!.upstreamUrl],
    [long(32, "M"), `/odata/${long(4089, "p")}`, long(512, "u"), long(1024, "e"), `https://erp.example/${long(8172, "q")}`],
  );
  assert.equal(
    [kept!.method, kept!.path, kept!.userAgent, kept!.errorMessage, kept!.upstreamUrl],
    [exact.method, exact.path, exact.userAgent, exact.errorMessage, exact.upstreamUrl],
  );
  assert.equal(LOG_FIELD_LIMITS, { method: 32, path: 4096, userAgent: 512, errorMessage: 1024, upstreamUrl: 8192 });
});

test("record() only queues: no store call, even after the event loop turns", async () => {
  const { writer, store } = harness();
  recordRange(writer, 0, 3);
  assert.equal(writer.stats(), { queued: 3, written: 0, dropped: 0, evicted: 0, entries: null });
  await sleep(20);
  assert.equal(store.attempts, [], "no I/O without a flush");
});

test("record() adds a log_ id (one per entry) and expiresAt = timestamp + retention, keeping every field", async () => {
  const { writer, store } = harness();
  writer.record(entry(0));
  writer.record(entry(1));
  await writer.flush();
  assert.equal(store.stored, [
    { ...entry(0), id: `log_${"1".padStart(26, "0")}`, expiresAt: new Date(T0 + RETENTION_MS) },
    { ...entry(1), id: `log_${"2".padStart(26, "0")}`, expiresAt: new Date(T0 + 1000 + RETENTION_MS) },
  ]);
});

test("flush() writes in batches of batchSize, in order, and counts what it wrote", async () => {
  const { writer, store, problems } = harness({ batchSize: 3 });
  recordRange(writer, 0, 8);
  await writer.flush();
  assert.equal(store.attempts, [range(0, 3), range(3, 6), range(6, 8)]);
  assert.equal(store.ids(), range(0, 8));
  assert.equal(writer.stats(), { queued: 0, written: 8, dropped: 0, evicted: 0, entries: null });
  assert.equal(problems, []);
});

test("flush() with nothing queued calls no store; a second flush writes only what is new", async () => {
  const { writer, store } = harness({ batchSize: 3 });
  await writer.flush();
  assert.equal(store.attempts, []);
  recordRange(writer, 0, 2);
  await writer.flush();
  recordRange(writer, 2, 4);
  await writer.flush();
  assert.equal(store.attempts, [range(0, 2), range(2, 4)]);
  assert.equal(store.ids(), range(0, 4));
  assert.equal(writer.stats(), { queued: 0, written: 4, dropped: 0, evicted: 0, entries: null });
});

test("a failing append keeps its batch and the rest queued, reports once, and the next flush writes them in order, once", async () => {
  const { writer, store, problems } = harness({ batchSize: 2 });
  recordRange(writer, 0, 5);
  store.script.push("ok", "fail");
  await writer.flush();
  assert.equal(store.attempts, [range(0, 2), range(2, 4)], "stops at the first failure");
  assert.equal(writer.stats(), { queued: 3, written: 2, dropped: 0, evicted: 0, entries: null });
  assert.is(problems.length, 1);
  assert.is(problems[0]![1], WRITE_FAILED);
  assert.equal(Object.keys(problems[0]![0]).sort(), ["err", "queued"]);
  assert.is(problems[0]![0].queued, 3);
  assert.instance(problems[0]![0].err, Error);

  await writer.flush();
  assert.equal(store.attempts.slice(2), [range(2, 4), range(4, 5)], "retried from the failed batch");
  assert.equal(store.ids(), range(0, 5), "every entry once, in order");
  assert.equal(writer.stats(), { queued: 0, written: 5, dropped: 0, evicted: 0, entries: null });
  assert.is(problems.length, 1, "no report for a good flush");
});

test("entries recorded while a write is in flight and then fails are kept behind it: nothing lost, nothing doubled", async () => {
  const { writer, store, problems } = harness({ batchSize: 10 });
  recordRange(writer, 0, 3);
  const gate = deferred();
  store.script.push(gate);
  const flushed = writer.flush();
  await settle();
  assert.equal(store.attempts, [range(0, 3)], "the write is in flight");
  recordRange(writer, 3, 5);
  // queued counts the three in flight too.
  assert.equal(writer.stats(), { queued: 5, written: 0, dropped: 0, evicted: 0, entries: null });
  gate.reject(new Error("store down"));
  await flushed;
  assert.equal(writer.stats(), { queued: 5, written: 0, dropped: 0, evicted: 0, entries: null });
  assert.equal(store.stored, []);
  assert.equal(problems.map((p) => p[1]), [WRITE_FAILED]);

  recordRange(writer, 5, 6);
  await writer.flush();
  assert.equal(store.attempts.slice(1), [range(0, 6)]);
  assert.equal(store.ids(), range(0, 6));
  assert.equal(writer.stats(), { queued: 0, written: 6, dropped: 0, evicted: 0, entries: null });
});

/** Records `count` entries and starts a flush whose first write stays in flight until `gate` is resolved. */
async function heldFlush(h: Harness, count: number): Promise<{ gate: ReturnType<typeof deferred>; flushed: Promise<void> }> {
  recordRange(h.writer, 0, count);
  const gate = deferred();
  h.store.script.push(gate);
  const flushed = h.writer.flush();
  await settle();
  return { gate, flushed };
}

/** Records `before` entries, flushes with the first write held open, records up to `until` meanwhile, then lets the flush end. */
async function flushWhileRecording(batchSize: number, before: number, until: number): Promise<Harness> {
  const h = harness({ batchSize });
  const { gate, flushed } = await heldFlush(h, before);
  recordRange(h.writer, before, until);
  gate.resolve();
  await flushed;
  return h;
}

test("a flush writes what was queued when it began: entries recorded while its write is in flight wait for the next flush", async () => {
  const { writer, store } = await flushWhileRecording(10, 3, 5);
  assert.equal(store.attempts, [range(0, 3)]);
  assert.equal(writer.stats(), { queued: 2, written: 3, dropped: 0, evicted: 0, entries: null });
  await writer.flush();
  assert.equal(store.attempts, [range(0, 3), range(3, 5)]);
  assert.equal(store.ids(), range(0, 5));
  assert.equal(writer.stats(), { queued: 0, written: 5, dropped: 0, evicted: 0, entries: null });
});

test("a flush of more than one batch writes exactly what was queued when it began, in batches, even when more comes between them", async () => {
  const { writer, store } = await flushWhileRecording(2, 5, 7);
  assert.equal(store.attempts, [range(0, 2), range(2, 4), range(4, 5)]);
  assert.equal(writer.stats(), { queued: 2, written: 5, dropped: 0, evicted: 0, entries: null });
});

test("several failing flushes in a row, then recovery: every entry written exactly once, in order", async () => {
  const { writer, store, problems } = harness({ batchSize: 4 });
  store.otherwise = "fail";
  for (let round = 0; round < 4; round++) {
    recordRange(writer, round * 3, round * 3 + 3);
    await writer.flush();
  }
  assert.equal(writer.stats(), { queued: 12, written: 0, dropped: 0, evicted: 0, entries: null });
  assert.is(problems.length, 4, "one report per failed flush");
  store.otherwise = "ok";
  await writer.flush();
  assert.equal(store.ids(), range(0, 12));
  assert.equal(writer.stats(), { queued: 0, written: 12, dropped: 0, evicted: 0, entries: null });
});

test("the bound drops the OLDEST entries and counts them; the next flush reports the count once", async () => {
  const { writer, store, problems } = harness({ maxQueued: 3 });
  recordRange(writer, 0, 5);
  assert.equal(writer.stats(), { queued: 3, written: 0, dropped: 2, evicted: 0, entries: null });
  assert.equal(problems, [], "never reported on the request path");
  await writer.flush();
  assert.equal(store.ids(), ["r2", "r3", "r4"], "the newest are kept");
  assert.equal(problems, [[{ dropped: 2, total: 2 }, DROPPED]]);
  assert.equal(writer.stats(), { queued: 0, written: 3, dropped: 2, evicted: 0, entries: null });

  await writer.flush();
  assert.is(problems.length, 1, "the same drops are not reported twice");

  recordRange(writer, 5, 9);
  await writer.flush();
  assert.equal(store.ids(), ["r2", "r3", "r4", "r6", "r7", "r8"]);
  assert.equal(problems.slice(1), [[{ dropped: 1, total: 3 }, DROPPED]], "only the new drops, with the running total");
  assert.equal(writer.stats(), { queued: 0, written: 6, dropped: 3, evicted: 0, entries: null });
});

test("drops are reported once per flush even when many happen between flushes", async () => {
  const { writer, problems } = harness({ maxQueued: 2 });
  recordRange(writer, 0, 50);
  assert.equal(writer.stats(), { queued: 2, written: 0, dropped: 48, evicted: 0, entries: null });
  await Promise.all([writer.flush(), writer.flush()]);
  await writer.flush();
  assert.equal(problems, [[{ dropped: 48, total: 48 }, DROPPED]]);
});

test("while the store is down the bound holds: the oldest (including the failed batch) are dropped, the newest written after recovery", async () => {
  const { writer, store, problems } = harness({ maxQueued: 4, batchSize: 10 });
  recordRange(writer, 0, 3);
  const gate = deferred();
  store.script.push(gate);
  const flushed = writer.flush();
  await settle();
  recordRange(writer, 3, 6);
  // queued counts the three in flight too.
  assert.equal(writer.stats(), { queued: 6, written: 0, dropped: 0, evicted: 0, entries: null });
  gate.reject(new Error("store down"));
  await flushed;
  // r0..r2 came back in front of r3..r5: six entries, bound four, r0 and r1 go.
  assert.equal(writer.stats(), { queued: 4, written: 0, dropped: 2, evicted: 0, entries: null });
  assert.equal(problems, [[{ err: problems[0]![0].err, queued: 4 }, WRITE_FAILED]]);
  await writer.flush();
  assert.equal(store.ids(), ["r2", "r3", "r4", "r5"]);
  assert.equal(problems.slice(1), [[{ dropped: 2, total: 2 }, DROPPED]]);
  assert.equal(writer.stats(), { queued: 0, written: 4, dropped: 2, evicted: 0, entries: null });
});

test("concurrent flush() calls share one write: one append per batch, both resolve after it", async () => {
  const { writer, store } = harness({ batchSize: 10 });
  recordRange(writer, 0, 3);
  const gate = deferred();
  store.script.push(gate);
  const a = writer.flush();
  const b = writer.flush();
  assert.is(a, b, "the same promise");
  let done = 0;
  void a.then(() => done++);
  void b.then(() => done++);
  await settle();
  assert.equal(store.attempts, [range(0, 3)]);
  assert.is(done, 0, "not resolved before the write ends");
  gate.resolve();
  await Promise.all([a, b]);
  assert.is(done, 2);
  assert.equal(store.attempts, [range(0, 3)], "one write");
  assert.equal(store.ids(), range(0, 3));
  // Once settled, a new flush is a new write.
  recordRange(writer, 3, 4);
  const c = writer.flush();
  assert.is.not(c, a);
  await c;
  assert.equal(store.ids(), range(0, 4));
});

test("stats() tracks queued, written and dropped through a failure and a recovery", async () => {
  const { writer, store } = harness({ maxQueued: 5, batchSize: 2 });
  assert.equal(writer.stats(), { queued: 0, written: 0, dropped: 0, evicted: 0, entries: null });
  recordRange(writer, 0, 4);
  assert.equal(writer.stats(), { queued: 4, written: 0, dropped: 0, evicted: 0, entries: null });
  store.script.push("ok", "fail");
  await writer.flush();
  assert.equal(writer.stats(), { queued: 2, written: 2, dropped: 0, evicted: 0, entries: null });
  recordRange(writer, 4, 8);
  assert.equal(writer.stats(), { queued: 5, written: 2, dropped: 1, evicted: 0, entries: null });
  await writer.flush();
  assert.equal(writer.stats(), { queued: 0, written: 7, dropped: 1, evicted: 0, entries: null });
  assert.equal(store.ids(), ["r0", "r1", "r3", "r4", "r5", "r6", "r7"]);
});

test("start(interval) flushes on a timer; stop() ends the timer", async () => {
  const { writer, store } = harness();
  writer.start(10);
  recordRange(writer, 0, 2);
  await sleep(60);
  assert.equal(store.ids(), range(0, 2), "written by the timer");
  await writer.stop(1000);
  recordRange(writer, 2, 3);
  await sleep(60);
  assert.equal(store.ids(), range(0, 2), "no timer after stop");
  assert.equal(writer.stats(), { queued: 1, written: 2, dropped: 0, evicted: 0, entries: null });
});

test("stop() writes everything queued (several batches) before it resolves", async () => {
  const { writer, store } = harness({ batchSize: 3 });
  writer.start(60_000);
  recordRange(writer, 0, 7);
  await writer.stop(5000);
  assert.equal(store.ids(), range(0, 7));
  assert.equal(writer.stats(), { queued: 0, written: 7, dropped: 0, evicted: 0, entries: null });
});

test("stop() keeps retrying while the store is down and writes everything once it is back (within the timeout)", async () => {
  const { writer, store } = harness({ batchSize: 3 });
  recordRange(writer, 0, 5);
  store.script.push("fail", "fail");
  const started = Date.now();
  await writer.stop(5000);
  assert.ok(Date.now() - started < 3000, `took ${Date.now() - started} ms`);
  assert.equal(store.ids(), range(0, 5));
  assert.equal(writer.stats(), { queued: 0, written: 5, dropped: 0, evicted: 0, entries: null });
});

test("stop() waits for a write already in flight (queue empty meanwhile) before it resolves", async () => {
  const h = harness({ batchSize: 10 });
  const { writer, store } = h;
  // A timer flush has taken the whole queue and is writing it...
  const { gate } = await heldFlush(h, 3);
  assert.equal(store.attempts.length, 1, "precondition: the batch is in flight");
  assert.equal(writer.stats().queued, 3, "an in-flight batch still counts as queued");
  // ...when the process is told to stop; the write ends shortly after.
  setTimeout(() => gate.resolve(), 50);
  await writer.stop(5000);
  assert.equal(store.ids(), range(0, 3), "stop() resolved before the in-flight entries were written");
  assert.equal(writer.stats(), { queued: 0, written: 3, dropped: 0, evicted: 0, entries: null });
});

test("stop() during a flush that took only part of the queue: what was recorded after that flush began is written too, once, in order", async () => {
  const h = harness({ batchSize: 10 });
  const { writer, store } = h;
  // A timer flush takes r0..r2; then requests still finishing record r3, r4 (after it began).
  const { gate } = await heldFlush(h, 3);
  recordRange(writer, 3, 5);
  setTimeout(() => gate.resolve(), 50);
  const started = Date.now();
  await writer.stop(5000);
  assert.ok(Date.now() - started < 2000, `took ${Date.now() - started} ms`);
  assert.equal(store.attempts, [range(0, 3), range(3, 5)]);
  assert.equal(store.ids(), range(0, 5), "the entries recorded during the flush in flight were lost at stop()");
  assert.equal(writer.stats(), { queued: 0, written: 5, dropped: 0, evicted: 0, entries: null });
});

test("stop() is bounded by its timeout when the store keeps failing; the entries stay queued", async () => {
  const { writer, store } = harness({ batchSize: 3 });
  store.otherwise = "fail";
  recordRange(writer, 0, 5);
  const started = Date.now();
  await writer.stop(500);
  const took = Date.now() - started;
  assert.ok(took >= 450 && took < 1000, `took ${took} ms`);
  assert.ok(store.attempts.length >= 2, `retried (${store.attempts.length} attempts)`);
  assert.equal(store.stored, []);
  assert.equal(writer.stats(), { queued: 5, written: 0, dropped: 0, evicted: 0, entries: null });
});

test("stop() is bounded by its timeout when a write never answers", async () => {
  const { writer, store } = harness();
  store.otherwise = "hang";
  recordRange(writer, 0, 2);
  const started = Date.now();
  await writer.stop(300);
  const took = Date.now() - started;
  assert.ok(took >= 250 && took < 800, `took ${took} ms`);
  assert.equal(store.attempts, [range(0, 2)]);
  assert.equal(store.stored, []);
});

test("stop() with nothing queued and nothing in flight resolves at once", async () => {
  const { writer, store } = harness();
  const started = Date.now();
  await writer.stop(5000);
  assert.ok(Date.now() - started < 50);
  assert.equal(store.attempts, []);
});

const ROLLUP_FAILED = "usage rollup write failed; will retry";

test("rollups: the batches of a flush are counted once they are in the log, in one write at its end, data requests only, in the writer's own documents", async () => {
  const { writer, store, rollups, problems } = harness({ batchSize: 2, rollups: true });
  for (let i = 0; i < 5; i++) writer.record(dataEntry(i));
  writer.record(entry(5));
  await writer.flush();
  assert.equal(store.ids(), range(0, 6));
  assert.equal(rollups.attemptsAtLogSize, [6], "one rollup write per flush, after its last batch");
  assert.is(rollups.counted(), 5, "the admin entry is not counted");
  assert.equal(rollups.added.flatMap((b) => [...b.hours, ...b.days].map((d) => d.writer)), Array(2).fill("w1"), "one hour and one day document, the writer's");
  assert.equal(problems, []);
  // Nothing new: no rollup write.
  await writer.flush();
  assert.is(rollups.attemptsAtLogSize.length, 1);
});

test("rollups: a failed log write counts nothing; its entries are counted once, when they reach the log", async () => {
  const { writer, store, rollups } = harness({ batchSize: 10, rollups: true });
  for (let i = 0; i < 3; i++) writer.record(dataEntry(i));
  store.script.push("fail");
  await writer.flush();
  assert.equal(rollups.attemptsAtLogSize, []);
  await writer.flush();
  assert.equal(store.ids(), range(0, 3));
  assert.is(rollups.counted(), 3);
});

test("rollups: a failed rollup write keeps its counts for the next, the log is not written again: nothing lost, nothing doubled", async () => {
  const { writer, store, rollups, problems } = harness({ batchSize: 2, rollups: true });
  for (let i = 0; i < 5; i++) writer.record(dataEntry(i));
  rollups.script.push("fail");
  await writer.flush();
  assert.equal(store.ids(), range(0, 5), "the log is written whatever the rollups do");
  assert.equal(problems.map((p) => p[1]), [ROLLUP_FAILED]);
  assert.instance(problems[0]![0].err, Error);
  assert.is(rollups.counted(), 0);
  await writer.flush();
  assert.equal(store.ids(), range(0, 5), "every entry once");
  assert.is(rollups.counted(), 5, "every request counted once");
  // Counts left behind with an empty queue are written by the next flush too.
  writer.record(dataEntry(5));
  rollups.script.push("fail");
  await writer.flush();
  assert.is(rollups.counted(), 5);
  await writer.flush();
  assert.is(rollups.counted(), 6);
  assert.equal(writer.stats(), { queued: 0, written: 6, dropped: 0, evicted: 0, entries: null });
});

test("rollups: a log write failing mid-flush: the batches before it are counted at the end of that flush, the rest once they reach the log", async () => {
  const { writer, store, rollups, problems } = harness({ batchSize: 2, rollups: true });
  for (let i = 0; i < 5; i++) writer.record(dataEntry(i));
  store.script.push("ok", "fail");
  await writer.flush();
  assert.equal(store.ids(), range(0, 2));
  assert.equal(rollups.attemptsAtLogSize, [2], "the first batch counted when the flush ends");
  assert.is(rollups.counted(), 2);
  assert.equal(problems.map((p) => p[1]), ["request log write failed; will retry"]);
  await writer.flush();
  assert.equal(store.ids(), range(0, 5));
  assert.is(rollups.counted(), 5, "every request counted once");
});

test("rollups: stop() writes pending counts, retrying while the store is down", async () => {
  const { writer, rollups } = harness({ rollups: true });
  for (let i = 0; i < 3; i++) writer.record(dataEntry(i));
  rollups.script.push("fail", "fail");
  await writer.stop(5000);
  assert.is(rollups.counted(), 3);
});

test.run();
