/**
 * The embedded adapter: @seald-io/nedb, one append-only file per collection
 * under the data directory, or everything in memory. Zero setup; one process.
 *
 * nedb is the in-memory engine (documents, indexes, queries, one operation at
 * a time); its two file operations are replaced by ./embedded-file.ts, since
 * nedb's own append neither flushes nor undoes a write the disk refused. A
 * write is acknowledged once its line is on disk (`fdatasync`); one that
 * fails (a full disk, an I/O error) is cut back from the file, the
 * collection's memory is read back from the file (so the change is not
 * visible either), and the caller gets StoreUnavailableError (503
 * `UNAVAILABLE`); reads go on from memory. From then until a probe write
 * succeeds, `ping` (so `/readyz`) fails. At open, a torn or unterminated
 * tail is cut back to the last complete record, with a warning.
 *
 * Why nedb is kept rather than replaced: nedb runs every change in memory
 * first and then hands its lines to the persistence, one operation at a
 * time, so taking over that hand-over (and undoing by replaying the file,
 * which is the truth) gives the guarantees at the cost of one `fdatasync`
 * per write (~0.3 ms here) and a re-read of one file per failed write. A
 * replacement (a WASM SQLite, our own log) would have meant a new query
 * engine behind the same port for no guarantee this does not give.
 */
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import nedbModule from "@seald-io/nedb";
import {
  assertNoRevision,
  assertScalars,
  duplicateKeyError,
  REVISION_FIELD,
  revisionFilter,
  revisionOf,
  type RevisionCondition,
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
import { DataFile, openDataFile, serializeLine, type OpenDataFile } from "./embedded-file.js";
import { RevisionMismatchError, StoreUnavailableError } from "./errors.js";

// nedb's typings declare an ES default export on a CommonJS module.
const Datastore = nedbModule as unknown as typeof nedbModule.default;
type Datastore = InstanceType<typeof Datastore>;

/** The parts of a nedb Datastore this adapter works with that its typings do not declare. */
interface NedbInternals {
  persistence: {
    persistNewStateAsync(docs: object[]): Promise<void>;
    persistCachedDatabaseAsync(): Promise<void>;
  };
  indexes: Record<string, { fieldName: string; unique?: boolean; sparse?: boolean }>;
  executor: { pushAsync<T>(task: () => Promise<T>, forceQueuing?: boolean): Promise<T> };
  getAllData(): object[];
  _resetIndexes(docs?: object[]): void;
  emit(event: string): boolean;
}

/** Where the embedded store reports what an operator should hear of. */
export interface StoreLog {
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

/** Options of {@link createEmbeddedBackend}. */
export interface EmbeddedBackendOptions {
  /** Directory for the data files, or `:memory:` to keep nothing on disk. */
  readonly dataDir: string;
  /** How often to compact the append-only files, in ms (0: only at start). */
  readonly compactionIntervalMs?: number;
  /** Told of a tail cut at open, a write the disk refused, a rewrite that failed. */
  readonly log?: StoreLog;
  /** Opens the data files for writing (default: node's `open`; a stand-in simulates a failing disk). */
  readonly openFile?: OpenDataFile;
}

/** Bytes of the probe write that tells whether the disk takes writes again. */
const PROBE_BYTES = 64 * 1024;

/**
 * Whether the data directory takes writes: not from a write that failed
 * until a probe write of {@link PROBE_BYTES} succeeds (`check` makes one).
 * A later small write that fits, say, in a file's last block does not say
 * the disk has room again.
 */
class WriteHealth {
  /** The error of the write that failed, while writes fail. */
  private failing: unknown = undefined;
  private probing: Promise<void> | undefined;
  /** Collections whose memory could not be read back from their file after a failed write. */
  readonly stale = new Set<DurableDatastore>();

  constructor(
    private readonly dataDir: string,
    private readonly openFile: OpenDataFile,
    private readonly log: StoreLog | undefined,
  ) {}

  failed(err: unknown, file: string): void {
    if (this.failing === undefined) {
      this.log?.error({ err, file }, "embedded store: a write failed and was undone; such writes answer 503, and /readyz is 503 until a probe write succeeds");
    }
    this.failing = err;
  }

  /** Resolves when the store can write; throws StoreUnavailableError otherwise. */
  async check(): Promise<void> {
    for (const ds of this.stale) await ds.readBackQueued();
    if (this.failing === undefined) return;
    this.probing ??= this.probe().finally(() => (this.probing = undefined));
    await this.probing;
  }

  private async probe(): Promise<void> {
    const file = join(this.dataDir, ".write-probe");
    try {
      const fh = await this.openFile(file, "w");
      try {
        await fh.write(Buffer.alloc(PROBE_BYTES), 0, PROBE_BYTES, 0);
        await fh.datasync();
      } finally {
        await fh.close().catch(() => undefined);
      }
    } catch (err) {
      this.failing = err;
      throw new StoreUnavailableError({ cause: err });
    } finally {
      await rm(file, { force: true }).catch(() => undefined);
    }
    this.failing = undefined;
    this.log?.warn({ dataDir: this.dataDir }, "embedded store: the data directory takes writes again");
  }
}

/**
 * A nedb Datastore whose file operations go through a {@link DataFile}: its
 * appends flushed and undone on failure, its compactions renamed into place.
 */
class DurableDatastore {
  private readonly internals: NedbInternals;

  constructor(
    private readonly ds: Datastore,
    private readonly file: DataFile,
    private readonly health: WriteHealth,
    private readonly log: StoreLog | undefined,
  ) {
    this.internals = ds as unknown as NedbInternals;
    const persistence = this.internals.persistence;
    persistence.persistNewStateAsync = (docs) => this.append(docs);
    persistence.persistCachedDatabaseAsync = () => this.compact();
    // Every operation, when it runs, first reads the memory back if a failed
    // write left it as it should not be (see readBack).
    const executor = this.internals.executor;
    const push = executor.pushAsync.bind(executor);
    executor.pushAsync = <T>(task: () => Promise<T>, forceQueuing?: boolean) =>
      push(() => (this.health.stale.has(this) ? this.readBack().then(task) : task()), forceQueuing);
  }

  /** Cuts a torn tail and loads the file. */
  async load(): Promise<void> {
    const cut = await this.file.open();
    if (cut !== undefined) {
      this.log?.warn(
        { file: this.file.path, bytes: cut.bytes, lines: cut.lines },
        "embedded store: the data file ended in a torn or unterminated write (a crash or a full disk); cut back to its last complete record",
      );
    }
    await this.ds.loadDatabaseAsync();
  }

  /**
   * Sets the memory to what the file holds (after a failed write); throws
   * StoreUnavailableError if it cannot, and then every operation tries again
   * before it runs, and fails while it cannot.
   */
  async readBack(): Promise<void> {
    try {
      this.internals._resetIndexes(await this.file.documents());
    } catch (err) {
      if (!this.health.stale.has(this)) {
        this.log?.error({ err, file: this.file.path }, "embedded store: the data file could not be read back after a failed write; the collection answers 503 until it can");
      }
      this.health.stale.add(this);
      throw new StoreUnavailableError({ cause: err });
    }
    this.health.stale.delete(this);
  }

  /** {@link readBack} as an operation of the collection's own (not meanwhile with another). */
  readBackQueued(): Promise<void> {
    // The executor reads back first when it runs a task on a stale collection.
    return this.internals.executor.pushAsync(async () => undefined);
  }

  /** nedb's persistNewStateAsync: the lines of one operation, already applied in memory. */
  private async append(docs: object[]): Promise<void> {
    if (docs.length === 0) return;
    let text = "";
    try {
      for (const doc of docs) text += `${serializeLine(doc)}\n`;
    } catch (err) {
      await this.readBack();
      throw err;
    }
    try {
      await this.file.append(text);
    } catch (err) {
      this.health.failed(err, this.file.path);
      await this.readBack();
      throw new StoreUnavailableError({ cause: err });
    }
  }

  /** nedb's persistCachedDatabaseAsync: the file rewritten as one line per document (at load, on the interval, at close). */
  private async compact(): Promise<void> {
    if (this.health.stale.has(this)) return; // memory is not what was acknowledged: keep the file
    const lines = this.internals.getAllData().map((doc) => serializeLine(doc));
    for (const [fieldName, index] of Object.entries(this.internals.indexes)) {
      if (fieldName === "_id") continue;
      lines.push(serializeLine({ $$indexCreated: { fieldName: index.fieldName, unique: index.unique, sparse: index.sparse } }));
    }
    try {
      await this.file.rewrite(lines);
    } catch (err) {
      this.log?.warn({ err, file: this.file.path }, "embedded store: rewriting the data file failed; it keeps its lines");
      return;
    }
    this.internals.emit("compaction.done");
  }
}

/** Opens the embedded store. */
export async function createEmbeddedBackend(options: EmbeddedBackendOptions): Promise<StoreBackend> {
  const inMemory = options.dataDir === ":memory:";
  if (!inMemory) await mkdir(options.dataDir, { recursive: true });
  const openFile = options.openFile ?? openDataFile;
  const health = new WriteHealth(options.dataDir, openFile, options.log);
  const open: Datastore[] = [];
  // Rather than nedb's own interval, whose failure would be an unhandled rejection.
  const compaction =
    !inMemory && options.compactionIntervalMs
      ? setInterval(() => {
          for (const ds of open) void ds.compactDatafileAsync().catch(() => undefined);
        }, options.compactionIntervalMs).unref()
      : undefined;
  return {
    kind: "embedded",
    dataDir: options.dataDir,
    async collection(spec) {
      let ds: Datastore;
      if (inMemory) {
        ds = new Datastore({ inMemoryOnly: true });
        await ds.loadDatabaseAsync();
      } else {
        const filename = join(options.dataDir, `${spec.name}.db`);
        ds = new Datastore({ filename });
        await new DurableDatastore(ds, new DataFile(filename, openFile, spec.flush !== false), health, options.log).load();
      }
      for (const index of spec.indexes) {
        if (keptBy(index, "embedded")) {
          await ds.ensureIndexAsync({ fieldName: index.field, unique: index.unique });
        } else if (!inMemory && (ds as unknown as NedbInternals).indexes[index.field] !== undefined) {
          // nedb recreates the indexes its file names: one an earlier release kept here goes.
          await ds.removeIndexAsync(index.field);
        }
      }
      open.push(ds);
      return new EmbeddedCollection(ds, spec);
    },
    async ping() {
      // Files are local: the store answers while it can write to them.
      await health.check();
    },
    async close() {
      clearInterval(compaction);
      // A rewrite that fails is logged and leaves the file as it was; a collection that is stale is not rewritten.
      if (!inMemory) for (const ds of open) await ds.compactDatafileAsync().catch(() => undefined);
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

  async update(id: string, set: Record<string, unknown>, revision?: RevisionCondition): Promise<Document | undefined> {
    assertScalars({ _id: id });
    assertNoRevision(set);
    const expected = revision?.expected;
    try {
      // nedb runs one operation at a time, so the revision in the query makes this a compare-and-set.
      const { affectedDocuments } = await this.ds.updateAsync(
        expected === undefined ? { _id: id } : { _id: id, ...revisionFilter(expected) },
        revision === undefined ? { $set: set } : { $set: set, $inc: { [REVISION_FIELD]: 1 } },
        { returnUpdatedDocs: true, multi: false },
      );
      const doc = (affectedDocuments as Document | null) ?? undefined;
      if (doc === undefined && expected !== undefined) return this.mismatch(id, expected);
      return doc;
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

  async delete(id: string, revision?: RevisionCondition): Promise<Document | undefined> {
    assertScalars({ _id: id });
    const doc = await this.get(id);
    if (doc === undefined) return undefined;
    const expected = revision?.expected;
    if (expected === undefined) {
      const removed = await this.ds.removeAsync({ _id: id }, { multi: false });
      return removed === 1 ? doc : undefined;
    }
    if (revisionOf(doc) !== expected) throw new RevisionMismatchError(this.spec.name, id, expected, revisionOf(doc));
    // Removed only if still at the revision read (one operation): the document returned is the one removed.
    const removed = await this.ds.removeAsync({ _id: id, ...revisionFilter(expected) }, { multi: false });
    return removed === 1 ? doc : this.mismatch(id, expected);
  }

  /** After a revised write that matched nothing: undefined when the document is absent, else its RevisionMismatchError. */
  private async mismatch(id: string, expected: number): Promise<undefined> {
    const doc = await this.get(id);
    if (doc === undefined) return undefined;
    throw new RevisionMismatchError(this.spec.name, id, expected, revisionOf(doc));
  }
}
