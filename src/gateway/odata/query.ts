/**
 * The query half of the OData authorizer: parses a query string into system
 * query options and parameter aliases, and finds every navigation that
 * `$expand`, `$select`, `$filter`, `$orderby` and `$compute` would follow,
 * recording the entity set each one reaches. Pure, like the rest of
 * `src/gateway/odata/`.
 *
 * Navigation targets are authorized as reads: `list` when the navigation is
 * collection-valued (the related entities are enumerated, filtered or
 * counted), `get` when it is single-valued (one related entity is read or
 * compared). That holds for `$expand`, for member paths in expressions and
 * for lambda operators (`Items/any(...)` lists Items).
 */
import type { Operation } from "../data/ports.js";
import type { Position, ServiceModel, Step } from "./metadata.js";
import {
  MAX_NESTING,
  checkTypedLiteral,
  decodeOnce,
  denied,
  excerpt,
  hasControlCharacter,
  invalid,
  isSimpleIdentifier,
  skipSingleQuoted,
  splitCall,
  splitTopLevel,
  walkTopLevel,
} from "./syntax.js";
import { OPTION_NAME, type QueryOption } from "./target.js";

/** One (entity set, operation) pair a request needs, with why. */
export interface Access {
  readonly entitySet: string;
  readonly operation: Operation;
  /** What in the request needs it, e.g. `resource path` or `$expand Items/Product`. */
  readonly reason: string;
}

/** Collects accesses in order of discovery, keeping the first of equal (entity set, operation) pairs. */
export class AccessList {
  readonly items: Access[] = [];
  readonly #seen = new Set<string>();

