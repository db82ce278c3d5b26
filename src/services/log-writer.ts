/**
 * The request log's writer: entries are queued in memory and written in
 * batches by a timer, never on the request path. The queue is bounded; when
 * the store is down it holds what it can and the oldest entries beyond the
 * bound are dropped, counted and reported. A graceful stop writes what is
 * queued.
 *
 * With `maxEntries`, the log is kept to that many entries: after each batch
 * the oldest beyond it are removed from the store (not an error: counted as
 * evicted), so that a store holding the log in memory (the embedded one)
 * stays bounded under sustained load, whatever the retention.
 *
 * With `rollups`, each batch written to the log is also folded into the
 * usage rollups (counts per hour and day, see ./rollups.ts), which are
 * written at the end of the flush, once: a batch is counted once it is in
 * the log, and counts whose write failed are kept and added to the next
 * write.
 */
import { randomBytes } from "node:crypto";
import type { RequestLogPort, RequestLogRecord, UsageRollupStore } from "../store/index.js";
import type { IdGenerator } from "./ids.js";
import { RollupBuffer } from "./rollups.js";

/** An entry as callers give it; the writer adds the id and the expiry. */
export type LogEntry = Omit<RequestLogRecord, "id" | "expiresAt">;

/**
 * Most characters kept of an entry's free-text fields; longer values are cut
 * there. Whoever can reach erplink, with or without a key (a 401 is logged
 * too, and so is an Envoy check, whose request target has no 16 KiB HTTP
 * head bounding it), makes entries, and the embedded store holds 50,000 of
 * them in memory: one entry stays within some 15 KB, whatever was sent.
 */
export const LOG_FIELD_LIMITS = { method: 32, path: 4096, userAgent: 512, errorMessage: 1024, upstreamUrl: 8192 } as const;

/** Options of {@link LogWriter}. */
export interface LogWriterOptions {
  readonly store: RequestLogPort;
  readonly newId: IdGenerator;
  /** How long entries are kept (ms). */
  readonly retentionMs: number;
  /** Most entries queued; beyond it the oldest are dropped. */
  readonly maxQueued: number;
  /** Most entries per write. */
  readonly batchSize: number;
  /** Most entries the log keeps (the oldest beyond go after each batch); none: only retention bounds it. */
  readonly maxEntries?: number;
  /** Reports failed writes and drops (never on the request path). */
  readonly onProblem: (fields: Record<string, unknown>, message: string) => void;
  /** Where usage rollups go; none are kept without it. */
  readonly rollups?: {
    readonly store: UsageRollupStore;
    /** This writer's id in the rollups (default: random, one per process). */
    readonly writerId?: string;
  };
}

/** What the writer has done so far. */
export interface LogWriterStats {
  readonly queued: number;
  readonly written: number;
  /** Entries lost before they were written: the queue was full. */
  readonly dropped: number;
  /** Written entries removed to keep the log within `maxEntries` (oldest first). */
  readonly evicted: number;
  /** With `maxEntries`: the entries the log held after it was last trimmed; null before that, or without a cap. */
  readonly entries: number | null;
}

const LIMITED = Object.keys(LOG_FIELD_LIMITS) as (keyof typeof LOG_FIELD_LIMITS)[];

/** Batches request-log entries into the store. */
export class LogWriter {
  private queue: RequestLogRecord[] = [];
  private written = 0;
  private dropped = 0;
  private droppedReported = 0;
  private evicted = 0;
  private entries: number | null = null;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private readonly rollups: RollupBuffer | undefined;

  constructor(private readonly options: LogWriterOptions) {
    if (options.rollups !== undefined) {
      this.rollups = new RollupBuffer(options.rollups.writerId ?? randomBytes(9).toString("base64url"));
    }
  }

  /**
   * Queues an entry: an array push, nothing more. The writer takes the
   * object over (it adds `id` and `expiresAt` to it, and cuts the fields of
   * {@link LOG_FIELD_LIMITS}, rather than copy it on the request path): pass
   * a fresh one each time and leave it alone after.
   */
  record(entry: LogEntry): void {
    const owned = entry as { -readonly [F in keyof RequestLogRecord]: RequestLogRecord[F] };
    for (const field of LIMITED) {
      if (owned[field].length > LOG_FIELD_LIMITS[field]) owned[field] = owned[field].slice(0, LOG_FIELD_LIMITS[field]);
    }
    owned.id = this.options.newId("log");
    owned.expiresAt = new Date(entry.timestamp.getTime() + this.options.retentionMs);
    this.queue.push(owned);
    const excess = this.queue.length - this.options.maxQueued;
    if (excess > 0) {
      this.queue.splice(0, excess);
      this.dropped += excess;
    }
  }

