/**
 * The MongoDB adapter: the official driver, one collection per aggregate,
 * `_id` holding the resource id, named indexes created idempotently at start.
 * Uses no transactions and no change streams, so it also runs on
 * MongoDB-wire servers that lack them.
 */
import {
  MongoBulkWriteError,
  MongoClient,
  MongoError,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
  type Collection,
  type Filter,
  type UpdateFilter,
} from "mongodb";
import { ConnectionString } from "mongodb-connection-string-url";
import {
  assertNoRevision,
  assertScalars,
  duplicateKeyError,
  REVISION_FIELD,
  revisionFilter,
  revisionOf,
  type RevisionCondition,
  findDuplicateField,
  incrementedDocument,
  keptBy,
  newestFilter,
  type NewestQuery,
  type CollectionSpec,
  type Document,
  type IndexSpec,
  type DocumentCollection,
  type Increment,
  type ListOptions,
  type StoreBackend,
  type Where,
} from "./collection.js";
import { DuplicateKeyError, RevisionMismatchError, StoreUnavailableError } from "./errors.js";

/** Options of {@link createMongoBackend}. */
export interface MongoBackendOptions {
  /** A `mongodb://` or `mongodb+srv://` URL; its path names the database (default `erplink`). */
  readonly url: string;
  /** How long an operation waits for a usable server before failing as unavailable. */
  readonly serverSelectionTimeoutMs: number;
}

