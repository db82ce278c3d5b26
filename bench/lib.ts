/**
 * What the benchmarks share: option checks, order statistics, and the main
 * thread's run with its watchdog. Not a benchmark itself.
 */

/** A phase a load worker is asked to run: `n` requests, stopping at `deadline` (epoch ms). */
export interface PhaseRequest {
  readonly n: number;
  readonly measure: boolean;
  readonly deadline: number;
}

/** What a load worker reports after a phase. */
export interface PhaseResult {
  /** Latency of each measured request (ms); empty for a warm-up. */
  readonly latencies: Float64Array;
  /** Requests completed (less than `n` when the deadline passed). */
  readonly done: number;
  readonly elapsedMs: number;
  /** Requests that failed (connection error, timeout). */
  readonly errors: number;
  /** Answers other than the expected one. */
  readonly unexpected: number;
  readonly firstProblem?: string;
}

/** An integer command-line option from 1 to `max`; throws naming `--name` otherwise. */
export function intOption(name: string, raw: string | undefined, max: number): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`--${name} must be an integer from 1 to ${max}`);
  return n;
}

/** The `p`th percentile (nearest rank) of ascending `sorted`; NaN when empty. */
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** The median of the finite values (a round cut short before any request has none). */
export function median(xs: number[]): number {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * Runs a benchmark's `main` on the main thread: gives up (exit code 1) when
 * it is not done within `budgetMs`, and sets exit code 1 when it throws or
 * resolves to `false`.
 */
export async function runBench(budgetMs: number, main: (started: number) => Promise<boolean | void>): Promise<void> {
  const started = Date.now();
  const watchdog = setTimeout(() => {
    console.error(`bench: not done within ${budgetMs / 1000} s; giving up`);
    process.exit(1);
  }, budgetMs);
  watchdog.unref();
  try {
    if ((await main(started)) === false) {
      console.error("bench: FAILED (see above)");
      process.exitCode = 1;
    }
  } catch (err) {
    console.error("bench failed:", err);
    process.exitCode = 1;
  } finally {
    clearTimeout(watchdog);
  }
}