  private inFlight = 0;

  /** Counters, for health reporting (`queued` includes a batch being written). */
  stats(): LogWriterStats {
    return {
      queued: this.queue.length + this.inFlight,
      written: this.written,
      dropped: this.dropped,
      evicted: this.evicted,
      entries: this.entries,
    };
  }

  /** Writes the queue in batches (one flush at a time); on failure keeps the rest queued. */
  flush(): Promise<void> {
    this.flushing ??= this.write().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async write(): Promise<void> {
    if (this.dropped > this.droppedReported) {
      this.options.onProblem({ dropped: this.dropped - this.droppedReported, total: this.dropped }, "request log entries dropped: the queue was full");
      this.droppedReported = this.dropped;
    }
    // The first flush trims what an earlier run (or a larger cap) left.
    if (this.entries === null) await this.trim();
    // What was queued when the flush began; later entries wait for the next
    // one. Draining until the queue is empty would, against a fast store,
    // turn one flush a second into a stream of batches of the few entries
    // that came meanwhile, each with its own append, trim and rollup writes
    // (on the embedded store: one rollup write per ~40 requests).
    let due = this.queue.length;
    while (due > 0 && this.queue.length > 0) {
      const batch = this.queue.splice(0, Math.min(this.options.batchSize, due));
      due -= batch.length;
      this.inFlight = batch.length;
      try {
        await this.options.store.append(batch);
      } catch (err) {
        this.inFlight = 0;
        // Back in front of what was recorded meanwhile, within the bound.
        this.queue.unshift(...batch);
        const excess = this.queue.length - this.options.maxQueued;
        if (excess > 0) {
          this.queue.splice(0, excess);
          this.dropped += excess;
        }
        this.options.onProblem({ err, queued: this.queue.length }, "request log write failed; will retry");
        break;
      }
      this.inFlight = 0;
      this.written += batch.length;
      await this.trim();
      // Counted once it is in the log; written with the others at the end of the flush.
      this.rollups?.fold(batch);
      // Let requests run between batches: an embedded store writes
      // synchronously, and a long queue would otherwise hold the event loop.
      if (due > 0) await new Promise((r) => setImmediate(r));
    }
    // Once per flush rather than per batch (a flush of a busy second is a
    // dozen batches; on the embedded store each rollup write is an append
    // to four nedb files, on MongoDB four round trips), those an
    // earlier failure left behind included.
    await this.writeRollups();
  }

  /** Keeps the log within `maxEntries`; a failure is reported and the next batch tries again. */
  private async trim(): Promise<void> {
    const max = this.options.maxEntries;
    if (max === undefined) return;
    try {
      const { removed, remaining } = await this.options.store.trim(max);
      this.evicted += removed;
      this.entries = remaining;
    } catch (err) {
      this.options.onProblem({ err }, "request log trim failed; will retry after the next batch");
    }
  }

  /** Writes the pending rollups; on failure keeps them for the next write and says so. */
  private async writeRollups(): Promise<boolean> {
    const rollups = this.rollups;
    if (rollups === undefined || !rollups.pending) return true;
    const batch = rollups.take();
    try {
      await this.options.rollups!.store.add(batch);
      return true;
    } catch (err) {
      rollups.restore(batch);
      this.options.onProblem({ err }, "usage rollup write failed; will retry");
      return false;
    }
  }

  /** Whether rollup counts wait to be written (for a graceful stop). */
  private rollupsPending(): boolean {
    return this.rollups?.pending ?? false;
  }

  /** Flushes every `intervalMs` until {@link stop}. */
  start(intervalMs: number): void {
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
    if (this.options.maxEntries !== undefined) void this.flush();
  }

  /** Stops the timer and writes what is queued, waiting at most `timeoutMs`. */
  async stop(timeoutMs = 10_000): Promise<void> {
    clearInterval(this.timer);
    const deadline = Date.now() + timeoutMs;
    // Keep flushing while entries remain (or a write is under way) and time
    // allows; the store may come back meanwhile.
    while ((this.queue.length > 0 || this.rollupsPending() || this.flushing !== undefined) && Date.now() < deadline) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.flush(), new Promise<void>((r) => (timer = setTimeout(r, Math.max(0, deadline - Date.now()))))]);
      clearTimeout(timer);
      if (this.queue.length > 0 || this.rollupsPending()) await new Promise((r) => setTimeout(r, 200));
    }
  }
}
