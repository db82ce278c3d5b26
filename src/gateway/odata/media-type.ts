/**
 * Media types as the OData authorizer reads them (RFC 9110 §8.3.1): strict,
 * so that erplink and a back end cannot read one `Content-Type` two ways
 * (a parameter given twice, a `charset` hidden in a quoted value).
 */
import { excerpt, invalid } from "./syntax.js";

/** An HTTP token (RFC 9110 §5.6.2). */
export const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** A parsed media type. */
export interface MediaType {
  /** `type/subtype`, lower case. */
  readonly type: string;
  /** Parameters by lower-case name, unquoted. */
  readonly params: ReadonlyMap<string, string>;
}

/** Parses a media type (RFC 9110 §8.3.1); refuses (invalid) anything malformed, naming it `what`. */
export function parseMediaType(value: string, what: string): MediaType {
  const bad: () => never = () => invalid(`${what} '${excerpt(value)}' is malformed`);
  const semi = value.indexOf(";");
  const type = (semi < 0 ? value : value.slice(0, semi)).trim().toLowerCase();
  const slash = type.indexOf("/");
  if (slash < 0 || !TOKEN.test(type.slice(0, slash)) || !TOKEN.test(type.slice(slash + 1))) bad();
  const params = new Map<string, string>();
  let i = semi < 0 ? value.length : semi;
  const skipSpace = () => {
    while (value[i] === " " || value[i] === "\t") i++;
  };
  while (i < value.length) {
    if (value[i] !== ";") bad();
    i++;
    skipSpace();
    if (i === value.length) break;
    const eq = value.indexOf("=", i);
    if (eq < 0) bad();
    const name = value.slice(i, eq).toLowerCase();
    if (!TOKEN.test(name)) bad();
    i = eq + 1;
    let v = "";
    if (value[i] === '"') {
      for (i++; ; i++) {
        if (i >= value.length) bad();
        if (value[i] === '"') break;
        if (value[i] === "\\") i++;
        if (i >= value.length) bad();
        v += value[i];
      }
      i++;
    } else {
      const start = i;
      while (i < value.length && value[i] !== ";" && value[i] !== " " && value[i] !== "\t") i++;
      v = value.slice(start, i);
      if (!TOKEN.test(v)) bad();
    }
    if (params.has(name)) invalid(`${what} gives parameter '${excerpt(name)}' twice`);
    params.set(name, v);
    skipSpace();
  }
  return { type, params };
}

/** A `charset` parameter, when given, must be UTF-8: back ends decode with the charset named (UTF-7 would turn `+ACI-` into a quote). */

/** Whether a media type (lower case, no parameters) is JSON: `application/json` or `application/*+json`. */
export function isJsonType(type: string): boolean {
  return type === "application/json" || (type.startsWith("application/") && type.endsWith("+json"));
}

/** Whether a `charset` value names UTF-8 (`utf-8`, or the common alias `utf8`, any case). */
export function isUtf8(charset: string): boolean {
  return /^utf-?8$/i.test(charset);
}

/**
 * UTF-8 as bodies are read: malformed bytes are an error, and a byte order
 * mark is kept (as U+FEFF), so that JSON behind one does not parse: back ends
 * disagree on whether the mark belongs to the text.
 */
export const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** What a body's first bytes say it is, whatever its `Content-Type`. */
export type Sniffed =
  /** A JSON object or array: back ends such as CAP read it as JSON whatever the type. */
  | "json"
  /**
   * JSON behind a UTF-8 byte order mark or whitespace JSON does not allow
   * (U+00A0, U+2028, U+3000, …): a back end that strips the mark or trims
   * as JavaScript does reads JSON; others do not.
   */
  | "json-behind-mark"
  /** An Atom entry or feed: a back end may read it as an entity with inline entries and links. */
  | "atom"
  | undefined;

const JSON_START = /^[[{]/;
const ATOM_START = /^(?:<\?xml[^>]{0,200}\?>[ \t\r\n]*)?(?:<!--[^]{0,500}?-->[ \t\r\n]*)*<(?:[A-Za-z_][\w.-]{0,63}:)?(?:entry|feed)[\s/>]/;

/**
 * Sniffs a body (as latin1 text, one character per byte), so that it is
 * analyzed as what a lenient back end would read it as, not only as what its
 * `Content-Type` says: past any amount of leading whitespace, as JavaScript's
 * `trim` reads it (a byte order mark and the Unicode spaces included), then
 * from the next kilobyte.
 */
export function sniffBody(text: string): Sniffed {
  return sniff((i) => (i < text.length ? text.charCodeAt(i) : -1), (from, to) => text.slice(from, to));
}

/** {@link sniffBody} of a buffer, without turning all of it into text. */
export function sniffBytes(body: Buffer): Sniffed {
  return sniff((i) => (i < body.length ? body[i]! : -1), (from, to) => body.subarray(from, to).toString("latin1"));
}

function sniff(byteAt: (i: number) => number, slice: (from: number, to: number) => string): Sniffed {
  let i = 0;
  let marked = false;
  for (;;) {
    const c = byteAt(i);
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) {
      i++;
      continue;
    }
    const n = unicodeSpaceAt(byteAt, i);
    if (n === 0) break;
    marked = true;
    i += n;
  }
  const head = slice(i, i + 1024);
  if (JSON_START.test(head)) return marked ? "json-behind-mark" : "json";
  if (ATOM_START.test(head)) return "atom";
  return undefined;
}

/**
 * Length in bytes of the UTF-8 encoding at `i` of whitespace JavaScript's
 * `trim` removes but JSON does not allow (U+000B, U+000C, U+00A0, U+1680,
 * U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000, U+FEFF), or 0.
 */
function unicodeSpaceAt(byteAt: (i: number) => number, i: number): number {
  const b0 = byteAt(i);
  if (b0 === 0x0b || b0 === 0x0c) return 1;
  if (b0 === 0xc2 && byteAt(i + 1) === 0xa0) return 2;
  if (b0 === 0xe1 && byteAt(i + 1) === 0x9a && byteAt(i + 2) === 0x80) return 3;
  if (b0 === 0xe2 && byteAt(i + 1) === 0x80) {
    const b2 = byteAt(i + 2);
    if ((b2 >= 0x80 && b2 <= 0x8a) || b2 === 0xa8 || b2 === 0xa9 || b2 === 0xaf) return 3;
  }
  if (b0 === 0xe2 && byteAt(i + 1) === 0x81 && byteAt(i + 2) === 0x9f) return 3;
  if (b0 === 0xe3 && byteAt(i + 1) === 0x80 && byteAt(i + 2) === 0x80) return 3;
  if (b0 === 0xef && byteAt(i + 1) === 0xbb && byteAt(i + 2) === 0xbf) return 3;
  return 0;
}
