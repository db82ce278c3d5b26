/**
 * The in-memory index of API keys by the hash of their secret: the hot path
 * (every Authorize and every admin request with a key) reads it instead of
 * the store. Keys are cached on first use and on create/update, dropped on
 * revoke; unknown hashes are remembered briefly, so a flood of bad tokens
 * costs one store read per token per TTL, not one per request.
 *
 * Other processes' changes arrive by polling: every sync reads the keys
 * changed since the previous one (with an overlap for clock skew between
 * processes) and replaces or drops the cached entries, so a revoke or an
 * update made anywhere takes effect everywhere within one sync interval.
 *
 * A revoked key's hash is remembered as unknown, like any dead token, but
 * with the key's id: a refused use of a revoked secret is logged under the
 * key it was ({@link revokedId}). The lookup itself is the same store read
 * and the same cache for both, and a revoked key is never returned by it.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { ApiKeyRecord, ApiKeyStore } from "../store/index.js";
import { hashApiKey } from "./api-key-secret.js";
import { ColdReadBudget, bounded } from "./cache-bounds.js";

/** Options of {@link KeyRegistry}. */
export interface KeyRegistryOptions {
  readonly store: ApiKeyStore;
  readonly clock: () => Date;
  /** How long an unknown hash is remembered as unknown (ms). */
  readonly negativeTtlMs: number;
  /** Most entries of each cache; the oldest go first beyond it. */
  readonly maxEntries: number;
  /**
   * Most store reads per second for tokens not in memory. Anyone can forge
   * well-formed tokens (the checksum is public), so distinct bogus tokens
   * must not buy one store read each: past this budget a cold token is
   * answered `unavailable` with `Retry-After` (never as unknown: a valid key
   * that could not be read now is not an invalid one, and a client that
   * rotates keys on 401 must not do it for nothing), and nothing is
   * remembered, so a real key works once the flood passes.
   */
  readonly coldReadsPerSecond?: number;
}

/** The refusal of a token that needs a store read while the cold-read budget is spent. */
function coldBudgetSpent(): ConnectError {
  return new ConnectError("too many keys not yet in memory at once: retry in a second", Code.Unavailable, { "retry-after": "1" });
}

/** Whether a key has expired at `now`. */
export function isExpired(key: ApiKeyRecord, now: Date): boolean {
  return key.expiresAt !== undefined && key.expiresAt.getTime() <= now.getTime();
}

/** A data key's rate limits: its own, else the service defaults. */
export function dataKeyLimits(key: ApiKeyRecord, defaults: { readonly perMinute?: number; readonly perDay?: number }) {
  return {
    perMinute: key.rateLimits.perMinute ?? defaults.perMinute,
    perDay: key.rateLimits.perDay ?? defaults.perDay,
  };
}

/** How far back each sync looks beyond the previous one, for clock skew between processes (ms). */
export const SYNC_OVERLAP_MS = 10_000;
/** Most changed keys one sync reads. */
const SYNC_BATCH = 10_000;

/** Cache of API keys by secret hash. */
export class KeyRegistry {
  private readonly known = new Map<string, ApiKeyRecord>();
  /** Hashes known to name no key in force: until when (ms), and the revoked key's id when the hash is one's. */
  private readonly unknown = new Map<string, { readonly until: number; readonly revokedId?: string }>();
  /** Store reads in flight; `stale` is set when the key changes meanwhile. */
  private readonly loading = new Map<string, { promise: Promise<ApiKeyRecord | undefined>; stale: boolean }>();

  private readonly coldReads: ColdReadBudget;

  constructor(private readonly options: KeyRegistryOptions) {
    this.coldReads = new ColdReadBudget(options.coldReadsPerSecond ?? 200, options.clock);
  }

  /** The key a secret belongs to, or undefined. Reads the store only on a cold miss. */
  lookup(secret: string): Promise<ApiKeyRecord | undefined> | ApiKeyRecord | undefined {
    return this.lookupHash(hashApiKey(secret));
  }

  /** The key whose secret hashes to `hash` if this process holds it now; never reads the store. */
  cached(hash: string): ApiKeyRecord | undefined {
    return this.known.get(hash);
  }

