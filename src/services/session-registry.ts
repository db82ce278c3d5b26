/**
 * Sessions on the hot path: every admin request with a session token reads
 * this cache instead of the store. A cached session is re-read from the
 * store once it is older than `refreshMs` (the key-sync interval), so a
 * revoke made by another process takes effect here within that bound; a
 * revoke made here takes effect at once. Unknown token hashes are
 * remembered briefly and cold reads are budgeted, as for API keys, so a
 * flood of forged tokens cannot buy one store read each. Unlike keys,
 * sessions are not synced ahead: a live session's first use in a process is
 * a cold read, so a spent budget answers `unavailable` (retry), never
 * "unknown" (which would sign a dashboard out).
 *
 * Uses move the idle expiry: they are noted in memory and written in one
 * batch per interval (`lastUsedAt`), never on the request path. A session
 * that looks idle-expired from this process's view is re-read before it is
 * refused, since another process may have kept it alive.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { SessionRecord, SessionStore } from "../store/index.js";
import { BatchedUses } from "./batched-uses.js";
import { ColdReadBudget, bounded } from "./cache-bounds.js";
import { hashSessionToken } from "../schema/session-token.js";

/** Options of {@link SessionRegistry}. */
export interface SessionRegistryOptions {
  readonly store: SessionStore;
  readonly clock: () => Date;
  /** How long a cached session is trusted before it is re-read (ms). */
  readonly refreshMs: number;
  /** How long an unknown hash is remembered as unknown (ms). */
  readonly negativeTtlMs: number;
  readonly maxEntries: number;
  /** Most store reads per second for tokens not in memory. */
  readonly coldReadsPerSecond?: number;
  /** Reports a failed flush of use times (they are kept for the next one). */
  readonly onError: (err: unknown) => void;
}

interface Cached {
  record: SessionRecord;
  readAt: number;
}

/** Cache of sessions by token hash, with batched use times. */
export class SessionRegistry {
  private readonly known = new Map<string, Cached>();
  private readonly unknown = new Map<string, number>();
  private readonly loading = new Map<string, { promise: Promise<SessionRecord | undefined>; stale: boolean }>();
  private readonly coldReads: ColdReadBudget;
  /** Uses not yet written, by session id. */
  private readonly uses: BatchedUses;

  constructor(private readonly options: SessionRegistryOptions) {
    this.coldReads = new ColdReadBudget(options.coldReadsPerSecond ?? 200, options.clock);
    // The cached record keeps its older time: a session that then looks idle
    // is re-read before it is refused.
    this.uses = new BatchedUses({
      write: (id, at) => options.store.update(id, { lastUsedAt: at }),
      clock: options.clock,
      onError: options.onError,
    });
  }

  /**
   * The session of a token, or undefined. With `fresh`, a cached entry is
   * re-read from the store (used before refusing an idle-looking session).
   * Throws `unavailable` (with `retry-after`) when the token needs a store
   * read and the cold-read budget is spent.
   */
  async lookup(token: string, fresh = false): Promise<SessionRecord | undefined> {
    const hash = hashSessionToken(token);
    const now = this.options.clock().getTime();
    const hit = this.known.get(hash);
    if (hit !== undefined && !fresh && now - hit.readAt < this.options.refreshMs) return hit.record;
    if (hit === undefined) {
      const until = this.unknown.get(hash);
      if (until !== undefined) {
        if (until > now) return undefined;
        this.unknown.delete(hash);
      }
      if (!this.coldReads.take()) {
        throw new ConnectError("too many unknown session tokens at once: retry in a second", Code.Unavailable, { "retry-after": "1" });
      }
    }
    return this.load(hash);
  }

  private load(hash: string): Promise<SessionRecord | undefined> {
    const inFlight = this.loading.get(hash);
    if (inFlight !== undefined) return inFlight.promise;
    const load = {
      stale: false,
      promise: this.options.store.getByHash(hash).then(
        (record) => {
          this.loading.delete(hash);
          // A revoke here while the read was in flight wins over it.
          if (load.stale) return undefined;
          // Re-inserted (or not) below, as the newest entry.
          this.known.delete(hash);
          if (record === undefined) {
            bounded(this.unknown, this.options.maxEntries).set(hash, this.options.clock().getTime() + this.options.negativeTtlMs);
          } else {
            bounded(this.known, this.options.maxEntries).set(hash, { record, readAt: this.options.clock().getTime() });
          }
          return record;
        },
        (err: unknown) => {
          this.loading.delete(hash);
          throw err;
        },
      ),
    };
    this.loading.set(hash, load);
    return load.promise;
  }

  /** Caches a session just created. */
  remember(record: SessionRecord): void {
    this.unknown.delete(record.tokenHash);
    bounded(this.known, this.options.maxEntries).set(record.tokenHash, { record, readAt: this.options.clock().getTime() });
  }

  /** Drops a session (revoked here): it stops working at once in this process. */
  forget(record: SessionRecord): void {
    const load = this.loading.get(record.tokenHash);
    if (load !== undefined) load.stale = true;
    this.known.delete(record.tokenHash);
    this.uses.forget(record.id);
    bounded(this.unknown, this.options.maxEntries).set(record.tokenHash, this.options.clock().getTime() + this.options.negativeTtlMs);
  }

  /** When a session was last used, as far as this process knows. */
  lastUse(record: SessionRecord): Date {
    const pending = this.uses.pendingUse(record.id);
    return pending !== undefined && pending > record.lastUsedAt ? pending : record.lastUsedAt;
  }

  /** Notes that a session was used now. */
  touch(record: SessionRecord): void {
    this.uses.touch(record.id);
  }

  /** Writes every pending use now. */
  flush(): Promise<void> {
    return this.uses.flush();
  }

  /** Writes pending uses every `intervalMs` until {@link stop}. */
  start(intervalMs: number): void {
    this.uses.start(intervalMs);
  }

  /** Stops and writes what is pending (bounded). */
  stop(timeoutMs?: number): Promise<void> {
    return this.uses.stop(timeoutMs);
  }
}
