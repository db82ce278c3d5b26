/**
 * The in-memory index of API keys by the hash of their secret: the hot path
 * (every Authorize and every admin request with a key) reads it instead of
 * the store. Keys are cached on first use and on create/update, dropped on
 * revoke; unknown hashes are remembered briefly, so a flood of bad tokens
 * costs one store read per token per TTL, not one per request.
 */
import type { ApiKeyRecord, ApiKeyStore } from "../store/index.js";
import { hashApiKey } from "./api-key-secret.js";

/** Options of {@link KeyRegistry}. */
export interface KeyRegistryOptions {
  readonly store: ApiKeyStore;
  readonly clock: () => Date;
  /** How long an unknown hash is remembered as unknown (ms). */
  readonly negativeTtlMs: number;
  /** Most entries of each cache; the oldest go first beyond it. */
  readonly maxEntries: number;
}

/** Cache of API keys by secret hash. */
export class KeyRegistry {
  private readonly known = new Map<string, ApiKeyRecord>();
  private readonly unknown = new Map<string, number>();
  private readonly loading = new Map<string, Promise<ApiKeyRecord | undefined>>();

  constructor(private readonly options: KeyRegistryOptions) {}

  /** The key a secret belongs to, or undefined. Reads the store only on a cold miss. */
  lookup(secret: string): Promise<ApiKeyRecord | undefined> | ApiKeyRecord | undefined {
    const hash = hashApiKey(secret);
    const hit = this.known.get(hash);
    if (hit !== undefined) return hit;
    const until = this.unknown.get(hash);
    if (until !== undefined) {
      if (until > this.options.clock().getTime()) return undefined;
      this.unknown.delete(hash);
    }
    let pending = this.loading.get(hash);
    if (pending === undefined) {
      // Concurrent misses for one hash share one store read.
      pending = this.options.store.getByHash(hash).then(
        (record) => {
          this.loading.delete(hash);
          if (record === undefined) {
            bounded(this.unknown, this.options.maxEntries).set(hash, this.options.clock().getTime() + this.options.negativeTtlMs);
          } else {
            this.remember(record);
          }
          return record;
        },
        (err: unknown) => {
          this.loading.delete(hash);
          throw err;
        },
      );
      this.loading.set(hash, pending);
    }
    return pending;
  }

  /** Caches a key as it now is (after create or update). */
  remember(record: ApiKeyRecord): void {
    this.unknown.delete(record.keyHash);
    bounded(this.known, this.options.maxEntries).set(record.keyHash, record);
  }

  /** Drops a key (after revoke): it stops working at once in this process. */
  forget(keyHash: string): void {
    this.known.delete(keyHash);
  }
}

/** Evicts the oldest entry of a full map before an insert. */
function bounded<K, V>(map: Map<K, V>, max: number): Map<K, V> {
  if (map.size >= max) {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }
  return map;
}
