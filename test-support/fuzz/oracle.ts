/**
 * The fuzzer's oracle: what a back end may do with a request it received,
 * under several independent readings of the request line, computed from the
 * model's plain description (./model.ts) and never from erplink's analyzer.
 *
 * Interpretations of the request-target:
 * - `whatwg`: `new URL(target, base)` (backslash is a slash, dot segments
 *   resolved, `#…` cut); path segments percent-decoded one by one; the
 *   query split on `&`, `+` as space, names and values decoded.
 * - `legacy`: Node's `url.parse` (backslashes before `?` turned into
 *   slashes, `#…` cut, dot segments kept) and `querystring` decoding.
 * - `lenient`: a forgiving back end: the whole path percent-decoded first,
 *   then `\` read as `/`, cut at `#`, dot segments resolved; the query
 *   split on `&` and `;`, `+` as space, option names trimmed (Unicode
 *   spaces, controls and BOM included), case-folded, `$` optional.
 * - `decodefirst`: SAP CAP's reading (`cds.odata.parse` decodes the whole
 *   URL before its grammar splits it): the target percent-decoded once, then
 *   the path split at `/` and the query at `&`, an expression option's value
 *   (`$filter`, `$orderby`, `$expand`, `$select`, `$compute`) running on past
 *   an `&` inside a quoted literal; names trimmed and folded as in `lenient`.
 * - `capgrammar`: SAP CAP itself, with the installed `@sap/cds`'s own OData
 *   parser (`cds.odata.parse`: `decodeURIComponent` over the URL, then the
 *   peggy grammar libx/odata/parse/grammar.peggy), so its tokens hold as CAP
 *   draws them: a JSON object ends at its first `}` and a list at its first
 *   `]` whatever quotes lie between, a name may hold `"` and `.`, a nested
 *   `$search` ends at the first `)` or `;`, a lambda's body is read from the
 *   lambda's collection (only the innermost variable is stripped), an alias
 *   is a value and never a path, white space before an option name is
 *   skipped, option names are exact (`$filter`, not `$Filter` nor `filter`).
 *   Express's mount (case-insensitive, on the raw pathname) decides whether
 *   the target reaches this service; `/`, `/$metadata` and `/$batch…` are
 *   routed before parsing, as CAP's adapter does. The CQN is walked against
 *   the model: the resource path (`from.ref`: entity set, key predicates,
 *   navigations, `$count`/`$value`/`$ref`, bound operations, with the
 *   method's operations as in the other readings), `where`, `having`,
 *   `groupBy`, `orderBy`, `columns` (`$select` paths, `$expand` trees with
 *   their nested `where`/`orderBy`, `*`, `$compute`, aggregates),
 *   function arguments and every `ref` segment's `where` (lambdas, infix
 *   filters, keys) read at that segment's target. What CAP's parser
 *   refuses (400, 501, or the TypeErrors it throws on some URLs) touches
 *   nothing; a name unknown at its place reaches nothing (CAP answers 400).
 *   It applies to every root, V2 ones too (CAP's V4 grammar read over it),
 *   and reports no SAP client or session switches (CAP has none).
 * - `double` (only with `ERPLINK_FUZZ_DOUBLE_DECODE=1`): `lenient` after the
 *   target was percent-decoded once more (a back end behind a decoding proxy).
 * In every reading, OData names (entity sets, properties, navigations,
 * casts, bound operations) match case-insensitively, system query options
 * with or without `$` and in any case (OData 4.01), and a `$batch` body is
 * read leniently: every `METHOD url HTTP/x` line anywhere in it is a request
 * (multipart), or every member of `requests` (JSON), each part URL read
 * under the same interpretation against the service root.
 *
 * What counts as touched (conservative):
 * - every entity set the resource path navigates through is read (`get`);
 *   the target gets the method's operation (`list`/`get` for reads, `create`
 *   for POST to a collection, `update` for PATCH/PUT/MERGE/POST to an entity
 *   or property, `delete`, and `delete` of every composition's entities,
 *   transitively; PUT and PATCH without `If-Match` also `create` (upsert); a
 *   tunnel (`X-HTTP-Method`, `-Override`) counts as both methods);
 * - an update (PUT, PATCH, MERGE of an entity or property) is answered with
 *   what it changed: a `get` of the target, unless the request asks for no
 *   answer (`Prefer: return=minimal`, which erplink adds for a key that may
 *   not read it);
 * - links: reading them (`GET …/Nav/$ref`, V2 `…/$links/Nav`) is a `list` of
 *   both sets (a back end may read all of them); removing one (`DELETE`) a
 *   `delete` of its source (SAP's mock server deletes it) and, through a
 *   composition, of the child and what cascades from it; adding or setting
 *   one an `update` of the source and a `get` of the target (`create` too
 *   through a composition: a back end may insert a child), the body's URL
 *   read, and every name in the body a mention with the method's writes;
 * - operations: a call (a function or action import by its name as the first
 *   segment, a bound one qualified or not) needs its grant (`invoke`, by the
 *   name a key is granted it by: the import's name, the bound operation's
 *   qualified name), a read of what it is bound to, and a read of every
 *   entity set its result lies in; what it does beside is its grant's. In an
 *   expression any operation named (qualified, called or not, or a lone name
 *   no property or navigation has) may touch anything;
 * - every navigation in `$expand` (nested, `*`, `$levels` to a fixed point),
 *   `$select`, and every navigation name outside string literals in
 *   `$filter`, `$orderby`, `$compute` and the aliases they use, wherever
 *   that name is declared (`capgrammar` resolves them in place instead);
 *   but not a lone name (no `/` before or after it) that is a navigation
 *   neither of the type the option applies to nor of a type a path in the
 *   expression reaches, a lambda variable where it is declared and where it
 *   starts a path inside its lambda, nor a name glued to a preceding digit
 *   (`%2520Items` is `%20Items` after one decoding: no reader that decodes
 *   once takes it for a name); `$root/`, `$apply`, and path segments `$crossjoin`,
 *   `$all`, `$entity`, `$each`, `$query` count as touching anything;
 * - in entity bodies: a nested object or array under a navigation (V2 also
 *   `{"results": […]}`) is a create (and an update for PUT/PATCH/MERGE, or
 *   when it names an existing entity besides its data) of its target, but an
 *   entity reference (V4: only `@odata.id`/`@id` and instance annotations;
 *   V2: only `__metadata` with only `uri`, or `__deferred`) is a read of it,
 *   and a create too in a composition (a back end may insert a child rather
 *   than link one: CAP does); a bind reads its target (a composition's also
 *   creates, and in an update of a single-valued one deletes the child it
 *   replaces); in an update a collection replaces the related set and a
 *   `null` removes the related entity: the ones left out are read (unlinked)
 *   or, in a composition, deleted, as a single-valued composition's child
 *   replaced by another is; binds, `@odata.id` (in V4 bodies: V4 control
 *   information means nothing in a V2 payload, and V2 back ends ignore it),
 *   `__metadata.uri` and a link change's body read the entity they name,
 *   where each interpretation resolves the URL (see `readBodyUrl`: WHATWG,
 *   `url.resolve`, RFC 3986 written here, or no resolution) against the
 *   service root or the body's `@odata.context`; a URL that lands under
 *   another service's root is an escape;
 * - text the oracle cannot resolve where a back end could still act on it
 *   (a malformed path segment, a path that goes on after an unknown name, an
 *   unbalanced `$expand`/`$select`/`$filter`, a non-JSON entity body, a
 *   bind it cannot place) counts as touching every entity set and
 *   navigation target it names, string literals included, with every read
 *   and (in the path and body) every operation the method could mean, and
 *   every operation it names a call (`invoke`); a `*` in unparsable
 *   `$expand` text reaches every navigation of the type the option applies
 *   at and of the types the names in the text lead to (every navigation of
 *   the service where that type is unknown);
 * - a name that is well-formed but unknown at its place in a parsed
 *   `$expand`/`$select` item reaches nothing (the back end cannot resolve
 *   it either); an entity set's name alone in an expression reaches nothing.
 * Also reported: SAP client (tenant), debug or session switches
 * (`sap-client`, `sap-ds-debug`, `sap-contextid-accept`, read trimmed and
 * case-folded) other than the instance's own.
 */
import { createRequire } from "node:module";
import querystring from "node:querystring";
import url from "node:url";
import type { NavDef, OpDef, ServiceDef, TypeDef, Universe, Version } from "./model.js";
import { grantName, opsOf, rootPath, typesOf } from "./model.js";

/** One (entity set, operation) pair a reading of the request touches, with why. */
export interface Touch {
  readonly entitySet: string;
  readonly operation: string;
  readonly why: string;
  /** Set when it comes from text the oracle could not resolve (a name mentioned), not from a resolved reading. */
  readonly mentioned?: true;
}

/** What one interpretation makes of a received request. */
export interface Reading {
  readonly interpretation: string;
  /** How it read the target: decoded path segments and query pairs. */
  readonly seen: string;
  /** Empty when the request stays inside the service root; else where and why not (the path, a part's path, a URL in a body). */
  readonly escapes: readonly Escape[];
  readonly touches: readonly Touch[];
  /** Reasons why the request may touch anything at all. */
  readonly anything: readonly string[];
  /** SAP client (tenant), debug or session choices the request makes that are not the instance's. */
  readonly switches: readonly string[];
}

/** A way out of the service root: where in the request (`path`, `body`, `batch:path`, `batch:body`) and why. */
export interface Escape {
  readonly where: string;
  readonly message: string;
}

/** The request as a back end received it. */
export interface ReceivedRequest {
  readonly method: string;
  readonly target: string;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: Buffer;
}

/** Where the request was authorized: the instance's service root on the upstream. */
export interface RootOf {
  readonly instance: string;
  readonly service: string;
}

// ---------------------------------------------------------------- names

const SPACES = /^[\s\u00a0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff\u0085\u0000-\u001f\u007f]+|[\s\u00a0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff\u0085\u0000-\u001f\u007f]+$/gu;

/** `s` without leading and trailing white space of any kind (Unicode spaces, controls, BOM). */
export function trimAll(s: string): string {
  return s.replace(SPACES, "");
}

const SYSTEM_OPTIONS = new Set([
  "filter", "expand", "select", "orderby", "top", "skip", "count", "inlinecount", "search", "format", "skiptoken",
  "deltatoken", "apply", "compute", "index", "schemaversion", "id", "levels",
]);

/** A service as one version serves it, with name lookups. */
export class ServiceView {
  readonly types = new Map<string, TypeDef>();
  readonly sets = new Map<string, string>();
  /** Navigation name (lower case) -> every definition of that name. */
  readonly navsByName = new Map<string, { name: string; nav: NavDef }[]>();
  /** Entity set name (lower case) -> name. */
  readonly setsByLower = new Map<string, string>();
  /** The operations this version serves (V2: function imports only). */
  readonly ops: readonly OpDef[];

  constructor(
    readonly def: ServiceDef,
    readonly version: Version,
  ) {
    for (const t of typesOf(def, version)) this.types.set(t.name, t);
    this.ops = opsOf(def, version);
    for (const [set, type] of Object.entries(def.sets)) {
      this.sets.set(set, type);
      this.setsByLower.set(set.toLowerCase(), set);
    }
    for (const t of this.types.values()) {
      for (const [name, nav] of Object.entries(t.navs)) {
        const list = this.navsByName.get(name.toLowerCase()) ?? [];
        list.push({ name, nav });
        this.navsByName.set(name.toLowerCase(), list);
      }
    }
  }

  /** The entity set of a name (exact, then case-insensitive). */
  set(name: string): string | undefined {
    return this.sets.has(name) ? name : this.setsByLower.get(name.toLowerCase());
  }

  /** Properties and navigations of a type, its base types' included. */
  members(type: TypeDef): { props: Record<string, string>; navs: Record<string, NavDef> } {
    const props: Record<string, string> = {};
    const navs: Record<string, NavDef> = {};
    for (let t: TypeDef | undefined = type, depth = 0; t !== undefined && depth < 8; t = t.base ? this.types.get(t.base) : undefined, depth++) {
      Object.assign(props, t.props);
      Object.assign(navs, t.navs);
    }
    return { props, navs };
  }

  /** Types derived from `type` (transitively), for casts; with itself. */
  family(type: TypeDef): TypeDef[] {
    const out = [type];
    for (let changed = true; changed; ) {
      changed = false;
      for (const t of this.types.values()) {
        if (t.base !== undefined && !out.includes(t) && out.some((o) => o.name === t.base)) {
          out.push(t);
          changed = true;
        }
      }
    }
    return out;
  }

  /** Every navigation of a type and the types derived from it (what `*` or a cast may reach). */
  allNavs(type: TypeDef): [string, NavDef][] {
    const out: [string, NavDef][] = [];
    for (const t of this.family(type)) for (const e of Object.entries(this.members(t).navs)) out.push(e);
    return out;
  }

  typeOfSet(set: string): TypeDef | undefined {
    const t = this.sets.get(set);
    return t === undefined ? undefined : this.types.get(t);
  }

