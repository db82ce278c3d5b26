/**
 * The embedded adapter: @seald-io/nedb, one append-only file per collection
 * under the data directory, or everything in memory. Zero setup; one process.
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import nedbModule from "@seald-io/nedb";
import {
  assertScalars,
  duplicateKeyError,
  keptBy,
  newestFilter,
  type NewestQuery,
  type CollectionSpec,
  type Document,
  type DocumentCollection,
  type Increment,
  type ListOptions,
  type StoreBackend,
  type Where,
} from "./collection.js";

// nedb's typings declare an ES default export on a CommonJS module.
const Datastore = nedbModule as unknown as typeof nedbModule.default;
type Datastore = InstanceType<typeof Datastore>;

/** Options of {@link createEmbeddedBackend}. */
export interface EmbeddedBackendOptions {
  /** Directory for the data files, or `:memory:` to keep nothing on disk. */
  readonly dataDir: string;
  /** How often to compact the append-only files, in ms (0: only at start). */
  readonly compactionIntervalMs?: number;
}

/** Opens the embedded store. */
export async function createEmbeddedBackend(options: EmbeddedBackendOptions): Promise<StoreBackend> {
  const inMemory = options.dataDir === ":memory:";
  if (!inMemory) await mkdir(options.dataDir, { recursive: true });
  const open: Datastore[] = [];
  return {
    kind: "embedded",
    dataDir: options.dataDir,
    async collection(spec) {
      const ds = new Datastore(
        inMemory ? { inMemoryOnly: true } : { filename: join(options.dataDir, `${spec.name}.db`) },
      );
      await ds.loadDatabaseAsync();
      for (const index of spec.indexes) {
        if (keptBy(index, "embedded")) {
          await ds.ensureIndexAsync({ fieldName: index.field, unique: index.unique });
        } else if (!inMemory) {
          // nedb recreates the indexes its file names: one an earlier release
          // kept here goes (a no-op when there is none).
          await ds.removeIndexAsync(index.field);
        }
      }
      if (!inMemory && options.compactionIntervalMs) ds.setAutocompactionInterval(options.compactionIntervalMs);
      open.push(ds);
      return new EmbeddedCollection(ds, spec);
    },
    async ping() {
      // Files are local: reachable as long as the process runs.
    },
    async close() {
      for (const ds of open) {
        ds.stopAutocompaction();
        if (!inMemory) await ds.compactDatafileAsync();
      }
      open.length = 0;
    },
  };
}

function isUniqueViolation(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { errorType?: unknown }).errorType === "uniqueViolated";
}

/** Above this many removed ids at its head, the id order is copied without them. */
const ORDER_SLACK = 4096;

class EmbeddedCollection implements DocumentCollection {
  /**
   * The collection's ids in ascending order from `head` on, so that the
   * oldest documents are found without sorting the collection (nedb sorts
   * every candidate of a sorted query). Built from the collection when
   * {@link keepNewest} first needs it; then inserts of ids above the last
   * (the request log's writer inserts in id order) are appended, and
   * anything else that adds or removes documents drops it, to be built
   * again when next needed. Holds the documents' own id strings: an array
   * slot per document.
   */
  private order: string[] | undefined;
  private head = 0;

  constructor(
    private readonly ds: Datastore,
    private readonly spec: CollectionSpec,
  ) {}

  /** The id order, built if it was dropped. */
  private idOrder(): string[] {
    if (this.order === undefined) {
      // getAllData reads nedb's state as it is between two operations.
      this.order = this.ds.getAllData().map((d) => (d as Document)._id).sort();
      this.head = 0;
    }
    return this.order;
  }

  /** Records inserted ids: kept in order when they all follow the last one, else the order is dropped. */
  private inserted(ids: readonly string[]): void {
    const order = this.order;
    if (order === undefined) return;
    for (const id of ids) {
      if (order.length > this.head && !(id > order[order.length - 1]!)) {
        this.order = undefined;
        return;
      }
      order.push(id);
    }
  }

  async insert(doc: Document): Promise<void> {
    try {
      await this.ds.insertAsync(doc);
      this.inserted([doc._id]);
    } catch (err) {
      if (isUniqueViolation(err)) throw await duplicateKeyError(this, this.spec, doc, doc._id);
      throw err;
    }
  }

  async get(id: string): Promise<Document | undefined> {
    return this.findOne({ _id: id });
  }

