/**
 * Fixed-window rate limiting, per UTC minute and per UTC day, counted in the
 * store so that every process on one database shares the windows. With a
 * limit of L, exactly L requests of a window pass, however many arrive at
 * once: each takes one of the window's L places or is refused (see
 * src/store/rate-windows.ts). A request refused by a later window gives back
 * the place it took in an earlier one.
 */
import type { RateWindowStore } from "../store/index.js";

/** A subject's limits; an unset limit means no such window. */
export interface Limits {
  readonly perMinute?: number;
  readonly perDay?: number;
}

/** One window's state after a request. */
export interface WindowState {
  readonly name: "minute" | "day";
  readonly limit: number;
  readonly remaining: number;
  /** When the current window ends. */
  readonly resetAt: Date;
  /** Length of the window in seconds. */
  readonly seconds: number;
}

/** The outcome of a rate-limit check. */
export interface RateLimitResult {
  readonly allowed: boolean;
  readonly windows: readonly WindowState[];
  /** When refused: whole seconds until the exhausted window ends. */
  readonly retryAfterSeconds?: number;
}

interface WindowDef {
  readonly name: "minute" | "day";
  readonly limit: number;
  readonly seconds: number;
  readonly id: string;
  readonly end: Date;
}

/** Rate limiter over the store's counters. */
export class RateLimiter {
  constructor(
    private readonly store: RateWindowStore,
    private readonly clock: () => Date,
  ) {}

  private windows(subject: string, limits: Limits, now: Date): WindowDef[] {
    const defs: WindowDef[] = [];
    const add = (name: "minute" | "day", limit: number | undefined, seconds: number) => {
      if (limit === undefined) return;
      const start = Math.floor(now.getTime() / 1000 / seconds) * seconds;
      defs.push({
        name,
        limit,
        seconds,
        id: `${subject}|${name}|${start}|${seconds}`,
        end: new Date((start + seconds) * 1000),
      });
    };
    add("minute", limits.perMinute, 60);
    add("day", limits.perDay, 86_400);
    return defs;
  }

  private state(def: WindowDef, count: number): WindowState {
    return {
      name: def.name,
      limit: def.limit,
      remaining: Math.max(0, def.limit - count),
      resetAt: def.end,
      seconds: def.seconds,
    };
  }

  private retryAfter(def: WindowDef, now: Date): number {
    return Math.max(1, Math.ceil((def.end.getTime() - now.getTime()) / 1000));
  }

  /** Counts one request against every window of `subject`. */
  async consume(subject: string, limits: Limits): Promise<RateLimitResult> {
    const now = this.clock();
    const defs = this.windows(subject, limits, now);
    const used: number[] = [];
    for (const [i, def] of defs.entries()) {
      // Kept a minute past the window's end, then purged.
      const take = await this.store.take(def.id, def.limit, new Date(def.end.getTime() + 60_000));
      if (!take.taken) {
        const windows: WindowState[] = [];
        for (const [j, earlier] of defs.slice(0, i).entries()) {
          await this.store.giveBack(earlier.id, used[j]!);
          windows.push(this.state(earlier, used[j]! - 1));
        }
        windows.push(this.state(def, take.used));
        for (const later of defs.slice(i + 1)) windows.push(this.state(later, await this.store.used(later.id)));
        return { allowed: false, windows, retryAfterSeconds: this.retryAfter(def, now) };
      }
      used.push(take.used);
    }
    return { allowed: true, windows: defs.map((d, i) => this.state(d, used[i]!)) };
  }

  /** Reports the windows of `subject` without counting a request. */
  async peek(subject: string, limits: Limits): Promise<RateLimitResult> {
    const now = this.clock();
    const defs = this.windows(subject, limits, now);
    const windows: WindowState[] = [];
    let exhausted: WindowDef | undefined;
    for (const def of defs) {
      const count = await this.store.used(def.id);
      if (count >= def.limit && exhausted === undefined) exhausted = def;
      windows.push(this.state(def, count));
    }
    return exhausted === undefined
      ? { allowed: true, windows }
      : { allowed: false, windows, retryAfterSeconds: this.retryAfter(exhausted, now) };
  }
}

/** The window with the fewest requests remaining (the later-ending one on a tie). */
export function tightestWindow(result: RateLimitResult): WindowState | undefined {
  let best: WindowState | undefined;
  for (const w of result.windows) {
    if (best === undefined || w.remaining < best.remaining || (w.remaining === best.remaining && w.resetAt > best.resetAt)) {
      best = w;
    }
  }
  return best;
}

/**
 * Response headers describing a result: `X-RateLimit-Limit`, `-Remaining`
 * and `-Reset` (Unix seconds) for the tightest window; the IETF draft
 * `RateLimit-Policy` and `RateLimit` fields for every window; and
 * `Retry-After` when refused.
 */
export function rateLimitHeaders(result: RateLimitResult, now: Date): Record<string, string> {
  const tightest = tightestWindow(result);
  if (tightest === undefined) return {};
  const headers: Record<string, string> = {
    "x-ratelimit-limit": String(tightest.limit),
    "x-ratelimit-remaining": String(tightest.remaining),
    "x-ratelimit-reset": String(Math.ceil(tightest.resetAt.getTime() / 1000)),
    "ratelimit-policy": result.windows.map((w) => `"${w.name}";q=${w.limit};w=${w.seconds}`).join(", "),
    ratelimit: result.windows
      .map((w) => `"${w.name}";r=${w.remaining};t=${Math.max(0, Math.ceil((w.resetAt.getTime() - now.getTime()) / 1000))}`)
      .join(", "),
  };
  if (!result.allowed && result.retryAfterSeconds !== undefined) headers["retry-after"] = String(result.retryAfterSeconds);
  return headers;
}
