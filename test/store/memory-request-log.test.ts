/**
 * The embedded store's capped request log (src/store/memory-request-log.ts):
 * the cap (exactly the newest entries remain, what it removed is counted,
 * order and paging hold across it), ids out of order, duplicates, the purge
 * wherever the expired entries are, and the file: what a reopen reads back
 * (every field, dates exactly), a torn last line, a failed write, the
 * rewrite that keeps the file small, expired entries left out, and the
 * one-time migration of an older release's nedb file. The query semantics
 * themselves are test/store/request-logs.test.ts's (on this log and on
 * MongoDB) and the differential suite's (against the nedb-backed store).
 */
import { rmSync } from "node:fs";
import { appendFile, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createIdGenerator } from "../../src/services/ids.js";
import { LogWriter } from "../../src/services/log-writer.js";
import { createEmbeddedBackend } from "../../src/store/embedded.js";
import { createStore, DuplicateKeyError, type RequestLogRecord } from "../../src/store/index.js";
import {
  LEGACY_REQUEST_LOG_FILE,
  MemoryRequestLog,
  openMemoryRequestLog,
  REQUEST_LOG_FILE,
  type MemoryRequestLogOptions,
} from "../../src/store/memory-request-log.js";
import { requestLogsCollection } from "../../src/store/request-logs.js";
import { logRecord } from "../../test-support/log-entries.js";
import { rejection } from "../../test-support/store-contract.js";

const root = await mkdtemp(join(tmpdir(), "erplink-memory-log-test-"));
process.on("exit", () => rmSync(root, { recursive: true, force: true }));

const T0 = Date.parse("2026-01-02T03:04:05.678Z");
const DAY = 86_400_000;
/** Before every entry's expiry: loads keep everything unless a test says otherwise. */
const LOAD_AT = () => new Date(T0);

/** `n` ids in strictly ascending order. */
function idsOf(n: number): string[] {
  const newId = createIdGenerator(() => new Date(T0));
  const ids = Array.from({ length: n }, () => newId("log"));
  assert.equal([...ids].sort(), ids, "precondition: ids ascend");
  return ids;
}
const IDS = idsOf(200);

/** Entry `i` (id IDS[i], one second apart, expiring 30 days later). */
function entry(i: number, fields: Partial<RequestLogRecord> = {}): RequestLogRecord {
  // A forwarded data request: most fields set, so that the file's round trip covers them.
  return logRecord({
    id: IDS[i]!,
    requestId: `req-${i}`,
    timestamp: new Date(T0 + i * 1000),
    apiKeyId: i % 2 === 0 ? "master" : "key_01KA0000000000000000000000",
    path: `/odata/prod/API_BP/A_BusinessPartner?$top=${i}`,
    durationMs: 1.25 + i / 1000,
    instance: "prod",
    service: "API_BP",
    accesses: [{ entity: "A_BusinessPartner", operation: "list" }],
    upstreamStatus: 200,
    upstreamDurationMs: 0.5,
    upstreamMethod: "GET",
    upstreamUrl: `https://s4.example.com/sap/opu/odata/sap/API_BP/A_BusinessPartner?$top=${i}`,
    expiresAt: new Date(T0 + i * 1000 + 30 * DAY),
    ...fields,
  });
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, k) => from + k);
const entries = (indexes: number[]) => indexes.map((i) => entry(i));

/** The indexes of every entry held, newest first (one query). */
async function held(log: MemoryRequestLog): Promise<number[]> {
  const page = await log.query({ limit: 10_000 });
  assert.is(page.more, false);
  return page.items.map((r) => IDS.indexOf(r.id));
}

/** Every page of `limit` entries, newest first, as indexes and `more`. */
async function pages(log: MemoryRequestLog, limit: number): Promise<[number[], boolean][]> {
  const out: [number[], boolean][] = [];
  let beforeId: string | undefined;
  for (let n = 0; n < 100; n++) {
    const page = await log.query({ limit, beforeId });
    out.push([page.items.map((r) => IDS.indexOf(r.id)), page.more]);
    if (!page.more) return out;
    beforeId = page.items[page.items.length - 1]!.id;
  }
  assert.unreachable("paging did not end");
  return out;
}

let dirs = 0;
async function freshDir(): Promise<string> {
  const dir = join(root, `d${dirs++}`);
  await mkdir(dir);
  return dir;
}

const open = (dir: string, options: MemoryRequestLogOptions = {}) => openMemoryRequestLog({ dataDir: dir, clock: LOAD_AT, ...options });

