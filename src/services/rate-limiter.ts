/**
 * Fixed-window rate limiting, per UTC minute and per UTC day, counted in the
 * store so that every process on one database shares the windows. With a
 * limit of L, at most L requests of a window pass, however many arrive at
 * once and on however many processes: each spends a place that the store
 * granted to this process (see src/store/rate-windows.ts), or is refused.
 *
 * Places come from the store in leases, so that a busy key costs one store
 * operation per lease rather than one per request:
 *
 * - a window whose limit is below {@link LEASE_MIN_LIMIT} is counted request
 *   by request (requests waiting at the same moment share one operation, and
 *   each is granted exactly one place): the store holds the exact count at
 *   every moment, on every process;
 * - a larger one leases blocks sized to the key's recent rate (doubling
 *   while a block lasts less than {@link LEASE_HORIZON_MS}, halving when it
 *   lasts far longer), at most {@link MAX_LEASE} and at most an eighth of
 *   what the window has left, so that near the end other processes still
 *   find places. A process gives back the places it has not spent after
 *   {@link IDLE_MS} without a request ({@link RateLimiter.sweep}) and when it
 *   stops; the rest expire with the window. Never over-admits; at worst a
 *   window under-admits by what other processes hold unspent.
 *
 * A request refused by a later window gives back the place it took in an
 * earlier one. With one process, the `remaining` reported is exact; with
 * several it counts the places others hold as used.
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

/** Limits below this are counted in the store request by request (exact on every process at every moment). */
export const LEASE_MIN_LIMIT = 1000;
/** The largest lease. */
export const MAX_LEASE = 4096;
/** A lease should last about this long at the key's recent rate (ms). */
export const LEASE_HORIZON_MS = 250;
/** Unspent places are given back after this long without a request (ms). */
export const IDLE_MS = 2000;
/** After the store granted nothing, requests are refused without asking it again for this long (ms). */
const RECHECK_MS = 1000;

interface WindowDef {
  readonly name: "minute" | "day";
  readonly limit: number;
  readonly seconds: number;
  readonly id: string;
  readonly end: Date;
}

/** What this process knows of one window of one subject. */
interface Local {
  readonly id: string;
  readonly endMs: number;
  /** Kept in the store a minute past the window's end, then purged. */
  readonly expiresAt: Date;
  /** Places granted to this process and not spent. */
  spare: number;
  /** Places of the window held by every process, as of this process's last store operation. */
  issued: number;
  /** Size of the next lease. */
  size: number;
  leasedAt: number;
  touchedAt: number;
  /** When the store last granted nothing (ms), if it did. */
  exhaustedAt: number | undefined;
  /** Requests waiting for places, in arrival order. */
  readonly queue: { resolve(used: number): void; reject(err: unknown): void }[];
  refilling: boolean;
}

/** Subjects whose window definitions are kept for reuse (see `RateLimiter.windows`). */
const MAX_CACHED_SUBJECTS = 10_000;

/** The start (s since the epoch) of the window of `seconds` holding `nowMs`. */
function windowStart(nowMs: number, seconds: number): number {
  return Math.floor(nowMs / 1000 / seconds) * seconds;
}

function windowDef(subject: string, name: "minute" | "day", limit: number, start: number, seconds: number): WindowDef {
  return { name, limit, seconds, id: `${subject}|${name}|${start}|${seconds}`, end: new Date((start + seconds) * 1000) };
}

