/**
 * Entity tags of the resources administrators change (systems, instances,
 * API keys): each stored document keeps a revision number that every
 * administrative change raises by one, and its etag is that number as a
 * strong HTTP entity tag (`"3"`), the same string in the resource's `etag`
 * field and in the REST facade's `ETag` header. The services make a write
 * conditional on it (`aborted` when it is stale); the REST facade also takes
 * it from `If-Match` (412 when it is stale).
 */

/** The name of the field that holds a resource's etag (AIP-154). */
export const ETAG_FIELD = "etag";

/**
 * Error metadata on an `aborted` error meaning "the resource's etag is not
 * the one the request expected"; its value is the resource's etag now. The
 * REST facade answers it as 412 `PRECONDITION_FAILED` rather than 409.
 */
export const ETAG_MISMATCH_METADATA = "erplink-etag-mismatch";

/** The etag of a resource at `revision`. */
export function formatEtag(revision: number): string {
  return `"${revision}"`;
}

const ETAG = /^"(0|[1-9][0-9]{0,14})"$/;

/** The revision an etag erplink gave names, or undefined for any other string. */
export function parseEtag(etag: string): number | undefined {
  const m = ETAG.exec(etag);
  return m === null ? undefined : Number(m[1]);
}

/** One entity tag of an `If-Match` list. */
export interface EntityTag {
  /** Whether it is a weak tag (`W/"…"`), which never matches in a strong comparison. */
  readonly weak: boolean;
  /** The tag with its quotes, without `W/`: `"3"`. */
  readonly tag: string;
}

/** An `If-Match` field value: `*`, or a list of entity tags. */
export type IfMatch = { readonly any: true } | { readonly any: false; readonly tags: readonly EntityTag[] };

// RFC 9110 §8.8.3: entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE, etagc = %x21 / %x23-7E / obs-text.
const LIST_ELEMENT = /[ \t]*(?:(W\/)?("[\x21\x23-\x7e\x80-\xff]*")[ \t]*)?(,|$)/y;

/**
 * Parses an `If-Match` field value (RFC 9110 §13.1.1): `*`, or a
 * comma-separated list of entity tags (empty elements allowed, as in every
 * list field). Undefined when it is neither.
 */
export function parseIfMatch(value: string): IfMatch | undefined {
  if (value.trim() === "*") return { any: true };
  const tags: EntityTag[] = [];
  LIST_ELEMENT.lastIndex = 0;
  while (LIST_ELEMENT.lastIndex < value.length) {
    const start = LIST_ELEMENT.lastIndex;
    const m = LIST_ELEMENT.exec(value);
    if (m === null) return undefined;
    if (m[2] !== undefined) tags.push({ weak: m[1] !== undefined, tag: m[2] });
    if (m[3] === "") break;
    if (LIST_ELEMENT.lastIndex === start) return undefined;
  }
  if (LIST_ELEMENT.lastIndex < value.length) return undefined;
  return tags.length === 0 ? undefined : { any: false, tags };
}

/**
 * How an etag a client sent reads in a message: as sent when it is a
 * well-formed entity tag, else escaped as in a JSON string (cut at 64
 * characters) and said not to be one.
 */
export function shownEtag(etag: string): string {
  if (/^(W\/)?"[\x21\x23-\x7e]{0,64}"$/.test(etag)) return etag;
  return `${JSON.stringify(etag.length > 64 ? `${etag.slice(0, 64)}…` : etag).slice(1, -1)} (not an etag erplink gave)`;
}
