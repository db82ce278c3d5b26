/**
 * The sessions aggregate: dashboard and script sessions, found by the
 * SHA-256 hash of their token (the token itself is never stored). A revoked
 * session is deleted; other processes notice at their next re-read (see
 * src/services/session-registry.ts). Sessions past their absolute expiry
 * are purged.
 */
import { AggregateStore, decodeDate, encodeFields, type BaseRecord, type Codec } from "./aggregate.js";
import { plainIndex, uniqueIndex, type CollectionSpec, type StoreBackend } from "./collection.js";

/** A stored session. */
export interface SessionRecord extends BaseRecord {
  readonly label: string;
  /** `master`, or the id of the admin key the session acts for. */
  readonly actsFor: string;
  /** Hex SHA-256 of the token; unique. */
  readonly tokenHash: string;
  /**
   * Admin-key sessions: the hash of the key's secret, to find the key in the
   * key cache on every use (the session dies with the key). Master sessions:
   * a fingerprint of the master key (an HMAC keyed by it), so that the
   * session dies when the master key changes.
   */
  readonly principalHash: string;
  /** Created in browser mode (with cookies). */
  readonly cookie: boolean;
  readonly lastUsedAt: Date;
  /** The absolute expiry. */
  readonly expiresAt: Date;
}

/** The sessions collection and its indexes. */
export const sessionsCollection: CollectionSpec = {
  name: "sessions",
  indexes: [uniqueIndex("sessions", "tokenHash"), plainIndex("sessions", "actsFor"), plainIndex("sessions", "expiresAt")],
};

const codec: Codec<SessionRecord> = {
  toDoc: (fields) => encodeFields(fields),
  fromDoc: (doc) => ({
    id: doc._id,
    label: (doc.label as string | undefined) ?? "",
    actsFor: doc.actsFor as string,
    tokenHash: doc.tokenHash as string,
    principalHash: doc.principalHash as string,
    cookie: doc.cookie === true,
    lastUsedAt: decodeDate(doc.lastUsedAt),
    expiresAt: decodeDate(doc.expiresAt),
    createdAt: decodeDate(doc.createdAt),
    updatedAt: decodeDate(doc.updatedAt),
  }),
};

/** A page of sessions, newest first. */
export interface SessionPage {
  readonly items: SessionRecord[];
  readonly more: boolean;
}

/** Storage port of sessions. */
export class SessionStore extends AggregateStore<SessionRecord> {
  /** The session whose token hashes to `tokenHash`, if any. */
  async getByHash(tokenHash: string): Promise<SessionRecord | undefined> {
    const doc = await this.collection.findOne({ tokenHash });
    return doc === undefined ? undefined : this.codec.fromDoc(doc);
  }

  /**
   * Sessions newest first (by id), after `beforeId` if given, at most
   * `limit`; only those acting for `actsFor` when given, and only those
   * whose absolute expiry is after `now`.
   */
  async listNewest(options: { readonly actsFor?: string; readonly beforeId?: string; readonly limit: number; readonly now: Date }): Promise<SessionPage> {
    const docs = await this.collection.findNewest({
      where: options.actsFor === undefined ? {} : { actsFor: options.actsFor },
      ranges: [{ field: "expiresAt", gte: new Date(options.now.getTime() + 1) }],
      ...(options.beforeId !== undefined ? { beforeId: options.beforeId } : {}),
      limit: options.limit + 1,
    });
    return { items: docs.slice(0, options.limit).map((d) => this.codec.fromDoc(d)), more: docs.length > options.limit };
  }

  /** Removes the sessions whose absolute expiry is before `now`; returns how many. */
  purge(now: Date): Promise<number> {
    return this.collection.deleteBefore("expiresAt", now);
  }
}

/** Opens the sessions store on a backend. */
export async function openSessionStore(backend: StoreBackend): Promise<SessionStore> {
  return new SessionStore(sessionsCollection.name, await backend.collection(sessionsCollection), codec);
}
