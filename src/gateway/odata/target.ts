/**
 * The canonical form of a request target below a service root, and erplink's
 * own strict encoder for it. The analyzer decodes the client's path and query
 * exactly once into a {@link Target}; what the back end receives is written
 * from that structure by {@link serializeTarget}, never copied from the
 * client's bytes, so that no parser downstream (the forwarder's URL parser,
 * a proxy, the back end) can read it as anything but what was authorized.
 *
 * The encoder is strict in both directions:
 * - **Data is encoded.** Inside a quoted literal (`'…'`, doubled quotes `''`
 *   kept as they are) every character but the RFC 3986 unreserved ones is
 *   percent-encoded (UTF-8), so a `;`, `&`, `+` or space in a key value is
 *   data to every parser. The path's own delimiters (`/`, `\`, `#`, `?`) are
 *   refused even there, encoded or not: a back end that decodes the whole
 *   path before reading it would take them for structure; so is `%`, which a
 *   back end that decodes twice would decode again. In query values,
 *   everything but the unreserved characters and `$ ( ) , / : @ * !` is
 *   encoded (`'`, `=`, `&`, `;`, `+`, space and `#` included), so no back end
 *   that splits the query before decoding it can split, join or end a value
 *   where erplink did not; and for back ends that decode first (SAP CAP), an
 *   `&` in a value is refused unless it is inside a quoted literal of an
 *   expression (`$filter=Name eq 'AT&T'`).
 * - **Structure must be plain.** Outside literals a path segment may hold
 *   only OData's own syntax: letters, digits and `- . _ ~ ( ) , = : @ $ +`;
 *   non-ASCII letters are UTF-8 encoded. Anything else there (a `\`, `#`,
 *   `?`, `/`, `%`, `;`, `&`, `"`, brackets, control characters, spaces: a
 *   back end that trims a segment would read `%20$entity` as `$entity`)
 *   cannot be represented unambiguously and is refused, as are
 *   empty and dot segments. Query option names must be plain tokens
 *   (`[$]name`, `@alias`, `sap-language`).
 *
 * Pure: no I/O. Refusals are thrown as `Refusal` (`invalid`, from `./syntax.ts`).
 */
import { excerpt, invalid, skipSingleQuoted } from "./syntax.js";

/** One query option as forwarded: its name as written upstream and its decoded value. */
export interface QueryOption {
  /** `$filter` (system options in canonical spelling), `@p` (aliases), or a custom option's name. */
  readonly name: string;
  /** The decoded value; undefined when the option had no `=` (a custom flag such as `sap-statistics`). */
  readonly value: string | undefined;
}

/** A request target below a service root, decoded. */
export interface Target {
  /** The resource path's segments, each decoded once; empty for the service root. */
  readonly segments: readonly string[];
  /** The query options in the client's order, names canonical, values decoded. */
  readonly query: readonly QueryOption[];
}

// RFC 3986 unreserved characters: never encoded anywhere.
const UNRESERVED = /[A-Za-z0-9\-._~]/;
// Outside literals in a path segment: OData's syntax characters, written raw.
const PATH_STRUCTURE = /[A-Za-z0-9\-._~(),=:@$+]/;
// In query values: unreserved plus characters no parser reads as a delimiter of
// the query itself (the WHATWG URL parser leaves them alone too).
const QUERY_VALUE_RAW = /[A-Za-z0-9\-._~$(),/:@*!]/;
// Letters, marks and digits beyond ASCII: identifiers may hold them (encoded).
const NON_ASCII_NAME = /[\p{L}\p{Nl}\p{Nd}\p{Mn}\p{Mc}\p{Pc}\p{Cf}]/u;
/** A format character (Cf) first or last in a segment: invisible, and trimmed by some readers. */
const EDGE_FORMAT = /^\p{Cf}|\p{Cf}$/u;

/** A system option, alias or custom option name as it may be forwarded. */
export const OPTION_NAME = /^(?:\$?[A-Za-z_][A-Za-z0-9_.-]{0,127}|@[A-Za-z_][A-Za-z0-9_]{0,127})$/;

const encoder = new TextEncoder();

