/**
 * Usage rollups, the writer's side: what a data request counts as (its
 * outcome, its upstream latency bucket, the groups it belongs to), and a
 * buffer that folds request-log entries into per-hour and per-day counts
 * until the log writer writes them, in the same batches as the log.
 */
import { ENTITY_NAME_PATTERN, OPERATIONS } from "../schema/permission-names.js";
import type { Counters, GroupCounts, RequestLogRecord, RollupBatch, RollupDelta } from "../store/index.js";

/** Upper bounds (ms) of the upstream latency buckets; one more bucket counts what is slower. */
export const LATENCY_BOUNDS_MS: readonly number[] = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000];

/** How a data request ended; exactly one per request. */
export type Outcome =
  | "allowed"
  | "upstream_client_error"
  | "upstream_server_error"
  | "denied"
  | "rate_limited"
  | "client_error"
  | "gateway_error";

/**
 * Counter names as stored. Short, because every rollup document holds many
 * of them and some servers (FerretDB 1.x) read whole documents for every
 * query: the names are most of a document's bytes.
 */
export const COUNTERS = {
  requests: "n",
  /** Answers with a latency (the back end answered). */
  latencyCount: "lc",
  latencySumMs: "ls",
} as const;

/** The counter of each outcome. */
export const OUTCOME_COUNTERS: Readonly<Record<Outcome, string>> = {
  allowed: "ok",
  upstream_client_error: "u4",
  upstream_server_error: "u5",
  denied: "dn",
  rate_limited: "rl",
  client_error: "c4",
  gateway_error: "g5",
};

/** The counter of latency bucket `i` (see {@link LATENCY_BOUNDS_MS}). */
export function latencyCounter(i: number): string {
  return `l${i}`;
}

/** Prefix of the counters of denials by step (`d_ENTITY`). */
export const DENIED_STEP_PREFIX = "d_";

/** The groups usage can be broken down by. */
export const GROUP_KINDS = ["api_key", "instance", "service", "entity", "operation", "outcome"] as const;
export type GroupKind = (typeof GROUP_KINDS)[number];

/** The group of values that are not well-formed names, and of values beyond the first {@link MAX_VALUES} of a bucket. */
export const OTHER = "(other)";

/**
 * Most distinct values of one group kind in one writer's hour or day: a
 * flood of made-up instance or service names (which refused requests still
 * carry) must not grow a rollup document without bound.
 */
export const MAX_VALUES = 1000;

/** What a rollup reads of a request-log entry. */
export type RollupEntry = Pick<
  RequestLogRecord,
  | "timestamp"
  | "path"
  | "status"
  | "apiKeyId"
  | "instance"
  | "service"
  | "accesses"
  | "denialStep"
  | "upstreamStatus"
  | "upstreamDurationMs"
>;

/**
 * Whether an entry is a data request, which rollups count. Requests to the
 * administration API (REST and RPC) are logged but not rolled up: usage is
 * the data path's, and the dashboard's own calls would otherwise show in it.
 */
export function isDataRequest(e: Pick<RequestLogRecord, "path">): boolean {
  return e.path.startsWith("/odata/");
}

/** A request's outcome, and the check that denied it (`""` unless denied). */
export function outcomeOf(e: RollupEntry): { readonly outcome: Outcome; readonly step: string } {
  if (e.denialStep === "RATE_LIMITED") return { outcome: "rate_limited", step: "" };
  if (e.denialStep !== "") return { outcome: "denied", step: /^[A-Z][A-Z_]{0,31}$/.test(e.denialStep) ? e.denialStep : "OTHER" };
  // The back end's answer decides, when there was one.
  const status = e.upstreamStatus > 0 ? e.upstreamStatus : e.status;
  if (status < 400) return { outcome: "allowed", step: "" };
  if (e.upstreamStatus > 0) return { outcome: status < 500 ? "upstream_client_error" : "upstream_server_error", step: "" };
  return { outcome: status < 500 ? "client_error" : "gateway_error", step: "" };
}

/** The latency bucket of an answer time: the first bound it does not exceed, or the last bucket. */
export function latencyBucket(ms: number): number {
  const i = LATENCY_BOUNDS_MS.findIndex((bound) => ms <= bound);
  return i < 0 ? LATENCY_BOUNDS_MS.length : i;
}

/** The counters one request adds. */
export function countersOf(e: RollupEntry): Record<string, number> {
  const c = new Map<string, number>();
  addEntry(c, outcomeOf(e), e, true);
  return Object.fromEntries(c);
}

/**
 * The counters a request adds to each of its groups: all but the latency
 * histogram (groups keep the count and sum of answer times, their mean),
 * which would make the group rollups several times larger.
 */
export function groupCountersOf(e: RollupEntry): Record<string, number> {
  const c = new Map<string, number>();
  addEntry(c, outcomeOf(e), e, false);
  return Object.fromEntries(c);
}

