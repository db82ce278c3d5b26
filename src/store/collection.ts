/**
 * The low-level port both adapters implement: a collection of documents keyed
 * by an opaque string id, with equality filters, id-ordered pages and
 * declared unique fields. Aggregate stores (systems, instances, ...) are built
 * on it, so each adapter is written once for every aggregate.
 */
import { DuplicateKeyError } from "./errors.js";

/** A value a filter may compare with: never an object, so never an operator. */
export type Scalar = string | number | boolean;

/** Equality conditions, all of which must hold. */
export type Where = Readonly<Record<string, Scalar>>;

/** A stored document. `_id` is the resource's id. */
export type Document = { _id: string } & Record<string, unknown>;

/** Which database an adapter speaks. */
export type StoreKind = "embedded" | "mongodb";

/** A named index on one top-level field. */
export interface IndexSpec {
  /** Index name, as the database reports it (`<collection>_<field>_unique`). */
  readonly name: string;
  readonly field: string;
  readonly unique: boolean;
  /**
   * The stores that keep this index (default: every store). An index that
   * does not pay on one store is declared for the others only, e.g. one on
   * a field with few distinct values, which nedb keeps in memory and
   * updates at a cost that grows with the documents sharing a value.
   */
  readonly stores?: readonly StoreKind[];
}

/** What an aggregate declares about its collection. */
export interface CollectionSpec {
  readonly name: string;
  readonly indexes: readonly IndexSpec[];
  /**
   * Whether the embedded store flushes each write to the disk before it is
   * acknowledged (default true). False only for counts whose loss in a crash
   * costs little and whose writes are on the data path: a write that fails
   * is still refused and undone.
   */
  readonly flush?: boolean;
}

/** Options of {@link DocumentCollection.list}. */
export interface ListOptions {
  /** Only documents whose id sorts after this one. */
  readonly afterId?: string;
  readonly limit: number;
}

/** A query of {@link DocumentCollection.findNewest}. */
export interface NewestQuery {
  /** Equality conditions; a dotted field (`accesses.entity`) matches any element of an array. */
  readonly where: Where;
  /** Half-open ranges `[gte, lt)` on fields. */
  readonly ranges?: readonly { readonly field: string; readonly gte?: Date | number; readonly lt?: Date | number }[];
  /** Only documents whose id sorts before this one. */
  readonly beforeId?: string;
  readonly limit: number;
}

/** What {@link DocumentCollection.incrementMany} adds to one document. */
export interface Increment {
  readonly id: string;
  /** Amounts to add, by dotted field path (`c.requests`, `g.entity.vA.requests`); absent fields count from zero. */
  readonly inc: Readonly<Record<string, number>>;
  /** Top-level fields set on every write (the same values each time). */
  readonly set: Readonly<Record<string, unknown>>;
}

/**
 * The revision an administrative write expects: a document's `revision`
 * counts the administrative changes made to it (see src/schema/etag.ts); a
 * document written before revisions were kept has none and is at 0.
 */
export interface RevisionCondition {
  /** The revision the document must be at for the write to be made; undefined: whatever it is. */
  readonly expected?: number | undefined;
}

/** The field of a document that holds its revision. */
export const REVISION_FIELD = "revision";

/** A document's revision: 0 when it has none (written before revisions were kept). */
export function revisionOf(doc: Record<string, unknown>): number {
  const revision = doc[REVISION_FIELD];
  return typeof revision === "number" ? revision : 0;
}

/**
 * The filter (MongoDB syntax, which both adapters speak) of the documents
 * at revision `expected`, those without one counting as 0. Built from a
 * number only, never from input.
 */
export function revisionFilter(expected: number): Record<string, unknown> {
  if (!Number.isSafeInteger(expected)) throw new TypeError("an expected revision must be an integer");
  return expected === 0
    ? { $or: [{ [REVISION_FIELD]: 0 }, { [REVISION_FIELD]: { $exists: false } }] }
    : { [REVISION_FIELD]: expected };
}

/** Checks that a write's `set` leaves the revision to the revision condition. */
export function assertNoRevision(set: Record<string, unknown>): void {
  if (REVISION_FIELD in set) throw new TypeError(`${REVISION_FIELD} is set by revised writes only`);
}