  async findOne(where: Where): Promise<Document | undefined> {
    assertScalars(where);
    return ((await this.ds.findOneAsync(where)) as Document | null) ?? undefined;
  }

  async list(where: Where, options: ListOptions): Promise<Document[]> {
    assertScalars(where);
    const query: Record<string, unknown> = { ...where };
    if (options.afterId !== undefined) query._id = { $gt: options.afterId };
    return (await this.ds.findAsync(query).sort({ _id: 1 }).limit(options.limit)) as Document[];
  }

  async count(where: Where): Promise<number> {
    assertScalars(where);
    return this.ds.countAsync(where);
  }

  async update(id: string, set: Record<string, unknown>): Promise<Document | undefined> {
    assertScalars({ _id: id });
    try {
      const { affectedDocuments } = await this.ds.updateAsync(
        { _id: id },
        { $set: set },
        { returnUpdatedDocs: true, multi: false },
      );
      return (affectedDocuments as Document | null) ?? undefined;
    } catch (err) {
      if (isUniqueViolation(err)) throw await duplicateKeyError(this, this.spec, set, id);
      throw err;
    }
  }

  async increment(id: string, field: string, delta: number, set: Record<string, unknown>): Promise<number> {
    assertScalars({ _id: id });
    // nedb runs one operation at a time, so the upsert is atomic.
    let created = true;
    try {
      const { affectedDocuments, upsert } = await this.ds.updateAsync(
        { _id: id },
        { $inc: { [field]: delta }, $set: set },
        { upsert: true, returnUpdatedDocs: true, multi: false },
      );
      created = upsert;
      return (affectedDocuments as Document)[field] as number;
    } finally {
      if (created) this.order = undefined;
    }
  }

  async insertMany(docs: readonly Document[]): Promise<void> {
    if (docs.length === 0) return;
    await this.ds.insertAsync([...docs]);
    this.inserted(docs.map((d) => d._id));
  }

  async findNewest(query: NewestQuery): Promise<Document[]> {
    return (await this.ds.findAsync(newestFilter(query)).sort({ _id: -1 }).limit(query.limit)) as Document[];
  }

  async since(field: string, from: Date, limit: number): Promise<Document[]> {
    return (await this.ds.findAsync({ [field]: { $gte: from } }).sort({ [field]: 1 }).limit(limit)) as Document[];
  }

  async deleteBefore(field: string, date: Date): Promise<number> {
    let removed = -1;
    try {
      removed = await this.ds.removeAsync({ [field]: { $lt: date } }, { multi: true });
      return removed;
    } finally {
      // Which ids went is not known here (nor after a failure).
      if (removed !== 0) this.order = undefined;
    }
  }

  async keepNewest(keep: number, most: number): Promise<{ removed: number; remaining: number }> {
    const order = this.idOrder();
    const size = order.length - this.head;
    const n = Math.min(most, size - keep);
    if (n <= 0) return { removed: 0, remaining: size };
    // A range on _id: nedb takes the candidates from its _id tree, the n oldest only.
    const removed = await this.ds.removeAsync({ _id: { $lte: order[this.head + n - 1]! } }, { multi: true });
    if (this.order === order && removed === n) {
      this.head += n;
      if (this.head > ORDER_SLACK && this.head * 2 > order.length) {
        this.order = order.slice(this.head);
        this.head = 0;
      }
    } else {
      // Something else changed the collection meanwhile: count again.
      this.order = undefined;
    }
    return { removed, remaining: this.idOrder().length - this.head };
  }

  async incrementMany(increments: readonly Increment[]): Promise<void> {
    // In process, one upsert per document is as cheap as any batch.
    try {
      for (const { id, inc, set } of increments) {
        assertScalars({ _id: id });
        await this.ds.updateAsync({ _id: id }, { $inc: inc, $set: set }, { upsert: true, multi: false });
      }
    } finally {
      // Some may have been created.
      this.order = undefined;
    }
  }

  async getMany(ids: readonly string[]): Promise<Document[]> {
    for (const id of ids) assertScalars({ _id: id });
    return (await this.ds.findAsync({ _id: { $in: [...ids] } })) as Document[];
  }

  async delete(id: string): Promise<Document | undefined> {
    assertScalars({ _id: id });
    const doc = await this.get(id);
    if (doc === undefined) return undefined;
    const removed = await this.ds.removeAsync({ _id: id }, { multi: false });
    if (removed !== 1) return undefined;
    this.order = undefined;
    return doc;
  }
}