/** Rate limiter over the store's windows. */
export class RateLimiter {
  private readonly locals = new Map<string, Local>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: RateWindowStore,
    private readonly clock: () => Date,
  ) {}

  /**
   * The windows of each subject as last computed, reused while their starts
   * and limits are the same (a request would otherwise build both
   * definitions, their ids and end dates anew). Bounded: cleared
   * when it holds {@link MAX_CACHED_SUBJECTS}.
   */
  private readonly defsBySubject = new Map<string, { readonly limits: Limits; readonly minute: number; readonly day: number; readonly defs: readonly WindowDef[] }>();

  private windows(subject: string, limits: Limits, now: Date): readonly WindowDef[] {
    // Module functions, not arrows bound here: tsx's keepNames would rename them on every call (see src/gateway/data/analyze.ts).
    const nowMs = now.getTime();
    const minute = windowStart(nowMs, 60);
    const day = windowStart(nowMs, 86_400);
    const hit = this.defsBySubject.get(subject);
    if (hit !== undefined && hit.minute === minute && hit.day === day && hit.limits.perMinute === limits.perMinute && hit.limits.perDay === limits.perDay) return hit.defs;
    const defs: WindowDef[] = [];
    if (limits.perMinute !== undefined) defs.push(windowDef(subject, "minute", limits.perMinute, minute, 60));
    if (limits.perDay !== undefined) defs.push(windowDef(subject, "day", limits.perDay, day, 86_400));
    if (this.defsBySubject.size >= MAX_CACHED_SUBJECTS) this.defsBySubject.clear();
    this.defsBySubject.set(subject, { limits: { perMinute: limits.perMinute, perDay: limits.perDay }, minute, day, defs });
    return defs;
  }

  private local(def: WindowDef, nowMs: number): Local {
    let st = this.locals.get(def.id);
    if (st === undefined) {
      if (this.locals.size >= 100_000) this.forgetEnded(nowMs);
      st = {
        id: def.id,
        endMs: def.end.getTime(),
        expiresAt: new Date(def.end.getTime() + 60_000),
        spare: 0,
        issued: 0,
        size: 1,
        // The first lease is of one place: nothing is known of the rate yet.
        leasedAt: Number.NEGATIVE_INFINITY,
        touchedAt: nowMs,
        exhaustedAt: undefined,
        queue: [],
        refilling: false,
      };
      this.locals.set(def.id, st);
    }
    return st;
  }

  private state(def: WindowDef, used: number): WindowState {
    return {
      name: def.name,
      limit: def.limit,
      remaining: Math.max(0, def.limit - used),
      resetAt: def.end,
      seconds: def.seconds,
    };
  }

  private retryAfter(def: WindowDef, now: Date): number {
    return Math.max(1, Math.ceil((def.end.getTime() - now.getTime()) / 1000));
  }

  /**
   * Spends one place of the window: at once from the spare ones, else after
   * a lease. Returns the places used after it (for `remaining`, taken at the
   * moment it is spent), or -1 when refused.
   */
  private take(def: WindowDef, st: Local, nowMs: number): number | Promise<number> {
    st.touchedAt = nowMs;
    if (st.spare > 0 && st.queue.length === 0) {
      st.spare--;
      return this.used(st);
    }
    // Refused without a store operation while the store recently had nothing left (and the limit was not raised since).
    if (st.exhaustedAt !== undefined && nowMs - st.exhaustedAt < RECHECK_MS && st.issued >= def.limit) return -1;
    return new Promise<number>((resolve, reject) => {
      st.queue.push({ resolve, reject });
      this.refill(def, st);
    });
  }

  /** Hands out spare places to the waiting requests, in order. */
  private serve(st: Local): void {
    while (st.queue.length > 0 && st.spare > 0) {
      st.spare--;
      st.queue.shift()!.resolve(this.used(st));
    }
  }

  /** Leases places for the waiting requests (one lease at a time per window) and hands them out in order. */
  private refill(def: WindowDef, st: Local): void {
    if (st.refilling) return;
    this.serve(st);
    if (st.queue.length === 0) return;
    st.refilling = true;
    const nowMs = this.clock().getTime();
    let want = st.queue.length;
    if (def.limit >= LEASE_MIN_LIMIT) {
      // Sized to the recent rate: a lease spent within the horizon doubles the next.
      const lasted = nowMs - st.leasedAt;
      if (lasted < LEASE_HORIZON_MS) st.size = Math.min(MAX_LEASE, st.size * 2);
      else if (lasted > 4 * LEASE_HORIZON_MS) st.size = Math.max(1, Math.floor(st.size / 2));
      const share = Math.max(1, Math.floor((def.limit - st.issued) / 8));
      want = Math.max(want, Math.min(st.size, share));
    }
    st.leasedAt = nowMs;
    this.store.lease(st.id, want, def.limit, st.expiresAt).then(
      (lease) => {
        st.refilling = false;
        st.spare += lease.granted;
        st.issued = lease.issued;
        const short = lease.granted < want;
        st.exhaustedAt = short ? this.clock().getTime() : undefined;
        this.serve(st);
        // The window had fewer places than asked for: the requests still waiting are refused.
        if (short) for (const w of st.queue.splice(0)) w.resolve(-1);
        else this.refill(def, st);
      },
      (err: unknown) => {
        st.refilling = false;
        for (const w of st.queue.splice(0)) w.reject(err);
      },
    );
  }

  /** Gives back a place a refused request took in an earlier window. */
  private async giveBackOne(def: WindowDef, st: Local): Promise<void> {
    if (def.limit >= LEASE_MIN_LIMIT) {
      st.spare++;
      return;
    }
    // Counted request by request: the store keeps the exact count.
    st.issued = Math.max(0, st.issued - 1);
    await this.store.giveBack(st.id, 1, st.expiresAt);
  }

  /** Places of the window this process counts as used (every process's holdings, less its own spare ones). */
  private used(st: Local): number {
    return Math.max(0, st.issued - st.spare);
  }

  /**
   * Counts one request against every window of `subject`. Answered at once
   * (no promise) when every window has a spare place, as for a busy key
   * between leases; a promise when a window needs the store.
   */
  consume(subject: string, limits: Limits): RateLimitResult | Promise<RateLimitResult> {
    const now = this.clock();
    const nowMs = now.getTime();
    const defs = this.windows(subject, limits, now);
    const locals = defs.map((d) => this.local(d, nowMs));
    const used: number[] = [];
    for (let i = 0; i < defs.length; i++) {
      const taken = this.take(defs[i]!, locals[i]!, nowMs);
      if (typeof taken !== "number") return this.consumeRest(defs, locals, used, i, taken, now);
      if (taken < 0) return this.refuse(defs, locals, i, now);
      used.push(taken);
    }
    return this.admitted(defs, used);
  }

  /** The rest of {@link consume} from window `i`, whose place `pending` waits for the store. */
  private async consumeRest(
    defs: readonly WindowDef[],
    locals: readonly Local[],
    used: number[],
    i: number,
    pending: Promise<number>,
    now: Date,
  ): Promise<RateLimitResult> {
    const nowMs = now.getTime();
    let n: number;
    try {
      n = await pending;
    } catch (err) {
      throw await this.givenBack(defs, locals, used.length, err);
    }
    for (;;) {
      if (n < 0) return this.refuse(defs, locals, i, now);
      used.push(n);
      if (++i === defs.length) return this.admitted(defs, used);
      const taken = this.take(defs[i]!, locals[i]!, nowMs);
      if (typeof taken === "number") n = taken;
      else {
        try {
          n = await taken;
        } catch (err) {
          throw await this.givenBack(defs, locals, used.length, err);
        }
      }
    }
  }

  /**
   * A window's lease failed (the store): the places this request took in
   * the `count` earlier windows go back, as for a refusal, so that a failed
   * request does not keep them. Best effort (the store may be failing for
   * them too); returns `err`, to be thrown.
   */
  private async givenBack(defs: readonly WindowDef[], locals: readonly Local[], count: number, err: unknown): Promise<unknown> {
    for (let j = 0; j < count; j++) await this.giveBackOne(defs[j]!, locals[j]!).catch(() => undefined);
    return err;
  }

  private admitted(defs: readonly WindowDef[], used: readonly number[]): RateLimitResult {
    return { allowed: true, windows: defs.map((d, i) => this.state(d, used[i]!)) };
  }

  /** Refused by window `i`: the places taken in the earlier windows are given back. */
  private async refuse(defs: readonly WindowDef[], locals: readonly Local[], i: number, now: Date): Promise<RateLimitResult> {
    for (let j = 0; j < i; j++) await this.giveBackOne(defs[j]!, locals[j]!);
    const windows: WindowState[] = [];
    for (let j = 0; j < defs.length; j++) windows.push(this.state(defs[j]!, j === i ? defs[j]!.limit : this.used(locals[j]!)));
    return { allowed: false, windows, retryAfterSeconds: this.retryAfter(defs[i]!, now) };
  }

  /** Reports the windows of `subject` without counting a request. */
  async peek(subject: string, limits: Limits): Promise<RateLimitResult> {
    const now = this.clock();
    const defs = this.windows(subject, limits, now);
    const windows: WindowState[] = [];
    let exhausted: WindowDef | undefined;
    for (const def of defs) {
      // The store's count holds this process's spare places too.
      const count = Math.max(0, (await this.store.used(def.id)) - (this.locals.get(def.id)?.spare ?? 0));
      if (count >= def.limit && exhausted === undefined) exhausted = def;
      windows.push(this.state(def, count));
    }
    return exhausted === undefined
      ? { allowed: true, windows }
      : { allowed: false, windows, retryAfterSeconds: this.retryAfter(exhausted, now) };
  }

  /**
   * Gives back the spare places of windows without a request for
   * {@link IDLE_MS} (all of them with `all`), and forgets windows that
   * ended. Failures are reported by the promise; the places stay spare.
   */
  async sweep(all = false): Promise<void> {
    const nowMs = this.clock().getTime();
    this.forgetEnded(nowMs);
    const returns: Promise<void>[] = [];
    for (const st of this.locals.values()) {
      if (st.spare === 0 || st.refilling || st.queue.length > 0) continue;
      if (!all && nowMs - st.touchedAt < IDLE_MS) continue;
      const count = st.spare;
      st.spare = 0;
      st.issued = Math.max(0, st.issued - count);
      // Idle: the key's rate is unknown again.
      st.size = 1;
      returns.push(
        this.store.giveBack(st.id, count, st.expiresAt).catch((err: unknown) => {
          st.spare += count;
          st.issued += count;
          throw err;
        }),
      );
    }
    const results = await Promise.allSettled(returns);
    const failed = results.find((r) => r.status === "rejected");
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
  }

  private forgetEnded(nowMs: number): void {
    for (const [id, st] of this.locals) if (st.endMs <= nowMs && st.queue.length === 0 && !st.refilling) this.locals.delete(id);
  }

  /** Sweeps every `intervalMs` until {@link stop}; `onError` hears of failed give-backs. */
  start(intervalMs: number, onError: (err: unknown) => void): void {
    this.timer = setInterval(() => void this.sweep().catch(onError), intervalMs);
    this.timer.unref();
  }

  /** Stops sweeping and gives back every spare place. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.sweep(true);
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
