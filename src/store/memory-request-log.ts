/**
 * The embedded store's request log, kept like a MongoDB capped collection:
 * the entries themselves (the objects `append` is given, never copied) in
 * id order in an array-backed ring of at most `maxEntries`, the oldest going
 * first when it is full. Queries scan from the newest entry backwards and
 * stop at the page's end; `get` and `beforeId` are binary searches over the
 * ids (time-ordered, see `src/services/ids.ts`).
 *
 * With a data directory, every batch is also appended to
 * `request_logs.jsonl` (one JSON object per line, one asynchronous append
 * per batch, before the batch is visible), and so is every purge or trim
 * that removes something (`{"purge": <date>}`, `{"keep": <n>}`), in the
 * order they happen. At open the file is replayed in that order, so that
 * the cap keeps exactly what it kept (a purged entry frees its place, one
 * the cap removed stays removed), the entries expired since are left out,
 * and a torn last line is skipped. The file is rewritten (to a temporary
 * file, flushed, then renamed) when it holds more than twice the entries
 * kept. A `request_logs.db` left by a release that kept the log in nedb is
 * read once, its unexpired entries moved into the new file, and removed.
 *
 * Why not nedb: per entry it copied and validated the document, updated
 * seven indexes and kept some thirty objects alive until the retention
 * purge (days), which every scavenge then had to promote: ~45 µs of CPU per
 * request and a heap growing without bound (bench/README.md). Here an append
 * costs about 0.3 µs per entry in memory and 8 µs with the file (JSON and
 * the write), against 22 µs and 29 µs for nedb (bench/memory-request-log.ts).
 */
