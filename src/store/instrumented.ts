/**
 * A store backend whose collections report every operation's time and
 * failure to the metrics port: a decorator over either adapter, applied by
 * {@link createStore} when metrics are on (and not at all when they are
 * off), so the adapters and aggregates stay as they are. Labels are the
 * collection's declared name and the operation's method name, both fixed by
 * the code.
 */
import type { StoreErrorKind, StoreMetrics } from "../metrics/port.js";
import type {
  CollectionSpec,
  Document,
  DocumentCollection,
  Increment,
  ListOptions,
  NewestQuery,
  RevisionCondition,
  StoreBackend,
  Where,
} from "./collection.js";
import { DuplicateKeyError, RevisionMismatchError, StoreUnavailableError } from "./errors.js";
import type { LogQuery, RequestLogPort, RequestLogRecord } from "./request-logs.js";
import type { Page } from "./aggregate.js";

/** The kind of a store error, as the metrics name it. */
export function storeErrorKind(err: unknown): StoreErrorKind {
  if (err instanceof StoreUnavailableError) return "unavailable";
  if (err instanceof DuplicateKeyError) return "duplicate_key";
  if (err instanceof RevisionMismatchError) return "revision_mismatch";
  return "other";
}

/** `backend`, its collections reporting to `metrics`. */
export function instrumentBackend(backend: StoreBackend, metrics: StoreMetrics): StoreBackend {
  return {
    kind: backend.kind,
    dataDir: backend.dataDir,
    async collection(spec: CollectionSpec) {
      return new InstrumentedCollection(await backend.collection(spec), spec.name, metrics);
    },
    ping: () => backend.ping(),
    close: () => backend.close(),
  };
}

class InstrumentedCollection implements DocumentCollection {
  constructor(
    private readonly inner: DocumentCollection,
    private readonly name: string,
    private readonly metrics: StoreMetrics,
  ) {}

  /** Awaits an operation started at `started` (performance.now()), reporting its time and any failure. */
  private async timed<T>(operation: string, started: number, result: Promise<T>): Promise<T> {
    try {
      const value = await result;
      this.metrics.operation(this.name, operation, (performance.now() - started) / 1000, undefined);
      return value;
    } catch (err) {
      this.metrics.operation(this.name, operation, (performance.now() - started) / 1000, storeErrorKind(err));
      throw err;
    }
  }

  insert(doc: Document): Promise<void> {
    return this.timed("insert", performance.now(), this.inner.insert(doc));
  }
  get(id: string): Promise<Document | undefined> {
    return this.timed("get", performance.now(), this.inner.get(id));
  }
  findOne(where: Where): Promise<Document | undefined> {
    return this.timed("findOne", performance.now(), this.inner.findOne(where));
  }
  list(where: Where, options: ListOptions): Promise<Document[]> {
    return this.timed("list", performance.now(), this.inner.list(where, options));
  }
  count(where: Where): Promise<number> {
    return this.timed("count", performance.now(), this.inner.count(where));
  }
  update(id: string, set: Record<string, unknown>, revision?: RevisionCondition): Promise<Document | undefined> {
    return this.timed("update", performance.now(), this.inner.update(id, set, revision));
  }
  delete(id: string, revision?: RevisionCondition): Promise<Document | undefined> {
    return this.timed("delete", performance.now(), this.inner.delete(id, revision));
  }
  increment(id: string, field: string, delta: number, set: Record<string, unknown>): Promise<number> {
    return this.timed("increment", performance.now(), this.inner.increment(id, field, delta, set));
  }
  insertMany(docs: readonly Document[]): Promise<void> {
    return this.timed("insertMany", performance.now(), this.inner.insertMany(docs));
  }
  findNewest(query: NewestQuery): Promise<Document[]> {
    return this.timed("findNewest", performance.now(), this.inner.findNewest(query));
  }
  since(field: string, from: Date, limit: number): Promise<Document[]> {
    return this.timed("since", performance.now(), this.inner.since(field, from, limit));
  }
  deleteBefore(field: string, date: Date): Promise<number> {
    return this.timed("deleteBefore", performance.now(), this.inner.deleteBefore(field, date));
  }
  keepNewest(keep: number, most: number): Promise<{ removed: number; remaining: number }> {
    return this.timed("keepNewest", performance.now(), this.inner.keepNewest(keep, most));
  }
  incrementMany(increments: readonly Increment[]): Promise<void> {
    return this.timed("incrementMany", performance.now(), this.inner.incrementMany(increments));
  }
  getMany(ids: readonly string[]): Promise<Document[]> {
    return this.timed("getMany", performance.now(), this.inner.getMany(ids));
  }
}

/**
 * A request log that is not a collection (the embedded store's, in memory
 * and a file), reporting its operations as the collections do: collection
 * `request_logs`, the port's method as the operation (`append`, `get`,
 * `query`, `purge`, `trim`).
 */
export function instrumentRequestLog<L extends RequestLogPort>(log: L, metrics: StoreMetrics): RequestLogPort & { close?(): Promise<void> } {
  const timed = async <T>(operation: string, run: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      const value = await run();
      metrics.operation("request_logs", operation, (performance.now() - started) / 1000, undefined);
      return value;
    } catch (err) {
      metrics.operation("request_logs", operation, (performance.now() - started) / 1000, storeErrorKind(err));
      throw err;
    }
  };
  const closable = log as L & { close?(): Promise<void> };
  return {
    append: (records: readonly RequestLogRecord[]) => timed("append", () => log.append(records)),
    get: (id: string) => timed("get", () => log.get(id)),
    query: (q: LogQuery): Promise<Page<RequestLogRecord>> => timed("query", () => log.query(q)),
    purge: (now: Date) => timed("purge", () => log.purge(now)),
    trim: (maxEntries: number, chunk?: number) => timed("trim", () => log.trim(maxEntries, chunk)),
    ...(closable.close === undefined ? {} : { close: () => closable.close!() }),
  };
}