/** The database named by the URL's path, or `erplink`. */
export function databaseName(url: string): string {
  const path = new ConnectionString(url).pathname.replace(/^\//, "");
  return path === "" ? "erplink" : decodeURIComponent(path);
}

/** Connects to MongoDB. Fails with StoreUnavailableError if no server answers in time. */
export async function createMongoBackend(options: MongoBackendOptions): Promise<StoreBackend> {
  const client = new MongoClient(options.url, {
    appName: "erplink",
    serverSelectionTimeoutMS: options.serverSelectionTimeoutMs,
    connectTimeoutMS: options.serverSelectionTimeoutMs,
    // A connection that went silent fails the operation instead of hanging it.
    socketTimeoutMS: Math.max(10_000, 2 * options.serverSelectionTimeoutMs),
    waitQueueTimeoutMS: options.serverSelectionTimeoutMs,
  });
  await guard(() => client.connect());
  const db = client.db(databaseName(options.url));
  const liveness = new Liveness(() => db.command({ ping: 1 }), options.serverSelectionTimeoutMs);
  return {
    kind: "mongodb",
    async collection(spec) {
      const coll = db.collection<Document>(spec.name);
      await guard(() => ensureIndexes(coll, spec.indexes.filter((i) => keptBy(i, "mongodb"))));
      return new MongoCollection(coll, spec, liveness);
    },
    async ping() {
      await liveness.bound(guard(() => db.command({ ping: 1 })));
    },
    async close() {
      await client.close();
    },
  };
}

/**
 * Creates the declared indexes, or brings older ones in line: an index of
 * the same name but another key or uniqueness (an earlier release's) is
 * replaced; an index on the same key under another name is kept if it is as
 * unique as ours, else replaced. Compares with what exists first, because
 * some servers (FerretDB) silently keep an index whose options differ.
 */
async function ensureIndexes(coll: Collection<Document>, indexes: readonly IndexSpec[]): Promise<void> {
  let existing: { name?: string; key: Record<string, unknown>; unique?: boolean }[];
  try {
    existing = await coll.listIndexes().toArray();
  } catch (err) {
    // NamespaceNotFound: a new collection has no indexes yet.
    if (!(err instanceof MongoServerError && err.code === 26)) throw err;
    existing = [];
  }
  for (const index of indexes) {
    const sameKey = (i: { key: Record<string, unknown> }) =>
      Object.keys(i.key).length === 1 && i.key[index.field] === 1;
    const byName = existing.find((i) => i.name === index.name);
    if (byName !== undefined && sameKey(byName) && Boolean(byName.unique) === index.unique) continue;
    const byKey = existing.find((i) => i.name !== index.name && sameKey(i));
    if (byName === undefined && byKey !== undefined && Boolean(byKey.unique) === index.unique) continue;
    // One call per index: FerretDB 1.24 fails a multi-index createIndexes
    // when several of them already exist.
    for (const stale of [byName, byKey]) if (stale?.name !== undefined) await coll.dropIndex(stale.name);
    await coll.createIndex({ [index.field]: 1 }, { name: index.name, unique: index.unique });
  }
}

/** Server codes of a primary stepping down or a server shutting down: retry elsewhere, later. */
const TRANSIENT_CODES = new Set([91, 189, 10107, 11600, 11602, 13435, 13436]);

function isUnavailable(err: unknown): boolean {
  if (
    err instanceof MongoNetworkError ||
    err instanceof MongoServerSelectionError ||
    err instanceof MongoNotConnectedError ||
    err instanceof MongoTopologyClosedError ||
    // Not exported by the driver: no pooled connection came free in time.
    (err instanceof MongoError && err.name === "MongoWaitQueueTimeoutError")
  ) {
    return true;
  }
  return (
    err instanceof MongoError &&
    (err.hasErrorLabel("ResetPool") ||
      err.hasErrorLabel("RetryableWriteError") ||
      (typeof err.code === "number" && TRANSIENT_CODES.has(err.code)))
  );
}

/** Runs a driver call, turning connectivity failures into StoreUnavailableError. */
async function guard<T>(op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (err) {
    if (isUnavailable(err)) throw new StoreUnavailableError({ cause: err });
    throw err;
  }
}

/**
 * Tells a server that stopped answering (frozen, or behind a dead network
 * path, its connections still open) from one that is only slow, so that an
 * operation a request waits for fails within `timeoutMs` on the first and
 * goes on on the second (a large aggregation may take longer). An operation
 * still pending at half the time sends a `ping` (one at a time); at the full
 * time it fails as unavailable unless the server answered something, that
 * ping or any other operation, within the last `timeoutMs`, in which case it
 * is looked at again every half. The driver's socket timeout bounds it in the
 * end. A failed operation's work is not undone (a write that reaches the
 * server after all is the ambiguity every timeout has: the client was told
 * 503, and may retry).
 */
class Liveness {
  private lastAnswerAt = performance.now();
  private probing = false;

  constructor(
    private readonly ping: () => Promise<unknown>,
    readonly timeoutMs: number,
  ) {}

  /** Notes that the server answered (a result or a server error). */
  heard(): void {
    this.lastAnswerAt = performance.now();
  }

  /** `op`, or StoreUnavailableError when the server has answered nothing for `timeoutMs` while it waited. */
  bound<T>(op: Promise<T>): Promise<T> {
    const started = performance.now();
    return new Promise<T>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const look = () => {
        const now = performance.now();
        if (now - started >= this.timeoutMs && now - this.lastAnswerAt >= this.timeoutMs) {
          timer = undefined;
          reject(new StoreUnavailableError({ cause: new Error(`no answer from the server within ${this.timeoutMs} ms`) }));
          return;
        }
        this.probe();
        timer = setTimeout(look, Math.max(1, Math.min(this.timeoutMs / 2, started + this.timeoutMs - now)));
      };
      timer = setTimeout(look, this.timeoutMs / 2);
      op.then(
        (value) => {
          clearTimeout(timer);
          this.heard();
          resolve(value);
        },
        (err: unknown) => {
          clearTimeout(timer);
          if (err instanceof MongoServerError) this.heard();
          reject(err);
        },
      );
    });
  }

  private probe(): void {
    if (this.probing) return;
    this.probing = true;
    this.ping().then(
      () => {
        this.probing = false;
        this.heard();
      },
      () => {
        this.probing = false;
      },
    );
  }
}

/** Equality filter with explicit `$eq`, so a value can never act as an operator. */
function eqFilter(where: Where): Filter<Document> {
  assertScalars(where);
  const filter: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(where)) filter[field] = { $eq: value };
  return filter as Filter<Document>;
}

/** Above this many documents, incrementMany inserts the absent ones rather than upserting each. */
const FEW_INCREMENTS = 8;

class MongoCollection implements DocumentCollection {
  constructor(
    private readonly coll: Collection<Document>,
    private readonly spec: CollectionSpec,
    /** Fails an operation a request waits for when the server stops answering (a frozen server answers nothing, ever). */
    private readonly liveness: Liveness,
  ) {}

  /** {@link guard}, and unavailable once the server has answered nothing for the timeout. */
  private bounded<T>(op: () => Promise<T>): Promise<T> {
    return this.liveness.bound(guard(op));
  }

  /** Names the field of a duplicate-key error from the server's keyPattern, or finds it. */
  private async duplicate(err: MongoServerError, doc: Record<string, unknown>, id: string): Promise<DuplicateKeyError> {
    const keyPattern = (err.keyPattern ?? err.errorResponse?.keyPattern) as Record<string, unknown> | undefined;
    const field = keyPattern ? Object.keys(keyPattern)[0] : undefined;
    if (field !== undefined) return new DuplicateKeyError(this.spec.name, field === "_id" ? "id" : field);
    return duplicateKeyError(this, this.spec, doc, id);
  }