import { constants as fsConstants } from "node:fs";
import { access, appendFile, mkdir, open, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { StringDecoder } from "node:string_decoder";
import nedbModule from "@seald-io/nedb";
import fastJson from "fast-json-stringify";
import type { Page } from "./aggregate.js";
import { assertScalars, type Document } from "./collection.js";
import { DuplicateKeyError } from "./errors.js";
import { requestLogFromDoc, type LogQuery, type RequestLogPort, type RequestLogRecord } from "./request-logs.js";

// nedb's typings declare an ES default export on a CommonJS module.
const Datastore = nedbModule as unknown as typeof nedbModule.default;

/**
 * Entries kept when no cap is given (as `ERPLINK_LOG_MAX_ENTRIES`'s default
 * on the embedded store). A data request's entry takes about 1.5 KB of heap
 * (`bench/memory-request-log.ts`: a 120-character path, a 170-character URL
 * sent upstream, a browser's user agent, one access; 1 KB as a line of the
 * file), so some 75 MB at this cap.
 */
export const DEFAULT_MAX_ENTRIES = 50_000;

/** Heap a data request's entry takes, about (bytes; see {@link DEFAULT_MAX_ENTRIES}). */
export const ENTRY_HEAP_BYTES = 1_536;

/** The file of the entries, in the data directory. */
export const REQUEST_LOG_FILE = "request_logs.jsonl";

/** Where a release that kept the log in nedb left it (migrated once, then removed). */
export const LEGACY_REQUEST_LOG_FILE = "request_logs.db";

/** The file is compacted when it holds more than twice the entries kept, counting at least this many (or the cap, if smaller). */
const COMPACT_FLOOR = 1000;

/** Entries serialized per write when the file is rewritten (the event loop runs between writes). */
const COMPACT_CHUNK = 1000;

/** Out-of-order batches up to this size are inserted in place; larger ones are sorted and merged once. */
const SMALL_BATCH = 16;

/** Bytes read at a time when the file is loaded. */
const READ_CHUNK = 1 << 20;

/** Options of {@link openMemoryRequestLog}. */
export interface MemoryRequestLogOptions {
  /** Most entries kept (default {@link DEFAULT_MAX_ENTRIES}; `Infinity`: no cap); beyond it the oldest go first. */
  readonly maxEntries?: number;
  /** Directory of {@link REQUEST_LOG_FILE}; absent or `:memory:` keeps nothing on disk. */
  readonly dataDir?: string;
  /** The time entries are loaded at: the expired are left out (default: now). */
  readonly clock?: () => Date;
  /**
   * Told what the operator should hear of and no caller sees: a rewrite of
   * the file that failed (the file keeps its lines; the next batch or purge
   * tries again), lines of the file that could not be read at start.
   */
  readonly onProblem?: (fields: Record<string, unknown>, message: string) => void;
}

/** What opening the log read from disk. */
export interface RequestLogLoad {
  /** Lines of {@link REQUEST_LOG_FILE} read (blank lines aside). */
  readonly lines: number;
  /** Lines that were not an entry (a torn last line, say): skipped. */
  readonly unreadable: number;
  /** Entries past their `expiresAt` (among the newest `maxEntries`): skipped. */
  readonly expired: number;
  /** Entries read twice (a batch written again after a failed write): kept once. */
  readonly duplicates: number;
  /** Entries older than the newest `maxEntries` (expired or not): skipped. */
  readonly overCap: number;
  /** Documents read from {@link LEGACY_REQUEST_LOG_FILE} (and counted as the lines are: expired, over the cap, or kept). */
  readonly migrated: number;
}

/** Counters of the log, for health reporting and tests. */
export interface MemoryRequestLogStats {
  /** Entries held. */
  readonly entries: number;
  readonly maxEntries: number;
  /** Entries the cap removed since the log was opened (oldest first); entries left out at load are in `load`. */
  readonly evicted: number;
  /** Lines in the file (0 without one). */
  readonly fileLines: number;
  /** Rewrites of the file that failed (each is retried when the next batch or purge calls for it). */
  readonly compactionFailures: number;
  readonly load: RequestLogLoad;
}

/** A mutable {@link RequestLogLoad}. */
type LoadCounts = { -readonly [K in keyof RequestLogLoad]: RequestLogLoad[K] };

/** Opens the log, reading back (and migrating) what its data directory holds. */
export async function openMemoryRequestLog(options: MemoryRequestLogOptions = {}): Promise<MemoryRequestLog> {
  const log = new MemoryRequestLog(options);
  await log.load((options.clock ?? (() => new Date()))());
  return log;
}

/** The embedded store's request log; see the module comment. */
export class MemoryRequestLog implements RequestLogPort {
  /** The ring: entry `i` (0 the oldest) is at `(head + i) & mask`; the length is a power of two. */
  private buf: (RequestLogRecord | undefined)[];
  private mask: number;
  private head = 0;
  private size = 0;
  private evicted = 0;
  /** Entries the cap removed since {@link trim} last reported. */
  private evictedUnreported = 0;
  /** Whether `expiresAt` never decreases from oldest to newest, so that a purge only looks at the front. */
  private expiryOrdered = true;
  private readonly maxEntries: number;
  private readonly dir: string | undefined;
  private readonly file: string | undefined;
  private fileLines = 0;
  /** The file does not end with a newline (a torn or failed write): the next write starts with one. */
  private needsNewline = false;
  /** File work (appends, rewrites) runs one at a time, in order. */
  private tail: Promise<void> = Promise.resolve();
  private compactionQueued = false;
  private compactionFailures = 0;
  private readonly loaded: LoadCounts = { lines: 0, unreadable: 0, expired: 0, duplicates: 0, overCap: 0, migrated: 0 };

  /** A log with nothing loaded yet; {@link openMemoryRequestLog} also reads the data directory. */
  private readonly onProblem: (fields: Record<string, unknown>, message: string) => void;

  constructor(options: Omit<MemoryRequestLogOptions, "clock"> = {}) {
    this.onProblem = options.onProblem ?? (() => undefined);
    const max = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
    if (!(Number.isSafeInteger(max) || max === Infinity) || max < 1)
      throw new RangeError(`maxEntries must be a positive integer or Infinity, not ${max}`);
    this.maxEntries = max;
    // Grown by doubling as entries come (up to the power of two holding the cap).
    let capacity = 1;
    while (capacity < Math.min(max, 16)) capacity *= 2;
    this.buf = new Array<RequestLogRecord | undefined>(capacity).fill(undefined);
    this.mask = capacity - 1;
    const inMemory = options.dataDir === undefined || options.dataDir === ":memory:";
    this.dir = inMemory ? undefined : options.dataDir;
    this.file = inMemory ? undefined : join(options.dataDir!, REQUEST_LOG_FILE);
  }

  // ------------------------------------------------------------------ the port

  async append(records: readonly RequestLogRecord[]): Promise<void> {
    if (records.length === 0) return;
    if (this.file === undefined) {
      this.insert(records, this.inOrder(records));
      return;
    }
    const file = this.file;
    return this.serial(async () => {
      // Checked here, after the appends queued before this one.
      const ordered = this.inOrder(records);
      let text = "";
      for (const r of records) text += `${requestLogLine(r)}\n`;
      await this.writeLines(file, text, records.length);
      this.insert(records, ordered);
      this.compactIfLarge();
    });
  }

  async get(id: string): Promise<RequestLogRecord | undefined> {
    assertScalars({ _id: id });
    const i = this.lowerBound(id);
    if (i === this.size) return undefined;
    const r = this.at(i);
    return r.id === id ? r : undefined;
  }

  async query(q: LogQuery): Promise<Page<RequestLogRecord>> {
    const { apiKeyId, instance, service, method, requestId, entity, operation, status, beforeId } = q;
    // As the collection adapters do: a filter value is a scalar, never an object.
    const equal: Record<string, string> = {};
    for (const [field, value] of Object.entries({ apiKeyId, instance, service, method, requestId, entity, operation, _id: beforeId })) {
      if (value !== undefined) equal[field] = value;
    }
    assertScalars(equal);
    const timed = q.from !== undefined || q.to !== undefined;
    const from = q.from?.getTime() ?? -Infinity;
    const to = q.to?.getTime() ?? Infinity;
    const accessed = entity !== undefined || operation !== undefined;
    // One more than asked tells whether another page follows.
    const want = q.limit + 1;
    const items: RequestLogRecord[] = [];
    for (let i = (beforeId === undefined ? this.size : this.lowerBound(beforeId)) - 1; i >= 0 && items.length < want; i--) {
      const r = this.buf[(this.head + i) & this.mask]!;
      if (apiKeyId !== undefined && r.apiKeyId !== apiKeyId) continue;
      if (instance !== undefined && r.instance !== instance) continue;
      if (service !== undefined && r.service !== service) continue;
      if (method !== undefined && r.method !== method) continue;
      if (requestId !== undefined && r.requestId !== requestId) continue;
      if (status !== undefined && !(r.status >= status.gte && r.status < status.lt)) continue;
      if (timed) {
        const t = r.timestamp.getTime();
        if (!(t >= from && t < to)) continue;
      }
      if (accessed && !hasAccess(r, entity, operation)) continue;
      items.push(r);
    }
    const more = items.length > q.limit;
    if (more) items.length = q.limit;
    return { items, more };
  }

  async purge(now: Date): Promise<number> {
    const t = now.getTime();
    if (this.file === undefined) return this.removeExpired(t);
    const file = this.file;
    // In order with the appends, and written down first: a reopen replays
    // the file's appends and purges in the order they happened, so that the
    // cap removes what it removed here (purged entries free their places).
    return this.serial(async () => {
      if (!this.anyExpired(t)) return 0;
      await this.writeLines(file, purgeLine(now), 1);
      const removed = this.removeExpired(t);
      this.compactIfLarge();
      return removed;
    });
  }

  async trim(maxEntries: number): Promise<{ removed: number; remaining: number }> {
    const take = (): number => {
      const removed = this.evictedUnreported + this.keepNewest(maxEntries);
      this.evictedUnreported = 0;
      return removed;
    };
    if (this.file === undefined || this.size <= maxEntries) return { removed: take(), remaining: this.size };
    const file = this.file;
    // Written down first, as a purge is, for a reopen's replay.
    return this.serial(async () => {
      if (this.size > maxEntries) await this.writeLines(file, `${JSON.stringify({ keep: maxEntries })}\n`, 1);
      const removed = take();
      this.compactIfLarge();
      return { removed, remaining: this.size };
    });
  }

  // ---------------------------------------------------------- beyond the port

  /** Counters: entries held, the cap, what it removed (not counting {@link trim}'s own), the file. */
  stats(): MemoryRequestLogStats {
    return {
      entries: this.size,
      maxEntries: this.maxEntries,
      evicted: this.evicted,
      fileLines: this.fileLines,
      compactionFailures: this.compactionFailures,
      load: { ...this.loaded },
    };
  }

  /** Resolves when the file work queued so far (appends, a rewrite) is done. */
  async idle(): Promise<void> {
    let tail;
    do {
      tail = this.tail;
      await tail;
    } while (tail !== this.tail);
  }

  /** Waits for the file work under way; the entries stay readable. */
  close(): Promise<void> {
    return this.idle();
  }

  /**
   * Reads the data directory: the file's appends and purges replayed in
   * order (so the cap keeps what it kept before), what has expired since
   * left out, then the unexpired entries of a nedb file left by an older
   * release (moved into the new file, then removed). Called once, by
   * {@link openMemoryRequestLog}.
   */
  async load(now: Date): Promise<void> {
    if (this.file === undefined || this.dir === undefined) return;
    await mkdir(this.dir, { recursive: true });
    const t = now.getTime();
    const evictedBefore = this.evicted;
    const take = (r: RequestLogRecord): void => {
      if (!this.insertOne(r)) this.loaded.duplicates++;
    };
    const lastChar = await readLines(this.file, (line) => {
      this.loaded.lines++;
      const read = parseLine(line);
      if (read === undefined) this.loaded.unreadable++;
      else if (read instanceof Date) this.loaded.expired += this.removeExpired(read.getTime());
      else if (typeof read === "number") this.evicted += this.keepNewest(read);
      else take(read);
    });
    this.fileLines = this.loaded.lines;
    this.needsNewline = lastChar !== undefined && lastChar !== "\n";
    // Created (or found writable) now: a data directory erplink cannot write to fails the start, not every batch.
    await appendFile(this.file, "").catch((err: unknown) => {
      throw new Error(`cannot write the request log's file ${this.file}: ${err instanceof Error ? err.message : String(err)}`, {
        cause: err,
      });
    });
    const expiredSince = this.removeExpired(t);
    this.loaded.expired += expiredSince;
    // Written down as a purge would be, for the next reopen's replay.
    const file = this.file;
    if (expiredSince > 0) await this.serial(() => this.writeLines(file, purgeLine(now), 1));
    const legacy = join(this.dir, LEGACY_REQUEST_LOG_FILE);
    const legacyDocs = await readLegacy(legacy);
    if (legacyDocs !== undefined) {
      this.loaded.migrated = legacyDocs.length;
      for (const doc of legacyDocs) {
        const r = requestLogFromDoc(doc);
        // No cap held there: the newest unexpired entries are kept.
        if (r.expiresAt.getTime() < t) this.loaded.expired++;
        else take(r);
      }
    }
    if (this.loaded.unreadable > 0) {
      this.onProblem(
        { file: this.file, unreadable: this.loaded.unreadable, lines: this.loaded.lines },
        "request log: lines of the file that are not entries were skipped (a torn last line after a crash is one)",
      );
    }
    this.loaded.overCap = this.evicted - evictedBefore;
    this.evicted = evictedBefore;
    this.evictedUnreported = 0;
    if (legacyDocs !== undefined) {
      // Everything kept goes into the new file before the old one is removed;
      // a crash in between reads both again (duplicates are read once).
      await this.serial(() => this.compact());
      await rm(legacy, { force: true });
      await rm(`${legacy}~`, { force: true });
    } else {
      this.compactIfLarge();
    }
  }

  // ------------------------------------------------------------------ the ring

  private at(i: number): RequestLogRecord {
    return this.buf[(this.head + i) & this.mask]!;
  }

  /** The index of the first entry whose id is not below `id` (`size` if none). */
  private lowerBound(id: string): number {
    let lo = 0;
    let hi = this.size;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.at(mid).id < id) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * Whether the batch's ids ascend and follow the newest entry (the fast,
   * usual case); otherwise checks that none is already held or given twice.
   */
  private inOrder(records: readonly RequestLogRecord[]): boolean {
    let prev = this.size === 0 ? undefined : this.at(this.size - 1).id;
    let ordered = true;
    for (const r of records) {
      if (prev !== undefined && !(r.id > prev)) {
        ordered = false;
        break;
      }
      prev = r.id;
    }
    if (ordered) return true;
    const seen = new Set<string>();
    for (const r of records) {
      const i = this.lowerBound(r.id);
      if (seen.has(r.id) || (i < this.size && this.at(i).id === r.id)) throw new DuplicateKeyError("request_logs", "id");
      seen.add(r.id);
    }
    return false;
  }

  /** Adds a checked batch: at the end when in order, else in place or by one merge. */
  private insert(records: readonly RequestLogRecord[], ordered: boolean): void {
    if (ordered) {
      for (const r of records) this.pushBack(r);
    } else if (records.length <= SMALL_BATCH) {
      for (const r of records) this.insertOne(r);
    } else {
      this.merge(records);
    }
  }

  /** Adds one entry where its id belongs; false (and nothing changes) when the id is held. */
  private insertOne(r: RequestLogRecord): boolean {
    if (this.size === 0 || r.id > this.at(this.size - 1).id) {
      this.pushBack(r);
      return true;
    }
    const i = this.lowerBound(r.id);
    if (this.at(i).id === r.id) return false;
    this.insertAt(i, r);
    return true;
  }

  private pushBack(r: RequestLogRecord): void {
    if (this.size === this.maxEntries) {
      this.dropFront();
      this.evicted++;
      this.evictedUnreported++;
    } else if (this.size === this.buf.length) {
      this.grow();
    }
    if (this.size > 0 && r.expiresAt.getTime() < this.at(this.size - 1).expiresAt.getTime()) this.expiryOrdered = false;
    this.buf[(this.head + this.size) & this.mask] = r;
    this.size++;
  }

  /** Inserts before entry `i` (whose id is greater; entry `i - 1`'s is smaller). */
  private insertAt(i: number, r: RequestLogRecord): void {
    if (this.size === this.maxEntries) {
      this.evicted++;
      this.evictedUnreported++;
      // Older than every entry of a full log: the cap takes it at once.
      if (i === 0) return;
      this.dropFront();
      i--;
    } else if (this.size === this.buf.length) {
      this.grow();
    }
    const { buf, mask, head } = this;
    for (let k = this.size; k > i; k--) buf[(head + k) & mask] = buf[(head + k - 1) & mask];
    buf[(head + i) & mask] = r;
    this.size++;
    const x = r.expiresAt.getTime();
    if ((i > 0 && this.at(i - 1).expiresAt.getTime() > x) || this.at(i + 1).expiresAt.getTime() < x) this.expiryOrdered = false;
  }

  /** Merges a batch out of order (sorted once) with the entries, keeping the newest `maxEntries`. */
  private merge(records: readonly RequestLogRecord[]): void {
    const incoming = [...records].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const all: RequestLogRecord[] = [];
    let i = 0;
    let j = 0;
    while (i < this.size || j < incoming.length) {
      const next = j === incoming.length || (i < this.size && this.at(i).id <= incoming[j]!.id) ? this.at(i++) : incoming[j++]!;
      // Ids were checked to be new; equal ones would be read twice from a file.
      if (all.length === 0 || all[all.length - 1]!.id !== next.id) all.push(next);
    }
    const start = Math.max(0, all.length - this.maxEntries);
    this.evicted += start;
    this.evictedUnreported += start;
    this.rebuild(start === 0 ? all : all.slice(start));
  }

  /** Replaces the entries by `entries` (in id order, at most `maxEntries`). */
  private rebuild(entries: RequestLogRecord[]): void {
    let capacity = this.buf.length;
    while (capacity < entries.length) capacity *= 2;
    this.buf = entries.concat(new Array<RequestLogRecord | undefined>(capacity - entries.length).fill(undefined) as RequestLogRecord[]);
    this.mask = capacity - 1;
    this.head = 0;
    this.size = entries.length;
    this.expiryOrdered = true;
    for (let k = 1; k < entries.length; k++) {
      if (entries[k]!.expiresAt.getTime() < entries[k - 1]!.expiresAt.getTime()) {
        this.expiryOrdered = false;
        break;
      }
    }
  }

  private dropFront(): void {
    this.buf[this.head] = undefined;
    this.head = (this.head + 1) & this.mask;
    this.size--;
  }

  /** Doubles the ring (it never grows past the smallest power of two holding `maxEntries`). */
  private grow(): void {
    const capacity = this.buf.length * 2;
    const next = new Array<RequestLogRecord | undefined>(capacity).fill(undefined);
    for (let k = 0; k < this.size; k++) next[k] = this.at(k);
    this.buf = next;
    this.mask = capacity - 1;
    this.head = 0;
  }

  /** Removes the entries expired at `t` (whose `expiresAt` is before it); returns how many. */
  private removeExpired(t: number): number {
    let removed = 0;
    // Usually the expired entries are the oldest.
    while (this.size > 0 && this.at(0).expiresAt.getTime() < t) {
      this.dropFront();
      removed++;
    }
    // Not when the retention changed (between runs) or entries came out of order.
    if (!this.expiryOrdered && this.size > 0) removed += this.sweep(t);
    if (this.size === 0) this.head = 0;
    return removed;
  }

  /** Removes the oldest entries beyond `n`; returns how many. */
  private keepNewest(n: number): number {
    let removed = 0;
    while (this.size > n) {
      this.dropFront();
      removed++;
    }
    if (this.size === 0) this.head = 0;
    return removed;
  }

  /** Whether an entry is expired at `t`. */
  private anyExpired(t: number): boolean {
    if (this.size === 0) return false;
    if (this.expiryOrdered) return this.at(0).expiresAt.getTime() < t;
    for (let k = 0; k < this.size; k++) if (this.at(k).expiresAt.getTime() < t) return true;
    return false;
  }

  /** Removes every entry expired at `t` wherever it is; returns how many. */
  private sweep(t: number): number {
    const { buf, mask, head } = this;
    let kept = 0;
    let ordered = true;
    let last = -Infinity;
    for (let k = 0; k < this.size; k++) {
      const r = buf[(head + k) & mask]!;
      const x = r.expiresAt.getTime();
      if (x < t) continue;
      if (x < last) ordered = false;
      last = x;
      buf[(head + kept++) & mask] = r;
    }
    for (let k = kept; k < this.size; k++) buf[(head + k) & mask] = undefined;
    const removed = this.size - kept;
    this.size = kept;
    this.expiryOrdered = ordered;
    return removed;
  }

  // ------------------------------------------------------------------ the file

  /** Runs file work after the work queued before it. */
  private serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.tail.then(task);
    this.tail = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /** Appends lines to the file; after a failure the next write starts on a new line. */
  private async writeLines(file: string, text: string, lines: number): Promise<void> {
    try {
      await appendFile(file, this.needsNewline ? `\n${text}` : text);
    } catch (err) {
      // Part of it may be in the file: a torn line is skipped when read, and
      // lines written again when the batch is retried are read once.
      this.needsNewline = true;
      throw err;
    }
    this.needsNewline = false;
    this.fileLines += lines;
  }

  /** Queues a rewrite of the file when it holds more than twice the entries kept. */
  private compactIfLarge(): void {
    if (this.file === undefined || this.compactionQueued) return;
    if (this.fileLines <= 2 * Math.max(this.size, Math.min(this.maxEntries, COMPACT_FLOOR))) return;
    this.compactionQueued = true;
    void this.serial(() => this.compact())
      .catch((err: unknown) => {
        // The file keeps its lines (still correct) and the next trigger tries again.
        this.compactionFailures++;
        this.onProblem(
          { err, file: this.file, failures: this.compactionFailures },
          "request log: rewriting the file failed; it keeps its lines and the next batch tries again",
        );
      })
      .finally(() => {
        this.compactionQueued = false;
      });
  }

  /** Rewrites the file with the entries held: a temporary file, flushed, then renamed over it. */
  private async compact(): Promise<void> {
    const file = this.file!;
    const tmp = `${file}.tmp`;
    const entries: RequestLogRecord[] = new Array(this.size);
    for (let k = 0; k < this.size; k++) entries[k] = this.at(k);
    const fh = await open(tmp, "w");
    try {
      for (let k = 0; k < entries.length; k += COMPACT_CHUNK) {
        let text = "";
        const end = Math.min(entries.length, k + COMPACT_CHUNK);
        for (let m = k; m < end; m++) text += `${requestLogLine(entries[m]!)}\n`;
        await fh.writeFile(text);
      }
      await fh.sync();
    } catch (err) {
      await fh.close().catch(() => undefined);
      await rm(tmp, { force: true }).catch(() => undefined);
      throw err;
    }
    await fh.close();
    await rename(tmp, file);
    this.fileLines = entries.length;
    this.needsNewline = false;
  }
}