/** The file's non-blank lines. */
async function fileLines(dir: string): Promise<string[]> {
  return (await readFile(join(dir, REQUEST_LOG_FILE), "utf8")).split("\n").filter((l) => l !== "");
}

// ------------------------------------------------------------------------ the cap

const cap = suite("capped request log: the cap");

cap("batches across the cap: exactly the newest remain, in order; the cap counts what it removed", async () => {
  const log = new MemoryRequestLog({ maxEntries: 5 });
  await log.append(entries(range(0, 3)));
  assert.equal([await held(log), log.stats().evicted], [[2, 1, 0], 0]);
  await log.append(entries(range(3, 6)));
  assert.equal([await held(log), log.stats().evicted], [[5, 4, 3, 2, 1], 1]);
  await log.append(entries(range(6, 10)));
  assert.equal([await held(log), log.stats().evicted], [[9, 8, 7, 6, 5], 5]);
  assert.equal(log.stats().entries, 5);
  assert.is(await log.get(IDS[4]!), undefined, "evicted");
  assert.equal(await log.get(IDS[5]!), entry(5));
  assert.equal(await pages(log, 2), [
    [[9, 8], true],
    [[7, 6], true],
    [[5], false],
  ]);
  // An older id as beforeId still pages from where it would be.
  assert.equal((await log.query({ limit: 10, beforeId: IDS[3] })).items, []);
  assert.equal(
    (await log.query({ limit: 10, beforeId: IDS[7] })).items.map((r) => IDS.indexOf(r.id)),
    [6, 5],
  );
});

cap("one batch larger than the cap keeps its newest; a cap of 1 keeps the last entry", async () => {
  const log = new MemoryRequestLog({ maxEntries: 4 });
  await log.append(entries(range(0, 11)));
  assert.equal([await held(log), log.stats().evicted], [[10, 9, 8, 7], 7]);
  const one = new MemoryRequestLog({ maxEntries: 1 });
  await one.append(entries([0, 1]));
  await one.append(entries([2]));
  assert.equal([await held(one), one.stats().evicted], [[2], 2]);
});

cap("the ring grows and wraps: 3000 entries in batches of 7 under a cap of 1500 read back exactly, with filters", async () => {
  const ids = idsOf(3000);
  const log = new MemoryRequestLog({ maxEntries: 1500 });
  const make = (k: number): RequestLogRecord => ({ ...entry(0), id: ids[k]!, requestId: `r${k}`, status: k % 3 === 0 ? 404 : 200 });
  for (let k = 0; k < 3000; k += 7) await log.append(range(k, Math.min(3000, k + 7)).map(make));
  const all = await log.query({ limit: 5000 });
  assert.equal(
    all.items.map((r) => r.requestId),
    range(1500, 3000)
      .reverse()
      .map((k) => `r${k}`),
  );
  assert.is(log.stats().evicted, 1500);
  const notFound = await log.query({ limit: 3, status: { gte: 404, lt: 405 }, beforeId: ids[2000] });
  assert.equal([notFound.items.map((r) => r.requestId), notFound.more], [["r1998", "r1995", "r1992"], true]);
  assert.equal((await log.get(ids[1500]!))?.requestId, "r1500");
  assert.is(await log.get(ids[1499]!), undefined);
});

cap(
  "the ring grows while its oldest entry is not at the start of its array (after evictions and purges): order kept at every step",
  async () => {
    const ids = idsOf(300);
    const log = new MemoryRequestLog({ maxEntries: 200 });
    const make = (k: number): RequestLogRecord => ({ ...entry(0), id: ids[k]!, requestId: `r${k}`, expiresAt: new Date(T0 + k) });
    let model: number[] = [];
    const check = async (step: string) => {
      const got = (await log.query({ limit: 1000 })).items.map((r) => Number(r.requestId.slice(1)));
      assert.equal(got, [...model].reverse(), step);
    };
    // 16 places at first: fill 12, purge 10, then grow across the wrap, again and again.
    await log.append(range(0, 12).map(make));
    model = range(0, 12);
    assert.is(await log.purge(new Date(T0 + 10)), 10);
    model = model.filter((k) => k >= 10);
    await check("after the first purge");
    for (let k = 12; k < 300; k += 9) {
      const batch = range(k, Math.min(300, k + 9));
      await log.append(batch.map(make));
      model = [...model, ...batch].slice(-200);
      await check(`after appending ${k}..`);
      if (k % 4 === 0) {
        await log.purge(new Date(T0 + k - 20));
        model = model.filter((k2) => k2 >= k - 20);
        await check(`after purging below ${k - 20}`);
      }
    }
    assert.is(model.length, 56);
    for (const k of [model[0]!, model[model.length - 1]!]) assert.equal((await log.get(ids[k]!))?.requestId, `r${k}`);
  },
);