  /** A member of a type by name (exact, then case-insensitive), casts and bound operations excluded. */
  member(type: TypeDef, name: string): { kind: "nav"; name: string; nav: NavDef } | { kind: "prop"; name: string; prop: string } | undefined {
    const { props, navs } = this.members(type);
    const find = <T>(rec: Record<string, T>): [string, T] | undefined => {
      if (Object.hasOwn(rec, name)) return [name, rec[name]!];
      const lower = name.toLowerCase();
      return Object.entries(rec).find(([k]) => k.toLowerCase() === lower);
    };
    const nav = find(navs);
    if (nav) return { kind: "nav", name: nav[0], nav: nav[1] };
    const prop = find(props);
    if (prop) return { kind: "prop", name: prop[0], prop: prop[1] };
    return undefined;
  }

  /** A qualified name: a cast to a type of the family of `type`, a bound operation, or nothing. */
  qualified(type: TypeDef | undefined, name: string): { kind: "cast"; type: TypeDef } | { kind: "function" | "action"; collection: boolean; op: OpDef } | undefined {
    const dot = name.lastIndexOf(".");
    if (dot < 0) return undefined;
    const ns = name.slice(0, dot).toLowerCase();
    const local = name.slice(dot + 1).toLowerCase();
    if (ns !== this.def.namespace.toLowerCase()) return undefined;
    if (type !== undefined) {
      const cast = this.family(type).find((t) => t.name.toLowerCase() === local);
      if (cast) return { kind: "cast", type: cast };
    }
    const op = this.ops.find((o) => o.binding !== undefined && o.name.toLowerCase() === local);
    return op ? { kind: op.kind, collection: op.collection === true, op } : undefined;
  }

  /** An import (unbound function or action) by name, exact then case-insensitive. */
  importOf(name: string): OpDef | undefined {
    const imports = this.ops.filter((o) => o.binding === undefined);
    return imports.find((o) => o.name === name) ?? imports.find((o) => o.name.toLowerCase() === name.toLowerCase());
  }

  /** An operation bound to `type` (or a type it derives from) named without its namespace (OData 4.01 lets services bind it so). */
  unqualified(type: TypeDef, name: string): OpDef | undefined {
    const chain: string[] = [];
    for (let t: TypeDef | undefined = type; t !== undefined && chain.length < 8; t = t.base ? this.types.get(t.base) : undefined) chain.push(t.name);
    const lower = name.toLowerCase();
    return this.ops.find((o) => o.binding !== undefined && chain.includes(o.binding) && o.name.toLowerCase() === lower);
  }

  /** The name a key is granted a call of `op` by. */
  grantOf(op: OpDef): string {
    return grantName(this.def, op);
  }
}

// ---------------------------------------------------------------- decoding

/** WHATWG percent-decode: valid `%XX` become bytes, the rest stays; then UTF-8 with replacement. */
export function percentDecode(s: string): string {
  if (!s.includes("%")) return s;
  const bytes: number[] = [];
  const raw = Buffer.from(s, "utf8");
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c === 0x25 && i + 2 < raw.length + 0 && /^[0-9A-Fa-f]{2}$/.test(String.fromCharCode(raw[i + 1] ?? 0, raw[i + 2] ?? 0))) {
      bytes.push(parseInt(String.fromCharCode(raw[i + 1]!, raw[i + 2]!), 16));
      i += 2;
    } else {
      bytes.push(c);
    }
  }
  return Buffer.from(bytes).toString("utf8");
}

/** RFC 3986 §5.2.4 remove_dot_segments on an absolute path. */
export function removeDotSegments(path: string): string {
  const input = path.split("/");
  const out: string[] = [];
  for (let i = 0; i < input.length; i++) {
    const seg = input[i]!;
    const last = i === input.length - 1;
    if (seg === ".") {
      if (last) out.push("");
      continue;
    }
    if (seg === "..") {
      if (out.length > 1) out.pop();
      if (last) out.push("");
      continue;
    }
    out.push(seg);
  }
  const joined = out.join("/");
  return joined.startsWith("/") ? joined : `/${joined}`;
}

interface Parsed {
  /** Decoded path segments from the upstream's root ("" segments kept). */
  readonly segments: string[];
  /** Query pairs, decoded. */
  readonly pairs: [string, string][];
  /** Whether option names are trimmed before matching. */
  readonly trimNames: boolean;
}

function splitPairs(query: string, separators: RegExp, decode: (s: string) => string): [string, string][] {
  if (query === "") return [];
  return query
    .split(separators)
    .filter((p) => p !== "")
    .map((p) => {
      const eq = p.indexOf("=");
      const name = eq < 0 ? p : p.slice(0, eq);
      const value = eq < 0 ? "" : p.slice(eq + 1);
      return [decode(name.replaceAll("+", " ")), decode(value.replaceAll("+", " "))];
    });
}

const INTERPRETATIONS: Record<string, (target: string) => Parsed | undefined> = {
  whatwg(target) {
    let u: URL;
    try {
      u = new URL(target, "http://upstream.invalid");
    } catch {
      return undefined;
    }
    return {
      segments: u.pathname.split("/").slice(1).map(percentDecode),
      pairs: splitPairs(u.search.replace(/^\?/, ""), /&/, percentDecode),
      trimNames: false,
    };
  },
  legacy(target) {
    let p: url.UrlWithStringQuery;
    try {
      p = url.parse(target);
    } catch {
      return undefined;
    }
    return {
      segments: (p.pathname ?? "").split("/").slice(1).map(safeUnescape),
      pairs: splitPairs(p.query ?? "", /&/, safeUnescape),
      trimNames: false,
    };
  },
  lenient(target) {
    return lenient(target);
  },
  decodefirst(target) {
    const decoded = percentDecode(target);
    const q = decoded.indexOf("?");
    const path = q < 0 ? decoded : decoded.slice(0, q);
    return { segments: path.split("/").slice(1), pairs: splitDecodedQuery(q < 0 ? "" : decoded.slice(q + 1)), trimNames: true };
  },
};

/** A decoded query split as CAP's grammar does: at `&`, but not inside a quoted literal of an expression option. */
function splitDecodedQuery(query: string): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i < query.length; ) {
    let j = i;
    while (j < query.length && query[j] !== "&" && query[j] !== "=") j++;
    const name = query.slice(i, j);
    if (query[j] !== "=") {
      if (name !== "") pairs.push([name, ""]);
      i = j + 1;
      continue;
    }
    const expression = /^\$?(filter|orderby|expand|select|compute)$/i.test(trimAll(name));
    const start = ++j;
    while (j < query.length && query[j] !== "&") {
      // CAP's grammar: a quoted literal keeps an '&'; a JSON object, list or double-quoted string ends at its first closer, quotes or not.
      const closer = expression ? ({ "'": "'", "{": "}", "[": "]", '"': '"' } as Record<string, string>)[query[j]!] : undefined;
      if (closer !== undefined) {
        const close = closer === "'" ? literalEnd(query, j) : query.indexOf(closer, j + 1);
        j = close < 0 ? query.length : close + 1;
        continue;
      }
      j++;
    }
    pairs.push([name, query.slice(start, j)]);
    i = j + 1;
  }
  return pairs;
}

function lenient(target: string): Parsed {
  const q = target.indexOf("?");
  let path = percentDecode(q < 0 ? target : target.slice(0, q));
  let query = q < 0 ? "" : target.slice(q + 1);
  path = path.replaceAll("\\", "/");
  const hash = path.indexOf("#");
  if (hash >= 0) {
    path = path.slice(0, hash);
    query = "";
  }
  const qh = query.indexOf("#");
  if (qh >= 0) query = query.slice(0, qh);
  if (!path.startsWith("/")) path = `/${path}`;
  path = removeDotSegments(path);
  return { segments: path.split("/").slice(1), pairs: splitPairs(query, /[&;]/, percentDecode), trimNames: true };
}

/** The interpretations in force (names). */
export function interpretations(): string[] {
  const names = [...Object.keys(INTERPRETATIONS), "capgrammar"];
  return process.env.ERPLINK_FUZZ_DOUBLE_DECODE === "1" ? [...names, "double"] : names;
}

function parseWith(name: string, target: string): Parsed | undefined {
  if (name === "double") return lenient(percentDecode(target));
  return INTERPRETATIONS[name]!(target);
}

// ---------------------------------------------------------------- lexing

/** Index of the quote closing the `'…'` literal opening at `s[i]` (`''` is an escaped quote), or -1. */
function literalEnd(s: string, i: number): number {
  for (let j = i + 1; ; ) {
    const close = s.indexOf("'", j);
    if (close < 0 || s[close + 1] !== "'") return close;
    j = close + 2;
  }
}

/** Splits at top-level `sep` (outside `'…'` literals and brackets); undefined when unbalanced. */
function splitTop(s: string, sep: string): string[] | undefined {
  const parts: string[] = [];
  let depth = 0;
  let from = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === "'") {
      const close = literalEnd(s, i);
      if (close < 0) return undefined;
      i = close;
      continue;
    }
    if (c === "(" || c === "[" || c === "{") depth++;
    else if (c === ")" || c === "]" || c === "}") {
      depth--;
      if (depth < 0) return undefined;
    } else if (c === sep && depth === 0) {
      parts.push(s.slice(from, i));
      from = i + 1;
    }
  }
  if (depth !== 0) return undefined;
  parts.push(s.slice(from));
  return parts;
}

/** `name(args)` with the closing parenthesis last; undefined when malformed. */
function splitCall(s: string): { name: string; args?: string } | undefined {
  const open = s.indexOf("(");
  if (open < 0) return /['")]/.test(s) ? undefined : { name: s };
  if (!s.endsWith(")")) return undefined;
  const inner = s.slice(open + 1, -1);
  if (splitTop(inner, ",") === undefined) return undefined;
  return { name: s.slice(0, open), args: inner };
}

const IDENT = /[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Nd}\p{Mn}\p{Mc}\p{Pc}\p{Cf}]*/gu;
/** System resources and constructs that can reach any entity set, as whole words (`$all`, not `$allx`). */
const SPECIALS = /(?:^|[/\s(,=;&?])\$(?:crossjoin|all|entity|each|query|apply)(?![\p{L}\p{Nl}\p{Nd}_.])|\$root\s*\//giu;
/** `$root/…` in an expression: a path from the service root, to any entity set. */
const ROOT = /\$root\s*\//giu;
/** A name called in an expression: `name(` (a qualified name included), not `@alias(`. */
const CALL = /(?<![@\p{L}\p{Nl}\p{Nd}_.])(\$?[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Nd}\p{Mn}\p{Mc}\p{Pc}\p{Cf}.]*)\s*\(/gu;
/** A namespace-qualified name in an expression (`NS.Name`), not part of a longer one. */
const QUALIFIED = /(?<![@\p{L}\p{Nl}\p{Nd}_.])[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Nd}_]*(?:\.[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Nd}_]*)+/gu;
/** OData's built-in functions (V4, 4.01, V2), lower case. */
const BUILT_INS = new Set([
  "concat", "contains", "endswith", "indexof", "length", "startswith", "substring", "matchespattern", "tolower", "toupper", "trim",
  "substringof", "replace", "date", "day", "fractionalseconds", "hour", "maxdatetime", "mindatetime", "minute", "month", "now",
  "second", "time", "totaloffsetminutes", "totalseconds", "year", "ceiling", "floor", "round", "cast", "isof",
  "geo.distance", "geo.intersects", "geo.length", "case", "hassubset", "hassubsequence",
]);
/** Operators that may stand before `(`. */
const EXPRESSION_WORDS = new Set(["and", "or", "not", "in", "eq", "ne", "gt", "ge", "lt", "le", "has", "add", "sub", "mul", "div", "divby", "mod"]);

/** Text with the `'…'` literals blanked; undefined when a literal is unterminated. */
function withoutLiterals(s: string): string | undefined {
  let out = "";
  for (let i = 0; i < s.length; i++) {
    if (s[i] !== "'") {
      out += s[i];
      continue;
    }
    const close = literalEnd(s, i);
    if (close < 0) return undefined;
    out += " ".repeat(close - i + 1);
    i = close;
  }
  return out;
}

// ---------------------------------------------------------------- the reading

/** Operations a method may mean on what it addresses. */
function writeOps(method: string): string[] {
  switch (method) {
    case "GET":
    case "HEAD":
      return [];
    case "POST":
      return ["create", "update"];
    case "PUT":
    case "PATCH":
    case "MERGE":
      return ["update", "create"];
    case "DELETE":
      return ["delete", "update"];
    default:
      return ["create", "update", "delete"];
  }
}

class Collector {
  readonly touches: Touch[] = [];
  readonly anything: string[] = [];
  /** URLs in the body that name another service's root. */
  readonly escapes: Escape[] = [];
  add(entitySet: string, operation: string, why: string, mentioned = false): void {
    const at = this.touches.findIndex((t) => t.entitySet === entitySet && t.operation === operation);
    // A resolved reading wins over a mere mention of the same pair.
    if (at >= 0 && (mentioned || !this.touches[at]!.mentioned)) return;
    const touch: Touch = { entitySet, operation, why, ...(mentioned ? { mentioned: true as const } : {}) };
    if (at >= 0) this.touches[at] = touch;
    else this.touches.push(touch);
  }
}

