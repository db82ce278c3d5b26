/**
 * Primitive literals, as the OData ABNF writes them (URL conventions 4.01,
 * `primitiveLiteral`; V2's forms where the dialect is `2.0`): what a key
 * predicate, a function parameter or an expression operand may be. The
 * syntax pass only: a literal says what form it has (a quoted string, an
 * integer, a GUID, `datetime'…'`), never which EDM type it must fit; the
 * binding pass (`../bind/literal.ts`) checks that against `$metadata`.
 *
 * Nothing is read leniently. A prefix before a quote must be one of the
 * grammar's (`binary`, `duration`, `geography`, `geometry`; V2 `X`,
 * `datetime`, `datetimeoffset`, `time`, `guid`) or a qualified enumeration
 * type name (V4): any other (`aggregation'…'`) is not a literal, and back
 * ends that invent their own meaning for it (SAP CAP's V2 adapter reads
 * `aggregation'…'` as "drop the key and answer the set") never see it. A
 * typed literal holds no quote.
 */
import { skipSingleQuoted } from "../syntax.js";

/** The grammar's dialect: OData V4 (4.0 and 4.01) or V2. */
export type Dialect = "4.0" | "2.0";

/** A primitive literal and its form. */
export type Literal =
  | { readonly kind: "null" }
  | { readonly kind: "boolean"; readonly value: boolean }
  /** `'…'`; `value` is unescaped (`''` read as `'`). */
  | { readonly kind: "string"; readonly value: string }
  /**
   * A number: `integer` when it is digits with an optional sign; `suffix` is
   * V2's type suffix (`L` Int64, `M` Decimal, `D` Double, `F` Single,
   * upper-cased); `special` for `INF`, `-INF` and `NaN`.
   */
  | { readonly kind: "number"; readonly text: string; readonly integer: boolean; readonly exponent: boolean; readonly suffix?: "L" | "M" | "D" | "F"; readonly special?: true }
  /** A GUID: bare (V4) or `guid'…'` (V2, `prefixed`). */
  | { readonly kind: "guid"; readonly text: string; readonly prefixed: boolean }
  /** `YYYY-MM-DD` (V4). */
  | { readonly kind: "date"; readonly text: string }
  /** A date and time with offset: bare (V4) or `datetimeoffset'…'` (V2, `prefixed`). */
  | { readonly kind: "dateTimeOffset"; readonly text: string; readonly prefixed: boolean }
  /** V2 `datetime'…'` (no offset). */
  | { readonly kind: "dateTime"; readonly text: string }
  /** `hh:mm[:ss[.f]]` (V4). */
  | { readonly kind: "timeOfDay"; readonly text: string }
  /** V2 `time'PT…'`. */
  | { readonly kind: "time"; readonly text: string }
  /** `duration'P…'`. */
  | { readonly kind: "duration"; readonly text: string }
  /** `binary'…'` (base64url), V2 also `X'…'` (hex). */
  | { readonly kind: "binary"; readonly text: string }
  /** `Namespace.EnumType'Member,Member'` (V4); `type` as written. */
  | { readonly kind: "enum"; readonly type: string; readonly members: readonly string[] }
  /** `geography'…'` / `geometry'…'`: opaque to erplink, but quoted. */
  | { readonly kind: "geo"; readonly prefix: "geography" | "geometry"; readonly text: string };

/** A literal read at some place of a text, and where it ends. */
export interface ReadLiteral {
  readonly literal: Literal;
  readonly end: number;
}

/** Why a text that looked like a literal is not one (the caller turns it into its refusal). */
export class LiteralError extends Error {}

