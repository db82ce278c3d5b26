/**
 * Checks and conversions every resource service shares.
 */
import type { DescField, Message } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { parseEtag } from "../schema/etag.js";
import { etagMismatch, validationError, type ResourceNames } from "./errors.js";
import { isId, type IdPrefix } from "./ids.js";

const KIND: Record<IdPrefix, string> = { sys: "system", ins: "instance", key: "API key", log: "log entry", ses: "session", aud: "audit entry" };

/** Longest part of an id a not-found message repeats. */
const SHOWN_ID_LENGTH = 100;

/**
 * The `not_found` error of a resource addressed by `id`, naming the id (as
 * a JSON string, so that any character of a malformed one reads plainly).
 */
export function notFound(prefix: IdPrefix, id: string): ConnectError {
  const shown = id.length > SHOWN_ID_LENGTH ? `${id.slice(0, SHOWN_ID_LENGTH)}…` : id;
  return new ConnectError(`${KIND[prefix]} ${JSON.stringify(shown)} not found`, Code.NotFound);
}

/**
 * Checks the id that addresses a resource (a Get, Update or Delete, or the
 * parent of a List or Create): `invalid_argument` when it is missing, and
 * `not_found` when it is not a well-formed id of the given type, since no
 * such resource can exist (REST: a malformed path id is a 404, like any
 * other id that names nothing). Ids inside resources and filters are checked
 * where they are read, and a malformed one there stays `invalid_argument`.
 */
export function requireId(prefix: IdPrefix, id: string, field = "id"): void {
  if (id === "") throw validationError([{ field, description: "is required" }]);
  if (!isId(prefix, id)) throw notFound(prefix, id);
}

/** Throws `invalid_argument` when a request lacks its resource message. */
export function requireResource<T>(resource: T | undefined, field: string): T {
  if (resource === undefined) throw validationError([{ field, description: "is required" }]);
  return resource;
}

/**
 * The record fields an update sets: each masked field's value, copied under
 * its camelCase name (records use the messages' local names).
 */
export function toPatch<R>(msg: Message, fields: readonly DescField[]): Partial<R> {
  const patch: Record<string, unknown> = {};
  for (const field of fields) {
    const value = (msg as unknown as Record<string, unknown>)[field.localName];
    patch[field.localName] = field.fieldKind === "map" ? { ...(value as object) } : value;
  }
  return patch as Partial<R>;
}

/**
 * The revision a write's etag condition expects of the resource `current`
 * (as just read): undefined for an empty etag (the write is unconditional),
 * else the revision the etag names. Throws `aborted` (see
 * {@link etagMismatch}) when that is not the resource's revision now, or
 * when the etag is not one erplink gave (it can match no revision). The
 * store checks the returned revision again in the write itself, atomically,
 * so a change made in between is refused too.
 */
export function expectedRevision(names: ResourceNames, etag: string, current: { readonly revision?: number }): number | undefined {
  if (etag === "") return undefined;
  const expected = parseEtag(etag);
  const revision = current.revision ?? 0;
  if (expected !== revision) throw etagMismatch(names, etag, revision);
  return expected;
}
