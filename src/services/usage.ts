/**
 * `last_used_at` without a store write per request: uses are noted in
 * memory and written in one batch per interval (and at shutdown).
 */
import type { ApiKeyStore } from "../store/index.js";
import { NotFoundError } from "../store/index.js";

/** Options of {@link UsageRecorder}. */
export interface UsageRecorderOptions {
  readonly store: ApiKeyStore;
  readonly clock: () => Date;
  /** Reports a failed flush (the uses are kept for the next one). */
  readonly onError: (err: unknown) => void;
}

/** Batches API key usage times. */
export class UsageRecorder {
  private pending = new Map<string, Date>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: UsageRecorderOptions) {}

  /** Notes that a key was used now. */
  touch(keyId: string): void {
    this.pending.set(keyId, this.options.clock());
  }

  /** The latest use not yet written, if any. */
  pendingUse(keyId: string): Date | undefined {
    return this.pending.get(keyId);
  }

  private flushing: Promise<void> | undefined;

  /** Writes every pending use (one flush at a time). */
  flush(): Promise<void> {
    this.flushing ??= this.write().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async write(): Promise<void> {
    const batch = this.pending;
    this.pending = new Map();
    for (const [keyId, at] of batch) {
      try {
        await this.options.store.update(keyId, { lastUsedAt: at });
      } catch (err) {
        if (err instanceof NotFoundError) continue; // revoked meanwhile
        // Keep it for the next flush unless a newer use replaced it.
        if (!this.pending.has(keyId)) this.pending.set(keyId, at);
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
