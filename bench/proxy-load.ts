/**
 * The load generator of `bench/proxy.ts` when wrk is not installed, and for
 * the fixed-rate latency phase (wrk keeps a fixed number of requests in
 * flight; it cannot hold a rate). Its own process, never one of the servers':
 *
 *   node --import tsx bench/proxy-load.ts
 *
 * reads one JSON command per line on stdin and answers each with one JSON
 * line on stdout ({@link LoadResult}); it exits when stdin closes. Requests
 * go through undici `Pool`s (one per origin, keep-alive); every answer is
 * checked: status 200 and exactly the back end's payload.
 *
 * - `closed`: `connections` lanes, each sending its next request when its
 *   previous one is answered, for `durationMs`; latency from send to last
 *   byte.
 * - `open`: requests started at `rate` per second on a fixed schedule,
 *   whatever the answers do, for `durationMs`; latency from the start to the
 *   last byte. (Timers fire up to a millisecond or two late: charging that
 *   to the server would drown the sub-millisecond differences measured
 *   here; `lagMs` reports how late starts were, so a generator that fell
 *   behind shows.)
 */
import { createInterface } from "node:readline";
import { Pool } from "undici";
import { PAYLOAD } from "./proxy-backend.js";

/** One phase to run. */
export interface LoadCommand {
  readonly mode: "closed" | "open";
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly durationMs: number;
  /** closed: requests in flight; open: most connections. */
  readonly connections: number;
  /** open: requests per second. */
  readonly rate?: number;
}

/** What a phase measured (latencies in ms). */
export interface LoadResult {
  readonly requests: number;
  readonly errors: number;
  readonly unexpected: number;
  readonly firstProblem?: string;
  readonly elapsedMs: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly mean: number;
  /** open: the median delay between a request's scheduled and actual start (ms). */
  readonly lagMs: number;
}

const pools = new Map<string, Pool>();

function pool(origin: string, connections: number): Pool {
  const key = `${origin} ${connections}`;
  let p = pools.get(key);
  if (p === undefined) {
    p = new Pool(origin, { connections, pipelining: 1, keepAliveTimeout: 120_000, headersTimeout: 10_000, bodyTimeout: 10_000 });
    pools.set(key, p);
  }
  return p;
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

async function run(cmd: LoadCommand): Promise<LoadResult> {
  const url = new URL(cmd.url);
  const path = `${url.pathname}${url.search}`;
  const p = pool(url.origin, cmd.connections);
  const headers = { ...cmd.headers };
  const latencies: number[] = [];
  let errors = 0;
  let unexpected = 0;
  let firstProblem: string | undefined;
  const lags: number[] = [];
  const one = async (scheduled: number) => {
    const startedAt = performance.now();
    if (cmd.mode === "open") lags.push(startedAt - scheduled);
    try {
      const res = await p.request({ path, method: "GET", headers });
      const chunks: Buffer[] = [];
      for await (const c of res.body) chunks.push(c as Buffer);
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      if (res.statusCode !== 200 || !body.equals(PAYLOAD)) {
        unexpected++;
        firstProblem ??= `status ${res.statusCode}, ${body.length} bytes: ${body.subarray(0, 300).toString("utf8")}`;
      }
    } catch (err) {
      errors++;
      firstProblem ??= `request failed: ${(err as Error).message}`;
    }
    latencies.push(performance.now() - startedAt);
  };
  const t0 = performance.now();
  const end = t0 + cmd.durationMs;
  if (cmd.mode === "closed") {
    const lane = async () => {
      while (performance.now() < end) await one(performance.now());
    };
    await Promise.all(Array.from({ length: cmd.connections }, lane));
  } else {
    const interval = 1000 / (cmd.rate ?? 1);
    const inFlight = new Set<Promise<void>>();
    let next = t0;
    while (next < end) {
      const now = performance.now();
      while (next <= now && next < end) {
        const pending = one(next).finally(() => inFlight.delete(pending));
        inFlight.add(pending);
        next += interval;
      }
      await new Promise((r) => setTimeout(r, Math.max(0, Math.min(next, end) - performance.now())));
    }
    await Promise.all(inFlight);
  }
  const elapsedMs = performance.now() - t0;
  const sorted = Float64Array.from(latencies).sort();
  const mean = latencies.reduce((a, b) => a + b, 0) / Math.max(1, latencies.length);
  return {
    requests: latencies.length,
    errors,
    unexpected,
    firstProblem,
    elapsedMs,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    mean,
    lagMs: percentile(Float64Array.from(lags).sort(), 50),
  };
}

// Commands run one at a time, in order.
let queue = Promise.resolve();
const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  if (line.trim() === "") return;
  queue = queue.then(async () => {
    const result = await run(JSON.parse(line) as LoadCommand).catch((err: unknown) => ({ failed: String(err) }));
    process.stdout.write(`${JSON.stringify(result)}\n`);
  });
});
lines.on("close", () => {
  void queue.then(async () => {
    await Promise.all([...pools.values()].map((p) => p.close()));
    process.exit(0);
  });
});
process.stdout.write("ready\n");