cap(
  "trim (the writer's, after each batch): reports what the cap removed since the last trim with what it removes itself; a smaller cap removes the oldest",
  async () => {
    const log = new MemoryRequestLog({ maxEntries: 5 });
    await log.append(entries(range(0, 8)));
    assert.equal(await log.trim(5), { removed: 3, remaining: 5 }, "the cap's three");
    assert.equal(await log.trim(5), { removed: 0, remaining: 5 }, "reported once");
    await log.append(entries([8]));
    assert.equal(await log.trim(3), { removed: 1 + 2, remaining: 3 });
    assert.equal(await held(log), [8, 7, 6]);
    assert.equal(await log.trim(10), { removed: 0, remaining: 3 });
    assert.is(log.stats().evicted, 4, "the cap's own, not the trims'");
  },
);

cap(
  "under the writer with the same cap (as erplink runs it): /healthz's evicted and entries count what the log's own cap removed",
  async () => {
    const log = new MemoryRequestLog({ maxEntries: 50 });
    let t = T0;
    const writer = new LogWriter({
      store: log,
      newId: createIdGenerator(() => new Date(t++)),
      retentionMs: DAY,
      maxEntries: 50,
      maxQueued: 10_000,
      batchSize: 25,
      onProblem: () => undefined,
    });
    for (let i = 0; i < 120; i++) {
      const { id: _id, expiresAt: _e, ...fields } = entry(0);
      writer.record({ ...fields, requestId: `w${i}` });
    }
    await writer.flush();
    assert.equal(writer.stats(), { queued: 0, written: 120, dropped: 0, evicted: 70, entries: 50 });
    assert.equal(log.stats().evicted, 70);
    assert.equal(
      (await log.query({ limit: 100 })).items.map((r) => r.requestId),
      range(70, 120)
        .reverse()
        .map((i) => `w${i}`),
    );
  },
);

cap("a trim to a smaller cap is written down: a reopen with the larger cap keeps what the trim left", async () => {
  const dir = await freshDir();
  const log = await open(dir, { maxEntries: 10 });
  await log.append(entries(range(0, 8)));
  assert.equal(await log.trim(3), { removed: 5, remaining: 3 });
  await log.append(entries([8, 9]));
  await log.close();
  assert.equal(JSON.parse((await fileLines(dir))[8]!), { keep: 3 });
  const again = await open(dir, { maxEntries: 10 });
  assert.equal(await held(again), [9, 8, 7, 6, 5]);
  assert.is(again.stats().load.overCap, 5);
});

cap("maxEntries Infinity: no cap (only purges remove entries); otherwise a positive integer", async () => {
  const log = new MemoryRequestLog({ maxEntries: Infinity });
  await log.append(entries(range(0, 200)));
  assert.equal([(await held(log)).length, log.stats().evicted], [200, 0]);
  assert.equal(await log.trim(150), { removed: 50, remaining: 150 });
  for (const bad of [0, -1, 1.5, Number.NaN, -Infinity]) {
    assert.throws(() => new MemoryRequestLog({ maxEntries: bad }), RangeError, String(bad));
  }
});

cap.run();

// ---------------------------------------------------------------- ids out of order

const order = suite("capped request log: ids out of order, duplicates, the entries themselves");

order(
  "an older batch after a newer one, interleaved ids, a small batch reversed and a large one shuffled: id order all the same",
  async () => {
    const log = new MemoryRequestLog({ maxEntries: 1000 });
    await log.append(entries([10, 11, 12]));
    await log.append(entries([0, 1]));
    await log.append(entries([5, 13, 3]));
    // Reversed, small (inserted in place).
    await log.append(entries([9, 8, 7]));
    // Shuffled, larger than the in-place limit (sorted and merged once).
    const shuffled = [40, 20, 33, 14, 27, 39, 21, 30, 15, 36, 24, 18, 34, 29, 16, 38, 22, 31, 17, 37, 25, 19, 32, 26, 23, 28, 35, 2, 4, 6];
    await log.append(entries(shuffled));
    assert.equal(await held(log), range(0, 41).reverse());
    assert.equal(await log.get(IDS[2]!), entry(2));
    assert.equal(await pages(log, 15), [
      [range(26, 41).reverse(), true],
      [range(11, 26).reverse(), true],
      [range(0, 11).reverse(), false],
    ]);
  },
);

