/**
 * Usage test helpers: deterministic synthetic data traffic, and an oracle
 * that works out what GetUsage must answer straight from log entries (no
 * rollups, no store), to compare with the service's answer in a plain form.
 * The oracle reuses the per-request rules of src/services/rollups.ts
 * (countersOf, groupsOf; unit-tested in test/services/rollups.test.ts) and
 * does the grouping by time and key itself. Lives outside test/ because
 * uvu runs every file there.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Usage, UsageCounts } from "../src/gen/erplink/admin/v1/usage_pb.js";
import {
  COUNTERS,
  DENIED_STEP_PREFIX,
  LATENCY_BOUNDS_MS,
  OUTCOME_COUNTERS,
  RollupBuffer,
  countersOf,
  groupsOf,
  isDataRequest,
  latencyCounter,
  type GroupKind,
  type RollupEntry,
} from "../src/services/rollups.js";
import type { UsageRollupStore } from "../src/store/index.js";

/** A small deterministic PRNG (mulberry32), so that every run sees the same traffic. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Test API key ids: `key_` + 26 base32 characters. */
export function keyId(i: number): string {
  return `key_01K${String(i).padStart(23, "0")}`;
}

const ENTITIES = ["A_BusinessPartner", "A_Address", "A_SalesOrder", "A_SalesOrderItem", "A_Product", "A_Supplier", "A_Customer", "A_Bank"];
const OPERATIONS = ["list", "get", "create", "update", "delete"];

/** Options of {@link syntheticEntries}. */
export interface SyntheticOptions {
  readonly from: number;
  readonly spanMs: number;
  readonly seed: number;
  /** Distinct API keys (default 20). */
  readonly keys?: number;
}

/**
 * `n` request-log entries spread over `[from, from + spanMs)`: mostly data
 * requests (some admin ones, which must not count), skewed towards a few
 * keys and entity sets, with every outcome, denial steps, `$batch`es of
 * several accesses, and upstream latencies in quarter milliseconds (exact
 * sums) across every bucket.
 */
export function syntheticEntries(n: number, options: SyntheticOptions): RollupEntry[] {
  const rand = prng(options.seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() ** 2 * xs.length)]!;
  const keys = Array.from({ length: options.keys ?? 20 }, (_, i) => keyId(i));
  const out: RollupEntry[] = [];
  for (let i = 0; i < n; i++) {
    const timestamp = new Date(options.from + Math.floor((i / n) * options.spanMs) + Math.floor(rand() * 1000));
    if (rand() < 0.05) {
      out.push({ timestamp, path: "/admin/usage", status: 200, apiKeyId: "master", instance: "", service: "", accesses: [], denialStep: "", upstreamStatus: 0, upstreamDurationMs: 0 });
      continue;
    }
    const instance = rand() < 0.7 ? "prod" : "dev";
    const service = pick(["API_BUSINESS_PARTNER", "API_SALES_ORDER_SRV", "API_PRODUCT_SRV"]);
    const accessCount = rand() < 0.1 ? 2 + Math.floor(rand() * 3) : rand() < 0.05 ? 0 : 1;
    const accesses = Array.from({ length: accessCount }, () => ({ entity: pick(ENTITIES), operation: pick(OPERATIONS) }));
    const base = { timestamp, path: `/odata/${instance}/${service}/x`, apiKeyId: pick(keys), instance, service, accesses };
    const r = rand();
    const latency = Math.round(rand() ** 3 * 40_000 * 4) / 4;
    if (r < 0.7) out.push({ ...base, status: 200, denialStep: "", upstreamStatus: 200, upstreamDurationMs: latency });
    else if (r < 0.75) out.push({ ...base, status: 404, denialStep: "", upstreamStatus: 404, upstreamDurationMs: latency });
    else if (r < 0.78) out.push({ ...base, status: 500, denialStep: "", upstreamStatus: 500, upstreamDurationMs: latency });
    else if (r < 0.88) {
      const step = pick(["ENTITY", "OPERATION", "SERVICE", "INSTANCE", "NOT_ALLOWED"]);
      out.push({ ...base, status: 403, denialStep: step, upstreamStatus: 0, upstreamDurationMs: 0 });
    } else if (r < 0.9) out.push({ ...base, apiKeyId: "", accesses: [], status: 401, denialStep: "KEY_INVALID", upstreamStatus: 0, upstreamDurationMs: 0 });
    else if (r < 0.95) out.push({ ...base, status: 429, denialStep: "RATE_LIMITED", upstreamStatus: 0, upstreamDurationMs: 0 });
    else if (r < 0.98) out.push({ ...base, status: 400, denialStep: "", upstreamStatus: 0, upstreamDurationMs: 0 });
    else out.push({ ...base, status: 504, denialStep: "", upstreamStatus: 0, upstreamDurationMs: 0 });
  }
  return out;
}

/**
 * Writes the rollups of `entries` as the log writer would (RollupBuffer,
 * then one `add`), spread round-robin over `writers` writers, so that reads
 * must add up several writers' documents.
 */
export async function writeRollups(store: UsageRollupStore, entries: readonly RollupEntry[], writers = 1): Promise<void> {
  const buffers = Array.from({ length: writers }, (_, i) => new RollupBuffer(`writer${i}`));
  entries.forEach((e, i) => buffers[i % writers]!.fold([e]));
  for (const b of buffers) await store.add(b.take());
}

