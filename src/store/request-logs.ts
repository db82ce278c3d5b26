/**
 * The request log: one document per request, written in batches, queried
 * newest first by time-ordered id, expired after the retention period.
 */
import { decodeDate, type Page } from "./aggregate.js";
import { plainIndex, type CollectionSpec, type Document, type DocumentCollection, type StoreBackend, type Where } from "./collection.js";

/** One logged request. */
export interface RequestLogRecord {
  /** `log_…`, time-ordered. */
  readonly id: string;
  readonly requestId: string;
  readonly timestamp: Date;
  /** `key_…`, `master`, or "" when no credential was recognised. */
  readonly apiKeyId: string;
  /** The session (`ses_…`) an admin request came through, or "". */
  readonly sessionId: string;
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly durationMs: number;
  readonly instance: string;
  readonly service: string;
  readonly accesses: readonly { readonly entity: string; readonly operation: string }[];
  readonly denialStep: string;
  readonly errorCode: string;
  /** The envelope's `error.message` of a failed request, or "". */
  readonly errorMessage: string;
  readonly upstreamStatus: number;
  readonly upstreamDurationMs: number;
  readonly clientIp: string;
  readonly userAgent: string;
  /** Data requests: the HTTP method sent to the back end; "" when nothing was forwarded. */
  readonly upstreamMethod: string;
  /** Data requests: the full URL sent to the back end (origin, path, query); "" when nothing was forwarded. */
  readonly upstreamUrl: string;
  /** Bytes of the answer's body sent to the client (up to where the exchange ended, when it was cut short). */
  readonly responseBytes: number;
  /** When the entry may be purged. */
  readonly expiresAt: Date;
}

/** Filters of a log query; every one given must match. */
export interface LogQuery {
  readonly from?: Date;
  readonly to?: Date;
  readonly apiKeyId?: string;
  readonly instance?: string;
  readonly service?: string;
  readonly entity?: string;
  readonly operation?: string;
  readonly method?: string;
  /** A status range `[gte, lt)`: one status, or a class such as 400..500. */
  readonly status?: { readonly gte: number; readonly lt: number };
  readonly requestId?: string;
  /** Entries older than this id (the previous page's last). */
  readonly beforeId?: string;
  readonly limit: number;
}

/**
 * The request_logs collection and its indexes. On MongoDB every filter of
 * the admin API has one. The embedded store keeps only what the listing
 * (newest first, paged by id: nedb's own `_id` index), the cap (`_id`) and
 * the retention purge (`expiresAt`) use: nedb keeps every index in memory
 * and updates it on every insert and removal, and under the cap every entry
 * is removed again. An index on a field with few values (keys, instances,
 * statuses) is the worst: nedb keeps one array of documents per value and
 * filters all of it to remove one document (removing the oldest 500 of
 * 200,000 entries took 9.4 s with them). A filter without an index reads
 * every entry, some 10-15 ms at the default cap of 50,000; nedb sorts every
 * candidate of a sorted query anyway (bench/README.md).
 * (The embedded store now keeps its request log in a capped log of its own,
 * ./memory-request-log.ts; this collection there only serves the tests that
 * compare the two, and the one-time migration reads an old file without it.)
 */
export const requestLogsCollection: CollectionSpec = {
  name: "request_logs",
  indexes: [
    plainIndex("request_logs", "timestamp", ["mongodb"]),
    plainIndex("request_logs", "apiKeyId", ["mongodb"]),
    plainIndex("request_logs", "instance", ["mongodb"]),
    plainIndex("request_logs", "requestId", ["mongodb"]),
    plainIndex("request_logs", "status", ["mongodb"]),
    plainIndex("request_logs", "expiresAt"),
  ],
};

/** Most entries {@link RequestLogStore.trim} removes in one store operation (nedb holds the event loop while it removes). */
const TRIM_CHUNK = 5_000;

function toDoc(r: RequestLogRecord): Document {
  const { id, accesses, ...rest } = r;
  return {
    _id: id,
    ...rest,
    accesses: accesses.map((a) => ({ entity: a.entity, operation: a.operation })),
    // "entity|operation" per access, so that both filters together match one
    // access by plain equality ($elemMatch is not available everywhere).
    accessKeys: accesses.map((a) => `${a.entity}|${a.operation}`),
  };
}