/** A collection of documents, as each adapter provides it. */
export interface DocumentCollection {
  /** Inserts a new document; throws {@link DuplicateKeyError} on a unique field. */
  insert(doc: Document): Promise<void>;
  get(id: string): Promise<Document | undefined>;
  findOne(where: Where): Promise<Document | undefined>;
  /** Documents matching `where`, in ascending id order. */
  list(where: Where, options: ListOptions): Promise<Document[]>;
  count(where: Where): Promise<number>;
  /**
   * Sets top-level fields; returns the document after the change, or
   * undefined if absent. With `revision` (an administrative change), the
   * same write also adds one to the document's `revision` field, and with
   * `revision.expected` it is made only if the stored revision is that one
   * (compare-and-set, in one atomic operation of the database), else it
   * throws {@link RevisionMismatchError} and changes nothing.
   */
  update(id: string, set: Record<string, unknown>, revision?: RevisionCondition): Promise<Document | undefined>;
  /**
   * Removes a document; returns it as it was, or undefined if absent. With
   * `revision.expected`, only if the stored revision is that one, else it
   * throws {@link RevisionMismatchError} and removes nothing.
   */
  delete(id: string, revision?: RevisionCondition): Promise<Document | undefined>;
  /**
   * Atomically adds `delta` to the numeric `field` of a document, creating
   * the document if absent, and sets `set` on it; returns the new value.
   */
  increment(id: string, field: string, delta: number, set: Record<string, unknown>): Promise<number>;
  /** Inserts many new documents (ids are fresh: no unique field is checked). */
  insertMany(docs: readonly Document[]): Promise<void>;
  /** Documents matching a query, in descending id order (newest first for time-ordered ids). */
  findNewest(query: NewestQuery): Promise<Document[]>;
  /** Documents whose date `field` is at or after `from`, oldest first, at most `limit`. */
  since(field: string, from: Date, limit: number): Promise<Document[]>;
  /** Removes every document whose date `field` is before `date`; returns how many. */
  deleteBefore(field: string, date: Date): Promise<number>;
  /**
   * Removes the oldest documents (lowest ids) until at most `keep` remain,
   * but no more than `most` in this call; returns how many it removed and
   * how many remain (on MongoDB from the collection's estimated count, so
   * about that many when other processes write at the same time).
   */
  keepNewest(keep: number, most: number): Promise<{ readonly removed: number; readonly remaining: number }>;
  /**
   * Adds to numeric fields of several documents, creating the absent ones,
   * in as few round trips as the database allows. Each document's change is
   * atomic; the batch is not (on failure some documents may be changed).
   */
  incrementMany(increments: readonly Increment[]): Promise<void>;
  /** The documents with these ids, in no particular order; absent ones are left out. */
  getMany(ids: readonly string[]): Promise<Document[]>;
}

/** A database as the aggregates see it. */
export interface StoreBackend {
  readonly kind: StoreKind;
  /** Embedded: the directory of its files, or `:memory:`; stores that keep files of their own (the request log) keep them there. */
  readonly dataDir?: string;
  /** Opens (creating its indexes idempotently) one collection. */
  collection(spec: CollectionSpec): Promise<DocumentCollection>;
  /** Resolves when the database answers; throws StoreUnavailableError otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The MongoDB-syntax filter of a {@link NewestQuery} (both adapters speak
 * it). Equality uses plain values, which `assertScalars` has checked, and
 * ranges use typed bounds only.
 */
export function newestFilter(query: NewestQuery): Record<string, unknown> {
  assertScalars(query.where);
  const filter: Record<string, unknown> = { ...query.where };
  for (const range of query.ranges ?? []) {
    const cond: Record<string, unknown> = {};
    if (range.gte !== undefined) cond.$gte = range.gte;
    if (range.lt !== undefined) cond.$lt = range.lt;
    filter[range.field] = cond;
  }
  if (query.beforeId !== undefined) filter._id = { $lt: query.beforeId };
  return filter;
}

/**
 * The document an {@link Increment} creates: its `set` fields and its
 * amounts at their dotted paths (`{c: {requests: 1}}` for `c.requests`).
 */
export function incrementedDocument(increment: Increment): Document {
  const doc: Record<string, unknown> = { ...increment.set, _id: increment.id };
  for (const [path, amount] of Object.entries(increment.inc)) {
    const keys = path.split(".");
    let obj = doc;
    for (const key of keys.slice(0, -1)) obj = (obj[key] ??= {}) as Record<string, unknown>;
    const last = keys[keys.length - 1]!;
    obj[last] = ((obj[last] as number | undefined) ?? 0) + amount;
  }
  return doc as Document;
}

/** Builds the name of a unique index on `field` of `collection`. */
export function uniqueIndex(collection: string, field: string): IndexSpec {
  return { name: `${collection}_${field}_unique`, field, unique: true };
}

/** Builds the name of a plain index on `field` of `collection`, kept by `stores` (default: every store). */
export function plainIndex(collection: string, field: string, stores?: readonly StoreKind[]): IndexSpec {
  return stores === undefined ? { name: `${collection}_${field}`, field, unique: false } : { name: `${collection}_${field}`, field, unique: false, stores };
}

/** Whether a store of `kind` keeps `index`. */
export function keptBy(index: IndexSpec, kind: StoreKind): boolean {
  return index.stores === undefined || index.stores.includes(kind);
}

/**
 * Checks that every filter value is a scalar. Filters are built from typed
 * values, but a value that slipped through as an object could become an
 * operator (`{"$ne": 1}`), so both adapters refuse it outright.
 */
export function assertScalars(where: Where): void {
  for (const [field, value] of Object.entries(where)) {
    const t = typeof value;
    if (t !== "string" && t !== "number" && t !== "boolean") {
      throw new TypeError(`filter on ${field} must be a scalar`);
    }
  }
}

/**
 * Works out which unique field a rejected write collided on, when the
 * database did not say (nedb never does; some MongoDB-wire servers omit
 * `keyPattern`): the first unique field whose value another document holds.
 */
export async function findDuplicateField(
  collection: DocumentCollection,
  spec: CollectionSpec,
  doc: Record<string, unknown>,
  id: string,
): Promise<string | undefined> {
  for (const index of spec.indexes) {
    if (!index.unique) continue;
    const value = doc[index.field];
    if (typeof value !== "string" && typeof value !== "number") continue;
    const other = await collection.findOne({ [index.field]: value });
    if (other !== undefined && other._id !== id) return index.field;
  }
  return undefined;
}

/** The DuplicateKeyError for a write the database rejected as a duplicate. */
export async function duplicateKeyError(
  collection: DocumentCollection,
  spec: CollectionSpec,
  doc: Record<string, unknown>,
  id: string,
): Promise<DuplicateKeyError> {
  return new DuplicateKeyError(spec.name, (await findDuplicateField(collection, spec, doc, id)) ?? "id");
}
