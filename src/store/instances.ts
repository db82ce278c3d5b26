/**
 * The instances aggregate: deployments of a system, unique by name across
 * all systems.
 */
import {
  AggregateStore,
  decodeDate,
  decodeRevision,
  encodeFields,
  type RevisedRecord,
  type Codec,
  type Page,
  type PageRequest,
} from "./aggregate.js";
import { plainIndex, uniqueIndex, type CollectionSpec, type StoreBackend } from "./collection.js";

/** Back-end credentials as stored: non-secret fields in clear, secrets sealed together. */
export interface StoredBackendAuth {
  readonly type: "none" | "basic" | "bearer" | "oauth2_client_credentials";
  readonly username?: string;
  readonly tokenUrl?: string;
  readonly clientId?: string;
  readonly scope?: string;
  /** The secrets (JSON), encrypted by the services; the store never sees them in clear. */
  readonly sealed?: string;
}

/** A stored instance. */
export interface InstanceRecord extends RevisedRecord {
  readonly systemId: string;
  readonly name: string;
  readonly environment: string;
  readonly baseUrl: string;
  /** Service name -> path under `baseUrl`. */
  readonly services: Readonly<Record<string, { readonly path: string }>>;
  readonly auth?: StoredBackendAuth;
  /**
   * The SAP client (three digits) selected on every upstream request;
   * absent for none (never ""). Documents written before the field existed
   * read as absent.
   */
  readonly sapClient?: string;
  /** Most requests in flight to the back end; absent for the process default (never 0). */
  readonly upstreamConnections?: number;
}

/** The instances collection and its indexes. */
export const instancesCollection: CollectionSpec = {
  name: "instances",
  indexes: [uniqueIndex("instances", "name"), plainIndex("instances", "systemId")],
};

// Service names may contain `.`, which field names may not: stored as a list.
function encodeServices(services: InstanceRecord["services"]): { n: string; p: string }[] {
  return Object.entries(services).map(([n, { path }]) => ({ n, p: path }));
}

function decodeServices(value: unknown): Record<string, { path: string }> {
  // fromEntries defines own properties: a service named `__proto__` stays a name.
  return Array.isArray(value)
    ? Object.fromEntries((value as { n: string; p: string }[]).map(({ n, p }) => [n, { path: p }]))
    : {};
}

const codec: Codec<InstanceRecord> = {
  toDoc: (fields) => encodeFields(fields, { services: encodeServices }),
  fromDoc: (doc) => ({
    id: doc._id,
    systemId: doc.systemId as string,
    name: doc.name as string,
    environment: (doc.environment as string | undefined) ?? "",
    baseUrl: doc.baseUrl as string,
    services: decodeServices(doc.services),
    ...(doc.auth ? { auth: doc.auth as StoredBackendAuth } : {}),
    // Absent in older documents; null once cleared.
    ...(typeof doc.sapClient === "string" && doc.sapClient !== "" ? { sapClient: doc.sapClient } : {}),
    ...(typeof doc.upstreamConnections === "number" && doc.upstreamConnections > 0 ? { upstreamConnections: doc.upstreamConnections } : {}),
    createdAt: decodeDate(doc.createdAt),
    updatedAt: decodeDate(doc.updatedAt),
    ...decodeRevision(doc),
  }),
};

/** Storage port of instances. */
export class InstanceStore extends AggregateStore<InstanceRecord> {
  /** Instances in id (creation) order, of one system or of all. */
  list(request: PageRequest & { readonly systemId?: string }): Promise<Page<InstanceRecord>> {
    return this.page(request.systemId === undefined ? {} : { systemId: request.systemId }, request);
  }

  /** The instance with this name, if any. */
  async getByName(name: string): Promise<InstanceRecord | undefined> {
    const doc = await this.collection.findOne({ name });
    return doc === undefined ? undefined : this.codec.fromDoc(doc);
  }

  /** Whether any instance holds sealed back-end credentials (checked at start). */
  async hasSealedCredentials(): Promise<boolean> {
    let afterId: string | undefined;
    for (;;) {
      const page = await this.page({}, { afterId, limit: 500 });
      if (page.items.some((i) => i.auth?.sealed !== undefined)) return true;
      if (!page.more) return false;
      afterId = page.items[page.items.length - 1]!.id;
    }
  }

  /** How many instances a system has. */
  countBySystem(systemId: string): Promise<number> {
    return this.collection.count({ systemId });
  }
}

/** Opens the instances store on a backend. */
export async function openInstanceStore(backend: StoreBackend): Promise<InstanceStore> {
  return new InstanceStore(instancesCollection.name, await backend.collection(instancesCollection), codec);
}