order("out of order under the cap: an entry older than all of a full log is removed at once, a newer one goes in place", async () => {
  const log = new MemoryRequestLog({ maxEntries: 3 });
  await log.append(entries([4, 6, 8]));
  await log.append(entries([2]));
  assert.equal([await held(log), log.stats().evicted], [[8, 6, 4], 1]);
  await log.append(entries([5]));
  assert.equal([await held(log), log.stats().evicted], [[8, 6, 5], 2]);
  // A large shuffled batch across a full log: the newest three of the union.
  await log.append(entries([20, 1, 3, 19, 7, 18, 9, 10, 17, 11, 12, 16, 13, 14, 15, 0, 21]));
  assert.equal([await held(log), log.stats().evicted], [[21, 20, 19], 2 + 17]);
});

order("an id already held, or given twice in a batch, is refused (DuplicateKeyError) and nothing of the batch is written", async () => {
  const log = new MemoryRequestLog({ maxEntries: 100 });
  await log.append(entries([1, 3, 5]));
  for (const batch of [[6, 3], [0, 0], [2, 5, 7], [9, 8, 9], [1]]) {
    const err = await rejection(() => log.append(entries(batch)));
    assert.instance(err, DuplicateKeyError, String(batch));
    assert.equal([(err as DuplicateKeyError).collection, (err as DuplicateKeyError).field], ["request_logs", "id"]);
  }
  assert.equal(await held(log), [5, 3, 1]);
  assert.is(log.stats().evicted, 0);
});

order(
  "entries are the objects given (no copy on append or read); filters that are objects are refused as the adapters refuse them",
  async () => {
    const log = new MemoryRequestLog();
    const given = entry(1);
    await log.append([given]);
    assert.ok((await log.get(given.id)) === given, "get returns the entry itself");
    assert.ok((await log.query({ limit: 1 })).items[0] === given, "query returns the entry itself");
    for (const bad of [{ $ne: null }, ["master"], null]) {
      await rejection(() => log.query({ limit: 1, apiKeyId: bad as unknown as string })).then((err) => assert.instance(err, TypeError));
      await rejection(() => log.get(bad as unknown as string)).then((err) => assert.instance(err, TypeError));
    }
  },
);

order.run();

// ------------------------------------------------------------------------ purge

const purge = suite("capped request log: purge");

purge("expired entries at the front: removed, count returned, an entry expiring exactly now kept", async () => {
  const log = new MemoryRequestLog();
  await log.append(entries(range(0, 10)));
  assert.is(await log.purge(entry(4).expiresAt), 4);
  assert.equal(await held(log), range(4, 10).reverse());
  assert.is(await log.purge(entry(4).expiresAt), 0, "idempotent");
  assert.is(await log.purge(new Date(entry(9).expiresAt.getTime() + 1)), 6);
  assert.equal(await log.query({ limit: 5 }), { items: [], more: false });
  // Appends after the log emptied start over cleanly.
  await log.append(entries([10, 11]));
  assert.equal(await held(log), [11, 10]);
});

purge(
  "expired entries not at the front (retention shortened between runs, entries out of order): exactly those removed, wherever they are",
  async () => {
    const log = new MemoryRequestLog({ maxEntries: 50 });
    // Entries 0..9 kept 30 days; 10..19 (a later run) kept 1 day, so they expire first.
    await log.append(entries(range(0, 10)));
    await log.append(range(10, 20).map((i) => entry(i, { expiresAt: new Date(T0 + i * 1000 + DAY) })));
    const now = new Date(T0 + 15 * 1000 + DAY);
    assert.is(await log.purge(now), 5, "10..14 expired, behind unexpired entries");
    assert.equal(await held(log), [19, 18, 17, 16, 15, ...range(0, 10).reverse()]);
    // Later, the old ones expire too: from the front now.
    assert.is(await log.purge(new Date(T0 + 5 * 1000 + 30 * DAY)), 10, "0..4 and 15..19");
    assert.equal(await held(log), [9, 8, 7, 6, 5]);
    // An out-of-order insert of an entry that expires before its neighbours.
    await log.append([entry(3, { expiresAt: new Date(T0) })]);
    assert.is(await log.purge(new Date(T0 + 1)), 1);
    assert.equal(await held(log), [9, 8, 7, 6, 5]);
  },
);