const SIGN = "[+-]?";
const DIGITS = "[0-9]+";
const YEAR = "-?(?:0[0-9]{3}|[1-9][0-9]{3,})";
const MONTH = "(?:0[1-9]|1[0-2])";
const DAY = "(?:0[1-9]|[12][0-9]|3[01])";
const HOUR = "(?:[01][0-9]|2[0-3])";
const MINUTE = "[0-5][0-9]";
const SECOND = "[0-5][0-9]";
const FRACTION = "[0-9]{1,12}";
const TIME = `${HOUR}:${MINUTE}(?::${SECOND}(?:\\.${FRACTION})?)?`;
const DATE = `${YEAR}-${MONTH}-${DAY}`;
const OFFSET = `(?:Z|[+-]${HOUR}:${MINUTE})`;
const GUID = "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}";

// Sticky patterns: each reads at `lastIndex` only. A literal must not run on
// into a name (`1a`, `2024-01-01x`): the caller checks what follows.
const NUMBER = new RegExp(`${SIGN}(?:${DIGITS}(?:\\.${DIGITS})?(?:[eE]${SIGN}${DIGITS})?|INF)`, "y");
const DATE_TIME_OFFSET = new RegExp(`${DATE}T${TIME}${OFFSET}`, "y");
const DATE_ONLY = new RegExp(DATE, "y");
const TIME_OF_DAY = new RegExp(TIME, "y");
const GUID_BARE = new RegExp(GUID, "y");

const FULL = (pattern: string): RegExp => new RegExp(`^(?:${pattern})$`);
const GUID_FULL = FULL(GUID);
const DATE_TIME_OFFSET_FULL = FULL(`${DATE}T${TIME}${OFFSET}`);
// V2 `datetime'…'`: a date and a time, no offset (SAP also writes seconds with up to 7 fractional digits).
const DATE_TIME_FULL = FULL(`${DATE}T${TIME}`);
const DURATION_FULL = /^-?P(?:[0-9]+D)?(?:T(?:[0-9]+H)?(?:[0-9]+M)?(?:[0-9]+(?:\.[0-9]+)?S)?)?$/;
const BASE64URL_FULL = /^(?:[A-Za-z0-9_-]{4})*(?:[A-Za-z0-9_-]{2}(?:==)?|[A-Za-z0-9_-]{3}=?)?$/;
const HEX_FULL = /^(?:[0-9A-Fa-f]{2})*$/;
const ENUM_MEMBER = /^(?:[A-Za-z_][A-Za-z0-9_]{0,127}|-?[0-9]{1,19})$/;
const QUALIFIED = /^[A-Za-z_][A-Za-z0-9_]{0,127}(?:\.[A-Za-z_][A-Za-z0-9_]{0,127})+$/;

