/**
 * The API keys aggregate. A key is found by the SHA-256 hash of its secret;
 * the secret itself is never stored.
 */
import {
  AggregateStore,
  decodeDate,
  encodeFields,
  type BaseRecord,
  type Codec,
  type Page,
  type PageRequest,
} from "./aggregate.js";
import { uniqueIndex, type CollectionSpec, type StoreBackend } from "./collection.js";

/** Operations a grant may list. */
export type StoredOperation = "list" | "get" | "create" | "update" | "delete";

/** instance -> service or "*" -> entity or "*" -> operations. */
export type StoredPermissions = Readonly<Record<string, Readonly<Record<string, Readonly<Record<string, readonly StoredOperation[]>>>>>>;

/** A stored API key. */
export interface ApiKeyRecord extends BaseRecord {
  readonly name: string;
  readonly type: "data" | "admin";
  /** Hex SHA-256 of the secret; unique. */
  readonly keyHash: string;
  /** The first characters of the secret, safe to show. */
  readonly prefix: string;
  readonly permissions: StoredPermissions;
  readonly rateLimits: { readonly perMinute?: number; readonly perDay?: number };
  readonly expiresAt?: Date;
  readonly lastUsedAt?: Date;
}

/** The api_keys collection and its indexes. */
export const apiKeysCollection: CollectionSpec = {
  name: "api_keys",
  indexes: [uniqueIndex("api_keys", "keyHash")],
};

interface StoredGrant {
  i: string;
  s: string;
  e: string;
  o: StoredOperation[];
}

// Permission names may contain `.` (instance names do), which document field
// names may not: grants are stored as a flat list.
function encodePermissions(permissions: StoredPermissions): StoredGrant[] {
  const grants: StoredGrant[] = [];
  for (const [i, services] of Object.entries(permissions)) {
    if (Object.keys(services).length === 0) grants.push({ i, s: "", e: "", o: [] });
    for (const [s, entities] of Object.entries(services)) {
      if (Object.keys(entities).length === 0) grants.push({ i, s, e: "", o: [] });
      for (const [e, o] of Object.entries(entities)) grants.push({ i, s, e, o: [...o] });
    }
  }
  return grants;
}

function decodePermissions(value: unknown): StoredPermissions {
  const permissions: Record<string, Record<string, Record<string, StoredOperation[]>>> = Object.create(null);
  if (!Array.isArray(value)) return permissions;
  for (const { i, s, e, o } of value as StoredGrant[]) {
    const services = (permissions[i] ??= Object.create(null) as Record<string, Record<string, StoredOperation[]>>);
    if (s === "") continue;
    const entities = (services[s] ??= Object.create(null) as Record<string, StoredOperation[]>);
    if (e === "") continue;
    entities[e] = o;
  }
  return permissions;
}

const codec: Codec<ApiKeyRecord> = {
  toDoc: (fields) => encodeFields(fields, { permissions: encodePermissions }),
  fromDoc: (doc) => {
    const limits = (doc.rateLimits ?? {}) as { perMinute?: number; perDay?: number };
    return {
      id: doc._id,
      name: doc.name as string,
      type: doc.type as "data" | "admin",
      keyHash: doc.keyHash as string,
      prefix: doc.prefix as string,
      permissions: decodePermissions(doc.permissions),
      rateLimits: {
        ...(limits.perMinute !== undefined ? { perMinute: limits.perMinute } : {}),
        ...(limits.perDay !== undefined ? { perDay: limits.perDay } : {}),
      },
      ...(doc.expiresAt ? { expiresAt: decodeDate(doc.expiresAt) } : {}),
      ...(doc.lastUsedAt ? { lastUsedAt: decodeDate(doc.lastUsedAt) } : {}),
      createdAt: decodeDate(doc.createdAt),
      updatedAt: decodeDate(doc.updatedAt),
    };
  },
};

/** Storage port of API keys. */
export class ApiKeyStore extends AggregateStore<ApiKeyRecord> {
  /** Keys in id (creation) order. */
  list(request: PageRequest): Promise<Page<ApiKeyRecord>> {
    return this.page({}, request);
  }

  /** The key whose secret hashes to `keyHash`, if any. */
  async getByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    const doc = await this.collection.findOne({ keyHash });
    return doc === undefined ? undefined : this.codec.fromDoc(doc);
  }
}

/** Opens the API keys store on a backend. */
export async function openApiKeyStore(backend: StoreBackend): Promise<ApiKeyStore> {
  return new ApiKeyStore(apiKeysCollection.name, await backend.collection(apiKeysCollection), codec);
}