  /** The key whose secret hashes to `hash` (a session's key), or undefined; as {@link lookup}. */
  lookupHash(hash: string): Promise<ApiKeyRecord | undefined> | ApiKeyRecord | undefined {
    const hit = this.known.get(hash);
    if (hit !== undefined) return hit;
    const dead = this.unknown.get(hash);
    if (dead !== undefined) {
      if (dead.until > this.options.clock().getTime()) return undefined;
      this.unknown.delete(hash);
    }
    const inFlight = this.loading.get(hash);
    if (inFlight !== undefined) return inFlight.promise;
    if (!this.coldReads.take()) return Promise.reject(coldBudgetSpent());
    // Concurrent misses for one hash share one store read.
    const load = {
      stale: false,
      // Revoked keys are read too (the same query, the same cost), only to name them in the log.
      promise: this.options.store.getByHash(hash, { includeRevoked: true }).then(
        (record) => {
          this.loading.delete(hash);
          // A revoke or update while the read was in flight wins over it.
          if (load.stale) return this.known.get(hash);
          if (record === undefined || record.revokedAt !== undefined) {
            this.markDead(hash, record?.id);
            return undefined;
          }
          bounded(this.known, this.options.maxEntries).set(hash, record);
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

  /**
   * The id of the revoked key whose secret hashes to `hash`, when a lookup
   * of that hash found it revoked (and it is still remembered); otherwise
   * undefined. For attribution only: never makes the key usable.
   */
  revokedId(hash: string): string | undefined {
    return this.unknown.get(hash)?.revokedId;
  }

  /** Caches a key as it now is (after create or update). */
  remember(record: ApiKeyRecord): void {
    if (record.revokedAt !== undefined) return this.forget(record.keyHash, record.id);
    this.markStale(record.keyHash);
    this.unknown.delete(record.keyHash);
    if (this.known.has(record.keyHash)) this.known.set(record.keyHash, record);
    else bounded(this.known, this.options.maxEntries).set(record.keyHash, record);
  }

  /** Drops a key (after revoke): it stops working at once in this process. `id` names it in the log of later uses. */
  forget(keyHash: string, id?: string): void {
    this.markStale(keyHash);
    this.known.delete(keyHash);
    // Known to be dead: answer from memory, like an unknown token.
    this.markDead(keyHash, id);
  }

  private markDead(keyHash: string, revokedId: string | undefined): void {
    const until = this.options.clock().getTime() + this.options.negativeTtlMs;
    bounded(this.unknown, this.options.maxEntries).set(keyHash, revokedId === undefined ? { until } : { until, revokedId });
  }

  private lastSync: number | undefined;
  /** When a sync last succeeded (undefined: none yet), and how many failed. */
  private lastSynced: Date | undefined;
  private syncFailures = 0;
  private timer: NodeJS.Timeout | undefined;

  /** The cache's size and the sync's state, read by the metrics at scrape time. */
  stats(): { known: number; unknown: number; lastSyncAt: Date | undefined; syncFailures: number } {
    return { known: this.known.size, unknown: this.unknown.size, lastSyncAt: this.lastSynced, syncFailures: this.syncFailures };
  }

  /** Applies the keys changed in the store since the previous sync (by any process). */
  async sync(): Promise<void> {
    const now = this.options.clock().getTime();
    const from = new Date((this.lastSync ?? now) - SYNC_OVERLAP_MS);
    let changed;
    try {
      changed = await this.options.store.changedSince(from, SYNC_BATCH);
    } catch (err) {
      this.syncFailures++;
      throw err;
    }
    this.lastSync = now;
    this.lastSynced = new Date(now);
    for (const record of changed) {
      if (record.revokedAt !== undefined) {
        this.forget(record.keyHash, record.id);
        continue;
      }
      const cached = this.known.get(record.keyHash);
      // Only replace what is cached, and never with an older version.
      if (cached !== undefined && cached.updatedAt.getTime() <= record.updatedAt.getTime()) {
        this.known.set(record.keyHash, record);
      }
    }
  }

  /** Syncs every `intervalMs` until {@link stop}; failures go to `onError` and are retried. */
  start(intervalMs: number, onError: (err: unknown) => void): void {
    this.lastSync = this.options.clock().getTime();
    this.timer = setInterval(() => this.sync().catch(onError), intervalMs);
    this.timer.unref();
  }

  /** Stops syncing. */
  stop(): void {
    clearInterval(this.timer);
  }

  private markStale(keyHash: string): void {
    const load = this.loading.get(keyHash);
    if (load !== undefined) load.stale = true;
  }
}
