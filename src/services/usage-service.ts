/**
 * erplink.admin.v1.UsageService: the usage of the data path over a time
 * range, read from the rollups the request-log writer keeps
 * (./rollups.ts, src/store/usage-rollups.ts), never from the log itself.
 *
 * The series comes from the hourly or daily totals. Groups come from the
 * daily rollups for the whole UTC days of the range, and for a day the
 * range covers only in part from the hourly groups of that day (one read
 * per writer and day, by id), so that a read costs about the same for 24
 * hours as for 400 days.
 */
import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  GetUsageRequestSchema,
  GetUsageResponseSchema,
  UpstreamLatencySchema,
  UsageCountsSchema,
  UsageGroupSchema,
  UsagePointSchema,
  UsageSchema,
  type GetUsageRequest,
  type Usage,
  type UsageCounts,
  type UsageService,
} from "../gen/erplink/admin/v1/usage_pb.js";
import type { Counters, GroupCounts, StoredRollup, UsageRollupStore } from "../store/index.js";
import type { ServiceDeps } from "./context.js";
import { translate, validationError, type Violation } from "./errors.js";
import {
  COUNTERS,
  DENIED_STEP_PREFIX,
  LATENCY_BOUNDS_MS,
  OUTCOME_COUNTERS,
  addCounters,
  latencyCounter,
  type GroupKind,
} from "./rollups.js";
import { MAX_TIME, MIN_TIME, filterValue, rulesOf, timestampProblem } from "./validation.js";

const names = { singular: "usage" };

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
const BUCKETS = { hour: HOUR_MS, day: DAY_MS } as const;
type Bucket = keyof typeof BUCKETS;

/** The longest range, and the most points of a series. */
const MAX_RANGE_DAYS = 400;
const MAX_BUCKETS = 1000;
const DEFAULT_GROUP_LIMIT = 10;
/** From the field's rule, as the OpenAPI document publishes it. */
const MAX_GROUP_LIMIT = rulesOf(GetUsageRequestSchema.field.groupLimit).maxValue;

/** A checked request: the range rounded to whole buckets. */
interface UsageQuery {
  /** ms, at a bucket start. */
  readonly from: number;
  /** ms, at a bucket start (exclusive). */
  readonly to: number;
  readonly bucket: Bucket;
  /** "" for no breakdown. */
  readonly groupBy: GroupKind | "";
  readonly groupLimit: number;
}

const floorTo = (ms: number, unit: number) => Math.floor(ms / unit) * unit;
const ceilTo = (ms: number, unit: number) => Math.ceil(ms / unit) * unit;

/** Checks a request (every violation at once) and applies the defaults and the rounding. */
export function readUsageQuery(req: GetUsageRequest, now: Date): UsageQuery {
  const violations: Violation[] = [];
  // The patterns are the fields' rules in the proto (published in the OpenAPI document).
  const bucket = filterValue(GetUsageRequestSchema, req, "bucket", violations) ?? "hour";
  const groupBy = filterValue(GetUsageRequestSchema, req, "group_by", violations) ?? "";
  if (req.groupLimit < 0 || req.groupLimit > MAX_GROUP_LIMIT) {
    violations.push({ field: "group_limit", description: `must be between 1 and ${MAX_GROUP_LIMIT} (0 means ${DEFAULT_GROUP_LIMIT})` });
  }
  for (const [field, ts] of [["from", req.from], ["to", req.to]] as const) {
    const problem = ts === undefined ? undefined : timestampProblem(ts);
    if (problem !== undefined) violations.push({ field, description: problem });
  }
  if (violations.length > 0) throw validationError(violations);

  const unit = BUCKETS[bucket as Bucket];
  const rawTo = req.to ? timestampDate(req.to).getTime() : now.getTime();
  const rawFrom = req.from ? timestampDate(req.from).getTime() : Math.max(rawTo - DAY_MS, MIN_TIME);
  // `to` not after `from`: an empty range, at the start of `from`'s bucket.
  // Rounded up, `to` stays within what a timestamp can be written as (the
  // last bucket of the year 9999 is left out).
  const to = Math.min(rawFrom >= rawTo ? floorTo(rawFrom, unit) : ceilTo(rawTo, unit), floorTo(MAX_TIME, unit));
  // Of a longer range, its most recent part: at most 400 days and 1000
  // buckets (only reachable with hours: 1000 days is more than 400). `to`
  // is at a bucket start, and both spans are whole buckets, so `from` is too.
  const from = Math.max(Math.min(floorTo(rawFrom, unit), to), to - MAX_RANGE_DAYS * DAY_MS, to - MAX_BUCKETS * unit);
  return {
    from,
    to,
    bucket: bucket as Bucket,
    groupBy: groupBy as GroupKind | "",
    groupLimit: req.groupLimit === 0 ? DEFAULT_GROUP_LIMIT : req.groupLimit,
  };
}