interface Ctx {
  readonly svc: ServiceView;
  readonly out: Collector;
  readonly methods: readonly string[];
  readonly aliases: ReadonlyMap<string, string[]>;
  readonly trimNames: boolean;
  readonly universe: Universe;
  /** The reading's name: URLs in bodies are resolved as it resolves them. */
  readonly interpretation: string;
  /** The upstream path of the service root the request was authorized for. */
  readonly rootUrlPath: string;
  /** In a batch part: Content-ID -> the upstream path of that earlier part (what `$<id>` in a body stands for). */
  readonly bodyRefs: ReadonlyMap<string, string>;
}

/**
 * Every entity set and navigation target `text` names, with every read and,
 * for text of the resource path or body (`writes`), every operation the
 * methods could mean. A `*` in `$expand`-like text (`expandLike`) reaches
 * every navigation: of the service, or, when the type the option applies
 * at is known (`starAt`), of that type and of the types the navigations the
 * text names lead to (wherever a reader may apply the `*`).
 */
function mentions(ctx: Ctx, text: string, why: string, expandLike = false, writes = false, starAt?: TypeDef): void {
  for (const m of text.matchAll(SPECIALS)) ctx.out.anything.push(`${why}: '${m[0]}' in ${JSON.stringify(text.slice(0, 80))}`);
  if (expandLike && text.includes("*")) {
    if (starAt === undefined) {
      for (const [, list] of ctx.svc.navsByName) for (const { nav } of list) ctx.out.add(nav.target, nav.many ? "list" : "get", `${why} (*)`, true);
    } else {
      const scopes = [starAt];
      for (const m of text.matchAll(IDENT)) {
        for (const { nav } of ctx.svc.navsByName.get(m[0].toLowerCase()) ?? []) {
          const t = ctx.svc.types.get(nav.type);
          if (t !== undefined && !scopes.includes(t)) scopes.push(t);
        }
      }
      for (const t of scopes) for (const [name, nav] of ctx.svc.allNavs(t)) ctx.out.add(nav.target, nav.many ? "list" : "get", `${why} (* at ${t.name} -> ${name})`, true);
    }
  }
  const extra = writes ? ctx.methods.flatMap(writeOps) : [];
  const ops = new Set(["list", "get", ...extra]);
  for (const m of text.matchAll(IDENT)) {
    const word = m[0];
    const set = ctx.svc.set(word);
    if (set !== undefined) for (const op of ops) ctx.out.add(set, op, `${why}: name '${word}'`, true);
    for (const { nav } of ctx.svc.navsByName.get(word.toLowerCase()) ?? []) {
      for (const op of new Set([nav.many ? "list" : "get", ...extra])) ctx.out.add(nav.target, op, `${why}: navigation '${word}'`, true);
    }
    // An operation's name: a back end may call it.
    for (const o of ctx.svc.ops) if (o.name.toLowerCase() === word.toLowerCase()) ctx.out.add(ctx.svc.grantOf(o), "invoke", `${why}: operation '${word}'`, true);
  }
}

/**
 * A filter-like expression at `type`: every navigation name outside
 * literals is followed (reads), wherever the model declares it; but a lone
 * name (neither before nor after a `/`, not called) only where it is a
 * navigation of `type` or of a type some path in the expression reaches (a
 * lambda's collection), as no reader resolves it elsewhere.
 */
function expression(ctx: Ctx, type: TypeDef, text: string, why: string, depth: number): void {
  const bare = withoutLiterals(text);
  if (bare === undefined) {
    mentions(ctx, text, `${why} (unterminated literal)`);
    return;
  }
  // In an expression only `$root` reaches beyond the current entity (the other specials are path segments).
  for (const m of bare.matchAll(ROOT)) ctx.out.anything.push(`${why}: '${m[0]}'`);
  // A bound operation named in an expression, with or without parentheses, is called (OData's dotted-identifier
  // binding): what it reads no grant of the expression covers.
  for (const m of bare.matchAll(QUALIFIED)) {
    const q = ctx.svc.qualified(type, m[0]);
    if (q === undefined || q.kind === "cast") continue;
    ctx.out.anything.push(`${why}: names operation '${m[0]}'`);
  }
  // A call of anything but a built-in function (or a lambda after a path) runs what no grant covers.
  for (const m of bare.matchAll(CALL)) {
    const name = m[1]!;
    const lower = name.toLowerCase();
    if (BUILT_INS.has(lower) || EXPRESSION_WORDS.has(lower)) continue;
    if ((lower === "any" || lower === "all") && /\/\s*$/.test(bare.slice(0, m.index))) continue;
    if (lower === "$count") continue;
    ctx.out.anything.push(`${why}: calls '${name}'`);
  }
  for (const m of bare.matchAll(/@[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Nd}_]*/gu)) {
    const values = ctx.aliases.get(m[0].toLowerCase()) ?? [];
    if (depth > 6) {
      for (const v of values) mentions(ctx, v, `${why} alias ${m[0]}`);
      continue;
    }
    for (const v of values) expression(ctx, type, v, `${why} alias ${m[0]}`, depth + 1);
  }
  const variables = lambdaVariables(bare);
  const lone = (at: number, length: number) => !/\/\s*$/.test(bare.slice(Math.max(0, at - 40), at)) && !/^\s*[/(]/.test(bare.slice(at + length, at + length + 40));
  // The types lone names may be read at: `type`, and the target of every navigation name a path goes on from.
  const scopes = [type];
  for (const m of bare.matchAll(IDENT)) {
    if (lone(m.index!, m[0].length)) continue;
    for (const { nav } of ctx.svc.navsByName.get(m[0].toLowerCase()) ?? []) {
      const t = ctx.svc.types.get(nav.type);
      if (t !== undefined && !scopes.includes(t)) scopes.push(t);
    }
  }
  const navOfScope = (word: string) => scopes.some((t) => ctx.svc.allNavs(t).some(([n]) => n.toLowerCase() === word.toLowerCase()));
  for (const m of bare.matchAll(IDENT)) {
    const word = m[0];
    const at = m.index!;
    if (at > 0 && bare[at - 1] === "@") continue;
    // Glued to a digit, a name is the tail of a number-like token (`20Items`: what `%2520Items` is after one decoding).
    if (at > 0 && /\p{Nd}/u.test(bare[at - 1]!)) continue;
    // A lambda variable (`any(Items:Items/Status eq 'x')`) where it is declared, or starts a path inside its lambda:
    // the lambda's collection, not a navigation (CAP's reading of outer variables in nested lambdas is `capgrammar`'s).
    if (variables.some((v) => v.name === word && at >= v.from && at < v.to && (at === v.from || !/\/\s*$/.test(bare.slice(0, at))))) continue;
    // An operation's name alone (no property or navigation of that name where the expression may read it): a back end
    // that binds unqualified names (OData 4.01) calls it.
    if (ctx.svc.ops.some((o) => o.name.toLowerCase() === word.toLowerCase()) && !scopes.some((t) => ctx.svc.member(t, word) !== undefined)) {
      ctx.out.anything.push(`${why}: names operation '${word}'`);
      continue;
    }
    if (lone(at, word.length) && !navOfScope(word)) continue;
    // An entity set's name alone reaches nothing in an expression (only after `$root/`, counted above).
    for (const { nav } of ctx.svc.navsByName.get(word.toLowerCase()) ?? []) ctx.out.add(nav.target, nav.many ? "list" : "get", `${why}: navigation '${word}'`);
  }
}

/** The lambda variables of an expression (literals blanked): each with the range it is declared and used in, from its name to the lambda's `)`. */
function lambdaVariables(bare: string): { name: string; from: number; to: number }[] {
  const out: { name: string; from: number; to: number }[] = [];
  for (const m of bare.matchAll(/\/\s*(?:any|all)\s*\(\s*([\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Nd}_]*)\s*:/giu)) {
    const open = bare.indexOf("(", m.index!);
    let depth = 0;
    let to = bare.length;
    for (let i = open; i < bare.length; i++) {
      if (bare[i] === "(") depth++;
      else if (bare[i] === ")" && --depth === 0) {
        to = i;
        break;
      }
    }
    out.push({ name: m[1]!, from: m.index! + m[0].lastIndexOf(m[1]!), to });
  }
  return out;
}

/** A name inside an option's value as the interpretation trims it: as JavaScript does, or also controls and U+0085, U+200B. */
function trimName(ctx: Ctx, s: string): string {
  return ctx.trimNames ? trimAll(s) : s.trim();
}

function canonical(ctx: Ctx, name: string): string {
  const n = (ctx.trimNames ? trimAll(name) : name).toLowerCase();
  return n.startsWith("$") ? n.slice(1) : n;
}

/** Nested options `a=b;c=d` of an `$expand`/`$select` item, applied at `type`. */
function nestedOptions(ctx: Ctx, type: TypeDef, text: string, why: string, depth: number): boolean {
  if (trimAll(text) === "") return true;
  const parts = splitTop(text, ";");
  if (parts === undefined) return false;
  const options: [string, string][] = [];
  for (const p of parts) {
    const eq = p.indexOf("=");
    if (eq < 0) return false;
    options.push([p.slice(0, eq), p.slice(eq + 1)]);
  }
  applyOptions(ctx, type, options, why, depth + 1, true);
  // Back ends may also split at every ';', quotes and brackets or not (CAP's nested $search ends at the first ';').
  const naive = text.split(";").filter((p) => p.includes("=")).map((p): [string, string] => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)]);
  if (naive.length > parts.length) applyOptions(ctx, type, naive, `${why} (split at every ';')`, depth + 1, true);
  return true;
}

/** Walks an `$expand`/`$select` path from `type`; returns the type reached and whether it crossed a navigation. */
function walkItem(ctx: Ctx, type: TypeDef, segs: readonly string[], why: string): { type: TypeDef; ok: boolean } {
  let at = type;
  for (const raw of segs) {
    const seg = trimName(ctx, raw);
    if (seg === "$ref" || seg === "$count" || seg === "*" || seg === "") continue;
    const q = ctx.svc.qualified(at, seg);
    if (q?.kind === "cast") {
      at = q.type;
      continue;
    }
    if (q !== undefined) continue;
    const m = ctx.svc.member(at, seg);
    if (m === undefined) {
      // A derived type's navigation without the cast: lenient back ends may find it.
      const derived = ctx.svc.allNavs(at).find(([n]) => n.toLowerCase() === seg.toLowerCase());
      if (derived) {
        ctx.out.add(derived[1].target, derived[1].many ? "list" : "get", `${why} ${seg}`);
        at = ctx.svc.types.get(derived[1].type) ?? at;
        continue;
      }
      return { type: at, ok: false };
    }
    if (m.kind === "prop") continue;
    ctx.out.add(m.nav.target, m.nav.many ? "list" : "get", `${why} ${m.name}`);
    at = ctx.svc.types.get(m.nav.type) ?? at;
  }
  return { type: at, ok: true };
}

/** Whether the first name of a path exists at `type` (without recording anything). */
function walkable(ctx: Ctx, type: TypeDef, segs: readonly string[]): boolean {
  const first = trimName(ctx, segs[0] ?? "");
  return ctx.svc.member(type, first) !== undefined || ctx.svc.qualified(type, first) !== undefined || ctx.svc.allNavs(type).some(([n]) => n.toLowerCase() === first.toLowerCase());
}

function expandOption(ctx: Ctx, type: TypeDef, text: string, why: string, depth: number): void {
  if (depth > 12) {
    mentions(ctx, text, `${why} (too deep)`, true);
    return;
  }
  const items = splitTop(text, ",");
  if (items === undefined) {
    mentions(ctx, text, `${why} (unparsable)`, true, false, type);
    return;
  }
  for (const rawItem of items) {
    const item = trimName(ctx, rawItem);
    if (item === "") continue;
    const call = splitCall(item);
    if (call === undefined) {
      mentions(ctx, item, `${why} (unparsable item)`, true, false, type);
      continue;
    }
    const segs = call.name.split("/");
    const nested = call.args;
    const levels = nested !== undefined && /\$?levels\s*=/i.test(nested);
    let frontier: TypeDef[] = [type];
    const seen = new Set<string>();
    for (let round = 0; round < (levels ? 16 : 1) && frontier.length > 0; round++) {
      const next: TypeDef[] = [];
      for (const from of frontier) {
        const targets: TypeDef[] = [];
        // Repeating an item ($levels) stops quietly where the type reached lacks its path.
        const quiet = round > 0;
        if (segs[segs.length - 1] === "*") {
          const prefix = walkItem(ctx, from, segs.slice(0, -1), `$expand`);
          // An unknown name in a well-formed item reaches nothing: the back end cannot resolve it either.
          if (!prefix.ok) continue;
          for (const [name, nav] of ctx.svc.allNavs(prefix.type)) {
            ctx.out.add(nav.target, nav.many ? "list" : "get", `${why} * -> ${name}`);
            const t = ctx.svc.types.get(nav.type);
            if (t) targets.push(t);
          }
        } else {
          if (quiet && !walkable(ctx, from, segs)) continue;
          const reached = walkItem(ctx, from, segs, why);
          if (!reached.ok) continue;
          targets.push(reached.type);
        }
        for (const t of targets) {
          if (nested !== undefined && !nestedOptions(ctx, t, nested, `${why} ${call.name}(…)`, depth)) {
            mentions(ctx, nested, `${why} (unparsable nested options)`, true, false, t);
          }
          if (!seen.has(t.name)) {
            seen.add(t.name);
            next.push(t);
          }
        }
      }
      frontier = next;
    }
  }
}