purge("an entry inserted among others that expires before them is purged (not only the front is looked at)", async () => {
  const log = new MemoryRequestLog();
  await log.append(entries([0, 2, 4]));
  await log.append([entry(3, { expiresAt: new Date(T0) })]);
  assert.is(await log.purge(new Date(T0 + 1)), 1);
  assert.equal(await held(log), [4, 2, 0]);
});

purge.run();

// ------------------------------------------------------------------------ the file

const file = suite("capped request log: the file");

file("write, close, reopen: every entry and field as written, dates equal to the millisecond, in id order, across batches", async () => {
  const dir = await freshDir();
  const log = await open(dir);
  const odd: RequestLogRecord = entry(3, {
    sessionId: "ses_01KA0000000000000000000000",
    accesses: [
      { entity: "A_BusinessPartner", operation: "update" },
      { entity: "A_BusinessPartnerAddress", operation: "get" },
    ],
    // Text a line must carry as written: newlines, quotes, U+2028, non-ASCII.
    errorMessage: 'line one\nline "two" \u2028 ü 日本 😀',
    userAgent: "curl/8.5.0\r\n",
    durationMs: 12.345,
    upstreamDurationMs: 7.25,
    timestamp: new Date("1999-12-31T23:59:59.999Z"),
    expiresAt: new Date("2999-01-01T00:00:00.001Z"),
  });
  const written = [...entries([0, 1, 2]), odd, ...entries(range(4, 12))];
  await log.append(written.slice(0, 5));
  await log.append(written.slice(5));
  await log.close();
  assert.is((await fileLines(dir)).length, 12);

  const again = await open(dir);
  const page = await again.query({ limit: 100 });
  assert.equal(page.items, [...written].reverse());
  const got = (await again.get(odd.id))!;
  assert.equal(got, odd);
  assert.equal(Object.keys(got).sort(), Object.keys(odd).sort(), "no extra fields");
  assert.instance(got.timestamp, Date);
  assert.is(got.timestamp.getTime(), odd.timestamp.getTime());
  assert.is(got.expiresAt.getTime(), odd.expiresAt.getTime());
  assert.equal(again.stats().load, { lines: 12, unreadable: 0, expired: 0, duplicates: 0, overCap: 0, migrated: 0 });
  // Appends after a reopen go on in the same file.
  await again.append(entries([12]));
  await again.close();
  assert.equal(await held(await open(dir)), range(0, 13).reverse());
});

file("hostile text in entries (purge and keep lines, another entry, line breaks, a large value) is read back as that text: no line is read as a purge, a keep or another entry", async () => {
  const dir = await freshDir();
  const log = await open(dir, { maxEntries: 100 });
  const purgeLine = '{"purge":"2999-01-01T00:00:00.000Z"}';
  const keepLine = '{"keep":0}';
  const forged = JSON.stringify(entry(150, { path: "/forged" }));
  const hostile = [
    entry(0, { userAgent: `x\n${purgeLine}\n` }),
    entry(1, { path: `/odata/prod/API_BP/A?${keepLine}`, userAgent: `\r\n${keepLine}\r\n` }),
    entry(2, { errorMessage: `\n${forged}\n`, requestId: `"}\n${keepLine}\n{"` }),
    entry(3, { path: `/${"\u2028\u2029\u0085".repeat(10)}`, userAgent: '","id":"log_x","keep":0,"x":"', accesses: [{ entity: purgeLine, operation: keepLine }] }),
    entry(4, { upstreamUrl: `https://s4.example.com/${"\n".repeat(5000)}${"x".repeat(2_000_000)}` }),
    entry(5),
  ];
  await log.append(hostile.slice(0, 3));
  await log.append(hostile.slice(3));
  await log.close();
  const lines = await fileLines(dir);
  assert.is(lines.length, 6, "one line per entry");
  for (const line of lines) assert.type((JSON.parse(line) as { id?: unknown }).id, "string");

  const again = await open(dir, { maxEntries: 100 });
  assert.equal(again.stats().load, { lines: 6, unreadable: 0, expired: 0, duplicates: 0, overCap: 0, migrated: 0 });
  assert.equal((await again.query({ limit: 100 })).items, [...hostile].reverse());
  // The filters see the text as text: no entry matches another's values, none is found by its lookalikes.
  assert.equal((await again.query({ limit: 100, requestId: "req-150" })).items, []);
  assert.equal((await again.query({ limit: 100, entity: purgeLine, operation: keepLine })).items.map((r) => r.id), [IDS[3]]);
});