/**
 * A latency quantile estimated from bucket counts, as Prometheus'
 * `histogram_quantile`: linear inside the bucket it falls in (the first
 * from 0), the last bound when it falls above it, 0 without answers.
 */
export function estimateQuantile(q: number, counts: readonly number[]): number {
  const total = counts.reduce((a, b) => a + b, 0);
  if (total === 0) return 0;
  const rank = q * total;
  let below = 0;
  for (const [i, n] of counts.entries()) {
    if (n > 0 && below + n >= rank) {
      if (i >= LATENCY_BOUNDS_MS.length) return LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1]!;
      const lower = i === 0 ? 0 : LATENCY_BOUNDS_MS[i - 1]!;
      return Math.round((lower + ((LATENCY_BOUNDS_MS[i]! - lower) * (rank - below)) / n) * 1000) / 1000;
    }
    below += n;
  }
  return LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1]!;
}

/**
 * The message of a set of counters; with `histogram: false` (groups, which
 * keep no latency histogram) without bucket counts and percentiles.
 */
export function countsMessage(c: Counters, histogram = true): UsageCounts {
  const n = (name: string) => BigInt(Math.round(c[name] ?? 0));
  const deniedByStep: Record<string, bigint> = {};
  for (const name of Object.keys(c).sort()) {
    if (name.startsWith(DENIED_STEP_PREFIX) && (c[name] ?? 0) > 0) deniedByStep[name.slice(DENIED_STEP_PREFIX.length)] = n(name);
  }
  const buckets = histogram ? Array.from({ length: LATENCY_BOUNDS_MS.length + 1 }, (_, i) => c[latencyCounter(i)] ?? 0) : [];
  return create(UsageCountsSchema, {
    requests: n(COUNTERS.requests),
    allowed: n(OUTCOME_COUNTERS.allowed),
    upstreamClientErrors: n(OUTCOME_COUNTERS.upstream_client_error),
    upstreamServerErrors: n(OUTCOME_COUNTERS.upstream_server_error),
    denied: n(OUTCOME_COUNTERS.denied),
    deniedByStep,
    rateLimited: n(OUTCOME_COUNTERS.rate_limited),
    clientErrors: n(OUTCOME_COUNTERS.client_error),
    gatewayErrors: n(OUTCOME_COUNTERS.gateway_error),
    upstreamLatency: create(UpstreamLatencySchema, {
      count: n(COUNTERS.latencyCount),
      // Sums of fractional milliseconds: kept to the microsecond.
      sumMs: Math.round((c[COUNTERS.latencySumMs] ?? 0) * 1000) / 1000,
      bucketCounts: buckets.map((b) => BigInt(Math.round(b))),
      p50Ms: estimateQuantile(0.5, buckets),
      p95Ms: estimateQuantile(0.95, buckets),
      p99Ms: estimateQuantile(0.99, buckets),
    }),
  });
}