/** Whether one access of the entry has the entity and the operation given (either may be absent). */
function hasAccess(r: RequestLogRecord, entity: string | undefined, operation: string | undefined): boolean {
  for (const a of r.accesses) {
    if ((entity === undefined || a.entity === entity) && (operation === undefined || a.operation === operation)) return true;
  }
  return false;
}

/**
 * Calls `onLine` with every non-blank line of `file`, read in chunks;
 * returns the file's last character (undefined when it is absent or empty).
 */
async function readLines(file: string, onLine: (line: string) => void): Promise<string | undefined> {
  let fh;
  try {
    fh = await open(file, "r");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  try {
    const decoder = new StringDecoder("utf8");
    const chunk = Buffer.allocUnsafe(READ_CHUNK);
    let rest = "";
    let last: string | undefined;
    for (;;) {
      const { bytesRead } = await fh.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      const text = rest + decoder.write(chunk.subarray(0, bytesRead));
      if (text.length > 0) last = text[text.length - 1];
      let start = 0;
      for (let nl = text.indexOf("\n"); nl >= 0; nl = text.indexOf("\n", start)) {
        if (nl > start) onLine(text.slice(start, nl));
        start = nl + 1;
      }
      rest = text.slice(start);
    }
    rest += decoder.end();
    if (rest.length > 0) last = rest[rest.length - 1];
    if (rest.trim() !== "") onLine(rest);
    return last;
  } finally {
    await fh.close();
  }
}

/** Why an earlier release's file stops the start. */
function unreadableLegacy(file: string, cause: unknown): Error {
  return new Error(`cannot read the request log of an earlier release (${file}); move it away to start without it`, { cause });
}

/** The entries of a nedb request-log file, or undefined when there is none. */
async function readLegacy(file: string): Promise<Document[] | undefined> {
  let found;
  try {
    found = await stat(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw unreadableLegacy(file, err);
  }
  try {
    // nedb reads what it cannot through a stream without an error listener,
    // which ends the process with a stack (a directory of that name, a file
    // it may not read): checked here first, and refused as any unreadable file.
    if (!found.isFile()) throw new Error("not a regular file");
    await access(file, fsConstants.R_OK);
    const ds = new Datastore({ filename: file });
    await ds.loadDatabaseAsync();
    return ds.getAllData() as Document[];
  } catch (err) {
    throw unreadableLegacy(file, err);
  }
}

const TEXT = { type: "string" } as const;
const NUMBER = { type: "number" } as const;
const DATE = { type: "string", format: "date-time" } as const;

/**
 * An entry as a line of the file, compiled: the JSON `JSON.stringify` writes (the
 * same members, dates as ISO strings), from a serializer compiled for the
 * entry's shape (fast-json-stringify), about three times as fast as
 * `JSON.stringify`, which was a tenth of what the log cost a request
 * (bench/README.md). The schema names every field of {@link RequestLogRecord}
 * (the type checker holds it to that); a field it did not name would be
 * left out of the file.
 */
const compiledLine: (entry: RequestLogRecord) => string = fastJson({
  type: "object",
  properties: {
    id: TEXT,
    requestId: TEXT,
    timestamp: DATE,
    apiKeyId: TEXT,
    sessionId: TEXT,
    method: TEXT,
    path: TEXT,
    status: NUMBER,
    durationMs: NUMBER,
    instance: TEXT,
    service: TEXT,
    accesses: { type: "array", items: { type: "object", properties: { entity: TEXT, operation: TEXT } } } as const,
    denialStep: TEXT,
    errorCode: TEXT,
    errorMessage: TEXT,
    upstreamStatus: NUMBER,
    upstreamDurationMs: NUMBER,
    clientIp: TEXT,
    userAgent: TEXT,
    upstreamMethod: TEXT,
    upstreamUrl: TEXT,
    responseBytes: NUMBER,
    expiresAt: DATE,
  } satisfies Record<keyof RequestLogRecord, unknown>,
});

/**
 * An entry as a line of the file (see {@link compiledLine}). The compiled
 * serializer throws where `JSON.stringify` writes `null` (a number that is
 * not finite, an invalid date); no request makes such an entry, but one
 * would otherwise fail every write of its batch and hold the queue: it is
 * written as `JSON.stringify` writes it (an invalid date's entry is then
 * skipped when the file is read).
 */
export function requestLogLine(entry: RequestLogRecord): string {
  try {
    return compiledLine(entry);
  } catch {
    return JSON.stringify(entry);
  }
}

/** The line that records a purge at `now`. */
function purgeLine(now: Date): string {
  return `${JSON.stringify({ purge: now })}\n`;
}

/**
 * What a line of the file holds: an entry, the time of a purge (a line
 * `{"purge": "<ISO date>"}`), the count a trim kept (`{"keep": <n>}`), or
 * undefined for anything else (a torn line, say).
 */
function parseLine(line: string): RequestLogRecord | Date | number | undefined {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return undefined;
  const o = v as Record<string, unknown>;
  if (o.id === undefined && "purge" in o) return dateOf(o.purge);
  if (o.id === undefined && typeof o.keep === "number" && Number.isSafeInteger(o.keep) && o.keep >= 0) return o.keep;
  if (typeof o.id !== "string") return undefined;
  const timestamp = dateOf(o.timestamp);
  const expiresAt = dateOf(o.expiresAt);
  if (timestamp === undefined || expiresAt === undefined) return undefined;
  return {
    id: o.id,
    requestId: text(o.requestId),
    timestamp,
    apiKeyId: text(o.apiKeyId),
    sessionId: text(o.sessionId),
    method: text(o.method),
    path: text(o.path),
    status: number(o.status),
    durationMs: number(o.durationMs),
    instance: text(o.instance),
    service: text(o.service),
    accesses: Array.isArray(o.accesses)
      ? o.accesses.map((a: unknown) => {
          const x = (typeof a === "object" && a !== null ? a : {}) as Record<string, unknown>;
          return { entity: text(x.entity), operation: text(x.operation) };
        })
      : [],
    denialStep: text(o.denialStep),
    errorCode: text(o.errorCode),
    errorMessage: text(o.errorMessage),
    upstreamStatus: number(o.upstreamStatus),
    upstreamDurationMs: number(o.upstreamDurationMs),
    clientIp: text(o.clientIp),
    userAgent: text(o.userAgent),
    upstreamMethod: text(o.upstreamMethod),
    upstreamUrl: text(o.upstreamUrl),
    // Absent in lines written before the field existed.
    responseBytes: number(o.responseBytes),
    expiresAt,
  };
}

function text(v: unknown): string {
  return typeof v === "string" ? v : "";
}

function number(v: unknown): number {
  return typeof v === "number" ? v : 0;
}

/** A date as JSON writes it (an ISO string); undefined when it is not one. */
function dateOf(v: unknown): Date | undefined {
  if (typeof v !== "string") return undefined;
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? undefined : d;
}