file("a torn last line is skipped; the next batch starts on a line of its own and is read back", async () => {
  const dir = await freshDir();
  const log = await open(dir);
  await log.append(entries([0, 1, 2]));
  await log.close();
  // A write cut short by a crash: the start of a fourth entry, no newline.
  const torn = JSON.stringify(entry(3)).slice(0, 57);
  await appendFile(join(dir, REQUEST_LOG_FILE), torn);

  const again = await open(dir);
  assert.equal(await held(again), [2, 1, 0]);
  assert.equal(again.stats().load, { lines: 4, unreadable: 1, expired: 0, duplicates: 0, overCap: 0, migrated: 0 });
  await again.append(entries([4, 5]));
  await again.close();
  const third = await open(dir);
  assert.equal(await held(third), [5, 4, 2, 1, 0]);
  assert.is(third.stats().load.unreadable, 1, "only the torn line");
});

file(
  "opening creates the file (an empty log starts with an empty file); a file that cannot be read or written fails the open",
  async () => {
    const dir = await freshDir();
    const log = await open(dir);
    assert.equal(
      [await readdir(dir), await readFile(join(dir, REQUEST_LOG_FILE), "utf8"), log.stats().entries],
      [[REQUEST_LOG_FILE], "", 0],
    );
    const bad = await freshDir();
    await mkdir(join(bad, REQUEST_LOG_FILE));
    assert.is(((await rejection(() => open(bad))) as NodeJS.ErrnoException).code, "EISDIR");
  },
);

file("a failed write: the batch is refused and not visible; written again later, it is read once", async () => {
  const dir = await freshDir();
  const log = await open(dir);
  await log.append(entries([0, 1]));
  const path = join(dir, REQUEST_LOG_FILE);
  const kept = await readFile(path, "utf8");
  // The file's place taken by a directory: the append fails.
  await rm(path);
  await mkdir(path);
  const err = await rejection(() => log.append(entries([2, 3])));
  assert.is((err as NodeJS.ErrnoException).code, "EISDIR");
  assert.equal(await held(log), [1, 0], "not visible");
  await rm(path, { recursive: true });
  // Half of the batch reached the file before the failure (a torn write).
  await writeFile(path, `${kept}${JSON.stringify(entry(2))}\n${JSON.stringify(entry(3)).slice(0, 20)}`);
  // The writer retries the batch.
  await log.append(entries([2, 3]));
  assert.equal(await held(log), [3, 2, 1, 0]);
  await log.close();
  const again = await open(dir);
  assert.equal(await held(again), [3, 2, 1, 0]);
  assert.equal(again.stats().load, { lines: 6, unreadable: 1, expired: 0, duplicates: 1, overCap: 0, migrated: 0 });
});

file(
  "the file is rewritten when it holds more than twice the entries kept: it then holds exactly the newest, and a reopen reads them",
  async () => {
    const dir = await freshDir();
    const log = await open(dir, { maxEntries: 10 });
    for (let k = 0; k < 54; k += 6) {
      await log.append(entries(range(k, k + 6)));
      await log.idle();
      // Never more than twice the cap, plus the last batch.
      assert.ok((await fileLines(dir)).length <= 2 * 10 + 6, `${(await fileLines(dir)).length} lines after ${k + 6} entries`);
    }
    await log.close();
    assert.equal(log.stats().compactionFailures, 0);
    const lines = await fileLines(dir);
    // 54 entries in batches of 6 under a cap of 10: rewritten (to the 10 kept) at 24 lines, then at 22 (after 36 and 48 entries); 6 since.
    assert.equal(
      lines.map((l) => IDS.indexOf((JSON.parse(l) as { id: string }).id)),
      range(38, 54),
    );
    assert.equal((await readdir(dir)).sort(), [REQUEST_LOG_FILE], "no temporary file left");
    const again = await open(dir, { maxEntries: 10 });
    assert.equal(await held(again), range(44, 54).reverse());
    assert.equal(again.stats().load.overCap, 6);
  },
);

