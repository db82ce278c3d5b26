/**
 * The CRUD every aggregate shares, over a {@link DocumentCollection}, with
 * one codec per aggregate mapping records to documents and back.
 */
import type { Document, DocumentCollection, Where } from "./collection.js";
import { NotFoundError } from "./errors.js";

/** A stored resource: an id plus server-set timestamps. */
export interface BaseRecord {
  readonly id: string;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/** Maps one aggregate's records to documents (also for partial updates) and back. */
export interface Codec<R extends BaseRecord> {
  /** The document fields for the given record fields; `id` becomes `_id`. */
  toDoc(fields: Partial<R>): Record<string, unknown>;
  fromDoc(doc: Document): R;
}

/** One page of records in id order. */
export interface Page<R> {
  readonly items: R[];
  /** Whether more records follow the last one. */
  readonly more: boolean;
}

/** Paging arguments: at most `limit` records after `afterId`. */
export interface PageRequest {
  readonly afterId?: string;
  readonly limit: number;
}

/**
 * A resource administrators change: its revision counts their changes
 * (creation, updates, deletion marks such as a key's revocation), never
 * erplink's own writes (a key's last use), and its etag is made of it (see
 * src/schema/etag.ts).
 */
export interface RevisedRecord extends BaseRecord {
  /** Absent: 0 (a document written before revisions were kept, or a record not yet stored). */
  readonly revision?: number;
}

/** A record's changeable fields. */
export type Patch<R extends BaseRecord> = Partial<Omit<R, "id" | "createdAt" | "revision">>;

/** Shared CRUD of an aggregate. */
export class AggregateStore<R extends BaseRecord> {
  constructor(
    /** Collection name, used in errors. */
    protected readonly name: string,
    protected readonly collection: DocumentCollection,
    protected readonly codec: Codec<R>,
  ) {}

  async get(id: string): Promise<R | undefined> {
    const doc = await this.collection.get(id);
    return doc === undefined ? undefined : this.codec.fromDoc(doc);
  }

  protected async page(where: Where, request: PageRequest): Promise<Page<R>> {
    // One extra document tells whether another page follows.
    const docs = await this.collection.list(where, { afterId: request.afterId, limit: request.limit + 1 });
    const more = docs.length > request.limit;
    return { items: docs.slice(0, request.limit).map((d) => this.codec.fromDoc(d)), more };
  }

  /** Inserts a new record; throws DuplicateKeyError on a unique field. */
  async create(record: R): Promise<R> {
    await this.collection.insert(this.codec.toDoc(record) as Document);
    return record;
  }

  /**
   * Changes the given fields, leaving the revision as it is (erplink's own
   * bookkeeping, such as a key's last use); throws NotFoundError or
   * DuplicateKeyError. Administrative changes use {@link revise}.
   */
  async update(id: string, patch: Patch<R>): Promise<R> {
    const doc = await this.collection.update(id, this.codec.toDoc(patch as Partial<R>));
    if (doc === undefined) throw new NotFoundError(this.name, id);
    return this.codec.fromDoc(doc);
  }

  /**
   * Changes the given fields as an administrative change: the same atomic
   * write adds one to the record's revision, and with `expected` it is made
   * only if the record is at that revision. Throws NotFoundError,
   * DuplicateKeyError or RevisionMismatchError (nothing changed).
   */
  async revise(id: string, patch: Patch<R>, expected?: number): Promise<R> {
    const doc = await this.collection.update(id, this.codec.toDoc(patch as Partial<R>), { expected });
    if (doc === undefined) throw new NotFoundError(this.name, id);
    return this.codec.fromDoc(doc);
  }

  /**
   * Removes a record and returns it as it was; with `expected`, only if it
   * is at that revision. Throws NotFoundError or RevisionMismatchError
   * (nothing removed).
   */
  async delete(id: string, expected?: number): Promise<R> {
    const doc = await this.collection.delete(id, expected === undefined ? undefined : { expected });
    if (doc === undefined) throw new NotFoundError(this.name, id);
    return this.codec.fromDoc(doc);
  }
}

/**
 * Maps `id` to `_id` and copies the other fields, applying per-field
 * encoders. A field present with the value `undefined` is stored as `null`
 * (in a patch: cleared); decoders read `null` as absent.
 */
export function encodeFields<R extends BaseRecord>(
  fields: Partial<R>,
  encoders: { [K in keyof R]?: (value: R[K]) => unknown } = {},
): Record<string, unknown> {
  const doc: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) {
      doc[key] = null;
      continue;
    }
    const encode = encoders[key as keyof R] as ((v: unknown) => unknown) | undefined;
    doc[key === "id" ? "_id" : key] = encode ? encode(value) : value;
  }
  return doc;
}

/** Label maps are stored as `[{k, v}]`: map keys may hold `.`, which field names may not. */
export function encodeLabels(labels: Readonly<Record<string, string>>): { k: string; v: string }[] {
  return Object.entries(labels).map(([k, v]) => ({ k, v }));
}

/** The inverse of {@link encodeLabels}. */
export function decodeLabels(value: unknown): Record<string, string> {
  const labels: Record<string, string> = {};
  if (Array.isArray(value)) for (const { k, v } of value as { k: string; v: string }[]) labels[k] = v;
  return labels;
}

/** The `revision` of a record read from `doc`: present only when the document has one (absent reads as 0). */
export function decodeRevision(doc: Document): { revision?: number } {
  return typeof doc.revision === "number" ? { revision: doc.revision } : {};
}

/** Reads a stored date (both adapters store native dates). */
export function decodeDate(value: unknown): Date {
  return value instanceof Date ? value : new Date(value as string);
}
