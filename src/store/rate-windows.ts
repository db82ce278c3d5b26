/**
 * Rate-limit windows, shared by every process on one database. Each window
 * (subject, name, start) has `limit` places. A process takes them in
 * leases: one atomic operation grants up to the places it asks for, never
 * more than the window has left, and the process spends them in memory
 * (src/services/rate-limiter.ts); places it will not spend it gives back.
 * The sum of what is granted and not given back never exceeds the limit,
 * however many processes ask at once: a window never over-admits. Two
 * strategies, chosen by what the backend guarantees:
 *
 * - counter (embedded): one document per window whose `count` is
 *   incremented atomically (nedb runs one operation at a time); a lease that
 *   would pass the limit takes back its excess at once.
 * - chain (MongoDB): one document per lease, `_id` = window + `#` + a
 *   sequence number, holding the lease's size `n` and the window's running
 *   total after it. A process writes link k+1 from link k's total; the unique
 *   `_id` decides who gets to write it, and a loser reads the winner's link
 *   and tries the next number. It relies on nothing but unique inserts:
 *   MongoDB-wire servers such as FerretDB 1.x do not make `$inc` or
 *   compare-and-set atomic under concurrency. A give-back is a link with a
 *   negative `n`. One document per lease, instead of one per request.
 */
import { DuplicateKeyError } from "./errors.js";
import { plainIndex, type CollectionSpec, type DocumentCollection, type StoreBackend } from "./collection.js";

/** The rate_windows collection and its indexes. */
export const rateWindowsCollection: CollectionSpec = {
  name: "rate_windows",
  indexes: [plainIndex("rate_windows", "w"), plainIndex("rate_windows", "expiresAt")],
  // A crash may lose the last counts of a window (a key may then use up to its limit again within
  // it); a flush per count would cost every limited key's request a disk flush.
  flush: false,
};

/** The outcome of {@link RateWindowStore.lease}. */
export interface Lease {
  /** Places granted: `want`, or fewer (down to 0) when the window has fewer left. */
  readonly granted: number;
  /**
   * Places of the window held after this lease, by every process (spent or
   * not, this lease's included, given-back ones not), as far as this process
   * knows; with one process, exactly the places it holds.
   */
  readonly issued: number;
}

/** Storage port of rate-limit windows. */
export interface RateWindowStore {
  /** Takes up to `want` of the `limit` places of window `id` (kept until `expiresAt`). */
  lease(id: string, want: number, limit: number, expiresAt: Date): Promise<Lease>;
  /** Gives back `count` places a {@link lease} granted and that will not be spent. */
  giveBack(id: string, count: number, expiresAt: Date): Promise<void>;
  /** How many places of window `id` are held (granted and not given back). */
  used(id: string): Promise<number>;
  /** Removes windows that expired before `now`. */
  purge(now: Date): Promise<number>;
}

class CounterWindows implements RateWindowStore {
  constructor(private readonly collection: DocumentCollection) {}

  async lease(id: string, want: number, limit: number, expiresAt: Date): Promise<Lease> {
    const count = await this.collection.increment(id, "count", want, { w: id, expiresAt });
    if (count <= limit) return { granted: want, issued: count };
    // Past the limit: keep what was left, give the rest back. Meanwhile the
    // count reads high, which only refuses others when nothing was left anyway.
    const excess = Math.min(want, count - limit);
    const after = await this.collection.increment(id, "count", -excess, {});
    return { granted: want - excess, issued: Math.min(after, limit) };
  }

  async giveBack(id: string, count: number): Promise<void> {
    await this.collection.increment(id, "count", -count, {});
  }

  async used(id: string): Promise<number> {
    const doc = await this.collection.get(id);
    return typeof doc?.count === "number" ? doc.count : 0;
  }

  purge(now: Date): Promise<number> {
    return this.collection.deleteBefore("expiresAt", now);
  }
}

/** The last link of a window's chain this process knows of. */
interface Head {
  readonly seq: number;
  readonly total: number;
}

/** Zero-padded, so that ids sort as numbers (`findNewest` orders by id). */
const SEQ_DIGITS = 10;

class ChainWindows implements RateWindowStore {
  /** Per window: the last link this process wrote or read. */
  private readonly heads = new Map<string, Head>();
  /** Per window: the operation of this process under way (one at a time, so that its links follow each other). */
  private readonly busy = new Map<string, Promise<unknown>>();

  constructor(private readonly collection: DocumentCollection) {}

  private serial<T>(id: string, op: () => Promise<T>): Promise<T> {
    const prev = this.busy.get(id) ?? Promise.resolve();
    const run = prev.then(op, op);
    const tail = run.catch(() => {});
    this.busy.set(id, tail);
    void tail.then(() => {
      if (this.busy.get(id) === tail) this.busy.delete(id);
    });
    return run;
  }

  private linkId(id: string, seq: number): string {
    return `${id}#${String(seq).padStart(SEQ_DIGITS, "0")}`;
  }

  /** The window's last link in the store (seq 0, total 0 before the first). */
  private async readHead(id: string): Promise<Head> {
    const [last] = await this.collection.findNewest({ where: { w: id }, limit: 1 });
    return last === undefined ? { seq: 0, total: 0 } : headOf(last);
  }

  /**
   * Appends a link of `n` places (negative: given back) after the last one,
   * with `grant(total)` deciding `n` from the window's total before it;
   * returns the link written, or the head when `grant` gave 0.
   */
  private append(id: string, expiresAt: Date, grant: (total: number) => number): Promise<{ n: number; head: Head }> {
    return this.serial(id, async () => {
      let head = this.heads.get(id) ?? (await this.readHead(id));
      for (;;) {
        const n = grant(head.total);
        if (n === 0) {
          this.heads.set(id, head);
          return { n, head };
        }
        const next = { seq: head.seq + 1, total: head.total + n };
        try {
          await this.collection.insert({ _id: this.linkId(id, next.seq), w: id, n, total: next.total, expiresAt });
          this.heads.set(id, next);
          return { n, head: next };
        } catch (err) {
          if (!(err instanceof DuplicateKeyError)) throw err;
          // Another process wrote that link: read it and go on after it.
          const theirs = await this.collection.get(this.linkId(id, next.seq));
          head = theirs === undefined ? await this.readHead(id) : headOf(theirs);
        }
      }
    });
  }

  async lease(id: string, want: number, limit: number, expiresAt: Date): Promise<Lease> {
    const { n, head } = await this.append(id, expiresAt, (total) => Math.max(0, Math.min(want, limit - total)));
    return { granted: n, issued: head.total };
  }

  async giveBack(id: string, count: number, expiresAt: Date): Promise<void> {
    if (count > 0) await this.append(id, expiresAt, () => -count);
  }

  async used(id: string): Promise<number> {
    return (await this.readHead(id)).total;
  }

  async purge(now: Date): Promise<number> {
    // Forget heads of windows that ended (their ids embed the start).
    for (const id of this.heads.keys()) {
      const end = windowEnd(id);
      if (end !== undefined && end < now.getTime()) this.heads.delete(id);
    }
    return this.collection.deleteBefore("expiresAt", now);
  }
}

function headOf(doc: Record<string, unknown>): Head {
  const id = String(doc._id);
  return { seq: Number(id.slice(id.lastIndexOf("#") + 1)), total: typeof doc.total === "number" ? doc.total : 0 };
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
  return backend.kind === "embedded" ? new CounterWindows(collection) : new ChainWindows(collection);
}