file("a rewrite of the file that fails is reported through onProblem (and counted); the file keeps its lines and the next batch rewrites it", async () => {
  const dir = await freshDir();
  const problems: [Record<string, unknown>, string][] = [];
  const log = await open(dir, { maxEntries: 2, onProblem: (fields, message) => problems.push([fields, message]) });
  // The temporary file's place taken by a directory: the rewrite cannot open it.
  await mkdir(join(dir, `${REQUEST_LOG_FILE}.tmp`));
  await log.append(entries(range(0, 5)));
  await log.idle();
  assert.equal(log.stats().compactionFailures, 1);
  assert.equal(
    problems.map(([fields, message]) => [(fields.err as NodeJS.ErrnoException).code, fields.file, fields.failures, message]),
    [["EISDIR", join(dir, REQUEST_LOG_FILE), 1, "request log: rewriting the file failed; it keeps its lines and the next batch tries again"]],
  );
  assert.is((await fileLines(dir)).length, 5, "the file keeps its lines");
  await rm(join(dir, `${REQUEST_LOG_FILE}.tmp`), { recursive: true });
  await log.append(entries([5]));
  await log.idle();
  assert.equal((await fileLines(dir)).map((l) => IDS.indexOf((JSON.parse(l) as { id: string }).id)), [4, 5]);
  assert.is(problems.length, 1);
  await log.close();
});

file("lines of the file that are not entries are reported once at open, with how many", async () => {
  const dir = await freshDir();
  await writeFile(join(dir, REQUEST_LOG_FILE), `${JSON.stringify(entry(0))}\nnot json\n${JSON.stringify(entry(1)).slice(0, 30)}`);
  const problems: [Record<string, unknown>, string][] = [];
  const log = await open(dir, { onProblem: (fields, message) => problems.push([fields, message]) });
  assert.equal(await held(log), [0]);
  assert.equal(problems, [
    [
      { file: join(dir, REQUEST_LOG_FILE), unreadable: 2, lines: 3 },
      "request log: lines of the file that are not entries were skipped (a torn last line after a crash is one)",
    ],
  ]);
  await log.close();
  const again: unknown[] = [];
  await (await open(dir, { onProblem: (...p) => again.push(p) })).close();
  assert.equal(again.length, 1, "still there at the next open (nothing rewrote the file)");
});

file("a purge that leaves the file mostly expired rewrites it; expired entries are not loaded", async () => {
  const dir = await freshDir();
  const log = await open(dir, { maxEntries: 100 });
  await log.append(entries(range(0, 30)));
  assert.is(await log.purge(entry(25).expiresAt), 25);
  await log.idle();
  const lines = await fileLines(dir);
  // 31 lines for 5 entries, but under twice the floor (min(cap, 1000) = 100).
  assert.equal(lines.length, 31);
  assert.equal(JSON.parse(lines[30]!), { purge: entry(25).expiresAt.toISOString() }, "the purge, written down");
  await log.close();
  // Loaded when only 28 and 29 are unexpired.
  const later = await open(dir, { maxEntries: 100, clock: () => entry(28).expiresAt });
  assert.equal(await held(later), [29, 28]);
  assert.equal(later.stats().load, { lines: 31, unreadable: 0, expired: 28, duplicates: 0, overCap: 0, migrated: 0 });
  await later.close();

  // Above the floor: 2100 lines, and a purge leaves 100 entries.
  const dir2 = await freshDir();
  const big = await open(dir2, { maxEntries: 5000 });
  const many = idsOf(2100).map((id, k) => ({ ...entry(0), id, expiresAt: new Date(T0 + k) }));
  await big.append(many);
  await big.idle();
  assert.is(big.stats().fileLines, 2100, "not rewritten: every line is an entry");
  assert.is(await big.purge(new Date(T0 + 2000)), 2000);
  await big.idle();
  assert.is(big.stats().fileLines, 100);
  assert.equal(
    (await fileLines(dir2)).map((l) => (JSON.parse(l) as { id: string }).id),
    many.slice(2000).map((r) => r.id),
  );
});

