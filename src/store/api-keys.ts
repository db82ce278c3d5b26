/**
 * The API keys aggregate. A key is found by the SHA-256 hash of its secret;
 * the secret itself is never stored.
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
import { NotFoundError } from "./errors.js";

/** Operations a grant may list. */
export type StoredOperation = "list" | "get" | "create" | "update" | "delete" | "invoke";

/** instance -> service or "*" -> entity or "*" -> operations. */
export type StoredPermissions = Readonly<Record<string, Readonly<Record<string, Readonly<Record<string, readonly StoredOperation[]>>>>>>;

/** A stored API key. */
export interface ApiKeyRecord extends RevisedRecord {
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
  /** When the key was revoked; revoked keys are kept (so other processes learn of it) but never returned as active. */
  readonly revokedAt?: Date;
}

/** The api_keys collection and its indexes. */
export const apiKeysCollection: CollectionSpec = {
  name: "api_keys",
  indexes: [uniqueIndex("api_keys", "keyHash"), plainIndex("api_keys", "updatedAt")],
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
  toDoc: (fields) => {
    const doc = encodeFields(fields, { permissions: encodePermissions });
    // A plain flag, so that active keys can be found by equality.
    if ("revokedAt" in fields || "id" in fields) doc.revoked = fields.revokedAt !== undefined;
    return doc;
  },
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
      ...(doc.revokedAt ? { revokedAt: decodeDate(doc.revokedAt) } : {}),
      createdAt: decodeDate(doc.createdAt),
      updatedAt: decodeDate(doc.updatedAt),
      ...decodeRevision(doc),
    };
  },
};

/** Storage port of API keys. Revoked keys stay stored, marked, and are never returned as active. */
export class ApiKeyStore extends AggregateStore<ApiKeyRecord> {
  /** The active key with this id, if any. */
  override async get(id: string): Promise<ApiKeyRecord | undefined> {
    const rec = await super.get(id);
    return rec?.revokedAt === undefined ? rec : undefined;
  }

  /** The key with this id, revoked or not (a revoked key's `revokedAt` says so). */
  async getAny(id: string): Promise<ApiKeyRecord | undefined> {
    return super.get(id);
  }

  /** Active keys in id (creation) order; with `showRevoked`, revoked keys too, in the same order. */
  list(request: PageRequest, options: { readonly showRevoked?: boolean } = {}): Promise<Page<ApiKeyRecord>> {
    return this.page(options.showRevoked === true ? {} : { revoked: false }, request);
  }

  /**
   * The active key whose secret hashes to `keyHash`, if any; with
   * `includeRevoked`, a revoked one too (its `revokedAt` set), so that a
   * refused use can be attributed to it. Secrets are unique, so at most one
   * key matches.
   */
  async getByHash(keyHash: string, options: { readonly includeRevoked?: boolean } = {}): Promise<ApiKeyRecord | undefined> {
    const doc = await this.collection.findOne(options.includeRevoked === true ? { keyHash } : { keyHash, revoked: false });
    return doc === undefined ? undefined : this.codec.fromDoc(doc);
  }

  /** Removes the keys revoked before `cutoff` (the audit retention); returns how many. Keys in force are never removed. */
  purgeRevoked(cutoff: Date): Promise<number> {
    return this.collection.deleteBefore("revokedAt", cutoff);
  }

  /**
   * Revokes an active key (an administrative change: its revision goes up);
   * with `expected`, only if the key is at that revision. Returns it as it
   * was. Throws NotFoundError if there is none, RevisionMismatchError
   * (nothing changed) if it is at another revision.
   */
  async revoke(id: string, at: Date, expected?: number): Promise<ApiKeyRecord> {
    const current = await this.get(id);
    if (current === undefined) throw new NotFoundError(this.name, id);
    await this.revise(id, { revokedAt: at, updatedAt: at }, expected);
    return current;
  }

  /**
   * Keys (revoked ones included) changed at or after `from`, oldest change
   * first, at most `limit`: how other processes learn of changes.
   */
  async changedSince(from: Date, limit: number): Promise<ApiKeyRecord[]> {
    return (await this.collection.since("updatedAt", from, limit)).map((d) => this.codec.fromDoc(d));
  }
}

/** Opens the API keys store on a backend. */
export async function openApiKeyStore(backend: StoreBackend): Promise<ApiKeyStore> {
  return new ApiKeyStore(apiKeysCollection.name, await backend.collection(apiKeysCollection), codec);
}