function selectOption(ctx: Ctx, type: TypeDef, text: string, why: string, depth: number): void {
  const items = splitTop(text, ",");
  if (items === undefined) {
    mentions(ctx, text, `${why} (unparsable)`);
    return;
  }
  for (const rawItem of items) {
    const item = trimName(ctx, rawItem);
    if (item === "") continue;
    const call = splitCall(item);
    if (call === undefined) {
      mentions(ctx, item, `${why} (unparsable item)`);
      continue;
    }
    const reached = walkItem(ctx, type, call.name.split("/"), why);
    if (!reached.ok) continue;
    if (call.args !== undefined && !nestedOptions(ctx, reached.type, call.args, `${why} ${call.name}(…)`, depth)) {
      mentions(ctx, call.args, `${why} (unparsable nested options)`);
    }
  }
}

/** Applies system query options at `type` (the entity type the resource path reached). */
function applyOptions(ctx: Ctx, type: TypeDef | undefined, options: readonly [string, string][], why: string, depth: number, nested: boolean): void {
  for (const [rawName, value] of options) {
    const name = canonical(ctx, rawName);
    if (!SYSTEM_OPTIONS.has(name)) continue;
    const label = `${nested ? `${why} ` : ""}$${name}`;
    if (name === "apply") {
      ctx.out.anything.push(`${label}: $apply can reach any entity set`);
      continue;
    }
    if (type === undefined) {
      if (["expand", "select", "filter", "orderby", "compute"].includes(name)) mentions(ctx, value, `${label} (no entity type here)`, name === "expand");
      continue;
    }
    switch (name) {
      case "expand":
        expandOption(ctx, type, value, label, depth);
        break;
      case "select":
        selectOption(ctx, type, value, label, depth);
        break;
      case "filter":
      case "orderby":
      case "compute":
      case "search":
        if (name !== "search") expression(ctx, type, value, label, 0);
        break;
      case "id":
        idOption(ctx, value, label);
        break;
    }
  }
}

/** `$id=<url>` (a `$ref` delete or `$entity`): the entity it names is read. */
function idOption(ctx: Ctx, value: string, why: string): void {
  const path = value.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, "").split("?")[0]!;
  const segs = path.split("/").filter((s) => s !== "" && s !== "." && s !== "..");
  const first = segs.find((s) => ctx.svc.set(splitCall(s)?.name ?? "") !== undefined);
  if (first === undefined) {
    mentions(ctx, value, `${why} (unresolved)`);
    return;
  }
  ctx.out.add(ctx.svc.set(splitCall(first)!.name)!, "get", why);
  mentions(ctx, segs.slice(segs.indexOf(first) + 1).join("/"), why);
}

/** Checks a key predicate's syntax (quotes balanced, `name=value` pairs or one value). */
function keyOk(args: string): boolean {
  const parts = splitTop(args, ",");
  if (parts === undefined) return false;
  return parts.every((p) => trimAll(p) !== "");
}

type Shape = "collection" | "entity" | "property" | "count" | "value" | "ref" | "function" | "action";

/** What the resource path addresses: its accesses go to `ctx.out`; returns the entity type the options apply to. */
interface PathResult {
  readonly type: TypeDef | undefined;
  readonly bodyType?: TypeDef | undefined;
  /** Whether a body is an entity (or complex value) whose nested entities and binds count. */
  readonly entityBody?: boolean;
  readonly batch: boolean;
  readonly metadata: boolean;
}

/**
 * `onType` (SAP CAP's reading) learns the entity type each resolved segment
 * (the entity set, a navigation, a cast) reaches, by its index among the
 * non-empty segments, to read the segment's key predicate there.
 */
function resourcePath(ctx: Ctx, segs: readonly string[], headers: ReceivedRequest["headers"], body: Buffer, why: string, onType?: (index: number, type: TypeDef) => void): PathResult {
  const svc = ctx.svc;
  const parts = segs.filter((s, i) => s !== "" || i === 0).map((s) => (ctx.trimNames ? trimAll(s) : s));
  if (parts.length === 0 || (parts.length === 1 && parts[0] === "")) {
    if (ctx.methods.some((m) => m !== "GET" && m !== "HEAD")) mentions(ctx, body.toString("latin1"), `${why}: write to the service document`, false, true);
    return { type: undefined, batch: false, metadata: true };
  }
  const rest = parts.filter((s) => s !== "");
  const first = rest[0]!;
  if (first.toLowerCase() === "$metadata") {
    if (rest.length > 1) mentions(ctx, rest.slice(1).join("/"), `${why} after $metadata`, false, true);
    return { type: undefined, batch: false, metadata: true };
  }
  if (first.toLowerCase() === "$batch") {
    if (rest.length > 1) mentions(ctx, rest.slice(1).join("/"), `${why} after $batch`, false, true);
    return { type: undefined, batch: true, metadata: false };
  }
  const call = splitCall(first);
  const set = call === undefined ? undefined : svc.set(call.name);
  // An import (an unbound function or action) called by its name: its grant, and what it returns.
  const imported = call !== undefined && set === undefined ? svc.importOf(call.name) : undefined;
  if (imported !== undefined) {
    operationTouches(ctx, imported, undefined, false, why);
    if (rest.length > 1) mentions(ctx, rest.slice(1).join("/"), `${why} after operation '${imported.name}'`, false, true);
    return { type: undefined, batch: false, metadata: false };
  }
  if (call === undefined || set === undefined || (call.args !== undefined && !keyOk(call.args))) {
    mentions(ctx, rest.join("/"), `${why} (unresolved first segment)`, false, true);
    return { type: undefined, entityBody: true, batch: false, metadata: false };
  }
  const hops: string[] = [set];
  let type = svc.typeOfSet(set)!;
  onType?.(0, type);
  let shape: Shape = call.args === undefined ? "collection" : "entity";
  let optionsType: TypeDef | undefined = type;
  let links = false;
  let lastIsComplex = false;
  let unresolved: string | undefined;
  /** The navigation the last hop was reached through (what a `$ref` or `$links` changes). */
  let via: NavDef | undefined;
  for (let i = 1; i < rest.length && unresolved === undefined; i++) {
    const seg = rest[i]!;
    const lower = seg.toLowerCase();
    if (shape === "count" || shape === "value" || shape === "ref" || shape === "function" || shape === "action") {
      unresolved = rest.slice(i).join("/");
      break;
    }
    if (lower === "$count") {
      shape = "count";
      continue;
    }
    if (lower === "$value") {
      shape = "value";
      continue;
    }
    if (lower === "$ref") {
      shape = "ref";
      continue;
    }
    if (lower === "$links") {
      links = true;
      continue;
    }
    if (seg.startsWith("$")) {
      ctx.out.anything.push(`${why}: path segment '${seg.slice(0, 40)}'`);
      unresolved = rest.slice(i).join("/");
      break;
    }
    const c = splitCall(seg);
    if (c === undefined) {
      unresolved = rest.slice(i).join("/");
      break;
    }
    const q = svc.qualified(type, c.name);
    // Parameters in parentheses (`()` too) are an operation's; anything else takes a key predicate.
    if (c.args !== undefined && !keyOk(c.args) && !(q !== undefined && q.kind !== "cast") && svc.unqualified(type, c.name) === undefined) {
      unresolved = rest.slice(i).join("/");
      break;
    }
    if (q !== undefined) {
      if (q.kind === "cast") {
        type = q.type;
        onType?.(i, type);
        optionsType = type;
        if (c.args !== undefined) shape = "entity";
        continue;
      }
      operationTouches(ctx, q.op, hops[hops.length - 1]!, q.collection || shape === "collection", why);
      shape = q.kind;
      continue;
    }
    // A bound operation named without its namespace (OData 4.01): the same call.
    const unqualified = svc.member(type, c.name) === undefined ? svc.unqualified(type, c.name) : undefined;
    if (unqualified !== undefined) {
      operationTouches(ctx, unqualified, hops[hops.length - 1]!, unqualified.collection === true || shape === "collection", why);
      shape = unqualified.kind;
      continue;
    }
    if (shape === "collection" && !links) {
      // Key as segment: one entity of the same set. A name here is not valid
      // OData; if it names a navigation, a lenient back end might follow it.
      if (svc.member(type, c.name)?.kind === "nav") mentions(ctx, seg, `${why}: navigation name after a collection`, false, true);
      shape = "entity";
      continue;
    }
    const m = svc.member(type, c.name);
    if (m === undefined) {
      unresolved = rest.slice(i).join("/");
      break;
    }
    if (m.kind === "prop") {
      shape = "property";
      optionsType = type;
      lastIsComplex = m.prop === "address";
      if (m.prop === "address") continue;
      // A primitive property: only $value may follow.
      const nextSeg = rest[i + 1];
      if (nextSeg !== undefined && nextSeg.toLowerCase() !== "$value") {
        unresolved = rest.slice(i + 1).join("/");
        break;
      }
      continue;
    }
    hops.push(m.nav.target);
    via = m.nav;
    type = svc.types.get(m.nav.type) ?? type;
    onType?.(i, type);
    optionsType = type;
    shape = m.nav.many && c.args === undefined ? "collection" : "entity";
    if (links) {
      links = false;
      shape = "ref";
    }
  }
  if (unresolved !== undefined) mentions(ctx, unresolved, `${why} (unresolved path)`, false, true);
  for (let h = 0; h < hops.length - 1; h++) ctx.out.add(hops[h]!, "get", `${why}: navigated through`);
  const target = hops[hops.length - 1]!;
  const source = hops.length > 1 ? hops[hops.length - 2] : undefined;
  const ifMatch = headers["if-match"];
  const hasIfMatch = ifMatch !== undefined && String(ifMatch).trim() !== "";
  // An update is answered with what it changed (a read), unless the request asks for no answer.
  const minimal = /\breturn\s*=\s*minimal\b/i.test(String(headers.prefer ?? ""));
  const composition = via?.composition === true;
  for (const method of ctx.methods) {
    const add = (op: string, what = target) => ctx.out.add(what, op, `${why}: ${method} ${shape}`);
    if (method === "GET" || method === "HEAD") {
      // A read never invokes an action (back ends refuse GET on one): it reads at most.
      if (shape === "ref" && source !== undefined) {
        // Reading links: a back end may read every entity of both sets (SAP's mock server does).
        add("list", source);
        add("list");
      } else if (shape === "collection" || shape === "count") add("list");
      else if (shape !== "function") add("get");
      continue;
    }
    if (shape === "ref") {
      if (method === "DELETE") {
        // Removing a link: a back end may delete its source (SAP's mock server does), and a composition's child (CAP does).
        if (source !== undefined) add("delete", source);
        if (composition) {
          add("delete");
          cascades(ctx, type, why, method);
          continue;
        }
      }
      if (source !== undefined) add("update", source);
      add("get");
      // A link to a composition may insert a child instead.
      if (composition) add("create");
      if (method === "PUT" || method === "POST" || method === "PATCH") {
        mentions(ctx, body.toString("utf8"), `${why}: link target in the body`, false, true);
        linkTarget(ctx, body, `${why}: link target in the body`);
      }
      continue;
    }
    if (shape === "function" || shape === "action") continue;
    if (shape === "property" || shape === "value") {
      add("update");
      if (shape === "property" && (method === "PUT" || method === "PATCH" || method === "MERGE") && !minimal) add("get");
      continue;
    }
    if (shape === "count") {
      add("list");
      for (const op of writeOps(method)) add(op);
      continue;
    }
    switch (method) {
      case "POST":
        add(shape === "collection" ? "create" : "update");
        break;
      case "PUT":
      case "PATCH":
        add("update");
        if (shape === "collection" || !hasIfMatch) add("create");
        if (!minimal) add("get");
        break;
      case "MERGE":
        add("update");
        if (!minimal) add("get");
        break;
      case "DELETE":
        add("delete");
        cascades(ctx, type, why, method);
        break;
      default:
        for (const op of writeOps(method)) add(op);
    }
  }
  return {
    type: shape === "function" || shape === "action" ? undefined : optionsType,
    // Only an entity, a collection (create) or a complex property takes an entity-like body; a
    // primitive value, `$value`, a count, a link or an operation's parameters do not name entities.
    // Where the path could not be resolved, the body is read without a type (every structured member a mention).
    bodyType: unresolved === undefined && (shape === "entity" || shape === "collection" || (shape === "property" && lastIsComplex)) ? optionsType : undefined,
    entityBody: unresolved !== undefined || shape === "entity" || shape === "collection" || (shape === "property" && lastIsComplex),
    batch: false,
    metadata: false,
  };
}

