/**
 * Usage rollups: counts of data requests per hour and per UTC day, in
 * total and by group (API key, instance, …), that the request-log writer
 * adds to in the same batches as it writes the log. Three collections, so
 * that every read touches only what it needs, also on servers that scan a
 * whole collection for every query (FerretDB 1.x pushes nothing down but
 * `_id` equality, and scans even for that):
 *
 * - `usage_hours`: per hour and writer, the totals; read by time range
 *   (the hourly series);
 * - `usage_days`: per UTC day and writer, the totals and every group's
 *   counts; read by time range (the daily series, and groups over whole
 *   days);
 * - `usage_hour_groups`: per UTC day and writer, every group's counts of
 *   each of its hours; read by id only, for a day that a range covers in
 *   part (one document per day, not per hour, so that a 24-hour range
 *   needs at most two reads per writer).
 *
 * Each writer (one per process) adds only to its own documents (its id is
 * part of every `_id`), so no two processes ever increment one document
 * (FerretDB 1.x does not make `$inc` atomic under concurrency), and readers
 * add up the writers' documents.
 *
 * Counters are plain named numbers; absent ones are zero. Group values are
 * stored as field names (`v` + the value percent-encoded, dots included),
 * so that any value is a safe field name.
 */
import { decodeDate } from "./aggregate.js";
import {
  plainIndex,
  type CollectionSpec,
  type Document,
  type DocumentCollection,
  type Increment,
  type StoreBackend,
} from "./collection.js";

/** Named counts (`requests`, `allowed`, `latency3`, …); absent counters are zero. */
export type Counters = Readonly<Record<string, number>>;

/** Counts by group: group kind (`api_key`, `entity`, …) -> value -> counters. */
export type GroupCounts = ReadonlyMap<string, ReadonlyMap<string, Counters>>;

/** What one writer adds to one hour or day. */
export interface RollupDelta {
  /** Start of the hour or UTC day. */
  readonly start: Date;
  /** The writer's id: 1 to 64 of `A-Za-z0-9_-`. */
  readonly writer: string;
  readonly totals: Counters;
  readonly groups: GroupCounts;
}

/** What one flush adds. */
export interface RollupBatch {
  readonly hours: readonly RollupDelta[];
  readonly days: readonly RollupDelta[];
}

/** One writer's rollup of one hour or day, as read. */
export interface StoredRollup {
  readonly start: Date;
  readonly writer: string;
  readonly totals: Counters;
  /** Empty when read from {@link UsageRollupStore.hours}. */
  readonly groups: GroupCounts;
}

/** One writer's groups of each hour of one UTC day, as read. */
export interface StoredHourGroups {
  /** Start of the day. */
  readonly start: Date;
  readonly writer: string;
  /** Hour start (ms) -> its groups; hours without requests are absent. */
  readonly hours: ReadonlyMap<number, GroupCounts>;
}

/** Most rollup documents one read returns; a range never holds more in practice (buckets × writers). */
const MAX_READ = 200_000;

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

function spec(name: string): CollectionSpec {
  return { name, indexes: [plainIndex(name, "start")] };
}

/** The collections of the usage rollups and their indexes. */
export const usageRollupCollections = {
  hours: spec("usage_hours"),
  hourGroups: spec("usage_hour_groups"),
  days: spec("usage_days"),
} as const;

const NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
const WRITER = /^[A-Za-z0-9_-]{1,64}$/;

/** A counter or group kind becomes part of a field path: only plain names. */
function checkName(name: string, what: string): string {
  if (!NAME.test(name)) throw new TypeError(`${what} ${JSON.stringify(name)} is not a plain name`);
  return name;
}

/** A group value as a field name: `v` + percent-encoding (dots too); `""` is `v`. */
function encodeValue(value: string): string {
  return `v${encodeURIComponent(value).replace(/\./g, "%2E")}`;
}

function decodeValue(field: string): string {
  return decodeURIComponent(field.slice(1));
}

function idOf(start: Date, writer: string): string {
  if (!WRITER.test(writer)) throw new TypeError(`writer id ${JSON.stringify(writer)} is malformed`);
  return `${start.toISOString()}|${writer}`;
}

/** The increment paths of counts, under `prefix`. */
function addPaths(inc: Record<string, number>, prefix: string, counters: Counters): void {
  for (const [name, n] of Object.entries(counters)) inc[`${prefix}.${checkName(name, "counter")}`] = n;
}

function addGroupPaths(inc: Record<string, number>, prefix: string, groups: GroupCounts): void {
  for (const [kind, values] of groups) {
    checkName(kind, "group kind");
    for (const [value, counters] of values) addPaths(inc, `${prefix}.${kind}.${encodeValue(value)}`, counters);
  }
}

/** The field of an hour in a day's hour-groups document: `h00` … `h23`. */
function hourField(start: Date): string {
  return `h${String(start.getUTCHours()).padStart(2, "0")}`;
}

function dayOf(start: Date): Date {
  return new Date(Math.floor(start.getTime() / DAY_MS) * DAY_MS);
}
function countersOf(value: unknown): Counters {
  const out: Record<string, number> = {};
  if (typeof value === "object" && value !== null) {
    for (const [name, n] of Object.entries(value)) if (typeof n === "number") out[name] = n;
  }
  return out;
}