  async insert(doc: Document): Promise<void> {
    try {
      await this.bounded(() => this.coll.insertOne(doc));
    } catch (err) {
      if (err instanceof MongoServerError && err.code === 11000) throw await this.duplicate(err, doc, doc._id);
      throw err;
    }
  }

  async get(id: string): Promise<Document | undefined> {
    return this.findOne({ _id: id });
  }

  async findOne(where: Where): Promise<Document | undefined> {
    const filter = eqFilter(where);
    return (await this.bounded(() => this.coll.findOne(filter))) ?? undefined;
  }

  async list(where: Where, options: ListOptions): Promise<Document[]> {
    const filter: Record<string, unknown> = eqFilter(where);
    if (options.afterId !== undefined) filter._id = { $gt: options.afterId };
    return this.bounded(() =>
      this.coll
        .find(filter as Filter<Document>)
        .sort({ _id: 1 })
        .limit(options.limit)
        .toArray(),
    );
  }

  async count(where: Where): Promise<number> {
    const filter = eqFilter(where);
    return this.bounded(() => this.coll.countDocuments(filter));
  }

  async update(id: string, set: Record<string, unknown>, revision?: RevisionCondition): Promise<Document | undefined> {
    assertScalars({ _id: id });
    assertNoRevision(set);
    const expected = revision?.expected;
    // The revision in the filter and its `$inc` in the same findOneAndUpdate: a compare-and-set the server makes atomic.
    const filter = (expected === undefined ? { _id: { $eq: id } } : { _id: { $eq: id }, ...revisionFilter(expected) }) as Filter<Document>;
    const update = (revision === undefined ? { $set: set } : { $set: set, $inc: { [REVISION_FIELD]: 1 } }) as UpdateFilter<Document>;
    try {
      const doc = await this.bounded(() => this.coll.findOneAndUpdate(filter, update, { returnDocument: "after" }));
      if (doc === null && expected !== undefined) return this.mismatch(id, expected);
      return doc ?? undefined;
    } catch (err) {
      if (err instanceof MongoServerError && err.code === 11000) throw await this.duplicate(err, set, id);
      if (err instanceof MongoServerError) {
        // FerretDB 1.x reports a unique-index violation on update as code 1
        // (InternalError), not 11000: if another document holds a unique
        // value this update sets, that was the cause.
        const field = await findDuplicateField(this, this.spec, set, id);
        if (field !== undefined) throw new DuplicateKeyError(this.spec.name, field);
      }
      throw err;
    }
  }

  async increment(id: string, field: string, delta: number, set: Record<string, unknown>): Promise<number> {
    assertScalars({ _id: id });
    const op = () =>
      this.bounded(() =>
        this.coll.findOneAndUpdate(
          { _id: { $eq: id } },
          { $inc: { [field]: delta }, $set: set } as UpdateFilter<Document>,
          { upsert: true, returnDocument: "after" },
        ),
      );
    let doc;
    try {
      doc = await op();
    } catch (err) {
      // Two upserts of a new document can race; the loser retries as an update.
      if (!(err instanceof MongoServerError && err.code === 11000)) throw err;
      doc = await op();
    }
    return (doc as Document)[field] as number;
  }

  async insertMany(docs: readonly Document[]): Promise<void> {
    if (docs.length === 0) return;
    try {
      await this.bounded(() => this.coll.insertMany([...docs], { ordered: false }));
    } catch (err) {
      // The ids are fresh (the port's contract), so a duplicate is a document
      // of this batch an earlier attempt wrote: an insert the server took in
      // part before the answer was lost, sent again by the request log's
      // writer. Unordered, every other document went in. Refused as an error
      // it would be sent again for ever, every later entry queued behind it.
      if (duplicateIndexes(err) === undefined) throw err;
    }
  }

  async findNewest(query: NewestQuery): Promise<Document[]> {
    // Equality as explicit $eq, so a value can never act as an operator.
    const filter = newestFilter(query);
    for (const [field, value] of Object.entries(query.where)) filter[field] = { $eq: value };
    return this.bounded(() =>
      this.coll
        .find(filter as Filter<Document>)
        .sort({ _id: -1 })
        .limit(query.limit)
        .toArray(),
    );
  }

  async since(field: string, from: Date, limit: number): Promise<Document[]> {
    return this.bounded(() =>
      this.coll
        .find({ [field]: { $gte: from } } as Filter<Document>)
        .sort({ [field]: 1 })
        .limit(limit)
        .toArray(),
    );
  }