/**
 * A call of an operation: its grant (`invoke`, by the name a key is granted
 * it by), a read of what it is bound to (`list` for a collection), and a
 * read of every entity set its result lies in. What it does beside (an
 * action's writes, a function's reads) is the operation's: its grant covers
 * it.
 */
function operationTouches(ctx: Ctx, op: OpDef, binding: string | undefined, collection: boolean, why: string): void {
  const label = `${why}: calls ${ctx.svc.grantOf(op)}`;
  ctx.out.add(ctx.svc.grantOf(op), "invoke", label);
  if (binding !== undefined) ctx.out.add(binding, collection ? "list" : "get", `${label} (its binding)`);
  const r = op.returns;
  if (r !== undefined && "set" in r) ctx.out.add(r.set, r.many ? "list" : "get", `${label} (its result)`);
}

/** What deleting an entity of `type` deletes too: the entities of its compositions, and theirs. */
function cascades(ctx: Ctx, type: TypeDef, why: string, method: string, seen = new Set<string>()): void {
  if (seen.has(type.name)) return;
  seen.add(type.name);
  for (const [name, nav] of Object.entries(ctx.svc.members(type).navs)) {
    if (nav.composition !== true) continue;
    ctx.out.add(nav.target, "delete", `${why}: ${method} cascades to ${name}`);
    const t = ctx.svc.types.get(nav.type);
    if (t !== undefined) cascades(ctx, t, why, method, seen);
  }
}

/** What a JSON (or other) entity body asks for beyond the resource path: deep inserts and binds. */
function entityBody(ctx: Ctx, type: TypeDef | undefined, body: Buffer, why: string): void {
  if (body.length === 0) return;
  const text = body.toString("utf8").replace(/^\ufeff/, "");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // Not JSON: whatever names it holds may be read by a lenient back end (Atom, XML).
    if (/<|\{/.test(text)) mentions(ctx, text, `${why} (non-JSON body)`, false, true);
    return;
  }
  const update = ctx.methods.some((m) => m === "PUT" || m === "PATCH" || m === "MERGE");
  // Relative URLs anywhere in the body are read against its context URL, if it has one.
  const base = baseOf(ctx, value);
  const walk = (v: unknown, at: TypeDef | undefined, depth: number): void => {
    if (depth > 40) {
      mentions(ctx, JSON.stringify(v), `${why} (deep body)`, false, true);
      return;
    }
    if (Array.isArray(v)) {
      for (const item of v) walk(item, at, depth + 1);
      return;
    }
    if (v === null || typeof v !== "object") return;
    for (const [key, member] of Object.entries(v as Record<string, unknown>)) {
      const bind = /^(.*)@(?:odata\.)?bind$/i.exec(key);
      if (bind) {
        const nav = at === undefined ? undefined : ctx.svc.member(at, bind[1]!);
        if (nav?.kind === "nav") {
          const composition = nav.nav.composition === true;
          if (member === null) {
            // Unbound: a composition's child goes with the link.
            if (update) ctx.out.add(nav.nav.target, composition ? "delete" : "get", `${why}: bind ${key} (null)`);
          } else {
            ctx.out.add(nav.nav.target, "get", `${why}: bind ${key}`);
            // A composition's children belong to it: a back end may insert one rather than link what the URL names,
            // and binding a single-valued one in an update replaces (deletes) the child it held.
            if (composition) ctx.out.add(nav.nav.target, "create", `${why}: bind ${key} (a composition)`);
            if (composition && update && !nav.nav.many) ctx.out.add(nav.nav.target, "delete", `${why}: bind ${key} (replaces a composition's child)`);
          }
        } else mentions(ctx, bind[1]!, `${why}: bind ${key}`, false, true);
        for (const ref of Array.isArray(member) ? member : [member]) if (typeof ref === "string") referenceUrl(ctx, ref, `${why}: bind ${key}`, base);
        continue;
      }
      if (/^@(odata\.)?id$/i.test(key) && typeof member === "string") {
        // V4 control information means nothing in a V2 payload: a V2 back end ignores it (SAP CAP's V2 adapter and
        // SAP's mock server do), the object is an entity (see `linkOf`).
        if (ctx.svc.version === "4.0") referenceUrl(ctx, member, `${why}: ${key}`, base);
        continue;
      }
      if (key === "__metadata" && member !== null && typeof member === "object") {
        const uri = (member as Record<string, unknown>).uri;
        if (typeof uri === "string") referenceUrl(ctx, uri, `${why}: __metadata.uri`, base);
        continue;
      }
      if (key.includes("@")) continue;
      const m = at === undefined ? undefined : ctx.svc.member(at, key);
      if (m?.kind === "nav" && (member === null || typeof member === "object")) {
        const composition = m.nav.composition === true;
        if (member === null) {
          // The related entity is unlinked in an update; a composition's child is deleted with it.
          if (update) ctx.out.add(m.nav.target, composition ? "delete" : "get", `${why}: ${m.name} set to null`);
          continue;
        }
        let items: unknown[];
        let replaces = false;
        if (Array.isArray(member)) {
          items = member;
          replaces = true;
        } else if (ctx.svc.version === "2.0" && m.nav.many && Array.isArray((member as Record<string, unknown>).results)) {
          // V2's collection wrapper.
          items = (member as Record<string, unknown[]>).results!;
          replaces = true;
        } else {
          items = [member];
        }
        // In an update a collection is the whole related set (the others are unlinked), and a single-valued
        // composition's child is replaced: a composition's children left out are deleted.
        if (update && (replaces || (composition && !m.nav.many))) ctx.out.add(m.nav.target, composition ? "delete" : "get", `${why}: ${m.name} replaced`);
        for (const item of items) {
          // An entity reference (OData 4.01 §11.4.2.2; V2 `__metadata` with only a `uri`, `__deferred`) links the entity it names.
          const link = linkOf(ctx.svc.version, item);
          if (link !== undefined) {
            ctx.out.add(m.nav.target, "get", `${why}: link ${m.name}`);
            // In a composition a reference is no link: a back end may ignore it and insert a new child (CAP does).
            if (composition) ctx.out.add(m.nav.target, "create", `${why}: link ${m.name} (a composition)`);
            if (link !== "") referenceUrl(ctx, link, `${why}: link ${m.name}`, base);
            continue;
          }
          ctx.out.add(m.nav.target, "create", `${why}: nested ${m.name}`);
          // A nested entity in an update, or one that names an existing entity besides its data, may update it.
          if (update || idOf(ctx.svc.version, item) !== undefined) ctx.out.add(m.nav.target, "update", `${why}: nested ${m.name}`);
          walk(item, ctx.svc.types.get(m.nav.type), depth + 1);
        }
        continue;
      }
      if (m === undefined && member !== null && typeof member === "object") {
        // Unknown member holding structure: a name the model knows elsewhere may still be followed.
        mentions(ctx, key, `${why}: unknown member`, false, true);
        walk(member, undefined, depth + 1);
      }
    }
  };
  walk(value, type, 0);
}

// ---------------------------------------------------------------- URLs in bodies

/** The id a nested object names an existing entity by (V4 `@odata.id`/`@id`, V2 `__metadata.uri`), if any. */
function idOf(version: Version, item: unknown): string | undefined {
  if (item === null || typeof item !== "object" || Array.isArray(item)) return undefined;
  const o = item as Record<string, unknown>;
  if (version === "2.0") {
    const metadata = o.__metadata;
    const uri = metadata !== null && typeof metadata === "object" ? (metadata as Record<string, unknown>).uri : undefined;
    return typeof uri === "string" ? uri : undefined;
  }
  const id = o["@odata.id"] ?? o["@id"];
  return typeof id === "string" ? id : undefined;
}

/**
 * The URL of an entity reference nested under a navigation: in V4 an object
 * with `@odata.id` or `@id` (spelled so) and nothing but instance
 * annotations; in V2 one with only `__metadata` holding only `uri`, or only
 * `__deferred` ("": it names no entity). Undefined for anything else (an
 * entity, created).
 */
function linkOf(version: Version, item: unknown): string | undefined {
  if (item === null || typeof item !== "object" || Array.isArray(item)) return undefined;
  const o = item as Record<string, unknown>;
  const keys = Object.keys(o);
  if (version === "2.0") {
    if (keys.length === 1 && keys[0] === "__deferred") return "";
    const metadata = o.__metadata;
    if (keys.length !== 1 || metadata === null || typeof metadata !== "object" || Array.isArray(metadata)) return undefined;
    const inner = Object.keys(metadata);
    const uri = (metadata as Record<string, unknown>).uri;
    return inner.length === 1 && typeof uri === "string" ? uri : undefined;
  }
  const ids = keys.filter((k) => k === "@odata.id" || k === "@id");
  if (ids.length !== 1 || !keys.every((k) => k.startsWith("@"))) return undefined;
  const id = o[ids[0]!];
  return typeof id === "string" ? id : undefined;
}

/**
 * The parts of a URI reference (RFC 3986 Appendix B); a component that is
 * absent is undefined (an empty one is "").
 */
export interface UriParts {
  readonly scheme?: string;
  readonly authority?: string;
  readonly path: string;
  readonly query?: string;
  readonly fragment?: string;
}