  /** Records a pair unless an equal one is already recorded. */
  add(entitySet: string, operation: Operation, reason: string): void {
    const key = `${operation}\u0000${entitySet}`;
    if (this.#seen.has(key)) return;
    this.#seen.add(key);
    this.items.push({ entitySet, operation, reason });
  }
}

/** Longest query string accepted, in characters (before decoding). */
export const MAX_QUERY_LENGTH = 32 * 1024;

/** Most rounds of `$levels` followed before giving up (invalid) when new targets still appear. */
const MAX_LEVELS = 32;

/** Most parameter aliases followed inside one another. */
const MAX_ALIAS_DEPTH = 8;

/** Work units (tokens and path steps) one request may cost; beyond it the request is refused. */
const MAX_WORK = 200_000;

/** The system query options, by their canonical name (lower case, no `$`). */
const SYSTEM_OPTIONS = new Set([
  "filter",
  "expand",
  "select",
  "orderby",
  "top",
  "skip",
  "count",
  "inlinecount",
  "search",
  "format",
  "skiptoken",
  "deltatoken",
  "apply",
  "compute",
  "index",
  "schemaversion",
  "id",
  "levels",
]);

/** Options allowed inside `$expand=Nav(...)` and `$select=Prop(...)`. */
const NESTED_OPTIONS = new Set(["filter", "expand", "select", "orderby", "top", "skip", "count", "search", "levels", "compute", "apply"]);

/**
 * The canonical name of a system query option, matched case-insensitively
 * and with or without `$` (OData 4.01), or undefined for a custom option.
 * An unknown name starting with `$` is invalid.
 */
export function systemOptionName(name: string): string | undefined {
  const lower = name.toLowerCase();
  const bare = lower.startsWith("$") ? lower.slice(1) : lower;
  if (SYSTEM_OPTIONS.has(bare)) return bare;
  if (lower.startsWith("$")) invalid(`unknown system query option '${excerpt(name)}'`);
  return undefined;
}

/**
 * SAP query options a client may set: the logon language and performance
 * statistics. Every other `sap-` option is the instance's or the gateway's
 * (`sap-client`: the instance decides the SAP client; `sap-user`,
 * `sap-password`, `sap-sessioncmd`, `sap-contextid-accept`: logon and
 * session control; `sap-ds-debug`: debug output), and so are the ICF logon
 * switches `saml2` and `spnego`.
 */
const ALLOWED_SAP_OPTIONS = new Set(["sap-language", "sap-statistics"]);
const LOGON_OPTIONS = new Set(["saml2", "spnego"]);

function isForbiddenCustomOption(name: string): boolean {
  return (name.startsWith("sap-") && !ALLOWED_SAP_OPTIONS.has(name)) || LOGON_OPTIONS.has(name);
}

/** A parsed query string. */
export interface ParsedQuery {
  /** System query options by canonical name (see {@link systemOptionName}), values decoded. */
  readonly options: ReadonlyMap<string, string>;
  /** Parameter aliases (`@p`, with the `@`) -> decoded value. */
  readonly aliases: ReadonlyMap<string, string>;
  /**
   * Every option in the client's order, as it is forwarded: system options
   * under their canonical name (`$expand`, whatever the spelling), aliases
   * and custom options under theirs; values decoded.
   */
  readonly entries: readonly QueryOption[];
}

function decodeQueryPart(raw: string, what: string): string {
  // Form encoding: a `+` is a space. Reading it so can only split tokens,
  // never join them; the forwarded query encodes a space as %20 and a plus
  // as %2B, so the back end reads what was analyzed whatever it makes of `+`.
  const decoded = decodeOnce(raw.replaceAll("+", " "));
  if (decoded === undefined) invalid(`malformed percent-encoding in ${what}`);
  if (hasControlCharacter(decoded)) invalid(`control character in ${what}`);
  return decoded;
}

/**
 * Splits a raw query string (without `?`) on `&`, decodes every name and
 * value exactly once, and keeps every option. Names must be plain tokens
 * (`[$]name`, `@alias`): back ends trim, fold and strip names in ways that
 * would turn an option erplink took for a custom one into a system option.
 * A system option or alias given twice (in any spelling) is invalid: the
 * back end might honour either one. On V2 services (`version` `2.0`), a
 * `search` without `$` is SAP's custom search option and keeps its name
 * (it is still analyzed as `$search`, which reaches no entity). A
 * `sap-client` equal to `sapClient` (the instance's) is dropped; any other is
 * denied, like the other SAP options the instance decides.
 */
export function parseQuery(query: string, version?: string, sapClient?: string): ParsedQuery {
  if (query.length > MAX_QUERY_LENGTH) invalid(`query string is longer than ${MAX_QUERY_LENGTH} characters`);
  const options = new Map<string, string>();
  const aliases = new Map<string, string>();
  const entries: QueryOption[] = [];
  if (query === "") return { options, aliases, entries };
  for (const part of query.split("&")) {
    if (part === "") continue;
    const eq = part.indexOf("=");
    const name = decodeQueryPart(eq < 0 ? part : part.slice(0, eq), "a query option name");
    const value = eq < 0 ? "" : decodeQueryPart(part.slice(eq + 1), `query option '${excerpt(name)}'`);
    const given = eq < 0 ? undefined : value;
    // The instance's own SAP client, as a followed link of the back end's may
    // carry it: left out here, the gateway writes the instance's.
    if (sapClient !== undefined && name === "sap-client" && value === sapClient) continue;
    const folded = name.trim().toLowerCase();
    if (isForbiddenCustomOption(folded)) {
      denied(
        `query option '${excerpt(folded)}' is not allowed: ` +
          (folded === "sap-client" ? "the instance decides it" : "SAP logon, session and debug options are erplink's to set"),
      );
    }
    if (!OPTION_NAME.test(name)) {
      invalid(
        name === ""
          ? "a query option has no name"
          : name.startsWith("@")
            ? `malformed parameter alias '${excerpt(name)}'`
          : `query option name '${excerpt(name)}' is not a plain token (letters, digits, '_', '.', '-', after an optional '$' or '@')`,
      );
    }
    if (name.startsWith("@")) {
      if (aliases.has(name)) invalid(`parameter alias '${excerpt(name)}' is given more than once`);
      aliases.set(name, value);
      entries.push({ name, value: given });
      continue;
    }
    const canonical = systemOptionName(name);
    if (canonical === undefined) {
      entries.push({ name, value: given });
      continue;
    }
    if (options.has(canonical)) invalid(`system query option $${canonical} is given more than once`);
    options.set(canonical, value);
    const keepName = version === "2.0" && canonical === "search" && !name.startsWith("$");
    entries.push({ name: keepName ? name : `$${canonical}`, value: given });
  }
  return { options, aliases, entries };
}

/**
 * Where query options apply. `position` is undefined when the model cannot
 * say what is there; `missing` then says why, for the denial message.
 */
export interface Scope {
  readonly position: Position | undefined;
  readonly missing?: "metadata" | "function" | "primitive";
  /** Navigation path from the request's target to here, for reasons (`""` or `Items/`). */
  readonly label: string;
}

/** Everything the query analysis reads and writes. */
export interface QueryContext {
  readonly model: ServiceModel | undefined;
  readonly aliases: ReadonlyMap<string, string>;
  readonly accesses: AccessList;
  /** Work spent so far; see MAX_WORK. */
  work: number;
  /**
   * Nested options already applied at a position: applying them again would
   * find the same accesses, and `*` or `$levels` inside one another would
   * otherwise multiply the work.
   */
  readonly applied: Set<string>;
}

function spend(ctx: QueryContext, units: number): void {
  ctx.work += units;
  if (ctx.work > MAX_WORK) invalid("request is too complex to authorize");
}

function cannotAuthorize(scope: Scope, what: string): never {
  switch (scope.missing) {
    case "function":
      denied(`cannot authorize ${what}: the result of a bound operation has no known entity set`);
    case "primitive":
      invalid(`cannot apply ${what} to a primitive value`);
    default:
      denied(`cannot authorize ${what}: the service metadata is unavailable`);
  }
}

/** Applies the request's system query options (from {@link parseQuery}) at `scope`. */
export function applyOptions(ctx: QueryContext, scope: Scope, options: ReadonlyMap<string, string>): void {
  if (options.has("levels")) invalid("$levels is only allowed inside $expand");
  applyOptionSet(ctx, scope, options, 0);
}

/** Applies options in a fixed order, so that equal queries give equal answers whatever their order. */
function applyOptionSet(ctx: QueryContext, scope: Scope, options: ReadonlyMap<string, string>, depth: number): void {
  if (options.has("apply")) denied("$apply is not allowed");
  const expand = options.get("expand");
  if (expand !== undefined) applyExpand(ctx, scope, expand, depth);
  const select = options.get("select");
  if (select !== undefined) applySelect(ctx, scope, select, depth);
  for (const name of ["filter", "orderby", "compute"]) {
    const value = options.get(name);
    if (value !== undefined) scanExpression(ctx, scope, value, `$${name}`, new Map(), 0);
  }
}

/** `s` with only what stands outside its literals and brackets kept (the rest blanked). */
function topLevelOf(s: string, what: string): string {
  const out = Array<string>(s.length).fill(" ");
  walkTopLevel(s, what, (i) => {
    out[i] = s[i]!;
  });
  return out.join("");
}

/** What the values of nested options with a fixed format look like. */
const NESTED_VALUE: Readonly<Record<string, RegExp>> = { top: /^[0-9]{1,15}$/, skip: /^[0-9]{1,15}$/, count: /^(?:true|false)$/ };

/** Parses `name=value;name=value` inside `$expand=Nav(...)` or `$select=Prop(...)`. */
function parseNestedOptions(text: string, what: string): Map<string, string> {
  const options = new Map<string, string>();
  if (text.trim() === "") return options;
  for (const part of splitTopLevel(text, ";", what)) {
    const eq = part.indexOf("=");
    if (eq < 0) invalid(`malformed option '${excerpt(part)}' in ${what}`);
    const name = part.slice(0, eq).trim();
    const canonical = systemOptionName(name);
    if (canonical === undefined || !NESTED_OPTIONS.has(canonical)) {
      invalid(`option '${excerpt(name)}' is not allowed in ${what}`);
    }
    if (options.has(canonical)) invalid(`option $${canonical} is given more than once in ${what}`);
    const value = part.slice(eq + 1);
    // SAP CAP ends a nested $search at the first ')' or ';', quotes or not.
    if (canonical === "search" && /[()'"[\]{};]/.test(value)) {
      invalid(`a nested $search may not hold quotes, brackets or parentheses in ${what}: back ends disagree on where it ends`);
    }
    // CAP needs no ';' between nested options: '$top=1$expand=Secret' is two of them.
    const format = NESTED_VALUE[canonical];
    if (format !== undefined && !format.test(value.trim())) invalid(`malformed $${canonical} '${excerpt(value)}' in ${what}`);
    if (/\$[A-Za-z]+=/.test(topLevelOf(value, what))) {
      invalid(`the value of $${canonical} in ${what} holds an option ('$…='): a back end that needs no ';' between nested options starts one there`);
    }
    options.set(canonical, value);
  }
  return options;
}

function splitPath(text: string, what: string): string[] {
  const segs = text.split("/").map((s) => s.trim());
  if (segs.some((s) => s === "")) invalid(`malformed path '${excerpt(text)}' in ${what}`);
  return segs;
}

/**
 * Follows `segs` from `scope`, recording a read for every navigation
 * crossed, and returns where the path ends and whether it crossed one.
 * `what` names the option (for reasons and messages). `lenient` lets a
 * single unknown name pass as something the model does not describe (an
 * enum member, a computed property); otherwise unknown names are invalid.
 */
function walk(
  ctx: QueryContext,
  scope: Scope,
  segs: readonly string[],
  what: string,
  lenient: boolean,
): { scope: Scope; crossed: boolean } {
  let { position, label } = scope;
  let missing = scope.missing;
  let crossed = false;
  for (let k = 0; k < segs.length; k++) {
    const name = segs[k];
    spend(ctx, 1);
    if (name === "$count") {
      if (k !== segs.length - 1) invalid(`$count must end the path in ${what}`);
      break;
    }
    if (position === undefined) {
      // Without a model, a lone name is taken for a property: only a path
      // (`A/B`) can navigate.
      if (lenient && segs.length === 1 && missing !== "primitive") return { scope, crossed };
      if (missing === "primitive") invalid(`'${excerpt(name)}' cannot follow a primitive value in ${what}`);
      cannotAuthorize({ position, label, ...(missing ? { missing } : {}) }, `'${excerpt([...segs].join("/"))}' in ${what}`);
    }
    const step: Step = ctx.model!.step(position, name);
    switch (step.kind) {
      case "property":
        label = `${label}${step.name}/`;
        if (step.position !== undefined) position = step.position;
        else {
          position = undefined;
          missing = "primitive";
        }
        break;
      case "navigation": {
        const navLabel = `${label}${step.name}`;
        if (step.target === undefined) {
          denied(`cannot authorize navigation '${excerpt(navLabel)}' in ${what}: the service metadata does not say which entity set it leads to`);
        }
        ctx.accesses.add(step.target.entitySet, step.collection ? "list" : "get", `${what} ${navLabel}`);
        crossed = true;
        position = step.target;
        label = `${navLabel}/`;
        break;
      }
      case "cast":
        position = step.position;
        label = `${label}${step.name}/`;
        break;
      case "function":
      case "action":
        if (k !== segs.length - 1) denied(`cannot authorize the path after bound operation '${step.name}' in ${what}`);
        return { scope: { position: undefined, missing: "function", label }, crossed };
      case "unknown":
        if (step.derivedNavigation !== undefined) {
          invalid(`'${excerpt(name)}' is a navigation property of a type derived from '${position.type}': cast to it first ('${excerpt(step.derivedNavigation)}') in ${what}`);
        }
        if (lenient && segs.length === 1) return { scope, crossed };
        invalid(`'${excerpt(name)}' is not a property or navigation of '${position.type}' in ${what}`);
    }
  }
  return { scope: { position, label, ...(missing && position === undefined ? { missing } : {}) }, crossed };
}

function positionKey(p: Position): string {
  return `${p.entitySet}\u0000${p.type}\u0000${p.bindingPath.join("/")}\u0000${p.collection}`;
}

/**
 * `$expand`: every item's navigations are read (see the module comment);
 * `*` expands every navigation of the type; nested options apply to the
 * target; `$levels=n|max` repeats the item from each target until no new
 * target appears.
 */
function applyExpand(ctx: QueryContext, scope: Scope, text: string, depth: number): void {
  if (depth > MAX_NESTING) invalid(`$expand is nested more than ${MAX_NESTING} levels deep`);
  spend(ctx, text.length);
  refuseOutsideLiterals(text, "$expand");
  for (const raw of splitTopLevel(text, ",", "$expand")) {
    const item = raw.trim();
    if (item === "") invalid("empty item in $expand");
    const { name: pathText, args } = splitCall(item, "$expand");
    const segs = splitPath(pathText, "$expand");
    const options = args === undefined ? new Map<string, string>() : parseNestedOptions(args, `$expand ${excerpt(pathText)}`);
    const levelsText = options.get("levels");
    options.delete("levels");
    let levels = 1;
    if (levelsText !== undefined) {
      const t = levelsText.trim();
      if (t.toLowerCase() === "max") levels = Infinity;
      else if (/^[1-9][0-9]{0,8}$/.test(t)) levels = Number(t);
      else invalid(`malformed $levels '${excerpt(t)}' in $expand`);
    }
    let frontier: Scope[] = [scope];
    const seen = new Set<string>();
    for (let level = 1; level <= levels && frontier.length > 0; level++) {
      if (level > MAX_LEVELS) invalid(`$levels in $expand ${excerpt(pathText)} reaches new targets beyond ${MAX_LEVELS} levels`);
      const next: Scope[] = [];
      for (const from of frontier) {
        // Repeating an item stops quietly where the target type lacks its first name.
        if (level > 1 && from.position !== undefined && ctx.model!.step(from.position, segs[0]).kind === "unknown" && segs[0] !== "*") {
          continue;
        }
        for (const target of expandTargets(ctx, from, segs)) {
          if (target.position === undefined) continue;
          const key = positionKey(target.position);
          if (seen.has(key)) continue;
          seen.add(key);
          applyNested(ctx, target, options, depth);
          next.push(target);
        }
      }
      frontier = next;
    }
  }
}

/** Options nested in an `$expand` or `$select` item, applied at the item's target (once per target). */
function applyNested(ctx: QueryContext, scope: Scope, options: ReadonlyMap<string, string>, depth: number): void {
  if (options.size === 0) return;
  if (scope.position !== undefined) {
    const key = `${positionKey(scope.position)}\u0000${JSON.stringify([...options])}`;
    if (ctx.applied.has(key)) return;
    ctx.applied.add(key);
  }
  applyOptionSet(ctx, scope, options, depth + 1);
}

/** The scopes one `$expand` item reaches from `scope`, recording their reads. */
function expandTargets(ctx: QueryContext, scope: Scope, segs: readonly string[]): Scope[] {
  let path = segs;
  const tail = path[path.length - 1];
  if (tail === "$ref" || tail === "$count") path = path.slice(0, -1);
  if (path.length === 0 || path.some((s) => s === "$ref" || s === "$count" || s === "$levels")) {
    invalid(`malformed $expand item '${excerpt(segs.join("/"))}'`);
  }
  if (scope.position === undefined) cannotAuthorize(scope, `$expand ${excerpt(segs.join("/"))}`);
  if (path[path.length - 1] === "*") {
    const prefix = walk(ctx, scope, path.slice(0, -1), "$expand", false);
    const at = prefix.scope;
    if (at.position === undefined) cannotAuthorize(at, "$expand *");
    const out: Scope[] = [];
    // A derived type's navigations too: a back end may expand them on entities of that type.
    for (const navPath of [...ctx.model!.navigationPaths(at.position), ...ctx.model!.derivedNavigationPaths(at.position)]) {
      const reached = walk(ctx, at, navPath, "$expand", false);
      out.push(reached.scope);
    }
    return out;
  }
  const reached = walk(ctx, scope, path, "$expand", false);
  // Expanding a property (a stream, or a V2 complex property) reaches no entity.
  return reached.crossed ? [reached.scope] : [];
}

/** `$select`: paths through navigations (V2 `Nav/Prop`) are reads; nested options (4.01) apply at the item. */
function applySelect(ctx: QueryContext, scope: Scope, text: string, depth: number): void {
  spend(ctx, text.length);
  refuseOutsideLiterals(text, "$select");
  for (const raw of splitTopLevel(text, ",", "$select")) {
    const item = raw.trim();
    if (item === "") invalid("empty item in $select");
    const { name: pathText, args } = splitCall(item, "$select");
    const segs = splitPath(pathText, "$select");
    const last = segs[segs.length - 1];
    // `*` and `NS.*` select properties or operations, never a navigation.
    const path = last === "*" || last.endsWith(".*") ? segs.slice(0, -1) : segs;
    if (path.length === 0) continue;
    const reached = walk(ctx, scope, path, "$select", true);
    if (args !== undefined) applyNested(ctx, reached.scope, parseNestedOptions(args, `$select ${excerpt(pathText)}`), depth);
  }
}

type Token =
  | { readonly t: "path"; readonly segs: string[]; readonly start: number; readonly end: number }
  | { readonly t: "(" | ")" | ":" | "/" | "other"; readonly start: number; readonly end: number };

/**
 * OData's built-in functions (V4 and 4.01's, and V2's `substringof` and
 * `replace`), in lower case: the only calls an expression may make.
 */
const BUILT_IN_FUNCTIONS: ReadonlySet<string> = new Set([
  "concat", "contains", "endswith", "indexof", "length", "startswith", "substring", "matchespattern", "tolower", "toupper", "trim",
  "substringof", "replace",
  "date", "day", "fractionalseconds", "hour", "maxdatetime", "mindatetime", "minute", "month", "now", "second", "time",
  "totaloffsetminutes", "totalseconds", "year",
  "ceiling", "floor", "round",
  "cast", "isof",
  "geo.distance", "geo.intersects", "geo.length",
  "case", "hassubset", "hassubsequence",
]);

const KEYWORDS = new Set([
  "and", "or", "not", "eq", "ne", "gt", "ge", "lt", "le", "has", "in", "add", "sub", "mul", "div", "divby", "mod",
  "asc", "desc", "true", "false", "null", "inf", "nan", "as",
]);

// `$` and `@` only start a segment (`$it`, `$count`, `@alias`): OData names
// hold neither, so `Nav$root` is the navigation `Nav` followed by `$root`;
// nor `*`, so `Items*` is the navigation `Items` and a stray `*`.
const PATH_CHAR = /[\p{L}\p{Nl}\p{Nd}\p{Mn}\p{Mc}\p{Pc}\p{Cf}_.]/u;
const PATH_START = /[\p{L}\p{Nl}_$@]/u;
const NUMBER_CHAR = /[0-9A-Za-z.:+-]/;

function skipSpace(s: string, i: number): number {
  while (i < s.length && (s[i] === " " || s[i] === "\t")) i++;
  return i;
}

/**
 * Refuses a `"`, `{`, `[` or `\` outside single-quoted literals of an
 * expression (`$filter`, `$orderby`, `$compute`, alias values, and the items
 * and nested options of `$expand`/`$select`). Back ends disagree on where
 * what the first three open ends: SAP CAP's grammar ends `{…}` at the first
 * `}` and `[…]` at the first `]` whatever quotes lie between, and takes a
 * `"` after a name for part of the name (`@a"`), so text that erplink reads
 * as a string CAP reads as paths (`ID eq {"x":"} or Secret/Value eq 'x' or
 * ID eq {"}`). A `\` has no meaning there but a lenient reader's `/`.
 */
function refuseOutsideLiterals(s: string, what: string): void {
  const found = /["{[\\]/.exec(withoutLiterals(s));
  if (found === null) return;
  if (found[0] === "\\") invalid(`'\\' is not allowed in ${what} outside a single-quoted literal: a lenient back end reads it as '/'`);
  invalid(`'${found[0]}' is not allowed in ${what} outside a single-quoted literal: back ends disagree on where a JSON value, a list or a double-quoted string ends`);
}

/**
 * `s` with what its single-quoted literals hold blanked out (the quotes
 * stay), for searching its structure; an unterminated literal is left as
 * is, for the caller's parser to refuse.
 */
function withoutLiterals(s: string): string {
  let out = "";
  let from = 0;
  for (let i = s.indexOf("'"); i >= 0; i = s.indexOf("'", from)) {
    const end = skipSingleQuoted(s, i);
    if (end < 0) break;
    out += `${s.slice(from, i)}'${" ".repeat(end - i - 2)}'`;
    from = end;
  }
  return out + s.slice(from);
}

/**
 * Tokenizes an expression. Member paths are joined across whitespace around
 * `/` (`Customer / Name`), because lenient parsers accept that spelling;
 * literals (single-quoted, typed like `guid'…'`, numbers) become `other`,
 * so that nothing inside them is taken for a path (double-quoted strings,
 * JSON and lists are refused: {@link refuseOutsideLiterals}).
 */
function tokenize(ctx: QueryContext, s: string, what: string): Token[] {
  // Balance and depth first: the scan below may then assume both.
  walkTopLevel(s, what, () => {});
  refuseOutsideLiterals(s, what);
  // SAP CAP's V2 adapter marks function arguments with '§§(1§§', '§§,1§§', '§§)1§§' and rewrites
  // calls (substringof to contains) by patterns that also match marks inside literals.
  if (s.includes("§§")) invalid(`'§§' is not allowed in ${what}: a back end (SAP CAP's V2 adapter) marks function arguments with it`);
  const tokens: Token[] = [];
  let i = 0;
  while (i < s.length) {
    spend(ctx, 1);
    const c = s[i];
    if (c === " " || c === "\t") {
      i++;
    } else if (c === "'") {
      const end = skipSingleQuoted(s, i);
      tokens.push({ t: "other", start: i, end });
      i = end;
    } else if (/[0-9]/.test(c) || (c === "-" && /[0-9]/.test(s[i + 1] ?? ""))) {
      const start = i;
      i++;
      while (i < s.length && NUMBER_CHAR.test(s[i])) i++;
      tokens.push({ t: "other", start, end: i });
    } else if (PATH_START.test(c)) {
      const start = i;
      const segs: string[] = [];
      for (;;) {
        const segStart = i;
        if (s[i] === "$" || s[i] === "@") i++;
        while (i < s.length && PATH_CHAR.test(s[i])) i++;
        segs.push(s.slice(segStart, i));
        const after = skipSpace(s, i);
        if (s[after] !== "/") break;
        i = skipSpace(s, after + 1);
        if (i >= s.length || !PATH_START.test(s[i])) invalid(`malformed path '${excerpt(s.slice(start, i + 1))}' in ${what}`);
      }
      if (s[i] === "'" && segs.length === 1) {
        // A typed literal: guid'…', datetime'…', X'…', Namespace.Enum'Member'.
        const end = skipSingleQuoted(s, i);
        if (end > 0) checkTypedLiteral(s.slice(i, end), what);
        tokens.push({ t: "other", start, end });
        i = end;
      } else {
        tokens.push({ t: "path", segs, start, end: i });
      }
    } else if (c === "(" || c === ")" || c === ":" || c === "/") {
      tokens.push({ t: c, start: i, end: i + 1 });
      i++;
    } else {
      tokens.push({ t: "other", start: i, end: i + 1 });
      i++;
    }
  }
  return tokens;
}

/** Index of the `)` token matching the `(` token at `open`. */
function matchingParen(tokens: readonly Token[], open: number): number {
  let depth = 0;
  for (let j = open; j < tokens.length; j++) {
    if (tokens[j].t === "(") depth++;
    else if (tokens[j].t === ")" && --depth === 0) return j;
  }
  return invalid("unbalanced '('"); // unreachable after walkTopLevel
}

/**
 * Finds the navigations an expression (`$filter`, `$orderby`, `$compute`,
 * or an alias value) follows from `scope`. Lambda variables (`d` in
 * `Items/any(d:d/Product/Name eq 'x')`) start from their collection's
 * target; `$it` and `$this` from `scope`; parameter aliases are scanned in
 * place; `$root` is refused.
 *
 * Inside a lambda, back ends disagree on where a path that does not start
 * with its variable starts: the standard says at `$it`, SAP CAP reads it
 * from the lambda's collection (`Items/any(d:Partner/Name eq 'x')` reads
 * the item's partner), and a path from an outer lambda's variable from the
 * innermost collection too. So there a path must start with the innermost
 * variable (or `$it`), and a lone name is read from both places.
 */
export function scanExpression(
  ctx: QueryContext,
  scope: Scope,
  text: string,
  what: string,
  env: ReadonlyMap<string, Scope>,
  aliasDepth: number,
  lambda?: Lambda,
): void {
  const tokens = tokenize(ctx, text, what);
  scanTokens(ctx, scope, tokens, 0, tokens.length, what, env, aliasDepth, lambda);
}

/** The innermost lambda around a token: its variable and the collection it ranges over. */
interface Lambda {
  readonly variable: string;
  readonly collection: Scope;
}

function scanTokens(
  ctx: QueryContext,
  scope: Scope,
  tokens: readonly Token[],
  from: number,
  to: number,
  what: string,
  env: ReadonlyMap<string, Scope>,
  aliasDepth: number,
  lambda: Lambda | undefined,
): void {
  for (let i = from; i < to; i++) {
    const tok = tokens[i];
    if (tok.t === "/") invalid(`unexpected '/' in ${what}`);
    if (tok.t !== "path") continue;
    const segs = tok.segs;
    const first = segs[0];
    if (segs.length === 1 && KEYWORDS.has(first.toLowerCase())) {
      // An operator's name, unless the model declares a navigation so named where a lone name is read:
      // a back end may read it as that navigation (`$filter=In eq null`), so it is authorized as one.
      readNamedNavigation(ctx, scope, segs, what);
      if (lambda !== undefined) readNamedNavigation(ctx, lambda.collection, segs, what);
      continue;
    }
    if (first.startsWith("@")) {
      if (segs.length > 1) invalid(`parameter alias '${excerpt(first)}' cannot start a path in ${what}`);
      const value = ctx.aliases.get(first);
      if (value === undefined) continue; // an alias without a value is null
      if (aliasDepth >= MAX_ALIAS_DEPTH) invalid(`parameter aliases are nested more than ${MAX_ALIAS_DEPTH} levels deep`);
      // Outside lambdas an alias means the same wherever it is used: scan it once per scope.
      if (env.size === 0 && scope.position !== undefined) {
        const key = `${first}\u0000${positionKey(scope.position)}`;
        if (ctx.applied.has(key)) continue;
        ctx.applied.add(key);
      }
      scanExpression(ctx, scope, value, what, env, aliasDepth + 1, lambda);
      continue;
    }
    if (lambda !== undefined && first !== lambda.variable && first !== "$it" && first !== "$this") {
      if (segs.length > 1) {
        invalid(
          `inside a lambda, a path must start with its variable '${excerpt(lambda.variable)}' or $it in ${what}: ` +
            `back ends disagree on where '${excerpt(segs.join("/"))}' starts`,
        );
      }
      // A lone name: a property of $it to some back ends, of the lambda's collection to others.
      if (!first.startsWith("$") && lambda.collection.position !== undefined) walk(ctx, lambda.collection, segs, what, true);
    }
    let start: Scope = scope;
    let rest: readonly string[] = segs;
    if (first === "$it" || first === "$this") {
      rest = segs.slice(1);
    } else if (first === "$root") {
      denied(`$root is not allowed in ${what}`);
    } else if (first.startsWith("$")) {
      invalid(`unexpected '${excerpt(first)}' in ${what}`);
    } else if (env.has(first)) {
      start = env.get(first)!;
      rest = segs.slice(1);
    }
    const next = tokens[i + 1];
    const call = next !== undefined && next.t === "(" && i + 1 < to;
    // A lone name may be an enum member, a computed property or a literal
    // the tokenizer cannot tell from a name; a path must resolve.
    const lenient = segs.length === 1;
    if (!call) {
      // A bound operation named without parentheses is called too (OData's dotted-identifier binding).
      if (rest.length > 0 && (walk(ctx, start, rest, what, lenient).scope.missing === "function" || namesOperation(ctx, start, rest))) {
        denied(uncallable(segs, what, false));
      }
      continue;
    }
    const close = matchingParen(tokens, i + 1);
    const after = tokens[close + 1];
    if (after !== undefined && after.t === "/" && close + 1 < to) {
      denied(`cannot authorize a path after a function call in ${what}`);
    }
    const last = rest[rest.length - 1];
    if (rest.length >= 2 && (last === "any" || last === "all")) {
      const collection = walk(ctx, start, rest.slice(0, -1), what, false).scope;
      // SAP CAP runs a lambda over a single entity, but reads its body from one level up.
      if (collection.position !== undefined && !collection.position.collection) {
        invalid(`${last} needs a collection, '${excerpt(rest.slice(0, -1).join("/"))}' is a single entity in ${what}`);
      }
      if (close > i + 2) {
        const variable = tokens[i + 2];
        const colon = tokens[i + 3];
        if (variable.t !== "path" || variable.segs.length !== 1 || !isSimpleIdentifier(variable.segs[0]) || colon?.t !== ":") {
          invalid(`malformed lambda expression in ${what}`);
        }
        checkBareVariable(tokens, i + 4, close, variable.segs[0], what);
        const inner = new Map(env);
        inner.set(variable.segs[0], collection);
        if (inner.size > MAX_NESTING) invalid(`lambda expressions are nested too deeply in ${what}`);
        // Lone names without the variable start from the outer scope ($it), and from the collection (above).
        scanTokens(ctx, scope, tokens, i + 4, close, what, inner, aliasDepth, { variable: variable.segs[0], collection });
      }
      i = close;
      continue;
    }
    if (segs.length === 1 && BUILT_IN_FUNCTIONS.has(first.toLowerCase())) {
      // A built-in function (contains, cast, isof, …): its arguments are scanned in turn.
      continue;
    }
    if (last === "$count") invalid(`'${excerpt(segs.join("/"))}(…)': $count with options is not supported in ${what}`);
    // Any other call runs what the model declares (a function bound to a path or a type, an
    // unbound one, or an action a back end might run anyway) or what a back end passes on
    // to its database: what it reads cannot be authorized from the expression.
    denied(uncallable(segs, what, true));
  }
}

/**
 * A lone name that is a navigation of `scope` (one that also names an
 * operator): read as that navigation; a derived type's is refused as any
 * uncast one is.
 */
function readNamedNavigation(ctx: QueryContext, scope: Scope, segs: readonly string[], what: string): void {
  if (scope.position === undefined) return;
  const step = ctx.model!.step(scope.position, segs[0]);
  if (step.kind === "navigation" || (step.kind === "unknown" && step.derivedNavigation !== undefined)) walk(ctx, scope, segs, what, true);
}

/**
 * Whether a lone name is an operation bound to the entity an expression is
 * evaluated on (`$filter=Sales.GetTotal gt 1` on a collection: the walk
 * looks for operations bound to the collection).
 */
function namesOperation(ctx: QueryContext, scope: Scope, rest: readonly string[]): boolean {
  if (rest.length !== 1 || scope.position === undefined || !scope.position.collection) return false;
  const kind = ctx.model!.step(Object.assign({}, scope.position, { collection: false }), rest[0]).kind;
  return kind === "function" || kind === "action";
}

/** Why a call of anything but a built-in function in an expression is refused. */
function uncallable(segs: readonly string[], what: string, parenthesized: boolean): string {
  return `'${excerpt(segs.join("/"))}${parenthesized ? "(…)" : ""}' in ${what} calls a function erplink cannot authorize: only OData's built-in functions may be called in an expression`;
}

/**
 * Refuses a lambda whose body uses its variable alone (`Tags/any(t:t eq 'x')`,
 * for collections of primitive values) beside any other name: SAP CAP
 * rewrites such a lambda into `contains` and reads the rest of its body one
 * level up, the variable's paths included (`Folder/any(d:d eq 'x' or
 * d/Label/Value eq 'y')` read the note's label).
 */
function checkBareVariable(tokens: readonly Token[], from: number, to: number, variable: string, what: string): void {
  let bare = false;
  let other: string | undefined;
  for (let k = from; k < to; k++) {
    const tok = tokens[k];
    if (tok.t !== "path") continue;
    const [first] = tok.segs;
    if (tok.segs.length === 1 && first === variable) bare = true;
    else if (tok.segs.length === 1 && (KEYWORDS.has(first.toLowerCase()) || first.startsWith("@") || tokens[k + 1]?.t === "(")) continue;
    else other ??= tok.segs.join("/");
  }
  if (bare && other !== undefined) {
    invalid(`a lambda that compares its variable '${excerpt(variable)}' itself may not name '${excerpt(other)}' in ${what}: back ends disagree on where that is read`);
  }
}

/**
 * Scans parameter aliases used by a resource path (function parameters),
 * so that an alias value referring to a navigation is authorized too.
 */
export function scanAliasValue(ctx: QueryContext, scope: Scope, alias: string): void {
  const value = ctx.aliases.get(alias);
  if (value !== undefined) scanExpression(ctx, scope, value, `parameter alias ${excerpt(alias)}`, new Map(), 1);
}
