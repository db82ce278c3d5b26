/**
 * The systems aggregate: ERP back ends, unique by name; and the marks of
 * their deletions in progress, which keep instances from being created in a
 * system while it is deleted (see DeleteSystem in
 * src/services/system-service.ts).
 */
import { randomUUID } from "node:crypto";
import {
  AggregateStore,
  decodeDate,
  decodeRevision,
  decodeLabels,
  encodeFields,
  encodeLabels,
  type RevisedRecord,
  type Codec,
  type Page,
  type PageRequest,
} from "./aggregate.js";
import { plainIndex, uniqueIndex, type CollectionSpec, type DocumentCollection, type StoreBackend } from "./collection.js";

/** A stored system. */
export interface SystemRecord extends RevisedRecord {
  readonly name: string;
  readonly description: string;
  readonly labels: Readonly<Record<string, string>>;
}

/** The systems collection and its indexes. */
export const systemsCollection: CollectionSpec = {
  name: "systems",
  indexes: [uniqueIndex("systems", "name")],
};

const codec: Codec<SystemRecord> = {
  toDoc: (fields) => encodeFields(fields, { labels: encodeLabels }),
  fromDoc: (doc) => ({
    id: doc._id,
    name: doc.name as string,
    description: (doc.description as string | undefined) ?? "",
    labels: decodeLabels(doc.labels),
    createdAt: decodeDate(doc.createdAt),
    updatedAt: decodeDate(doc.updatedAt),
    ...decodeRevision(doc),
  }),
};

/**
 * Deletions of systems in progress: one document per deleting call
 * (`{_id: <random>, systemId, startedAt}`), inserted before the call counts
 * the system's instances and removed when it is done. Each call has its own
 * document, so that the only writes are inserts and deletes of whole
 * documents: no compare-and-set, which FerretDB 1.x does not make atomic.
 */
export const systemDeletionsCollection: CollectionSpec = {
  name: "system_deletions",
  indexes: [plainIndex("system_deletions", "systemId")],
};

/** Storage port of systems. */
export class SystemStore extends AggregateStore<SystemRecord> {
  constructor(
    name: string,
    collection: DocumentCollection,
    codec: Codec<SystemRecord>,
    private readonly deletions: DocumentCollection,
  ) {
    super(name, collection, codec);
  }

  /** Systems in id (creation) order. */
  list(request: PageRequest): Promise<Page<SystemRecord>> {
    return this.page({}, request);
  }

  /** Marks a deletion of the system as started at `at`; returns the mark's id, for {@link endDeletion}. */
  async beginDeletion(systemId: string, at: Date): Promise<string> {
    const id = randomUUID();
    await this.deletions.insert({ _id: id, systemId, startedAt: at });
    return id;
  }

  /** Removes a deletion's mark; whether it was there. */
  async endDeletion(markId: string): Promise<boolean> {
    return (await this.deletions.delete(markId)) !== undefined;
  }

  /** Whether a deletion of the system started at or after `since` is marked (older marks are of calls that died). */
  async deletionInProgress(systemId: string, since: Date): Promise<boolean> {
    const marks = await this.deletions.findNewest({ where: { systemId }, ranges: [{ field: "startedAt", gte: since }], limit: 1 });
    return marks.length > 0;
  }

  /** Removes the system's deletion marks started before `before` (left by calls that died); returns how many. */
  async clearStaleDeletions(systemId: string, before: Date): Promise<number> {
    const stale = await this.deletions.findNewest({ where: { systemId }, ranges: [{ field: "startedAt", lt: before }], limit: 100 });
    let removed = 0;
    for (const mark of stale) if ((await this.deletions.delete(mark._id)) !== undefined) removed++;
    return removed;
  }
}

/** Opens the systems store (and its deletion marks) on a backend. */
export async function openSystemStore(backend: StoreBackend): Promise<SystemStore> {
  const [systems, deletions] = await Promise.all([backend.collection(systemsCollection), backend.collection(systemDeletionsCollection)]);
  return new SystemStore(systemsCollection.name, systems, codec, deletions);
}