/** Splits a URI reference by RFC 3986 Appendix B's regular expression. */
export function parseUriReference(ref: string): UriParts {
  const m = /^(?:([^:/?#]+):)?(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#([\s\S]*))?$/.exec(ref)!;
  return {
    ...(m[1] !== undefined ? { scheme: m[1] } : {}),
    ...(m[2] !== undefined ? { authority: m[2] } : {}),
    path: m[3] ?? "",
    ...(m[4] !== undefined ? { query: m[4] } : {}),
    ...(m[5] !== undefined ? { fragment: m[5] } : {}),
  };
}

/**
 * RFC 3986 §5.2.4 remove_dot_segments, the input-buffer algorithm as the RFC
 * writes it (steps A to E), on any path (relative ones too).
 */
export function rfc3986RemoveDotSegments(path: string): string {
  let input = path;
  let output = "";
  const dropLast = () => {
    const slash = output.lastIndexOf("/");
    output = slash < 0 ? "" : output.slice(0, slash);
  };
  while (input !== "") {
    if (input.startsWith("../")) input = input.slice(3);
    else if (input.startsWith("./")) input = input.slice(2);
    else if (input.startsWith("/./")) input = input.slice(2);
    else if (input === "/.") input = "/";
    else if (input.startsWith("/../")) {
      input = input.slice(3);
      dropLast();
    } else if (input === "/..") {
      input = "/";
      dropLast();
    } else if (input === "." || input === "..") input = "";
    else {
      const next = input.indexOf("/", input.startsWith("/") ? 1 : 0);
      const seg = next < 0 ? input : input.slice(0, next);
      output += seg;
      input = input.slice(seg.length);
    }
  }
  return output;
}

/**
 * RFC 3986 §5.2.2 (strict: a scheme in the reference is always its own):
 * the target of reference `ref` against the absolute URI `base`, without
 * its fragment.
 */
export function rfc3986Resolve(base: string, ref: string): UriParts {
  const b = parseUriReference(base);
  const r = parseUriReference(ref);
  const query = r.query !== undefined ? { query: r.query } : {};
  if (r.scheme !== undefined) {
    return { scheme: r.scheme, ...(r.authority !== undefined ? { authority: r.authority } : {}), path: rfc3986RemoveDotSegments(r.path), ...query };
  }
  const scheme = b.scheme !== undefined ? { scheme: b.scheme } : {};
  if (r.authority !== undefined) return { ...scheme, authority: r.authority, path: rfc3986RemoveDotSegments(r.path), ...query };
  const authority = b.authority !== undefined ? { authority: b.authority } : {};
  if (r.path === "") return { ...scheme, ...authority, path: b.path, ...(r.query !== undefined ? query : b.query !== undefined ? { query: b.query } : {}) };
  if (r.path.startsWith("/")) return { ...scheme, ...authority, path: rfc3986RemoveDotSegments(r.path), ...query };
  // §5.2.3 merge.
  const merged = b.authority !== undefined && b.path === "" ? `/${r.path}` : `${b.path.slice(0, b.path.lastIndexOf("/") + 1)}${r.path}`;
  return { ...scheme, ...authority, path: rfc3986RemoveDotSegments(merged), ...query };
}

/** A URI from its parts (RFC 3986 §5.3), without a fragment. */
export function recompose(t: UriParts): string {
  return `${t.scheme !== undefined ? `${t.scheme}:` : ""}${t.authority !== undefined ? `//${t.authority}` : ""}${t.path}${t.query !== undefined ? `?${t.query}` : ""}`;
}

/** A URL as the `lenient` reading takes it: decoded once, backslashes as slashes, and (in the path only) a dot segment's matrix parameters dropped (`..;x=1` is `..`, as servlet containers read it). */
function lenientText(text: string): string {
  const r = parseUriReference(percentDecode(text).replaceAll("\\", "/"));
  const path = r.path
    .split("/")
    .map((seg) => (/^\.\.?;/.test(seg) ? seg.slice(0, seg.indexOf(";")) : seg))
    .join("/");
  return recompose({ ...r, path });
}

/** The base of relative URLs in a body without `@odata.context`: the service root (with its trailing `/`). */
function defaultBase(rootUrlPath: string): string {
  return `http://upstream.invalid${rootUrlPath}/`;
}

/**
 * The base of relative URLs in a body whose `@odata.context` is `context`
 * (OData JSON Format §4.6: relative URLs are relative to the context URL),
 * as each interpretation resolves the context URL against the service root;
 * `decodefirst` resolves nothing and keeps the root. Undefined when the
 * reading cannot parse it.
 */
export function bodyUrlBase(interpretation: string, rootUrlPath: string, context: string): string | undefined {
  const base = defaultBase(rootUrlPath);
  switch (interpretation) {
    case "whatwg":
      try {
        return new URL(context, base).href;
      } catch {
        return undefined;
      }
    case "legacy":
      try {
        return url.resolve(base, context);
      } catch {
        return undefined;
      }
    case "lenient":
      return recompose(rfc3986Resolve(base, lenientText(context)));
    case "double":
      return recompose(rfc3986Resolve(base, lenientText(percentDecode(context))));
    case "decodefirst":
      return base;
    default:
      return recompose(rfc3986Resolve(base, context));
  }
}

/** What one reading makes of a URL in a body: decoded path segments (absolute, from the upstream's `/`) and the query, if any. */
interface BodyUrlReading {
  readonly segments: readonly string[];
  readonly query?: string;
}

/** Decoded segments of an absolute path (`/a/b` -> `a`, `b`); a path without a leading `/` is read below the service root. */
function absoluteSegments(rootUrlPath: string, path: string, decode: (s: string) => string): string[] {
  const abs = path.startsWith("/") ? path : `${rootUrlPath}/${path}`;
  return abs.split("/").slice(1).map(decode);
}

/**
 * How each interpretation resolves a URL written in a body (`Nav@odata.bind`,
 * `@odata.id`, V2 `__metadata.uri`, `@odata.context`) against the service
 * root (`<root>/`, where relative URLs in OData payloads are read): written
 * here from the standards, never with erplink's resolver.
 * - `whatwg`: `new URL(ref, base)` (dot segments and `%2e` removed, `\` a
 *   slash in special schemes, fragment cut; a non-special scheme's opaque
 *   path is read below the root);
 * - `legacy`: Node's `url.resolve` then `url.parse`;
 * - `lenient`: the URL percent-decoded once (`%2F` splits, `%2e%2e` is a
 *   dot segment, `%23` a fragment), `\` read as `/`, a dot segment with
 *   matrix parameters (`..;x=1`, as servlet containers read it) a dot
 *   segment, then RFC 3986 §5.2 reference resolution (below, our own);
 * - `decodefirst`: decoded once, scheme and authority dropped, cut at `?`,
 *   split at `/`, dot segments left as segments (a back end that resolves
 *   nothing: the first entity set written is the one read);
 * - `capgrammar`: strict RFC 3986 §5.2 resolution of the URL as written,
 *   segments decoded after (`%2e%2e` is a name there, not a dot segment).
 *   (SAP CAP itself reads only the key predicate of a bind: `odataBind.js`
 *   drops everything up to the first `(`, so it reaches the navigation's
 *   target, which the bind already counts; it stands here for a strict
 *   RFC 3986 reader.)
 * - `double`: `lenient` after one more decoding.
 * Undefined when the reading cannot parse the URL at all.
 */
export function readBodyUrl(interpretation: string, rootUrlPath: string, ref: string, base = defaultBase(rootUrlPath)): BodyUrlReading | undefined {
  const rfc = (text: string, decode: (s: string) => string): BodyUrlReading => {
    const t = rfc3986Resolve(base, text);
    return { segments: absoluteSegments(rootUrlPath, t.path, decode), ...(t.query !== undefined ? { query: t.query } : {}) };
  };
  switch (interpretation) {
    case "whatwg": {
      let u: URL;
      try {
        u = new URL(ref, base);
      } catch {
        return undefined;
      }
      return { segments: absoluteSegments(rootUrlPath, u.pathname, percentDecode), ...(u.search !== "" ? { query: u.search.slice(1) } : {}) };
    }
    case "legacy": {
      let p: url.UrlWithStringQuery;
      try {
        p = url.parse(url.resolve(base, ref));
      } catch {
        return undefined;
      }
      return { segments: absoluteSegments(rootUrlPath, p.pathname ?? "", safeUnescape), ...(p.query ? { query: p.query } : {}) };
    }
    case "lenient":
      return rfc(lenientText(ref), (s) => s);
    case "double":
      return rfc(lenientText(percentDecode(ref)), (s) => s);
    case "decodefirst": {
      const decoded = percentDecode(ref).replace(/^[A-Za-z][A-Za-z0-9+.-]*:/, "").replace(/^\/\/[^/?]*/, "");
      const q = decoded.indexOf("?");
      return { segments: absoluteSegments(rootUrlPath, q < 0 ? decoded : decoded.slice(0, q), (s) => s), ...(q >= 0 ? { query: decoded.slice(q + 1) } : {}) };
    }
    default:
      return rfc(ref, percentDecode);
  }
}

/** Every service root a URL may name: on the upstream (`/svc/v4/sales`) and on erplink (`/odata/prod/SALES`), as segments, longest first. */
function knownRoots(universe: Universe): { segments: string[]; service: string; path: string }[] {
  const out: { segments: string[]; service: string; path: string }[] = [];
  for (const instance of universe.instances) {
    for (const service of Object.keys(instance.services)) {
      for (const path of [rootPath(instance, service), `/odata/${instance.name}/${service}`]) out.push({ segments: path.split("/").slice(1), service, path });
    }
  }
  return out.sort((a, b) => b.segments.length - a.segments.length);
}

/**
 * Where a resolved URL in a body points: below a root of this service (any
 * instance: the key's grants are per service), the path after it is walked
 * as a resource path of reads; below another service's root, an escape;
 * below no root the universe knows, from its first segment that names an
 * entity set (a back end may strip whatever prefix it does not know), else
 * every name in it is mentioned.
 */
function placeBodyUrl(ctx: Ctx, read: BodyUrlReading, ref: string, why: string): void {
  const segs = read.segments;
  const root = knownRoots(ctx.universe).find((r) => r.segments.length <= segs.length && r.segments.every((s, i) => segs[i]!.toLowerCase() === s.toLowerCase()));
  if (root !== undefined && root.service !== ctx.svc.def.name) {
    ctx.out.escapes.push({ where: "body", message: `${why}: ${JSON.stringify(ref.slice(0, 200))} names ${root.path}/, the root of ${root.service}` });
    return;
  }
  let rest: readonly string[];
  if (root !== undefined) {
    rest = segs.slice(root.segments.length);
  } else {
    const at = segs.findIndex((s) => ctx.svc.set(splitCall(s)?.name ?? "") !== undefined);
    if (at < 0) {
      mentions(ctx, segs.join("/"), `${why} (under no root)`);
      return;
    }
    rest = segs.slice(at);
  }
  // A query in a reference asks for nothing a reader should do; what it names may still be read.
  if (read.query !== undefined && read.query !== "") mentions(ctx, read.query, `${why} (query)`);
  if (rest.every((s) => s === "")) return;
  // The entity it names is read: the path walked as a GET would walk it (sets passed through read too).
  const reads: Ctx = { ...ctx, methods: ["GET"] };
  resourcePath(reads, rest.length > 0 && rest[0] === "" ? rest.slice(1) : rest, {}, Buffer.alloc(0), `${why} ->`);
}

/**
 * A URL inside a body (bind, `@odata.id`, V2 `__metadata.uri`): the entity
 * it names is read, where this interpretation resolves it. In a batch part,
 * `$<id>` stands for that earlier part's path; an unknown `$<id>` names
 * nothing a back end can resolve.
 */
function referenceUrl(ctx: Ctx, ref: string, why: string, base: string): void {
  let u = ref;
  const contentId = /^\$([A-Za-z0-9\-._~]+)(.*)$/s.exec(u);
  if (contentId) {
    const path = ctx.bodyRefs.get(contentId[1]!);
    if (path === undefined) return;
    u = `${path}${contentId[2]}`;
  }
  const read = readBodyUrl(ctx.interpretation, ctx.rootUrlPath, u, base);
  // This reading's parser refuses the URL: a back end that reads it so cannot act on it (as for request targets).
  if (read === undefined) return;
  placeBodyUrl(ctx, read, ref, why);
}

/**
 * The base of the relative URLs of a JSON body (an object with a string
 * `@odata.context` or `@context`: relative URLs are read against it), as
 * this interpretation resolves it; the service root without one, or when
 * the reading cannot parse it (a back end may then ignore it).
 */
function baseOf(ctx: Ctx, value: unknown): string {
  const root = defaultBase(ctx.rootUrlPath);
  if (value === null || typeof value !== "object" || Array.isArray(value)) return root;
  const context = Object.entries(value as Record<string, unknown>).find(([k, v]) => /^@(odata\.)?context$/i.test(k) && typeof v === "string")?.[1] as string | undefined;
  return context === undefined ? root : (bodyUrlBase(ctx.interpretation, ctx.rootUrlPath, context) ?? root);
}

/** The body of a link change (`…/$ref`, V2 `$links`): the URL it names (`@odata.id`, `@id`, V2 `uri`) is read. */
function linkTarget(ctx: Ctx, body: Buffer, why: string): void {
  let value: unknown;
  try {
    value = JSON.parse(body.toString("utf8").replace(/^\ufeff/, ""));
  } catch {
    return;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return;
  for (const [key, member] of Object.entries(value as Record<string, unknown>)) {
    if (typeof member === "string" && (/^@(odata\.)?id$/i.test(key) || key === "uri")) referenceUrl(ctx, member, `${why} ${key}`, baseOf(ctx, value));
  }
}

/** The effective methods of a received request: its own and any tunnelled one (a back end may honour either). */
function methodsOf(method: string, headers: ReceivedRequest["headers"]): string[] {
  const out = new Set([method.toUpperCase()]);
  for (const h of ["x-http-method", "x-http-method-override", "x-method-override"]) {
    const v = headers[h];
    for (const one of Array.isArray(v) ? v : v === undefined ? [] : [v]) out.add(trimAll(one).toUpperCase());
  }
  return [...out];
}

// ---------------------------------------------------------------- batches

interface BatchPart {
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
  readonly id?: string;
}

/** Every request a lenient reader could find in a multipart batch: any request line anywhere, with the headers and body after it. */
function multipartParts(body: Buffer): BatchPart[] {
  const text = body.toString("latin1");
  const lines = text.split(/\r?\n/);
  const parts: BatchPart[] = [];
  let lastMimeId: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const idm = /^content-id\s*:\s*(.*)$/i.exec(lines[i]!);
    if (idm) lastMimeId = idm[1]!.trim();
    if (/^--/.test(lines[i]!)) lastMimeId = undefined;
    const m = /^\s*([A-Za-z]+)\s+(\S+)\s+HTTP\/\d(?:\.\d)?\s*$/.exec(lines[i]!);
    if (!m) continue;
    const headers: Record<string, string> = {};
    let j = i + 1;
    for (; j < lines.length && lines[j] !== ""; j++) {
      const colon = lines[j]!.indexOf(":");
      if (colon > 0) headers[lines[j]!.slice(0, colon).trim().toLowerCase()] = lines[j]!.slice(colon + 1).trim();
    }
    const bodyLines: string[] = [];
    for (j = j + 1; j < lines.length && !/^--/.test(lines[j]!); j++) bodyLines.push(lines[j]!);
    const id = headers["content-id"] ?? lastMimeId;
    parts.push({ method: m[1]!.toUpperCase(), url: m[2]!, headers, body: Buffer.from(bodyLines.join("\r\n").trim(), "latin1"), ...(id ? { id } : {}) });
  }
  return parts;
}

function jsonParts(body: Buffer): BatchPart[] | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString("utf8").replace(/^\ufeff/, ""));
  } catch {
    return undefined;
  }
  const requests = (doc as { requests?: unknown })?.requests;
  if (!Array.isArray(requests)) return undefined;
  const parts: BatchPart[] = [];
  for (const r of requests) {
    if (r === null || typeof r !== "object") continue;
    const o = r as Record<string, unknown>;
    const headers: Record<string, string> = {};
    if (o.headers !== null && typeof o.headers === "object") {
      for (const [k, v] of Object.entries(o.headers as Record<string, unknown>)) headers[k.toLowerCase()] = String(v);
    }
    const b = o.body === undefined || o.body === null ? "" : typeof o.body === "string" ? o.body : JSON.stringify(o.body);
    parts.push({
      method: String(o.method ?? "GET").toUpperCase(),
      url: String(o.url ?? ""),
      headers,
      body: Buffer.from(b, "utf8"),
      ...(typeof o.id === "string" ? { id: o.id } : {}),
    });
  }
  return parts;
}

