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
  /** JSON behind a UTF-8 byte order mark: some back ends strip the mark, others do not. */
  | "json-behind-bom"
  /** An Atom entry or feed: a back end may read it as an entity with inline entries and links. */
  | "atom"
  | undefined;

// A UTF-8 byte order mark, as latin1 text.
const BOM = "\u00ef\u00bb\u00bf";
const JSON_START = /^[ \t\r\n]*[[{]/;
const ATOM_START = /^[ \t\r\n]*(?:<\?xml[^>]{0,200}\?>[ \t\r\n]*)?(?:<!--[^]{0,500}?-->[ \t\r\n]*)*<(?:[A-Za-z_][\w.-]{0,63}:)?(?:entry|feed)[\s/>]/;

/**
 * Sniffs a body (as latin1 text, one character per byte), so that it is
 * analyzed as what a lenient back end would read it as, not only as what its
 * `Content-Type` says: past a byte order mark and any amount of leading
 * whitespace, then from the next kilobyte.
 */
export function sniffBody(text: string): Sniffed {
  const bom = text.startsWith(BOM);
  let i = bom ? BOM.length : 0;
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  return sniffHead(text.slice(i, i + 1024), bom);
}

/** {@link sniffBody} of a buffer, without turning all of it into text. */
export function sniffBytes(body: Buffer): Sniffed {
  const bom = body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf;
  let i = bom ? 3 : 0;
  while (i < body.length && isSpace(body[i]!)) i++;
  return sniffHead(body.subarray(i, i + 1024).toString("latin1"), bom);
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

function sniffHead(head: string, bom: boolean): Sniffed {
  if (JSON_START.test(head)) return bom ? "json-behind-bom" : "json";
  if (ATOM_START.test(head)) return "atom";
  return undefined;
}
