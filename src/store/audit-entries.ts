/**
 * The audit trail: one document per administrative change, written before
 * the change (`pending`), marked `applied` after it, removed if the change
 * was refused. Queried newest first by time-ordered id; purged only by its
 * own retention, never by the request log's.
 */
import { decodeDate, type Page } from "./aggregate.js";
import { plainIndex, type CollectionSpec, type Document, type DocumentCollection, type StoreBackend, type Where } from "./collection.js";
import { NotFoundError } from "./errors.js";

/** A JSON value, as snapshots and changes hold them. */
export type AuditJson = null | boolean | number | string | readonly AuditJson[] | { readonly [key: string]: AuditJson };

/** One field a change set, changed or removed. */
export interface AuditChangeRecord {
  /** The field's name, then the map keys it lies under. */
  readonly path: readonly string[];
  /** null where the field was not set. */
  readonly before: AuditJson;
  /** null where the field is no longer set. */
  readonly after: AuditJson;
}

/** Whether the change an entry describes was confirmed. */
export type AuditState = "pending" | "applied";

/** A stored audit entry. Snapshots and changes arrive already redacted. */
export interface AuditRecord {
  /** `aud_…`, time-ordered. */
  readonly id: string;
  readonly timestamp: Date;
  /** `master`, `key_…`, or `internal`. */
  readonly actor: string;
  /** `ses_…`, or "" for a call made with a token. */
  readonly sessionId: string;
  readonly action: string;
  readonly resourceType: string;
  readonly resourceId: string;
  readonly requestId: string;
  readonly state: AuditState;
  readonly before: AuditJson;
  readonly after: AuditJson;
  readonly changes: readonly AuditChangeRecord[];
}

/** Filters of an audit query; every one given must match. */
export interface AuditQuery {
  readonly from?: Date;
  readonly to?: Date;
  /** `master`, `internal` or a key id. */
  readonly actor?: string;
  readonly sessionId?: string;
  readonly resourceType?: string;
  readonly resourceId?: string;
  readonly action?: string;
  /** Entries older than this id (the previous page's last). */
  readonly beforeId?: string;
  readonly limit: number;
}

/** The audit_entries collection and its indexes. */
export const auditEntriesCollection: CollectionSpec = {
  name: "audit_entries",
  indexes: [
    plainIndex("audit_entries", "timestamp"),
    plainIndex("audit_entries", "actor"),
    plainIndex("audit_entries", "resourceId"),
  ],
};

// Snapshots hold user keys (labels, permission names) with `.` and `$`,
// which document field names may not: they are stored as JSON text.
function toDoc(r: AuditRecord): Document {
  const { id, before, after, changes, ...rest } = r;
  return { _id: id, ...rest, before: JSON.stringify(before), after: JSON.stringify(after), changes: JSON.stringify(changes) };
}

function fromDoc(d: Document): AuditRecord {
  return {
    id: d._id,
    timestamp: decodeDate(d.timestamp),
    actor: d.actor as string,
    sessionId: d.sessionId as string,
    action: d.action as string,
    resourceType: d.resourceType as string,
    resourceId: d.resourceId as string,
    requestId: d.requestId as string,
    state: d.state as AuditState,
    before: JSON.parse(d.before as string) as AuditJson,
    after: JSON.parse(d.after as string) as AuditJson,
    changes: JSON.parse(d.changes as string) as AuditChangeRecord[],
  };
}

/** Storage port of the audit trail. */
export class AuditStore {
  constructor(private readonly collection: DocumentCollection) {}

  /** Writes a new entry; throws DuplicateKeyError on a taken id. */
  async append(record: AuditRecord): Promise<void> {
    await this.collection.insert(toDoc(record));
  }

  /**
   * Marks an entry applied, with the resource as the change left it; returns
   * the entry. Throws NotFoundError if there is none.
   */
  async markApplied(id: string, result: { after: AuditJson; changes: readonly AuditChangeRecord[] }): Promise<AuditRecord> {
    const doc = await this.collection.update(id, {
      state: "applied",
      after: JSON.stringify(result.after),
      changes: JSON.stringify(result.changes),
    });
    if (doc === undefined) throw new NotFoundError(auditEntriesCollection.name, id);
    return fromDoc(doc);
  }

  /** Removes an entry (of a change that was not made); whether there was one. */
  async remove(id: string): Promise<boolean> {
    return (await this.collection.delete(id)) !== undefined;
  }

  async get(id: string): Promise<AuditRecord | undefined> {
    const doc = await this.collection.get(id);
    return doc === undefined ? undefined : fromDoc(doc);
  }

  /** Matching entries, newest first. */
  async query(q: AuditQuery): Promise<Page<AuditRecord>> {
    const where: Record<string, string> = {};
    const add = (field: string, value: string | undefined) => {
      if (value !== undefined) where[field] = value;
    };
    add("actor", q.actor);
    add("sessionId", q.sessionId);
    add("resourceType", q.resourceType);
    add("resourceId", q.resourceId);
    add("action", q.action);
    const ranges = q.from !== undefined || q.to !== undefined ? [{ field: "timestamp", gte: q.from, lt: q.to }] : [];
    // One extra entry tells whether another page follows.
    const docs = await this.collection.findNewest({ where: where as Where, ranges, beforeId: q.beforeId, limit: q.limit + 1 });
    return { items: docs.slice(0, q.limit).map(fromDoc), more: docs.length > q.limit };
  }

  /** Removes entries written before `cutoff` (the audit trail's own retention); returns how many. */
  purge(cutoff: Date): Promise<number> {
    return this.collection.deleteBefore("timestamp", cutoff);
  }
}

/** Opens the audit trail on a backend. */
export async function openAuditStore(backend: StoreBackend): Promise<AuditStore> {
  return new AuditStore(await backend.collection(auditEntriesCollection));
}