/** Resolves a part URL against the service root under an interpretation; returns a request-target. */
function partTarget(interpretation: string, rootUrlPath: string, partUrl: string, refs: ReadonlyMap<string, string>): string {
  let u = partUrl;
  const ref = /^\$([A-Za-z0-9\-._~]+)(.*)$/.exec(u);
  if (ref && refs.has(ref[1]!)) u = `${refs.get(ref[1]!)}${ref[2]}`;
  const base = `http://upstream.invalid${rootUrlPath}/`;
  switch (interpretation) {
    case "whatwg":
      try {
        const r = new URL(u, base);
        return `${r.pathname}${r.search}`;
      } catch {
        return `${rootUrlPath}/${u}`;
      }
    case "legacy":
      try {
        const r = url.parse(url.resolve(base, u));
        return `${r.pathname ?? ""}${r.search ?? ""}`;
      } catch {
        return `${rootUrlPath}/${u}`;
      }
    default: {
      const abs = u.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, "");
      return abs.startsWith("/") ? abs : `${rootUrlPath}/${abs}`;
    }
  }
}

// ---------------------------------------------------------------- SAP CAP's grammar

const requireCjs = createRequire(import.meta.url);

interface CapOdata {
  parse(url: string, options: Record<string, unknown>): unknown;
}
let capOdataApi: CapOdata | undefined;

/**
 * `cds.odata` of the installed `@sap/cds`: `parse` is what CAP's OData
 * adapter runs on every request but `$batch` (libx/odata/middleware/parse.js):
 * it decodes the URL (`decodeURIComponent`, the URL as it was when that
 * throws) and runs the peggy parser (libx/odata/parse/parser.js) with CAP's
 * list of functions. Loading `@sap/cds` first matters: the parser reads the
 * global `cds` (for `cds.env.features`).
 */
function capOdata(): CapOdata {
  capOdataApi ??= (requireCjs("@sap/cds") as { odata: CapOdata }).odata;
  return capOdataApi;
}