/** Reads the usage a checked query asks for. */
export async function readUsage(store: UsageRollupStore, q: UsageQuery): Promise<Usage> {
  const unit = BUCKETS[q.bucket];
  const dayFrom = floorTo(q.from, DAY_MS);
  const dayTo = ceilTo(q.to, DAY_MS);
  const hours = q.bucket === "hour" ? await store.hours(new Date(q.from), new Date(q.to)) : [];
  let days: StoredRollup[] = [];
  if (q.bucket === "day") {
    days = await store.days(new Date(dayFrom), new Date(dayTo));
  } else if (q.groupBy !== "") {
    // The days of the writers the hours name, by id: a writer without an
    // hour in the range has nothing in it.
    const keys = new Map(hours.map((r) => [`${floorTo(r.start.getTime(), DAY_MS)}|${r.writer}`, r]));
    days = await store.daysOf([...keys.values()].map((r) => ({ start: new Date(floorTo(r.start.getTime(), DAY_MS)), writer: r.writer })));
  }

  const points = new Map<number, Record<string, number>>();
  for (let t = q.from; t < q.to; t += unit) points.set(t, {});
  for (const r of q.bucket === "day" ? days : hours) {
    const point = points.get(r.start.getTime());
    if (point !== undefined) addCounters(point, r.totals);
  }
  const total: Record<string, number> = {};
  for (const point of points.values()) addCounters(total, point);

  let groups: { key: string; counters: Record<string, number> }[] = [];
  if (q.groupBy !== "") {
    const byKey = new Map<string, Record<string, number>>();
    const add = (groupCounts: GroupCounts) => {
      for (const [key, counters] of groupCounts.get(q.groupBy) ?? []) {
        let acc = byKey.get(key);
        if (acc === undefined) byKey.set(key, (acc = {}));
        addCounters(acc, counters);
      }
    };
    const hourTotals = new Map(hours.map((r) => [`${r.start.getTime()}|${r.writer}`, r.totals[COUNTERS.requests] ?? 0]));
    // Whole days from the daily rollups. A day the range covers in part
    // (only with hourly buckets) from its daily rollup too when the writer
    // had no requests that day outside the range (as the hourly totals
    // tell), else from the writer's hourly groups of that day.
    const partial: { start: Date; writer: string; from: number; to: number }[] = [];
    for (const r of days) {
      const day = r.start.getTime();
      const from = Math.max(day, q.from);
      const to = Math.min(day + DAY_MS, q.to);
      if (from === day && to === day + DAY_MS) {
        add(r.groups);
        continue;
      }
      let inRange = 0;
      for (let hour = from; hour < to; hour += HOUR_MS) inRange += hourTotals.get(`${hour}|${r.writer}`) ?? 0;
      if (inRange === (r.totals[COUNTERS.requests] ?? 0)) add(r.groups);
      else partial.push({ start: r.start, writer: r.writer, from, to });
    }
    for (const doc of await store.hourGroups(partial)) {
      const wanted = partial.find((p) => p.writer === doc.writer && p.start.getTime() === doc.start.getTime())!;
      for (const [hour, hourGroups] of doc.hours) if (hour >= wanted.from && hour < wanted.to) add(hourGroups);
    }
    groups = [...byKey]
      .map(([key, counters]) => ({ key, counters }))
      .sort((a, b) => (b.counters[COUNTERS.requests] ?? 0) - (a.counters[COUNTERS.requests] ?? 0) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  return create(UsageSchema, {
    from: timestampFromDate(new Date(q.from)),
    to: timestampFromDate(new Date(q.to)),
    bucket: q.bucket,
    groupBy: q.groupBy,
    latencyBoundsMs: [...LATENCY_BOUNDS_MS],
    total: countsMessage(total),
    series: [...points].map(([start, counters]) =>
      create(UsagePointSchema, { start: timestampFromDate(new Date(start)), counts: countsMessage(counters) }),
    ),
    groups: groups
      .slice(0, q.groupLimit)
      .map((g) => create(UsageGroupSchema, { key: g.key, counts: countsMessage(g.counters, false) })),
    moreGroups: Math.max(0, groups.length - q.groupLimit),
  });
}

/** Implements UsageService. */
export class UsageServiceImpl implements ServiceImpl<typeof UsageService> {
  constructor(private readonly deps: ServiceDeps) {}

  getUsage(req: GetUsageRequest) {
    return translate(names, async () => {
      const query = readUsageQuery(req, this.deps.clock());
      return create(GetUsageResponseSchema, { usage: await readUsage(this.deps.store.usageRollups, query) });
    });
  }
}