/**
 * Names as the request log's filters accept them; anything else counts as
 * {@link OTHER}. An entity is an entity set's name or, for `invoke`, an
 * operation's (a bound one's is qualified: `Sales.Approve`), as permissions
 * name them; the operations are the permissions' own.
 */
const WELL_FORMED: Readonly<Record<Exclude<GroupKind, "outcome">, RegExp>> = {
  api_key: /^(master|key_[0-9A-Z]{26})$/,
  instance: /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/,
  service: /^[A-Za-z0-9_][A-Za-z0-9_.;=-]{0,127}$/,
  entity: new RegExp(ENTITY_NAME_PATTERN),
  operation: new RegExp(`^(${OPERATIONS.join("|")})$`),
};

function wellFormed(kind: Exclude<GroupKind, "outcome">, value: string): string {
  return value === "" || WELL_FORMED[kind].test(value) ? value : OTHER;
}

/**
 * The groups a request belongs to, each once: its key, instance, service
 * and outcome, and every distinct entity set and operation it touched (`""`
 * when it touched none: the service document, `$metadata`, or a request
 * refused before it was analyzed).
 */
export function groupsOf(e: RollupEntry): Record<GroupKind, string[]> {
  const distinct = (values: string[]) => [...new Set(values.length > 0 ? values : [""])];
  return {
    api_key: [wellFormed("api_key", e.apiKeyId)],
    instance: [wellFormed("instance", e.instance)],
    service: [wellFormed("service", e.service)],
    entity: distinct(e.accesses.map((a) => wellFormed("entity", a.entity))),
    operation: distinct(e.accesses.map((a) => wellFormed("operation", a.operation))),
    outcome: [outcomeOf(e).outcome],
  };
}

/** Adds `from` into `into`. */
export function addCounters(into: Map<string, number> | Record<string, number>, from: Counters | ReadonlyMap<string, number>): void {
  if (from instanceof Map) {
    for (const [name, n] of from) add(into, name, n);
    return;
  }
  // for…in, not Object.entries: no pair arrays for each request folded (bench/README.md).
  const counters = from as Counters;
  for (const name in counters) add(into, name, counters[name]!);
}

function add(into: Map<string, number> | Record<string, number>, name: string, n: number): void {
  if (into instanceof Map) into.set(name, (into.get(name) ?? 0) + n);
  else into[name] = (into[name] ?? 0) + n;
}

/** The latency bucket counters' names, by bucket. */
const LATENCY_COUNTERS: readonly string[] = Array.from({ length: LATENCY_BOUNDS_MS.length + 1 }, (_, i) => latencyCounter(i));

/**
 * Adds the counters of one request into `into` (the one definition of what a
 * request counts: {@link countersOf} and the buffer's in-place folding both
 * use it); `histogram: false` leaves out the latency buckets, which groups do
 * not keep.
 */
function addEntry(into: Map<string, number>, o: ReturnType<typeof outcomeOf>, e: RollupEntry, histogram: boolean): void {
  add(into, COUNTERS.requests, 1);
  add(into, OUTCOME_COUNTERS[o.outcome], 1);
  if (o.step !== "") add(into, `${DENIED_STEP_PREFIX}${o.step}`, 1);
  if (e.upstreamStatus > 0) {
    add(into, COUNTERS.latencyCount, 1);
    add(into, COUNTERS.latencySumMs, e.upstreamDurationMs);
    if (histogram) add(into, LATENCY_COUNTERS[latencyBucket(e.upstreamDurationMs)]!, 1);
  }
}

/** One writer's pending counts of one hour or day. */
interface Bucket {
  readonly totals: Map<string, number>;
  /** Kind -> value -> counters (without the latency histogram). */
  readonly groups: Map<string, Map<string, Map<string, number>>>;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

function bucketOf(buckets: Map<number, Bucket>, start: number): Bucket {
  let b = buckets.get(start);
  if (b === undefined) {
    b = { totals: new Map(), groups: new Map() };
    buckets.set(start, b);
  }
  return b;
}

function addGroup(b: Bucket, kind: string, value: string, counters: Counters | ReadonlyMap<string, number>): void {
  let values = b.groups.get(kind);
  if (values === undefined) b.groups.set(kind, (values = new Map()));
  let c = values.get(value);
  if (c === undefined) values.set(value, (c = new Map()));
  addCounters(c, counters);
}

/**
 * Folds request-log entries into one writer's per-hour and per-day counts
 * until they are taken for writing; a failed write gives them back.
 */
export class RollupBuffer {
  private hours = new Map<number, Bucket>();
  private days = new Map<number, Bucket>();
  /** Values seen per (hour or day document, group kind), to cap them at {@link MAX_VALUES}. */
  private readonly seen = new Map<string, Map<string, Set<string>>>();
  private latest = 0;

  constructor(
    /** The writer's id, part of every document it writes. */
    readonly writer: string,
    private readonly maxValues = MAX_VALUES,
  ) {}