file(
  "a reopen replays the file's appends and purges in order: an entry the cap removed stays removed, a purged one frees its place (expiries out of id order)",
  async () => {
    const at = (minute: number) => new Date(T0 + minute * 60_000);
    const expiring = (i: number, minute: number) => entry(i, { expiresAt: at(minute) });
    // Cap 2: entry 0 (kept long) is pushed out by 1 and 2 (kept briefly).
    const dir = await freshDir();
    const log = await open(dir, { maxEntries: 2, clock: () => at(0) });
    await log.append([expiring(0, 100), expiring(1, 5), expiring(2, 5)]);
    await log.close();
    const later = await open(dir, { maxEntries: 2, clock: () => at(10) });
    assert.equal(await held(later), [], "0 does not come back when 1 and 2 have expired");
    await later.close();

    // Cap 3: 0 and 2 expire first, then 3 and 4 come; 1 was never pushed out.
    const dir2 = await freshDir();
    const first = await open(dir2, { maxEntries: 3, clock: () => at(0) });
    await first.append([expiring(0, 0), expiring(1, 26), expiring(2, 0)]);
    assert.is(await first.purge(at(1)), 2);
    await first.append([expiring(3, 30), expiring(4, 30)]);
    assert.equal(await held(first), [4, 3, 1]);
    await first.close();
    const second = await open(dir2, { maxEntries: 3, clock: () => at(1) });
    assert.equal(await held(second), [4, 3, 1]);
    // The same when the entries expired while erplink was stopped (the load's own purge is written down too).
    const dir3 = await freshDir();
    const a = await open(dir3, { maxEntries: 3, clock: () => at(0) });
    await a.append([expiring(0, 0), expiring(1, 26), expiring(2, 0)]);
    await a.close();
    const b = await open(dir3, { maxEntries: 3, clock: () => at(1) });
    assert.equal(await held(b), [1]);
    await b.append([expiring(3, 30), expiring(4, 30)]);
    await b.close();
    assert.equal(await held(await open(dir3, { maxEntries: 3, clock: () => at(1) })), [4, 3, 1]);
  },
);

file(
  "a nedb request_logs.db of an earlier release: its unexpired entries are moved into the new file once, and it is removed",
  async () => {
    const dir = await freshDir();
    const old = [entry(0), entry(1, { expiresAt: new Date(T0 - 1) }), entry(2), entry(3)];
    const backend = await createEmbeddedBackend({ dataDir: dir });
    const docs = old.map(({ id, accesses, ...rest }) => ({
      _id: id,
      ...rest,
      accesses: accesses.map((a) => ({ ...a })),
      accessKeys: accesses.map((a) => `${a.entity}|${a.operation}`),
    }));
    await (await backend.collection(requestLogsCollection)).insertMany(docs);
    await backend.close();
    assert.ok((await readdir(dir)).includes(LEGACY_REQUEST_LOG_FILE), "precondition: the old file");

    const log = await open(dir);
    assert.equal(await held(log), [3, 2, 0]);
    assert.equal(await log.get(IDS[2]!), entry(2));
    assert.equal(log.stats().load, { lines: 0, unreadable: 0, expired: 1, duplicates: 0, overCap: 0, migrated: 4 });
    assert.equal(await readdir(dir), [REQUEST_LOG_FILE]);
    await log.append(entries([4]));
    await log.close();
    const again = await open(dir);
    assert.equal(await held(again), [4, 3, 2, 0]);
    assert.is(again.stats().load.migrated, 0);
  },
);

file("a request_logs.db that cannot be read (a directory of that name) fails the open with the earlier release's message, not a crash", async () => {
  const dir = await freshDir();
  await mkdir(join(dir, "request_logs.db"), { recursive: true });
  // Before the check, nedb's read stream emitted an unhandled 'error' (EISDIR) and ended this process.
  const err = await rejection(() => open(dir), "opening beside a directory named request_logs.db");
  assert.instance(err, Error);
  assert.is(
    (err as Error).message,
    `cannot read the request log of an earlier release (${join(dir, "request_logs.db")}); move it away to start without it`,
  );
  assert.is(((err as Error).cause as Error).message, "not a regular file");
});

file("the embedded store keeps its request log in request_logs.jsonl of its data directory, read back by the next store", async () => {
  const dir = await freshDir();
  const store = await createStore({ kind: "embedded", dataDir: dir, logMaxEntries: 3 });
  const fresh = entries(range(0, 5)).map((r) => ({ ...r, expiresAt: new Date(Date.now() + DAY) }));
  try {
    await store.logs.append(fresh);
  } finally {
    await store.close();
  }
  assert.ok((await readdir(dir)).includes(REQUEST_LOG_FILE));
  assert.ok(!(await readdir(dir)).includes(LEGACY_REQUEST_LOG_FILE), "no nedb file for the log");
  const again = await createStore({ kind: "embedded", dataDir: dir, logMaxEntries: 3 });
  try {
    assert.equal((await again.logs.query({ limit: 10 })).items, fresh.slice(2).reverse());
  } finally {
    await again.close();
  }
});

file.run();
