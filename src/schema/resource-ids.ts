/**
 * The form of erplink's resource ids and page tokens, shared by the services
 * (which make and check them) and the gateway (which publishes their
 * patterns in the OpenAPI document); depends on nothing.
 *
 * An id is a type prefix, `_`, then 26 characters of Crockford base32. A
 * page token is the hex encoding of `v1:` and the id of the last item of the
 * previous page, so that a token's pattern is exact: every string it matches
 * is a token the list can continue from.
 */

/** The prefixes of erplink's resource ids. */
export type IdPrefix = "sys" | "ins" | "key" | "log" | "ses" | "aud";

/** The 32 characters of an id after its prefix (Crockford's base32). */
export const ID_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** Characters of an id after `<prefix>_`. */
export const ID_BODY_LENGTH = 26;

/** The alphabet as a character class. */
const ID_CLASS = "[0-9A-HJKMNP-TV-Z]";

/** The ECMAScript pattern (anchored) of the ids of one type: `^sys_[0-9A-HJKMNP-TV-Z]{26}$`. */
export function idPattern(prefix: IdPrefix): string {
  return `^${prefix}_${ID_CLASS}{${ID_BODY_LENGTH}}$`;
}

/** What a page token encodes before the id. */
const TOKEN_PREFIX = "v1:";

const hex = (s: string) => Buffer.from(s, "latin1").toString("hex");

/** The page token that continues a list after the item `id`. */
export function pageTokenOf(id: string): string {
  return hex(TOKEN_PREFIX + id);
}

/** The id a well-formed page token continues after (of any type), or undefined. */
export function idOfPageToken(token: string): string | undefined {
  if (!/^(?:[0-9a-f]{2})+$/.test(token)) return undefined;
  const decoded = Buffer.from(token, "hex").toString("latin1");
  return decoded.startsWith(TOKEN_PREFIX) ? decoded.slice(TOKEN_PREFIX.length) : undefined;
}

/**
 * The ECMAScript pattern (anchored) of the page tokens of a list of one
 * type: every string it matches is a token that list accepts.
 */
export function pageTokenPattern(prefix: IdPrefix): string {
  // Each character of the alphabet as two lower-case hex digits.
  const byChar = "(?:3[0-9]|4[1-8abde]|5[0-46-9a])";
  return `^${hex(`${TOKEN_PREFIX}${prefix}_`)}${byChar}{${ID_BODY_LENGTH}}$`;
}
