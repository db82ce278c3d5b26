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

class EmbeddedCollection implements DocumentCollection {
  constructor(
    private readonly ds: Datastore,
    private readonly spec: CollectionSpec,
  ) {}

  async insert(doc: Document): Promise<void> {
    try {
      await this.ds.insertAsync(doc);
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
    const { affectedDocuments } = await this.ds.updateAsync(
      { _id: id },
      { $inc: { [field]: delta }, $set: set },
      { upsert: true, returnUpdatedDocs: true, multi: false },
    );
    return (affectedDocuments as Document)[field] as number;
  }

  async insertMany(docs: readonly Document[]): Promise<void> {
    if (docs.length > 0) await this.ds.insertAsync([...docs]);
  }

  async findNewest(query: NewestQuery): Promise<Document[]> {
    return (await this.ds.findAsync(newestFilter(query)).sort({ _id: -1 }).limit(query.limit)) as Document[];
  }

  async since(field: string, from: Date, limit: number): Promise<Document[]> {
    return (await this.ds.findAsync({ [field]: { $gte: from } }).sort({ [field]: 1 }).limit(limit)) as Document[];
  }

  async deleteBefore(field: string, date: Date): Promise<number> {
    return this.ds.removeAsync({ [field]: { $lt: date } }, { multi: true });
  }

  async keepNewest(keep: number, most: number): Promise<{ removed: number; remaining: number }> {
    // Sorts the ids each call: on the embedded store no collection is capped
    // in production (its request log is ./memory-request-log.ts), so this
    // serves the port's contract, not a hot path. getAllData reads nedb's
    // state as it is between two operations.
    const ids = this.ds
      .getAllData()
      .map((d) => (d as Document)._id)
      .sort();
    const n = Math.min(most, ids.length - keep);
    if (n <= 0) return { removed: 0, remaining: ids.length };
    // A range on _id: nedb takes the candidates from its _id tree, the n oldest only.
    const removed = await this.ds.removeAsync({ _id: { $lte: ids[n - 1]! } }, { multi: true });
    return { removed, remaining: ids.length - removed };
  }

  async incrementMany(increments: readonly Increment[]): Promise<void> {
    // In process, one upsert per document is as cheap as any batch.
    for (const { id, inc, set } of increments) {
      assertScalars({ _id: id });
      await this.ds.updateAsync({ _id: id }, { $inc: inc, $set: set }, { upsert: true, multi: false });
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
    return removed === 1 ? doc : undefined;
  }
}
