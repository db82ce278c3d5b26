/**
 * Use times without a store write per request: uses are noted in memory
 * and written in one batch per interval (and at shutdown). Shared by API
 * keys (`last_used_at`) and sessions (`lastUsedAt`, which moves their idle
 * expiry).
 */
import { NotFoundError } from "../store/index.js";

/** Options of {@link BatchedUses}. */
export interface BatchedUsesOptions {
  /** Writes one use time; a NotFoundError means the record is gone (revoked) and the use is dropped. */
  readonly write: (id: string, at: Date) => Promise<unknown>;
  readonly clock: () => Date;
  /** Reports a failed write (the use is kept for the next flush). */
  readonly onError: (err: unknown) => void;
}

/** Batches use times by record id. */
export class BatchedUses {
  private pending = new Map<string, Date>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;

  constructor(private readonly options: BatchedUsesOptions) {}

  /** Notes that a record was used now. */
  touch(id: string): void {
    this.pending.set(id, this.options.clock());
  }

  /** The latest use not yet written, if any. */
  pendingUse(id: string): Date | undefined {
    return this.pending.get(id);
  }

  /** Drops a record's pending use (it was revoked). */
  forget(id: string): void {
    this.pending.delete(id);
  }

  /** Writes every pending use (one flush at a time). */
  flush(): Promise<void> {
    this.flushing ??= this.writeAll().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async writeAll(): Promise<void> {
    const batch = this.pending;
    this.pending = new Map();
    for (const [id, at] of batch) {
      try {
        await this.options.write(id, at);
      } catch (err) {
        if (err instanceof NotFoundError) continue; // revoked meanwhile
        // Keep it for the next flush unless a newer use replaced it.
        if (!this.pending.has(id)) this.pending.set(id, at);
        this.options.onError(err);
      }
    }
  }

  /** Flushes every `intervalMs` until {@link stop}. */
  start(intervalMs: number): void {
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
  }

  /** Stops the timer and writes what is pending, waiting at most `timeoutMs`. */
  async stop(timeoutMs = 5_000): Promise<void> {
    clearInterval(this.timer);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    });
    try {
      await Promise.race([this.flush(), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