  /** Whether counts wait to be written. */
  get pending(): boolean {
    return this.hours.size > 0 || this.days.size > 0;
  }

  /**
   * Adds the data requests among `entries`. Entries of one hour that belong
   * to the same groups add the same group counters: they are summed first
   * and added to the groups once per batch (in the order the groups first
   * appear, so that the values kept under {@link MAX_VALUES} are the same).
   */
  fold(entries: readonly RollupEntry[]): void {
    // Entries alike in everything their groups come from share one sum; the
    // key writes each of those fields length-prefixed, so no two differ in it.
    const same = new Map<string, { hour: number; day: number; entry: RollupEntry; counters: Map<string, number> }>();
    let hourStart = Number.NaN;
    let hours: Bucket | undefined;
    let days: Bucket | undefined;
    for (const e of entries) {
      if (!isDataRequest(e)) continue;
      const t = e.timestamp.getTime();
      // Written so that a time that is no number (NaN) leaves the hour too, as folding it alone would.
      if (hours === undefined || !(t >= hourStart && t < hourStart + HOUR_MS)) {
        hourStart = Math.floor(t / HOUR_MS) * HOUR_MS;
        hours = bucketOf(this.hours, hourStart);
        days = bucketOf(this.days, Math.floor(t / DAY_MS) * DAY_MS);
      }
      // Counted in place, entry by entry (the sums add in the entries' order), without a counters object per entry (bench/README.md).
      const outcome = outcomeOf(e);
      addEntry(hours.totals, outcome, e, true);
      addEntry(days!.totals, outcome, e, true);
      let key = `${hourStart}|${e.status}|${e.upstreamStatus}|${e.apiKeyId.length}:${e.apiKeyId}|${e.instance.length}:${e.instance}|${e.service.length}:${e.service}|${e.denialStep.length}:${e.denialStep}`;
      for (const a of e.accesses) key += `|${a.entity.length}:${a.entity}|${a.operation.length}:${a.operation}`;
      let group = same.get(key);
      if (group === undefined) same.set(key, (group = { hour: hourStart, day: Math.floor(t / DAY_MS) * DAY_MS, entry: e, counters: new Map() }));
      addEntry(group.counters, outcome, e, false);
      if (t > this.latest) this.latest = t;
    }
    for (const { hour, day, entry, counters } of same.values()) {
      const groups = groupsOf(entry);
      for (const [buckets, start, grain] of [[this.hours, hour, "h"], [this.days, day, "d"]] as const) {
        const b = bucketOf(buckets, start);
        const doc = this.kindsOf(`${grain}${start}`);
        for (const kind of GROUP_KINDS) {
          for (const value of groups[kind]) addGroup(b, kind, this.capped(doc, kind, value), counters);
        }
      }
    }
    this.forgetOld();
  }

  /** Takes every pending count, as the batch to write. */
  take(): RollupBatch {
    const deltas = (buckets: Map<number, Bucket>): RollupDelta[] =>
      [...buckets].map(([start, b]) => ({
        start: new Date(start),
        writer: this.writer,
        totals: Object.fromEntries(b.totals),
        groups: new Map([...b.groups].map(([kind, values]) => [kind, new Map([...values].map(([v, c]) => [v, Object.fromEntries(c)]))])),
      }));
    const batch = { hours: deltas(this.hours), days: deltas(this.days) };
    this.hours = new Map();
    this.days = new Map();
    return batch;
  }

  /** Gives back a batch that could not be written, to be written with the next. */
  restore(batch: RollupBatch): void {
    for (const [buckets, deltas] of [[this.hours, batch.hours], [this.days, batch.days]] as const) {
      for (const d of deltas) {
        const b = bucketOf(buckets, d.start.getTime());
        addCounters(b.totals, d.totals);
        for (const [kind, values] of d.groups as GroupCounts) for (const [v, c] of values) addGroup(b, kind, v, c);
      }
    }
  }

  /** The value to count under: itself, or {@link OTHER} once its document holds `maxValues` others. */
  private capped(kinds: Map<string, Set<string>>, kind: string, value: string): string {
    let values = kinds.get(kind);
    if (values === undefined) kinds.set(kind, (values = new Set()));
    if (values.has(value)) return value;
    if (values.size >= this.maxValues) return OTHER;
    values.add(value);
    return value;
  }

  /** The values seen per group kind in one hour or day document (`h<start>`, `d<start>`). */
  private kindsOf(doc: string): Map<string, Set<string>> {
    let kinds = this.seen.get(doc);
    if (kinds === undefined) this.seen.set(doc, (kinds = new Map()));
    return kinds;
  }

  /** Forgets the values of documents more than two days older than the newest entry (entries arrive in about time order). */
  private forgetOld(): void {
    for (const doc of this.seen.keys()) {
      if (Number(doc.slice(1)) < this.latest - 2 * DAY_MS) this.seen.delete(doc);
    }
  }
}
