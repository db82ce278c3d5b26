/**
 * Checks and conversions every resource service shares.
 */
import type { DescField, Message } from "@bufbuild/protobuf";
import { validationError } from "./errors.js";
import { isId, type IdPrefix } from "./ids.js";

const KIND: Record<IdPrefix, string> = { sys: "system", ins: "instance", key: "API key", log: "log", ses: "session", aud: "audit entry" };

/** Throws `invalid_argument` unless `id` is a well-formed id of the given type. */
export function requireId(prefix: IdPrefix, id: string, field = "id"): void {
  if (!isId(prefix, id)) {
    throw validationError([
      { field, description: id === "" ? "is required" : `is not a valid ${KIND[prefix]} id (${prefix}_…)` },
    ]);
  }
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