function groupsOf(value: unknown): GroupCounts {
  const out = new Map<string, Map<string, Counters>>();
  if (typeof value !== "object" || value === null) return out;
  for (const [kind, values] of Object.entries(value)) {
    const byValue = new Map<string, Counters>();
    for (const [field, counters] of Object.entries(values as Record<string, unknown>)) {
      byValue.set(decodeValue(field), countersOf(counters));
    }
    out.set(kind, byValue);
  }
  return out;
}

function fromDoc(d: Document): StoredRollup {
  return { start: decodeDate(d.start), writer: d.writer as string, totals: countersOf(d.c), groups: groupsOf(d.g) };
}

function hourGroupsFromDoc(d: Document): StoredHourGroups {
  const start = decodeDate(d.start);
  const hours = new Map<number, GroupCounts>();
  for (const [field, groups] of Object.entries((d.h as Record<string, unknown> | undefined) ?? {})) {
    hours.set(start.getTime() + Number(field.slice(1)) * HOUR_MS, groupsOf(groups));
  }
  return { start, writer: d.writer as string, hours };
}

/** Storage port of the usage rollups. */
export class UsageRollupStore {
  constructor(
    private readonly hoursColl: DocumentCollection,
    private readonly hourGroupsColl: DocumentCollection,
    private readonly daysColl: DocumentCollection,
  ) {}

  /** Adds one flush's counts: hour totals, hour groups and days. */
  async add(batch: RollupBatch): Promise<void> {
    // Every name is checked before anything is written.
    const hours: Increment[] = [];
    const hourGroups = new Map<string, Increment & { inc: Record<string, number> }>();
    for (const d of batch.hours) {
      const inc: Record<string, number> = {};
      addPaths(inc, "c", d.totals);
      hours.push({ id: idOf(d.start, d.writer), inc, set: { start: d.start, writer: d.writer } });
      const day = dayOf(d.start);
      const id = idOf(day, d.writer);
      let dayInc = hourGroups.get(id);
      if (dayInc === undefined) hourGroups.set(id, (dayInc = { id, inc: {}, set: { start: day, writer: d.writer } }));
      addGroupPaths(dayInc.inc, `h.${hourField(d.start)}`, d.groups);
    }
    const days = batch.days.map((d): Increment => {
      const inc: Record<string, number> = {};
      addPaths(inc, "c", d.totals);
      addGroupPaths(inc, "g", d.groups);
      return { id: idOf(d.start, d.writer), inc, set: { start: d.start, writer: d.writer } };
    });
    await Promise.all([
      this.hoursColl.incrementMany(hours),
      this.hourGroupsColl.incrementMany([...hourGroups.values()]),
      this.daysColl.incrementMany(days),
    ]);
  }

  /** Every writer's totals of the hours starting in `[from, to)`. */
  hours(from: Date, to: Date): Promise<StoredRollup[]> {
    return this.range(this.hoursColl, from, to);
  }

  /** Every writer's totals and groups of the UTC days starting in `[from, to)`. */
  days(from: Date, to: Date): Promise<StoredRollup[]> {
    return this.range(this.daysColl, from, to);
  }

  /** The totals and groups of the given (UTC day, writer) pairs that exist. */
  async daysOf(keys: readonly { readonly start: Date; readonly writer: string }[]): Promise<StoredRollup[]> {
    return (await this.daysColl.getMany(keys.map((k) => idOf(k.start, k.writer)))).map(fromDoc);
  }

  /** The hourly groups of the given (UTC day, writer) pairs that have any. */
  async hourGroups(keys: readonly { readonly start: Date; readonly writer: string }[]): Promise<StoredHourGroups[]> {
    // By id: the one read every MongoDB-wire server narrows down itself.
    return (await this.hourGroupsColl.getMany(keys.map((k) => idOf(k.start, k.writer)))).map(hourGroupsFromDoc);
  }

  /** Removes the rollups of hours and days that ended before `before`; returns how many. */
  async purge(before: Date): Promise<number> {
    const counts = await Promise.all([
      this.hoursColl.deleteBefore("start", new Date(before.getTime() - HOUR_MS)),
      this.hourGroupsColl.deleteBefore("start", new Date(before.getTime() - DAY_MS)),
      this.daysColl.deleteBefore("start", new Date(before.getTime() - DAY_MS)),
    ]);
    return counts.reduce((a, b) => a + b, 0);
  }

  private async range(coll: DocumentCollection, from: Date, to: Date): Promise<StoredRollup[]> {
    const docs = await coll.findNewest({ where: {}, ranges: [{ field: "start", gte: from, lt: to }], limit: MAX_READ + 1 });
    if (docs.length > MAX_READ) throw new Error(`more than ${MAX_READ} usage rollups in one range`);
    return docs.map(fromDoc);
  }
}

/** Opens the usage rollups on a backend. */
export async function openUsageRollupStore(backend: StoreBackend): Promise<UsageRollupStore> {
  const [hours, hourGroups, days] = await Promise.all([
    backend.collection(usageRollupCollections.hours),
    backend.collection(usageRollupCollections.hourGroups),
    backend.collection(usageRollupCollections.days),
  ]);
  return new UsageRollupStore(hours, hourGroups, days);
}
