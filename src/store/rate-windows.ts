/**
 * Rate-limit windows, shared by every process on one database. Each window
 * (subject, name, start) has `limit` places; a request takes one or is
 * refused. Two strategies, chosen by what the backend guarantees:
 *
 * - counters (embedded): one document per window whose `count` is
 *   incremented atomically (nedb runs one operation at a time);
 * - slots (MongoDB): one document per place taken, `_id` = window + `#` +
 *   place number, so the unique `_id` decides who gets each place. It relies
 *   on nothing but unique inserts: MongoDB-wire servers such as FerretDB 1.x
 *   do not make `$inc` or compare-and-set atomic under concurrency. Each
 *   process hands its concurrent requests distinct place numbers and learns
 *   of other processes' places from duplicate-key refusals.
 */
import { DuplicateKeyError } from "./errors.js";
import { plainIndex, type CollectionSpec, type DocumentCollection, type StoreBackend } from "./collection.js";

/** The rate_windows collection and its indexes. */
export const rateWindowsCollection: CollectionSpec = {
  name: "rate_windows",
  indexes: [plainIndex("rate_windows", "w"), plainIndex("rate_windows", "expiresAt")],
};

/** The outcome of {@link RateWindowStore.take}. */
export interface Take {
  /** Whether a place was taken. */
  readonly taken: boolean;
  /** Places used in the window, this one included (the limit when refused). */
  readonly used: number;
}

/** Storage port of rate-limit windows. */
export interface RateWindowStore {
  /** Takes one of `limit` places in window `id` (kept until `expiresAt`). */
  take(id: string, limit: number, expiresAt: Date): Promise<Take>;
  /** Gives back the place a successful {@link take} returned as `used`. */
  giveBack(id: string, used: number): Promise<void>;
  /** How many places of window `id` are taken. */
  used(id: string): Promise<number>;
  /** Removes windows that expired before `now`. */
  purge(now: Date): Promise<number>;
}

class CounterWindows implements RateWindowStore {
  constructor(private readonly collection: DocumentCollection) {}

  async take(id: string, limit: number, expiresAt: Date): Promise<Take> {
    const count = await this.collection.increment(id, "count", 1, { w: id, expiresAt });
    return count <= limit ? { taken: true, used: count } : { taken: false, used: limit };
  }

  async giveBack(id: string): Promise<void> {
    await this.collection.increment(id, "count", -1, {});
  }

  async used(id: string): Promise<number> {
    const doc = await this.collection.get(id);
    return typeof doc?.count === "number" ? doc.count : 0;
  }

  purge(now: Date): Promise<number> {
    return this.collection.deleteBefore("expiresAt", now);
  }
}

class SlotWindows implements RateWindowStore {
  /** Per window: the last place number this process handed out. */
  private readonly cursors = new Map<string, number>();
  private readonly starting = new Map<string, Promise<number>>();

  constructor(private readonly collection: DocumentCollection) {}

  /** Where this process starts in a window it has not used yet: after the places taken so far. */
  private async cursor(id: string): Promise<void> {
    if (this.cursors.has(id)) return;
    let start = this.starting.get(id);
    if (start === undefined) {
      start = this.collection.count({ w: id });
      this.starting.set(id, start);
    }
    try {
      const n = await start;
      if (!this.cursors.has(id)) this.cursors.set(id, n);
    } finally {
      this.starting.delete(id);
    }
  }

  async take(id: string, limit: number, expiresAt: Date): Promise<Take> {
    await this.cursor(id);
    for (;;) {
      // Synchronous: concurrent requests of this process get distinct places.
      const place = this.cursors.get(id)! + 1;
      if (place > limit) return { taken: false, used: limit };
      this.cursors.set(id, place);
      try {
        await this.collection.insert({ _id: `${id}#${place}`, w: id, expiresAt });
        return { taken: true, used: place };
      } catch (err) {
        // Another process has that place: try the next.
        if (!(err instanceof DuplicateKeyError)) throw err;
      }
    }
  }

  async giveBack(id: string, used: number): Promise<void> {
    // The freed place is not handed out again by a process whose cursor is
    // past it; a window only under-admits after a give-back, never over.
    await this.collection.delete(`${id}#${used}`);
  }

  used(id: string): Promise<number> {
    return this.collection.count({ w: id });
  }

  async purge(now: Date): Promise<number> {
    // Forget cursors of windows that ended (their ids embed the start).
    for (const id of this.cursors.keys()) {
      const end = windowEnd(id);
      if (end !== undefined && end < now.getTime()) this.cursors.delete(id);
    }
    return this.collection.deleteBefore("expiresAt", now);
  }
}

/** The end (ms) of a window id `<subject>|<name>|<startSeconds>|<lengthSeconds>`. */
function windowEnd(id: string): number | undefined {
  const parts = id.split("|");
  const start = Number(parts[parts.length - 2]);
  const length = Number(parts[parts.length - 1]);
  return Number.isFinite(start) && Number.isFinite(length) ? (start + length) * 1000 : undefined;
}

/** Opens the rate windows store on a backend. */
export async function openRateWindowStore(backend: StoreBackend): Promise<RateWindowStore> {
  const collection = await backend.collection(rateWindowsCollection);
  return backend.kind === "embedded" ? new CounterWindows(collection) : new SlotWindows(collection);
}