  async deleteBefore(field: string, date: Date): Promise<number> {
    const result = await guard(() => this.coll.deleteMany({ [field]: { $lt: date } }));
    return result.deletedCount;
  }

  async keepNewest(keep: number, most: number): Promise<{ removed: number; remaining: number }> {
    // The collection's own count (metadata, not a scan), then the n-th oldest
    // id by a walk of the _id index, then one range delete up to it.
    const total = await guard(() => this.coll.estimatedDocumentCount());
    const n = Math.min(most, total - keep);
    if (n <= 0) return { removed: 0, remaining: total };
    const [last] = await guard(() =>
      this.coll
        .find({}, { projection: { _id: 1 } })
        .sort({ _id: 1 })
        .skip(n - 1)
        .limit(1)
        .toArray(),
    );
    if (last === undefined) return { removed: 0, remaining: total };
    const { deletedCount } = await guard(() => this.coll.deleteMany({ _id: { $lte: last._id } }));
    return { removed: deletedCount, remaining: Math.max(0, total - deletedCount) };
  }

  async delete(id: string, revision?: RevisionCondition): Promise<Document | undefined> {
    assertScalars({ _id: id });
    const expected = revision?.expected;
    const filter = (expected === undefined ? { _id: { $eq: id } } : { _id: { $eq: id }, ...revisionFilter(expected) }) as Filter<Document>;
    const doc = await this.bounded(() => this.coll.findOneAndDelete(filter));
    if (doc === null && expected !== undefined) return this.mismatch(id, expected);
    return doc ?? undefined;
  }

  /** After a revised write that matched nothing: undefined when the document is absent, else its RevisionMismatchError. */
  private async mismatch(id: string, expected: number): Promise<undefined> {
    const doc = await this.get(id);
    if (doc === undefined) return undefined;
    throw new RevisionMismatchError(this.spec.name, id, expected, revisionOf(doc));
  }

  async getMany(ids: readonly string[]): Promise<Document[]> {
    for (const id of ids) assertScalars({ _id: id });
    // One plain `_id` equality per document, not `$in` (nor `$eq`): the one
    // filter FerretDB 1.x hands to SQLite, which stops at the match, where
    // any other filter decodes every document of the collection. The scalar
    // check keeps the value from being an operator.
    const docs = await Promise.all(ids.map((id) => this.bounded(() => this.coll.findOne({ _id: id }))));
    return docs.filter((d): d is Document => d !== null);
  }

  async incrementMany(increments: readonly Increment[]): Promise<void> {
    if (increments.length === 0) return;
    for (const { id } of increments) assertScalars({ _id: id });
    let updates = [...increments];
    let fresh: Increment[] = [];
    if (increments.length > FEW_INCREMENTS) {
      // Many documents (a backlog, a bulk load): the absent ones are
      // inserted whole and only the existing ones updated, since FerretDB
      // 1.x scans the collection for every update (upsert or not) while an
      // insert costs the same however large the collection is. For a few
      // (a flush: an hour and a day), one upsert each is cheaper than the
      // look-up.
      const ids = increments.map((i) => i.id);
      const found = await this.bounded(() =>
        this.coll.find({ _id: { $in: ids } } as Filter<Document>, { projection: { _id: 1 } }).toArray(),
      );
      const existing = new Set(found.map((d) => d._id));
      updates = increments.filter((i) => existing.has(i.id));
      fresh = increments.filter((i) => !existing.has(i.id));
    }
    if (fresh.length > 0) {
      try {
        await this.bounded(() => this.coll.insertMany(fresh.map(incrementedDocument), { ordered: false }));
      } catch (err) {
        // Created meanwhile by another writer: add to those instead.
        const taken = duplicateIndexes(err);
        if (taken === undefined) throw err;
        for (const index of taken) updates.push(fresh[index]!);
      }
    }
    if (updates.length === 0) return;
    await this.bounded(() =>
      this.coll.bulkWrite(
        updates.map((i) => ({
          updateOne: {
            filter: { _id: { $eq: i.id } },
            update: { $inc: i.inc, $set: i.set } as UpdateFilter<Document>,
            // Purged since it was found: created again.
            upsert: true,
          },
        })),
        { ordered: false },
      ),
    );
  }
}

/** The batch positions an unordered insertMany refused as duplicates, if it failed for nothing else. */
function duplicateIndexes(err: unknown): number[] | undefined {
  if (!(err instanceof MongoBulkWriteError)) return undefined;
  const errors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
  if (errors.length === 0 || errors.some((e) => e.code !== 11000)) return undefined;
  return errors.map((e) => e.index);
}