/** Counts in a plain, comparable form (percentiles left out: they derive from the buckets). */
export interface PlainCounts {
  requests: number;
  allowed: number;
  upstream_client_errors: number;
  upstream_server_errors: number;
  denied: number;
  denied_by_step: Record<string, number>;
  rate_limited: number;
  client_errors: number;
  gateway_errors: number;
  latency: { count: number; sum_ms: number; buckets: number[] };
}

/** A usage answer in a plain, comparable form. */
export interface PlainUsage {
  from: string;
  to: string;
  total: PlainCounts;
  series: { start: string; counts: PlainCounts }[];
  groups: { key: string; counts: PlainCounts }[];
  more_groups: number;
}

/** Counts as GetUsage must give them; groups have no latency histogram. */
function plainCountsOf(c: Readonly<Record<string, number>>, histogram: boolean): PlainCounts {
  const steps: Record<string, number> = {};
  for (const [name, n] of Object.entries(c)) if (name.startsWith(DENIED_STEP_PREFIX) && n > 0) steps[name.slice(DENIED_STEP_PREFIX.length)] = n;
  return {
    requests: c[COUNTERS.requests] ?? 0,
    allowed: c[OUTCOME_COUNTERS.allowed] ?? 0,
    upstream_client_errors: c[OUTCOME_COUNTERS.upstream_client_error] ?? 0,
    upstream_server_errors: c[OUTCOME_COUNTERS.upstream_server_error] ?? 0,
    denied: c[OUTCOME_COUNTERS.denied] ?? 0,
    denied_by_step: steps,
    rate_limited: c[OUTCOME_COUNTERS.rate_limited] ?? 0,
    client_errors: c[OUTCOME_COUNTERS.client_error] ?? 0,
    gateway_errors: c[OUTCOME_COUNTERS.gateway_error] ?? 0,
    latency: {
      count: c[COUNTERS.latencyCount] ?? 0,
      sum_ms: Math.round((c[COUNTERS.latencySumMs] ?? 0) * 1000) / 1000,
      buckets: histogram ? Array.from({ length: LATENCY_BOUNDS_MS.length + 1 }, (_, i) => c[latencyCounter(i)] ?? 0) : [],
    },
  };
}

/** The plain form of a UsageCounts message. */
export function plainCounts(c: UsageCounts | undefined): PlainCounts {
  if (c === undefined) throw new Error("counts missing");
  const l = c.upstreamLatency!;
  return {
    requests: Number(c.requests),
    allowed: Number(c.allowed),
    upstream_client_errors: Number(c.upstreamClientErrors),
    upstream_server_errors: Number(c.upstreamServerErrors),
    denied: Number(c.denied),
    denied_by_step: Object.fromEntries(Object.entries(c.deniedByStep).map(([k, v]) => [k, Number(v)])),
    rate_limited: Number(c.rateLimited),
    client_errors: Number(c.clientErrors),
    gateway_errors: Number(c.gatewayErrors),
    latency: { count: Number(l.count), sum_ms: l.sumMs, buckets: l.bucketCounts.map(Number) },
  };
}

/** The plain form of a Usage message. */
export function plainUsage(u: Usage): PlainUsage {
  return {
    from: timestampDate(u.from!).toISOString(),
    to: timestampDate(u.to!).toISOString(),
    total: plainCounts(u.total),
    series: u.series.map((p) => ({ start: timestampDate(p.start!).toISOString(), counts: plainCounts(p.counts) })),
    groups: u.groups.map((g) => ({ key: g.key, counts: plainCounts(g.counts) })),
    more_groups: u.moreGroups,
  };
}

/** What GetUsage must answer for `entries` over `[from, to)` (already rounded to the bucket). */
export function expectedUsage(
  entries: readonly RollupEntry[],
  q: { from: number; to: number; bucket: "hour" | "day"; groupBy?: GroupKind; groupLimit?: number },
): PlainUsage {
  const unit = q.bucket === "hour" ? 3_600_000 : 86_400_000;
  const add = (into: Record<string, number>, from: Record<string, number>) => {
    for (const [k, v] of Object.entries(from)) into[k] = (into[k] ?? 0) + v;
  };
  const points = new Map<number, Record<string, number>>();
  for (let t = q.from; t < q.to; t += unit) points.set(t, {});
  const total: Record<string, number> = {};
  const groups = new Map<string, Record<string, number>>();
  for (const e of entries) {
    const t = e.timestamp.getTime();
    if (!isDataRequest(e) || t < q.from || t >= q.to) continue;
    const c = countersOf(e);
    add(points.get(Math.floor(t / unit) * unit)!, c);
    add(total, c);
    if (q.groupBy !== undefined) {
      for (const key of groupsOf(e)[q.groupBy]) {
        if (!groups.has(key)) groups.set(key, {});
        add(groups.get(key)!, c);
      }
    }
  }
  const limit = q.groupLimit ?? 10;
  const sorted = [...groups]
    .map(([key, c]) => ({ key, counts: plainCountsOf(c, false) }))
    .sort((a, b) => b.counts.requests - a.counts.requests || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return {
    from: new Date(q.from).toISOString(),
    to: new Date(q.to).toISOString(),
    total: plainCountsOf(total, true),
    series: [...points].map(([start, c]) => ({ start: new Date(start).toISOString(), counts: plainCountsOf(c, true) })),
    groups: sorted.slice(0, limit),
    more_groups: Math.max(0, sorted.length - limit),
  };
}