// `%XX` of every ASCII character, computed once: most characters encoded are ASCII.
const ASCII_ENCODED = Array.from({ length: 128 }, (_, c) => `%${c.toString(16).toUpperCase().padStart(2, "0")}`);

/** `ch` as UTF-8 percent-encoding; a lone surrogate (not Unicode) is refused rather than replaced. */
function percentEncode(ch: string): string {
  const cp = ch.codePointAt(0)!;
  if (cp < 0x80) return ASCII_ENCODED[cp]!;
  if (cp >= 0xd800 && cp <= 0xdfff) invalid("the request holds a lone surrogate, which is not Unicode");
  let out = "";
  for (const byte of encoder.encode(ch)) out += `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  return out;
}

/** Names a character for a refusal message: `'#'`, or `U+0000` for invisible ones. */
function describe(ch: string): string {
  const cp = ch.codePointAt(0)!;
  return cp <= 0x20 || (cp >= 0x7f && cp <= 0xa0) || /\p{Z}|\p{Cf}/u.test(ch)
    ? `U+${cp.toString(16).toUpperCase().padStart(4, "0")}`
    : `'${ch}'`;
}

/**
 * Encodes one decoded path segment (see the module comment). Throws
 * `Refusal` (invalid) for what cannot be represented unambiguously.
 */
export function encodeSegment(segment: string): string {
  if (segment === "") invalid("empty path segment");
  if (segment === "." || segment === "..") invalid("dot segments are not allowed in the path");
  // An invisible format character (a byte-order mark, a zero-width space) at
  // either end of a segment: a back end that trims segments (JavaScript's
  // trim() drops U+FEFF) would read another segment, e.g. a key-as-segment
  // '\uFEFF$crossjoin' as `$crossjoin`.
  const edge = EDGE_FORMAT.exec(segment);
  if (edge !== null) {
    invalid(`character ${describe(edge[0])} is not allowed at either end of path segment '${excerpt(segment)}'`);
  }
  let out = "";
  for (let i = 0; i < segment.length; ) {
    const ch = String.fromCodePoint(segment.codePointAt(i)!);
    if (ch === "'") {
      const end = skipSingleQuoted(segment, i);
      if (end < 0) invalid(`unterminated string literal in path segment '${excerpt(segment)}'`);
      out += `'${encodeLiteral(segment.slice(i + 1, end - 1), segment)}'`;
      i = end;
      continue;
    }
    if (PATH_STRUCTURE.test(ch)) out += ch;
    else if (ch.codePointAt(0)! > 0x7f && NON_ASCII_NAME.test(ch)) out += percentEncode(ch);
    else {
      invalid(
        `character ${describe(ch)} is not allowed in path segment '${excerpt(segment)}' outside a quoted literal` +
          (ch === '"' ? " (pass JSON values as parameter aliases)" : ""),
      );
    }
    i += ch.length;
  }
  return out;
}

// Delimiters of a URL's path: even encoded inside a literal, a back end that
// decodes the path before reading it would take them for structure. And `%`:
// a back end that decodes twice would decode what follows it again.
const PATH_DELIMITERS = /[/\\#?%]/;

/**
 * The inside of a single-quoted literal: `''` stays, everything else but
 * unreserved characters is encoded; a path delimiter is refused.
 */
function encodeLiteral(inner: string, segment: string): string {
  let out = "";
  for (let i = 0; i < inner.length; ) {
    if (inner[i] === "'") {
      // Only doubled quotes remain inside a literal skipSingleQuoted accepted.
      out += "''";
      i += 2;
      continue;
    }
    const ch = String.fromCodePoint(inner.codePointAt(i)!);
    if (PATH_DELIMITERS.test(ch)) {
      invalid(
        `character ${describe(ch)} in a quoted literal of path segment '${excerpt(segment)}' cannot be forwarded unambiguously ` +
          `(${ch === "%" ? "a back end that decodes the path twice would decode what follows it" : "a back end that decodes the path first would read it as structure"}): ` +
          "select by it with $filter instead",
      );
    }
    out += UNRESERVED.test(ch) ? ch : percentEncode(ch);
    i += ch.length;
  }
  return out;
}

/** Encodes a decoded query value (see the module comment). */
export function encodeQueryValue(value: string): string {
  let out = "";
  for (let i = 0; i < value.length; ) {
    const ch = String.fromCodePoint(value.codePointAt(i)!);
    out += QUERY_VALUE_RAW.test(ch) ? ch : percentEncode(ch);
    i += ch.length;
  }
  return out;
}

/** The encoded resource path (no leading `/`) of decoded segments. */
export function serializePath(segments: readonly string[]): string {
  return segments.map(encodeSegment).join("/");
}

/** The encoded query string (no `?`) of query options. */
export function serializeQuery(query: readonly QueryOption[]): string {
  return query
    .map((o) => {
      if (!OPTION_NAME.test(o.name)) invalid(`query option name '${excerpt(o.name)}' is not a plain token`);
      if (o.value !== undefined) checkSeparators(o.name, o.value);
      return o.value === undefined ? o.name : `${o.name}=${encodeQueryValue(o.value)}`;
    })
    .join("&");
}

/** Options whose values back ends parse as expressions, where a quoted literal keeps an `&` as data. */
const EXPRESSION_OPTIONS = new Set(["$filter", "$orderby", "$expand", "$select", "$compute"]);

/** Options whose values hold nested options, separated by `;` (`$expand=Items($top=1;$select=ID)`). */
const NESTING_OPTIONS = new Set(["$expand", "$select"]);

/**
 * Refuses what a back end that decodes the whole query before splitting it
 * (SAP CAP's `cds.odata.parse` does) would read as structure where erplink
 * reads data. CAP's grammar keeps an `&` inside a single-quoted literal of an
 * expression as data, but its tokens for JSON objects, lists and double-
 * quoted strings (`{…}`, `[…]`, `"…"`) end without regard to single quotes,
 * and its nested `$search` ends at the first `;` or `)`. So:
 * - an `&` is refused anywhere, but inside a single-quoted literal of an
 *   expression option whose value holds no `{`, `[` or `"`;
 * - in `$expand` and `$select`, a `;`, `(` or `)` inside a single-quoted
 *   literal is refused, and any `;` when the value holds `{`, `[` or `"`.
 */
function checkSeparators(name: string, value: string): void {
  if (!/[&;()]/.test(value)) return;
  const refuse = (ch: string, where: string): never =>
    invalid(
      `query option '${excerpt(name)}' holds '${ch}' ${where}: a back end that decodes the query before splitting it (SAP CAP does) ` +
        "would read another option there",
    );
  const opaque = /[{["]/.test(value);
  const expression = EXPRESSION_OPTIONS.has(name);
  const nesting = NESTING_OPTIONS.has(name);
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (c === "'" && expression && !opaque) {
      const end = skipSingleQuoted(value, i);
      if (end < 0) refuse("'", "in an unterminated literal");
      if (nesting) {
        const inside = /[;()]/.exec(value.slice(i + 1, end - 1));
        if (inside) refuse(inside[0], "inside a quoted literal of nested options");
      }
      i = end - 1;
      continue;
    }
    if (c === "&") refuse("&", expression ? (opaque ? "beside JSON, a list or a double-quoted string" : "outside a quoted literal") : "in its value");
    if (c === ";" && nesting && opaque) refuse(";", "beside JSON, a list or a double-quoted string");
  }
}

/**
 * The request target relative to the service root, as erplink forwards it:
 * `A_Currency('EUR')?$select=Currency` (`""` for the service root, which the
 * caller writes as `<root>/`).
 */
export function serializeTarget(target: Target): string {
  const query = serializeQuery(target.query);
  return `${serializePath(target.segments)}${query === "" ? "" : `?${query}`}`;
}

/** Whether two targets are the same, segment for segment and option for option. */
export function sameTarget(a: Target, b: Target): boolean {
  return (
    a.segments.length === b.segments.length &&
    a.segments.every((s, i) => s === b.segments[i]) &&
    a.query.length === b.query.length &&
    a.query.every((o, i) => o.name === b.query[i]!.name && o.value === b.query[i]!.value)
  );
}