function fromDoc(d: Document): RequestLogRecord {
  return {
    id: d._id,
    requestId: d.requestId as string,
    timestamp: decodeDate(d.timestamp),
    apiKeyId: d.apiKeyId as string,
    method: d.method as string,
    path: d.path as string,
    status: d.status as number,
    durationMs: d.durationMs as number,
    instance: d.instance as string,
    service: d.service as string,
    accesses: (d.accesses as { entity: string; operation: string }[] | undefined) ?? [],
    denialStep: d.denialStep as string,
    errorCode: d.errorCode as string,
    upstreamStatus: d.upstreamStatus as number,
    upstreamDurationMs: d.upstreamDurationMs as number,
    clientIp: d.clientIp as string,
    userAgent: d.userAgent as string,
    // Absent in entries written before these fields existed.
    upstreamMethod: (d.upstreamMethod as string | undefined) ?? "",
    upstreamUrl: (d.upstreamUrl as string | undefined) ?? "",
    sessionId: (d.sessionId as string | undefined) ?? "",
    errorMessage: (d.errorMessage as string | undefined) ?? "",
    responseBytes: (d.responseBytes as number | undefined) ?? 0,
    expiresAt: decodeDate(d.expiresAt),
  };
}

/**
 * Storage port of the request log, as its callers (the writer, the log
 * service, the purge) use it. Two implementations: {@link RequestLogStore}
 * over a document collection (MongoDB), and the embedded store's capped
 * in-memory log (`./memory-request-log.ts`).
 */
export interface RequestLogPort {
  /** Writes a batch of entries (ids are new; normally ascending). */
  append(records: readonly RequestLogRecord[]): Promise<void>;
  /** The entry with this id, or undefined. */
  get(id: string): Promise<RequestLogRecord | undefined>;
  /** Matching entries, newest (highest id) first, at most `limit`; `more` when others match. */
  query(q: LogQuery): Promise<Page<RequestLogRecord>>;
  /** Removes the entries whose `expiresAt` is before `now`; returns how many. */
  purge(now: Date): Promise<number>;
  /**
   * Keeps at most `maxEntries`, removing the oldest (by id) beyond;
   * returns how many went (for a log that caps itself as it is written,
   * those its own cap removed since the last call too) and how many remain.
   * `chunk`: most removed per store operation, where that matters.
   */
  trim(maxEntries: number, chunk?: number): Promise<{ removed: number; remaining: number }>;
}

/** The request log over a document collection (MongoDB; nedb before the capped log). */
export class RequestLogStore implements RequestLogPort {
  constructor(private readonly collection: DocumentCollection) {}

  /** Writes a batch of entries. */
  append(records: readonly RequestLogRecord[]): Promise<void> {
    return this.collection.insertMany(records.map(toDoc));
  }

  async get(id: string): Promise<RequestLogRecord | undefined> {
    const doc = await this.collection.get(id);
    return doc === undefined ? undefined : fromDoc(doc);
  }

  /** Matching entries, newest first. */
  async query(q: LogQuery): Promise<Page<RequestLogRecord>> {
    const where: Record<string, string> = {};
    const add = (field: string, value: string | undefined) => {
      if (value !== undefined) where[field] = value;
    };
    add("apiKeyId", q.apiKeyId);
    add("instance", q.instance);
    add("service", q.service);
    // Entity and operation together must hold in one access, not in two.
    const both = q.entity !== undefined && q.operation !== undefined;
    if (both) {
      add("accessKeys", `${q.entity}|${q.operation}`);
    } else {
      add("accesses.entity", q.entity);
      add("accesses.operation", q.operation);
    }
    add("method", q.method);
    add("requestId", q.requestId);
    const ranges = [];
    if (q.from !== undefined || q.to !== undefined) ranges.push({ field: "timestamp", gte: q.from, lt: q.to });
    if (q.status !== undefined) ranges.push({ field: "status", gte: q.status.gte, lt: q.status.lt });
    // One extra entry tells whether another page follows.
    const docs = await this.collection.findNewest({
      where: where as Where,
      ranges,
      beforeId: q.beforeId,
      limit: q.limit + 1,
    });
    return { items: docs.slice(0, q.limit).map(fromDoc), more: docs.length > q.limit };
  }

  /** Removes entries past their retention. */
  purge(now: Date): Promise<number> {
    return this.collection.deleteBefore("expiresAt", now);
  }

  /**
   * Removes the oldest entries (by id, which is by time) until at most
   * `maxEntries` remain, at most `chunk` per store operation with the event
   * loop free between them; returns how many it removed and how many remain.
   */
  async trim(maxEntries: number, chunk = TRIM_CHUNK): Promise<{ removed: number; remaining: number }> {
    let removed = 0;
    for (;;) {
      const step = await this.collection.keepNewest(maxEntries, chunk);
      removed += step.removed;
      if (step.removed < chunk) return { removed, remaining: step.remaining };
      await new Promise((r) => setImmediate(r));
    }
  }
}

/** An entry as a document stores it (also how the embedded store's capped log migrates an old nedb file). */
export { fromDoc as requestLogFromDoc };

/** Opens the request log on a backend. */
export async function openRequestLogStore(backend: StoreBackend): Promise<RequestLogStore> {
  return new RequestLogStore(await backend.collection(requestLogsCollection));
}