/** What may follow a literal: anything that cannot continue a name or a number. */
const CONTINUES = /[\p{L}\p{Nl}\p{Nd}\p{Mn}\p{Mc}\p{Pc}\p{Cf}_.:'-]/u;
/** What may follow `null`, `true`, `false`, `INF`, `NaN`: anything that cannot continue a name. */
const CONTINUES_WORD = /[\p{L}\p{Nl}\p{Nd}\p{Mn}\p{Mc}\p{Pc}\p{Cf}_.']/u;


/**
 * Reads the literal starting at `s[i]` in `dialect`, or returns undefined
 * when no literal starts there (a name, an operator, a bracket). Throws
 * {@link LiteralError} when something starts like a literal but is not one:
 * an unterminated string, a prefix that is not the grammar's, a malformed
 * typed value, a number glued to a name.
 */
export function readLiteral(s: string, i: number, dialect: Dialect): ReadLiteral | undefined {
  const c = s[i];
  if (c === undefined) return undefined;
  if (c === "'") {
    const end = skipSingleQuoted(s, i);
    if (end < 0) throw new LiteralError("unterminated string literal");
    return { literal: { kind: "string", value: s.slice(i + 1, end - 1).replaceAll("''", "'") }, end };
  }
  // A prefixed literal: a name directly followed by a quote.
  const word = /[A-Za-z_][A-Za-z0-9_.]*/y;
  word.lastIndex = i;
  const w = word.exec(s);
  if (w !== null && s[i + w[0].length] === "'") return prefixed(s, i, w[0], dialect);
  if (w !== null) {
    const keyword = w[0];
    const after = i + keyword.length;
    if (!CONTINUES_WORD.test(s[after] ?? "")) {
      const lower = keyword.toLowerCase();
      if (lower === "null") return { literal: { kind: "null" }, end: after };
      if (lower === "true" || lower === "false") return { literal: { kind: "boolean", value: lower === "true" }, end: after };
      if (keyword === "INF" || keyword === "NaN") return { literal: { kind: "number", text: keyword, integer: false, exponent: false, special: true }, end: after };
    }
  }
  // A GUID may start with a letter (`abcdef01-…`); it is a GUID only when the whole pattern matches.
  if (/[0-9A-Fa-f]/.test(c)) {
    GUID_BARE.lastIndex = i;
    const g = GUID_BARE.exec(s);
    if (g !== null && !CONTINUES.test(s[i + g[0].length] ?? "")) {
      if (dialect === "2.0") throw new LiteralError(`a GUID is written guid'${g[0]}' in OData V2`);
      return { literal: { kind: "guid", text: g[0], prefixed: false }, end: i + g[0].length };
    }
  }
  // `INF` and `NaN` were read as words above; a number starts with a digit or a sign.
  if (!/[0-9+-]/.test(c)) return undefined;
  if (c === "-" && s.startsWith("-INF", i) && !CONTINUES.test(s[i + 4] ?? "")) {
    return { literal: { kind: "number", text: "-INF", integer: false, exponent: false, special: true }, end: i + 4 };
  }
  if (/[0-9]/.test(c) || (c === "-" && /[0-9]/.test(s[i + 1] ?? ""))) {
    // Dates and times first: `2024-01-01` is not `2024` minus `01`.
    for (const [pattern, kind] of [
      [DATE_TIME_OFFSET, "dateTimeOffset"],
      [DATE_ONLY, "date"],
      [TIME_OF_DAY, "timeOfDay"],
    ] as const) {
      pattern.lastIndex = i;
      const m = pattern.exec(s);
      if (m === null || CONTINUES.test(s[i + m[0].length] ?? "")) continue;
      if (dialect === "2.0") throw new LiteralError(`'${m[0]}' is written as a typed literal in OData V2 (datetime'…', datetimeoffset'…', time'…')`);
      const literal: Literal = kind === "dateTimeOffset" ? { kind, text: m[0], prefixed: false } : { kind, text: m[0] };
      return { literal, end: i + m[0].length };
    }
  }
  NUMBER.lastIndex = i;
  const n = NUMBER.exec(s);
  if (n === null) {
    if (c === "-" || c === "+") return undefined; // an operator sign, not a literal
    throw new LiteralError(`malformed number '${s.slice(i, i + 20)}'`);
  }
  let end = i + n[0].length;
  let suffix: "L" | "M" | "D" | "F" | undefined;
  const next = s[end];
  if (dialect === "2.0" && next !== undefined && /[LlMmDdFf]/.test(next) && !CONTINUES.test(s[end + 1] ?? "")) {
    suffix = next.toUpperCase() as "L" | "M" | "D" | "F";
    end++;
  }
  if (CONTINUES.test(s[end] ?? "")) throw new LiteralError(`malformed number '${s.slice(i, Math.min(s.length, end + 10))}'`);
  const text = n[0];
  const special = text.endsWith("INF") || text === "NaN";
  return {
    literal: {
      kind: "number",
      text,
      integer: !special && /^[+-]?[0-9]+$/.test(text),
      exponent: /[eE]/.test(text),
      ...(suffix !== undefined ? { suffix } : {}),
      ...(special ? { special: true as const } : {}),
    },
    end,
  };
}

/** A literal written `prefix'…'`. */
function prefixed(s: string, i: number, prefix: string, dialect: Dialect): ReadLiteral {
  const open = i + prefix.length;
  const end = skipSingleQuoted(s, open);
  if (end < 0) throw new LiteralError(`unterminated literal ${prefix}'…`);
  const inner = s.slice(open + 1, end - 1);
  // A typed literal never holds a quote: back ends that end it at the first one (SAP CAP's V2
  // adapter does) would read the rest as expression.
  if (inner.includes("'")) throw new LiteralError(`a typed literal may not hold a quote (${prefix}'…')`);
  const lower = prefix.toLowerCase();
  const fail = (what: string): never => {
    throw new LiteralError(`malformed ${what} literal ${prefix}'${inner.slice(0, 40)}'`);
  };
  let literal: Literal;
  if (lower === "binary" || (dialect === "2.0" && prefix.toUpperCase() === "X")) {
    if (!(lower === "binary" ? BASE64URL_FULL.test(inner) || (dialect === "2.0" && HEX_FULL.test(inner)) : HEX_FULL.test(inner))) fail("binary");
    literal = { kind: "binary", text: inner };
  } else if (lower === "duration") {
    if (!DURATION_FULL.test(inner)) fail("duration");
    literal = { kind: "duration", text: inner };
  } else if (lower === "geography" || lower === "geometry") {
    if (!/^SRID=[0-9]{1,5};/i.test(inner) && !/^[A-Za-z]+\(/.test(inner)) fail(lower);
    literal = { kind: "geo", prefix: lower, text: inner };
  } else if (dialect === "2.0" && lower === "datetime") {
    if (!DATE_TIME_FULL.test(inner)) fail("datetime");
    literal = { kind: "dateTime", text: inner };
  } else if (dialect === "2.0" && lower === "datetimeoffset") {
    if (!DATE_TIME_OFFSET_FULL.test(inner)) fail("datetimeoffset");
    literal = { kind: "dateTimeOffset", text: inner, prefixed: true };
  } else if (dialect === "2.0" && lower === "time") {
    if (!DURATION_FULL.test(inner) || !inner.includes("T")) fail("time");
    literal = { kind: "time", text: inner };
  } else if (dialect === "2.0" && lower === "guid") {
    if (!GUID_FULL.test(inner)) fail("guid");
    literal = { kind: "guid", text: inner, prefixed: true };
  } else if (dialect === "4.0" && QUALIFIED.test(prefix)) {
    const members = inner.split(",");
    if (inner === "" || !members.every((m) => ENUM_MEMBER.test(m))) fail("enumeration");
    literal = { kind: "enum", type: prefix, members };
  } else {
    throw new LiteralError(`'${prefix}' is not a literal type of OData ${dialect === "2.0" ? "V2" : "V4"} (${prefix}'…')`);
  }
  return { literal, end };
}

/** The literal that is all of `s` (a key-as-segment or alias value), or a {@link LiteralError}. */
export function parseLiteral(s: string, dialect: Dialect): Literal {
  const read = readLiteral(s, 0, dialect);
  if (read === undefined || read.end !== s.length) throw new LiteralError(`'${s.slice(0, 40)}' is not a literal`);
  return read.literal;
}

/** A literal as OData writes it, for messages. */
export function describeLiteral(literal: Literal): string {
  switch (literal.kind) {
    case "null":
      return "null";
    case "boolean":
      return "a boolean";
    case "string":
      return "a string";
    case "number":
      return literal.suffix !== undefined ? `a number with suffix ${literal.suffix}` : literal.integer ? "an integer" : "a number";
    case "guid":
      return "a GUID";
    case "date":
      return "a date";
    case "dateTimeOffset":
      return "a date-time with offset";
    case "dateTime":
      return "a datetime'…'";
    case "timeOfDay":
      return "a time of day";
    case "time":
      return "a time'…'";
    case "duration":
      return "a duration";
    case "binary":
      return "a binary value";
    case "enum":
      return `an enumeration value of ${literal.type}`;
    case "geo":
      return `a ${literal.prefix} value`;
  }
}
