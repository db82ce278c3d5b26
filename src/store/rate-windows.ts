/**
 * Rate-limit windows: one counter document per subject, window and window
 * start, incremented atomically in the store so that every process on one
 * database shares it.
 */
import { plainIndex, type CollectionSpec, type DocumentCollection, type StoreBackend } from "./collection.js";

/** The rate_windows collection and its indexes. */
export const rateWindowsCollection: CollectionSpec = {
  name: "rate_windows",
  indexes: [plainIndex("rate_windows", "expiresAt")],
};

/** Storage port of rate-limit counters. */
export class RateWindowStore {
  constructor(private readonly collection: DocumentCollection) {}

  /**
   * Adds `delta` to the counter `id` (creating it at zero) and returns the
   * new count. `expiresAt` marks when the counter may be discarded.
   */
  add(id: string, delta: number, expiresAt: Date): Promise<number> {
    return this.collection.increment(id, "count", delta, { expiresAt });
  }

  /** The current count of `id` (0 when it does not exist). */
  async count(id: string): Promise<number> {
    const doc = await this.collection.get(id);
    return typeof doc?.count === "number" ? doc.count : 0;
  }

  /** Removes counters that expired before `now`. */
  purge(now: Date): Promise<number> {
    return this.collection.deleteBefore("expiresAt", now);
  }
}

/** Opens the rate windows store on a backend. */
export async function openRateWindowStore(backend: StoreBackend): Promise<RateWindowStore> {
  return new RateWindowStore(await backend.collection(rateWindowsCollection));
}
