/**
 * The query string, parsed: names decoded once and folded to their
 * canonical spelling, every system option's value parsed by its grammar
 * (`$filter`, `$orderby`, `$compute` and alias values as expressions,
 * `$apply` as its transformations,
 * `$select` and `$expand` as item trees with their nested options, `$top`,
 * `$skip`, `$count`, `$levels` as numbers and flags), knowing nothing of the
 * service model. What a value's grammar does not produce is refused
 * (`invalid`): a back end that reads the rest of it as something else never
 * sees it (`$top=1$expand=Secret` is not a number, whatever SAP CAP, which
 * needs no `;` between nested options, would make of it).
 */
import { denied, excerpt, hasControlCharacter, invalid, decodeOnce, splitCall, splitTopLevel } from "../syntax.js";
import { OPTION_NAME, type QueryOption } from "../target.js";
import { parseCompute, parseExpression, parseOrderBy, refuseOutsideLiterals, spend, type Budget, type ComputeItem, type Expr, type OrderItem } from "./expression.js";
import type { Dialect } from "./literal.js";
import { parseApply, type Apply } from "./apply.js";

/** Longest query string accepted, in characters (before decoding). */
export const MAX_QUERY_LENGTH = 32 * 1024;

/** The system query options, by their canonical name (lower case, no `$`). */
const SYSTEM_OPTIONS = new Set([
  "filter", "expand", "select", "orderby", "top", "skip", "count", "inlinecount", "search", "format", "skiptoken",
  "deltatoken", "apply", "compute", "index", "schemaversion", "id", "levels",
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

/** A query string split into its options, names canonical, values decoded once. */
export interface RawQuery {
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
  /**
   * On V2 services: options named like a system option but not spelled as
   * V2 spells it (`top`, `$TOP`): a V2 back end reads them as custom
   * options, so they are neither read as system options nor rewritten into
   * one; they are kept as written in {@link entries}, and the analysis
   * refuses them unless they are parameters of the V2 function import
   * called (see `refuseMisspelled` in request.ts).
   */
  readonly misspelled: readonly { readonly name: string; readonly canonical: string }[];
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
 * (it is still analyzed as `$search`, which reaches no entity), and any
 * other option named like a system option but not spelled `$name` in lower
 * case is set aside in `misspelled`, not read as the system option it is in
 * OData 4.01. A `sap-client` equal to `sapClient` (the instance's) is
 * dropped; any other is denied, like the other SAP options the instance
 * decides.
 */
export function parseQuery(query: string, version?: string, sapClient?: string): RawQuery {
  if (query.length > MAX_QUERY_LENGTH) invalid(`query string is longer than ${MAX_QUERY_LENGTH} characters`);
  const options = new Map<string, string>();
  const aliases = new Map<string, string>();
  const entries: QueryOption[] = [];
  const misspelled: { name: string; canonical: string }[] = [];
  if (query === "") return { options, aliases, entries, misspelled };
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
    const keepName = version === "2.0" && canonical === "search" && !name.startsWith("$");
    if (version === "2.0" && !keepName && name !== `$${canonical}`) {
      misspelled.push({ name, canonical });
      entries.push({ name, value: given });
      continue;
    }
    if (options.has(canonical)) invalid(`system query option $${canonical} is given more than once`);
    options.set(canonical, value);
    entries.push({ name: keepName ? name : `$${canonical}`, value: given });
  }
  return { options, aliases, entries, misspelled };
}

/** The system query options that shape what is read, parsed (top level, or nested in an item). */
export interface QueryOptions {
  readonly filter?: Expr;
  readonly orderby?: readonly OrderItem[];
  readonly compute?: readonly ComputeItem[];
  readonly select?: readonly SelectItem[];
  readonly expand?: readonly ExpandItem[];
  /** `$search`, as written (it names no member). */
  readonly search?: string;
  readonly top?: number;
  readonly skip?: number;
  readonly count?: boolean;
  /** `$levels` of an expanded item: a number or `max`. */
  readonly levels?: number | "max";
  /** `$apply`, its transformations parsed (`./apply.ts`). */
  readonly apply?: Apply;
}

/** One `$select` item: a path of names ending in a property, a navigation, `*` or `Namespace.*`. */
export interface SelectItem {
  readonly path: readonly string[];
  /** OData 4.01 select options (`Addresses($filter=…)`). */
  readonly options?: QueryOptions;
}

/** One `$expand` item: a path of names ending in a navigation (or `*`), with `$ref`/`$count` and nested options. */
export interface ExpandItem {
  readonly path: readonly string[];
  readonly suffix?: "$ref" | "$count";
  readonly options: QueryOptions;
}

/** What {@link parseOptions} reads values with. */
export interface OptionContext {
  readonly dialect: Dialect;
  readonly budget: Budget;
}

/** Deepest `$expand` / `$select` nesting accepted. */
const MAX_OPTION_DEPTH = 32;

const COUNT_VALUE = /^(?:true|false)$/;
const NUMBER_VALUE = /^[0-9]{1,15}$/;

/**
 * Parses the system options that shape what is read (see {@link QueryOptions})
 * from `raw` (canonical name -> decoded value). `where` names the place for
 * messages (`""` at the top level, `$expand Items` inside an item).
 */
export function parseOptions(raw: ReadonlyMap<string, string>, where: string, ctx: OptionContext, depth = 0): QueryOptions {
  if (depth > MAX_OPTION_DEPTH) invalid(`$expand is nested more than ${MAX_OPTION_DEPTH} levels deep`);
  const label = (name: string): string => (where === "" ? `$${name}` : `$${name} in ${where}`);
  const malformed = (name: string, value: string): never => invalid(`malformed $${name} '${excerpt(value)}'${where === "" ? "" : ` in ${where}`}`);
  const out: { -readonly [K in keyof QueryOptions]: QueryOptions[K] } = {};
  for (const [name, value] of raw) {
    switch (name) {
      case "filter":
        out.filter = parseExpression(value, label(name), ctx.dialect, ctx.budget);
        break;
      case "orderby":
        out.orderby = parseOrderBy(value, label(name), ctx.dialect, ctx.budget);
        break;
      case "compute":
        out.compute = parseCompute(value, label(name), ctx.dialect, ctx.budget);
        break;
      case "select":
        out.select = parseSelect(value, label(name), ctx, depth);
        break;
      case "expand":
        out.expand = parseExpand(value, label(name), ctx, depth);
        break;
      case "search":
        out.search = value;
        break;
      case "apply":
        // OData V2 has no data aggregation: a V2 back end would read it as something else, if at all.
        if (ctx.dialect === "2.0") denied("$apply is not allowed: OData V2 has no data aggregation");
        out.apply = parseApply(value, label(name), ctx.dialect, ctx.budget);
        break;
      case "top":
      case "skip": {
        const v = value.trim();
        if (!NUMBER_VALUE.test(v)) malformed(name, value);
        out[name] = Number(v);
        break;
      }
      case "count":
        if (!COUNT_VALUE.test(value.trim())) malformed(name, value);
        out.count = value.trim() === "true";
        break;
      case "levels": {
        const t = value.trim();
        if (t.toLowerCase() === "max") out.levels = "max";
        else if (/^[1-9][0-9]{0,8}$/.test(t)) out.levels = Number(t);
        else invalid(`malformed $levels '${excerpt(t)}' in ${where === "" ? "$expand" : where}`);
        break;
      }
      default:
        // Options that shape no read ($format, $skiptoken, …) are checked by their caller.
        break;
    }
  }
  return out;
}

/** Parses `name=value;name=value` inside `$expand=Nav(...)` or `$select=Prop(...)`. */
function parseNestedOptions(text: string, what: string, ctx: OptionContext, depth: number): QueryOptions {
  const raw = new Map<string, string>();
  if (text.trim() === "") return {};
  for (const part of splitTopLevel(text, ";", what)) {
    const eq = part.indexOf("=");
    if (eq < 0) invalid(`malformed option '${excerpt(part)}' in ${what}`);
    const name = part.slice(0, eq).trim();
    const canonical = systemOptionName(name);
    if (canonical === undefined || !NESTED_OPTIONS.has(canonical)) invalid(`option '${excerpt(name)}' is not allowed in ${what}`);
    if (raw.has(canonical)) invalid(`option $${canonical} is given more than once in ${what}`);
    const value = part.slice(eq + 1);
    // SAP CAP ends a nested $search at the first ')' or ';', quotes or not.
    if (canonical === "search" && /[()'"[\]{};]/.test(value)) {
      invalid(`a nested $search may not hold quotes, brackets or parentheses in ${what}: back ends disagree on where it ends`);
    }
    raw.set(canonical, value);
  }
  return parseOptions(raw, what, ctx, depth + 1);
}

// A segment of a `$select`/`$expand` path: a name, a qualified name (a cast, an operation), `*` or `Namespace.*`.
const ITEM_SEGMENT = /^(?:\*|[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Nd}\p{Mn}\p{Mc}\p{Pc}\p{Cf}]{0,127}(?:\.(?:\*|[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Nd}\p{Mn}\p{Mc}\p{Pc}\p{Cf}]{0,127}))*|\$ref|\$count)$/u;

/** A path of names in `$select`/`$expand`: segments separated by `/`, no white space inside. */
function itemPath(text: string, what: string): string[] {
  const segs = text.split("/");
  for (const seg of segs) {
    if (!ITEM_SEGMENT.test(seg)) invalid(`malformed path '${excerpt(text)}' in ${what}`);
  }
  return segs;
}

/** Parses `$select`. */
export function parseSelect(text: string, what: string, ctx: OptionContext, depth: number): SelectItem[] {
  spend(ctx.budget, text.length);
  refuseOutsideLiterals(text, what);
  return splitTopLevel(text, ",", what).map((raw) => {
    const item = raw.trim();
    if (item === "") invalid(`empty item in ${what}`);
    const { name: pathText, args } = splitCall(item, what);
    const path = itemPath(pathText, what);
    if (args === undefined) return { path };
    return { path, options: parseNestedOptions(args, `${what} ${excerpt(pathText)}`, ctx, depth) };
  });
}

/** Parses `$expand`. */
export function parseExpand(text: string, what: string, ctx: OptionContext, depth: number): ExpandItem[] {
  spend(ctx.budget, text.length);
  refuseOutsideLiterals(text, what);
  return splitTopLevel(text, ",", what).map((raw) => {
    const item = raw.trim();
    if (item === "") invalid(`empty item in ${what}`);
    const { name: pathText, args } = splitCall(item, what);
    let path = itemPath(pathText, what);
    let suffix: "$ref" | "$count" | undefined;
    const last = path[path.length - 1];
    if (last === "$ref" || last === "$count") {
      suffix = last;
      path = path.slice(0, -1);
    }
    if (path.length === 0 || path.some((s) => s.startsWith("$"))) invalid(`malformed $expand item '${excerpt(pathText)}'`);
    const options = args === undefined ? {} : parseNestedOptions(args, `$expand ${excerpt(pathText)}`, ctx, depth);
    return { path, ...(suffix !== undefined ? { suffix } : {}), options };
  });
}

/** Parses every parameter alias's value as an expression (an alias value is a `commonExpr`). */
export function parseAliases(aliases: ReadonlyMap<string, string>, ctx: OptionContext): ReadonlyMap<string, Expr> {
  const out = new Map<string, Expr>();
  for (const [name, value] of aliases) out.set(name, parseExpression(value, `parameter alias ${excerpt(name)}`, ctx.dialect, ctx.budget));
  return out;
}