/** CAP's own `cds.utils.decodeURIComponent`: the text as it was when it is not valid percent-encoded UTF-8. */
function capDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** The pathname Express routes on (`parseurl`): the target up to `?`, or `url.parse`'s pathname where parseurl falls back to it (white space, `#`, U+00A0, U+FEFF anywhere, or no leading `/`). */
function expressPathname(target: string): string | undefined {
  if (target.startsWith("/") && !/[\t\n\f\r #\u00a0\ufeff]/.test(target)) {
    const q = target.indexOf("?");
    return q < 0 ? target : target.slice(0, q);
  }
  try {
    return url.parse(target).pathname ?? undefined;
  } catch {
    return undefined;
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * Where Express (`app.use(root, …)`, as CAP mounts each service) sends a
 * target: the request URL the service's router sees (`req.url`, the target
 * after the mount path, with a leading `/`), or another root of the universe
 * it is mounted at, or neither.
 */
function capMount(universe: Universe, rootUrlPath: string, target: string): { url: string } | { elsewhere: string } | undefined {
  const pathname = expressPathname(target);
  if (pathname === undefined) return undefined;
  // path-to-regexp 0.1 with end: false, case-insensitive: the mount path, an optional '/', then '/' or the end.
  const mounted = (root: string) => new RegExp(`^${escapeRegExp(root)}\\/?(?=\\/|$)`, "i").exec(pathname);
  const m = mounted(rootUrlPath);
  if (m) {
    const rest = target.slice(m[0].length);
    return { url: rest.startsWith("/") ? rest : `/${rest}` };
  }
  for (const { instance, service } of universe.instances.flatMap((i) => Object.keys(i.services).map((service) => ({ instance: i, service })))) {
    const other = rootPath(instance, service);
    if (other !== rootUrlPath && mounted(other)) return { elsewhere: other };
  }
  return undefined;
}

/** Where the resource path of a decoded URL ends for CAP's grammar: at the first '?' outside the '…' literals of key predicates. */
function capPathEnd(decoded: string): number {
  let depth = 0;
  for (let i = 0; i < decoded.length; i++) {
    const c = decoded[i];
    if (c === "(") depth++;
    else if (c === ")") depth = Math.max(0, depth - 1);
    else if (c === "'" && depth > 0) {
      const close = literalEnd(decoded, i);
      if (close < 0) return decoded.length;
      i = close;
    } else if (c === "?" && depth === 0) return i;
  }
  return decoded.length;
}

type CqnObject = Record<string, unknown>;
const isObject = (v: unknown): v is CqnObject => v !== null && typeof v === "object" && !Array.isArray(v);
const asArray = (v: unknown): unknown[] => (Array.isArray(v) ? v : v === undefined || v === null ? [] : isObject(v) ? Object.values(v) : []);

/**
 * Resolves a CQN `ref` from `type`: every navigation crossed is read (a
 * segment's `where`, a lambda's body, an infix filter or a key, is read from
 * that navigation's target); returns the type reached when the path ends on
 * an entity (not a property), undefined when it ends on a property or meets
 * a name unknown at its place (CAP refuses that request: "Property … does
 * not exist"). A path that ends on a navigation as an operand of a
 * comparison (`compared`: `Customer eq null`, or a `$skiptoken`'s
 * condition) does not read that navigation's target: CAP compares the
 * foreign keys of a managed association, and refuses the rest ("An
 * association can't be used as a value", "… only with scalar operands").
 */
function capRef(ctx: Ctx, type: TypeDef, ref: readonly unknown[], why: string, depth: number, compared = false): TypeDef | undefined {
  let at = type;
  for (const [i, seg] of ref.entries()) {
    const name = typeof seg === "string" ? seg : isObject(seg) && typeof seg.id === "string" ? seg.id : undefined;
    if (name === undefined) return undefined;
    const where = isObject(seg) ? seg.where : undefined;
    const q = ctx.svc.qualified(at, name);
    if (q?.kind === "cast") {
      at = q.type;
      if (where !== undefined) capXpr(ctx, at, where, `${why} ${name}(…)`, depth + 1);
      continue;
    }
    if (q !== undefined) return undefined;
    const m = ctx.svc.member(at, name);
    let nav: { name: string; nav: NavDef } | undefined;
    if (m?.kind === "nav") nav = m;
    else if (m === undefined) {
      // A derived type's navigation without the cast: read as found (as the other readings do).
      const derived = ctx.svc.allNavs(at).find(([n]) => n.toLowerCase() === name.toLowerCase());
      if (derived !== undefined) nav = { name: derived[0], nav: derived[1] };
    }
    if (nav === undefined) {
      // A property (a lambda over a collection of primitives reads it with its own variable) or an unknown name.
      if (m?.kind === "prop" && where !== undefined) capXpr(ctx, at, where, `${why} ${name}(…)`, depth + 1);
      return undefined;
    }
    if (!(compared && i === ref.length - 1 && where === undefined)) ctx.out.add(nav.nav.target, nav.nav.many ? "list" : "get", `${why} ${nav.name}`);
    at = ctx.svc.types.get(nav.nav.type) ?? at;
    if (where !== undefined) capXpr(ctx, at, where, `${why} ${nav.name}(…)`, depth + 1);
  }
  return at;
}

/** CQN's comparison operators (what CAP makes of `eq`, `ne`, `lt`, `gt`, `le`, `ge`, `in`). */
const CAP_COMPARISONS = new Set(["=", "!=", "<>", "<", ">", "<=", ">=", "in", "like", "is", "==", "between"]);

/** An expression (`where`, `having`, `orderBy`, `groupBy`, function arguments, lists) at `type`: every `ref` in it resolved there. */
function capXpr(ctx: Ctx, type: TypeDef, x: unknown, why: string, depth: number): void {
  if (depth > 200) {
    ctx.out.anything.push(`${why}: nested too deep to follow`);
    return;
  }
  const items = Array.isArray(x) ? x : [x];
  for (const [i, e] of items.entries()) {
    if (Array.isArray(e)) {
      capXpr(ctx, type, e, why, depth + 1);
      continue;
    }
    if (!isObject(e)) continue;
    const compared = CAP_COMPARISONS.has(String(items[i - 1])) || CAP_COMPARISONS.has(String(items[i + 1]));
    if (Array.isArray(e.ref)) capRef(ctx, type, e.ref, why, depth, compared);
    if (e.xpr !== undefined) capXpr(ctx, type, e.xpr, why, depth + 1);
    if (e.args !== undefined) capXpr(ctx, type, asArray(e.args), why, depth + 1);
    if (Array.isArray(e.list)) capXpr(ctx, type, e.list, why, depth + 1);
    if (e.SELECT !== undefined) ctx.out.anything.push(`${why}: a subquery`);
  }
}

/** A column at `type`: `$select` paths, `$expand` (nested: `expand`, `where`, `orderBy` at the navigation's target), `*`, computed and aggregated values. */
function capColumn(ctx: Ctx, type: TypeDef, col: unknown, why: string, depth: number): void {
  if (!isObject(col)) return;
  if (depth > 200) {
    ctx.out.anything.push(`${why}: nested too deep to follow`);
    return;
  }
  if (col.ref === undefined && col.expand !== undefined) {
    // `$expand=*`: every navigation (a derived type's too).
    for (const [name, nav] of ctx.svc.allNavs(type)) ctx.out.add(nav.target, nav.many ? "list" : "get", `$expand (CAP) * -> ${name}`);
    return;
  }
  if (Array.isArray(col.ref)) {
    const label = why !== "" ? why : col.expand !== undefined ? "$expand (CAP)" : "$select (CAP)";
    const reached = capRef(ctx, type, col.ref, label, depth);
    if (reached === undefined) return;
    const inner = `$expand (CAP) ${col.ref.map((r) => (isObject(r) ? r.id : r)).join("/")}(…)`;
    for (const e of asArray(col.expand)) capColumn(ctx, reached, e, "", depth + 1);
    if (col.where !== undefined) capXpr(ctx, reached, col.where, `${inner} where`, depth + 1);
    if (col.orderBy !== undefined) capXpr(ctx, reached, col.orderBy, `${inner} orderBy`, depth + 1);
    if (col.having !== undefined) capXpr(ctx, reached, col.having, `${inner} having`, depth + 1);
    return;
  }
  capXpr(ctx, type, [col], why !== "" ? why : col.func !== undefined ? "$apply (CAP)" : "$compute (CAP)", depth + 1);
}

/** Every name a CQN's `ref`s hold (for options where no entity type is known), and whether it expands `*`. */
function capNames(x: unknown, names: string[], depth = 0): boolean {
  if (depth > 200) return false;
  let star = false;
  if (Array.isArray(x)) {
    for (const e of x) star = capNames(e, names, depth + 1) || star;
    return star;
  }
  if (!isObject(x)) return false;
  if (x.ref === undefined && x.expand !== undefined && x.func === undefined) star = true;
  for (const [k, v] of Object.entries(x)) {
    if (k === "ref" && Array.isArray(v)) {
      for (const seg of v) {
        if (typeof seg === "string") names.push(seg);
        else if (isObject(seg)) {
          if (typeof seg.id === "string") names.push(seg.id);
          star = capNames(seg.where, names, depth + 1) || star;
        }
      }
    } else if (k !== "val" && k !== "from" && typeof v === "object") star = capNames(v, names, depth + 1) || star;
  }
  return star;
}

/** A query's options at the type the resource path reached: `where`, `having`, `groupBy`, `orderBy`, `columns`; `from.SELECT` ($apply) too. */
function capSelect(ctx: Ctx, type: TypeDef | undefined, select: CqnObject, depth: number): void {
  if (isObject(select.from) && isObject(select.from.SELECT)) capSelect(ctx, type, select.from.SELECT, depth + 1);
  // Hierarchies ($apply ancestors/descendants/TopLevels) recurse through a parent navigation the model does not know.
  if (select.recurse !== undefined) ctx.out.anything.push("$apply (CAP): hierarchy recursion");
  if (type === undefined) {
    const names: string[] = [];
    const star = capNames({ ...select, from: undefined }, names);
    if (names.length > 0 || star) mentions(ctx, `${names.join(" ")}${star ? " *" : ""}`, "$expand/$filter/$select (CAP, no entity type here)", star);
    return;
  }
  if (select.where !== undefined) capXpr(ctx, type, select.where, "$filter (CAP where)", 0);
  if (select.having !== undefined) capXpr(ctx, type, select.having, "$apply (CAP having)", 0);
  if (select.groupBy !== undefined) capXpr(ctx, type, select.groupBy, "$apply (CAP groupBy)", 0);
  if (select.orderBy !== undefined) capXpr(ctx, type, select.orderBy, "$orderby (CAP orderBy)", 0);
  for (const col of asArray(select.columns)) capColumn(ctx, type, col, "", 0);
}

/**
 * The first stage of `capgrammar`: the request as a SAP CAP back end serving
 * this service reads it. Express's mount (case-insensitive, on the raw
 * pathname) gives the service's router `req.url`; `/`, `/$metadata` and
 * `/$batch…` are routed before parsing; every other URL goes through CAP's
 * own parser, whose CQN is walked against the model. A URL CAP's parser
 * refuses (400, 501) touches nothing.
 */
function capFront(universe: Universe, svc: ServiceView, rootUrlPath: string, req: ReceivedRequest, bodyRefs: ReadonlyMap<string, string>): Front {
  const nothing = { touches: [], anything: [], switches: [], escapes: [] };
  const mount = capMount(universe, rootUrlPath, req.target);
  if (mount === undefined) return { stop: { seen: "(Express routes it to no service)", ...nothing } };
  if ("elsewhere" in mount) {
    return { stop: { seen: `(Express routes it to ${mount.elsewhere})`, ...nothing, escapes: [{ where: "path", message: `Express routes the path to ${mount.elsewhere}/, not ${rootUrlPath}/` }] } };
  }
  const ctx: Ctx = { svc, out: new Collector(), methods: methodsOf(req.method, req.headers), aliases: new Map(), trimNames: false, universe, interpretation: "capgrammar", rootUrlPath, bodyRefs };
  const route = expressPathname(mount.url) ?? mount.url;
  const routed = (segs: string[]): Front => ({ seen: `routed ${JSON.stringify(mount.url)}`, switches: [], ctx, at: resourcePath(ctx, segs, req.headers, req.body, "resource path") });
  if (/^\/?$/.test(route)) return routed([""]);
  if (/^\/\$metadata\/?$/i.test(route)) return routed(["$metadata"]);
  // CAP's parse middleware passes over paths starting with '/$batch' (case-sensitive); its $batch route takes '/$batch' and '/$batch/'.
  if (route.startsWith("/$batch")) return routed(route.split("/").slice(1));
  const decoded = capDecode(mount.url);
  // Loaded outside the try: a CAP that cannot be loaded must fail the run, not read as a refusal.
  const odata = capOdata();
  let cqn: unknown;
  try {
    cqn = odata.parse(mount.url, { strict: true, minimal: true });
  } catch (e) {
    const err = e as Error;
    // A ReferenceError is a fault in how this reading loads CAP, not CAP's answer.
    if (err?.name === "ReferenceError") throw e;
    return { stop: { seen: `CAP refuses ${JSON.stringify(decoded)}: ${String(err?.message ?? e).slice(0, 200)}`, ...nothing } };
  }
  const queries = (Array.isArray(cqn) ? cqn : [cqn]).filter(isObject).map((q) => q.SELECT).filter(isObject);
  const seen = `CAP read ${JSON.stringify(decoded)} as ${JSON.stringify(cqn)}`;
  if (queries.length === 0) return { stop: { seen, ...nothing, anything: ["CAP's parser returned no query"] } };
  // The resource path: the innermost query's `from.ref` (an $apply nests queries).
  let inner = queries[0]!;
  while (isObject(inner.from) && isObject(inner.from.SELECT)) inner = inner.from.SELECT;
  const refs = isObject(inner.from) && Array.isArray(inner.from.ref) ? inner.from.ref : [];
  if (refs.length === 0 || refs[0] === "") return { stop: { seen, ...nothing } };
  // A first segment the grammar left as text with parentheses or quotes (a key predicate it could not read) names no
  // entity set: CAP answers 404 and touches nothing (a name unknown at its place reaches nothing).
  if (typeof refs[0] === "string" && /[()'"]/.test(refs[0])) return { stop: { seen: `${seen} (no entity set of that name)`, ...nothing } };
  // As segments for resourcePath: a plain name or key value as it is, a segment with parentheses as `name(…)`;
  // text that is neither (a key value with quotes or parentheses, an empty key) as a placeholder key.
  const segs: string[] = [];
  const keys: unknown[] = [];
  for (const r of refs) {
    if (typeof r === "string") {
      segs.push(r === "" || /[()'"]/.test(r) ? "_" : r);
      keys.push(undefined);
    } else if (isObject(r) && typeof r.id === "string") {
      const where = Array.isArray(r.where) ? r.where : [];
      segs.push(`${r.id}(${where.length > 0 ? "0" : ""})`);
      keys.push(where.length > 0 ? where : undefined);
    } else {
      return { stop: { seen, ...nothing, anything: [`resource path: a segment CAP's parser made of it is not understood: ${JSON.stringify(r)}`] } };
    }
  }
  // The path's $count becomes a count column, its $value disappears: both are read back.
  if (queries.some((q) => asArray(q.columns).some((c) => isObject(c) && c.as === "$count" && c.func === "count"))) segs.push("$count");
  if (/\/\$value[ \t\n]*$/.test(decoded.slice(0, capPathEnd(decoded)))) segs.push("$value");
  const at = resourcePath(ctx, segs, req.headers, req.body, "resource path", (i, type) => {
    if (keys[i] !== undefined) capXpr(ctx, type, keys[i], `resource path: key predicate of ${segs[i]} (CAP)`, 0);
  });
  for (const q of queries) capSelect(ctx, at.type, q, 0);
  return { seen, switches: [], ctx, at };
}

// ---------------------------------------------------------------- entry point

/** The upstream path of the service root a request was authorized for. */
export function rootPathOf(universe: Universe, root: RootOf): string {
  const instance = universe.instances.find((i) => i.name === root.instance);
  if (instance === undefined || instance.services[root.service] === undefined) throw new Error(`unknown service root ${root.instance}/${root.service}`);
  return rootPath(instance, root.service);
}

/** The service view of an authorized root. */
export function viewOf(universe: Universe, root: RootOf): ServiceView {
  const instance = universe.instances.find((i) => i.name === root.instance)!;
  return new ServiceView(universe.services[root.service]!, instance.services[root.service]!.version);
}

/**
 * Reads a received request under every interpretation: whether it stays
 * inside the root of the service it was authorized for, and what it
 * touches there.
 */
export function readRequest(universe: Universe, root: RootOf, req: ReceivedRequest): Reading[] {
  const rootUrlPath = rootPathOf(universe, root);
  const svc = viewOf(universe, root);
  const sapClient = universe.instances.find((i) => i.name === root.instance)?.sapClient;
  return interpretations().map((name) => readOne(universe, svc, rootUrlPath, name, req, 0, sapClient));
}

/** The first stage of the URL-parser readings (`whatwg`, `legacy`, `lenient`, `decodefirst`, `double`): segments and pairs, then the resource path and the options. */
function genericFront(
  universe: Universe,
  svc: ServiceView,
  rootUrlPath: string,
  name: string,
  req: ReceivedRequest,
  sapClient: string | undefined,
  bodyRefs: ReadonlyMap<string, string>,
): Front {
  const parsed = parseWith(name, req.target);
  const out = new Collector();
  if (parsed === undefined) return { stop: { seen: "(refused by this parser)", touches: [], anything: [], switches: [], escapes: [] } };
  const seen = `${JSON.stringify(parsed.segments)} ${JSON.stringify(parsed.pairs)}`;
  const rootSegs = rootUrlPath.split("/").slice(1);
  const inside = rootSegs.every((s, i) => parsed.segments[i] === s);
  if (!inside) return { stop: { seen, escapes: [{ where: "path", message: `the path leaves ${rootUrlPath}/` }], touches: [], anything: [], switches: [] } };
  // SAP's tenant, debug and session options, read as leniently as any back end might (trimmed, any case).
  const switches: string[] = [];
  for (const [n, v] of parsed.pairs) {
    const key = trimAll(n).toLowerCase();
    if (key === "sap-client" && sapClient !== undefined && trimAll(v) === sapClient) continue;
    if (key === "sap-client" || key === "sap-ds-debug" || key === "sap-contextid-accept") switches.push(`${key}=${v}`);
  }
  const aliases = new Map<string, string[]>();
  for (const [n, v] of parsed.pairs) {
    const key = (parsed.trimNames ? trimAll(n) : n).toLowerCase();
    if (key.startsWith("@")) aliases.set(key, [...(aliases.get(key) ?? []), v]);
  }
  const ctx: Ctx = { svc, out, methods: methodsOf(req.method, req.headers), aliases, trimNames: parsed.trimNames, universe, interpretation: name, rootUrlPath, bodyRefs };
  const resSegs = parsed.segments.slice(rootSegs.length);
  const at = resourcePath(ctx, resSegs, req.headers, req.body, "resource path");
  applyOptions(ctx, at.type, parsed.pairs, "", 0, false);
  return { seen, switches, ctx, at };
}

/** What the first stage of a reading made of a request: how it read the target and what the resource path addresses, or why it stops there. */
type Front =
  | { readonly stop: Omit<Reading, "interpretation"> }
  | { readonly seen: string; readonly switches: string[]; readonly ctx: Ctx; readonly at: PathResult };

function readOne(
  universe: Universe,
  svc: ServiceView,
  rootUrlPath: string,
  name: string,
  req: ReceivedRequest,
  depth: number,
  sapClient: string | undefined,
  bodyRefs: ReadonlyMap<string, string> = new Map(),
): Reading {
  const front = name === "capgrammar" ? capFront(universe, svc, rootUrlPath, req, bodyRefs) : genericFront(universe, svc, rootUrlPath, name, req, sapClient, bodyRefs);
  if ("stop" in front) return { interpretation: name, ...front.stop };
  const { seen, switches, ctx, at } = front;
  const out = ctx.out;
  const escapes: Escape[] = [];
  if (at.batch) {
    const ct = String(req.headers["content-type"] ?? "").toLowerCase();
    const parts = ct.includes("json") ? jsonParts(req.body) : multipartParts(req.body);
    if (parts === undefined) {
      mentions(ctx, req.body.toString("utf8"), "batch body (unparsable)");
    } else if (depth > 1) {
      ctx.out.anything.push("nested $batch");
    } else {
      const refs = new Map<string, string>();
      // What `$<id>` stands for in a later part's body: the part's path as this reading resolved it.
      const partPaths = new Map<string, string>();
      parts.forEach((part, i) => {
        const target = partTarget(name, rootUrlPath, part.url, refs);
        const sub = readOne(universe, svc, rootUrlPath, name, { method: part.method, target, headers: part.headers, body: part.body }, depth + 1, sapClient, partPaths);
        for (const e of sub.escapes) escapes.push({ where: `batch:${e.where}`, message: `batch part ${i + 1} (${part.method} ${part.url}): ${e.message}` });
        for (const w of sub.switches) switches.push(`batch part ${i + 1}: ${w}`);
        const partClient = part.headers["sap-client"];
        if (partClient !== undefined && trimAll(partClient) !== sapClient) switches.push(`batch part ${i + 1}: header sap-client: ${partClient}`);
        for (const t of sub.touches) out.add(t.entitySet, t.operation, `batch part ${i + 1}: ${t.why}`, t.mentioned === true);
        for (const a of sub.anything) out.anything.push(`batch part ${i + 1}: ${a}`);
        if (part.id !== undefined) {
          refs.set(part.id, part.url.split("?")[0]!.replace(/^\//, ""));
          partPaths.set(part.id, target.split("?")[0]!);
        }
      });
    }
  } else if (!at.metadata) {
    // Bodies of reads and deletes are a violation of their own (see ./check.ts).
    if (ctx.methods.some((m) => m !== "GET" && m !== "HEAD" && m !== "DELETE") && at.entityBody === true) entityBody(ctx, at.bodyType, req.body, "body");
  }
  escapes.push(...out.escapes);
  return {
    interpretation: name,
    seen,
    escapes,
    touches: out.touches,
    anything: out.anything,
    switches,
  };
}

/** One way a reading breaks the key's grants. */
export interface Violation {
  /** `escape`, `touches-anything`, `unpermitted` (a resolved reading) or `unresolved-mention` (a name in text the oracle could not resolve). */
  readonly kind: "escape" | "touches-anything" | "unpermitted" | "unresolved-mention" | "sap-switch";
  /** Where in the request: `path`, `$expand`, `$filter`, `body`, `batch part:$expand`, … */
  readonly where: string;
  readonly message: string;
}

/** The part of the request a reason names (`resource path …` -> `path`, `batch part 2: $expand …` -> `batch:$expand`). */
function whereOf(why: string): string {
  const batch = /^batch part \d+(?: \([^)]*\))?: (.*)$/.exec(why);
  if (batch) return `batch:${whereOf(batch[1]!)}`;
  if (why.startsWith("resource path")) return "path";
  const option = /^\$[a-z]+/.exec(why);
  if (option) return option[0];
  if (why.startsWith("body")) return "body";
  return why.split(/[ :(]/)[0] ?? why;
}

/** A reading's violations against the key's grants on `service`. */
export function violations(universe: Universe, service: string, reading: Reading): Violation[] {
  const out: Violation[] = [];
  const i = reading.interpretation;
  for (const e of reading.escapes) out.push({ kind: "escape", where: e.where, message: `[${i}] ${e.message}` });
  for (const a of reading.anything) out.push({ kind: "touches-anything", where: whereOf(a), message: `[${i}] may touch anything: ${a}` });
  for (const w of reading.switches) out.push({ kind: "sap-switch", where: w.startsWith("batch") ? "batch" : "query", message: `[${i}] chooses ${w}, not the instance's SAP client or session` });
  for (const t of reading.touches) {
    if (!(universe.grants[service]?.[t.entitySet]?.includes(t.operation) ?? false)) {
      out.push({
        kind: t.mentioned ? "unresolved-mention" : "unpermitted",
        where: whereOf(t.why),
        message: `[${i}] ${t.operation} on ${t.entitySet} is not permitted (${t.why})`,
      });
    }
  }
  return out;
}

/** Node's legacy `querystring.unescape`, or the text as it is when that throws. */
function safeUnescape(s: string): string {
  try {
    return querystring.unescape(s);
  } catch {
    return s;
  }
}
