/**
 * The systems aggregate: ERP back ends, unique by name.
 */
import {
  AggregateStore,
  decodeDate,
  decodeLabels,
  encodeFields,
  encodeLabels,
  type BaseRecord,
  type Codec,
  type Page,
  type PageRequest,
} from "./aggregate.js";
import { uniqueIndex, type CollectionSpec, type StoreBackend } from "./collection.js";

/** A stored system. */
export interface SystemRecord extends BaseRecord {
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
  }),
};

/** Storage port of systems. */
export class SystemStore extends AggregateStore<SystemRecord> {
  /** Systems in id (creation) order. */
  list(request: PageRequest): Promise<Page<SystemRecord>> {
    return this.page({}, request);
  }
}

/** Opens the systems store on a backend. */
export async function openSystemStore(backend: StoreBackend): Promise<SystemStore> {
  return new SystemStore(systemsCollection.name, await backend.collection(systemsCollection), codec);
}
