/**
 * `$apply` (OData Data Aggregation Extension v4.0, §3), parsed into its
 * transformations, knowing nothing of the service model: the binder
 * (`../bind/apply.ts`) resolves the paths and expressions inside.
 *
 * Analyzed: `aggregate`, `groupby`, `filter`, `compute`, `expand`,
 * `orderby`, `top`, `skip`, `search`, `concat` and `identity`, separated by
 * `/`. Every other transformation (the hierarchy functions `ancestors`,
 * `descendants` and `traverse`, `topcount` and its kin, `nest`, `join`,
 * `rollup` in a grouping, a service's own functions) is refused (invalid)
 * by name: a back end would read what erplink did not.
 *
 * The text is read strictly: transformation names in lower case, no white
 * space outside parentheses, the same characters refused outside literals
 * as in `$filter` (`"`, `{`, `[`, `\\`, `§§`).
 */
import { excerpt, invalid, splitCall, splitTopLevel } from "../syntax.js";
import {
  parseAggregate,
  parseCompute,
  parseExpression,
  parseOrderBy,
  refuseOutsideLiterals,
  spend,
  type AggregateItem,
  type Budget,
  type ComputeItem,
  type Expr,
  type OrderItem,
} from "./expression.js";
import type { Dialect } from "./literal.js";

/** A path in `groupby` or `expand`: a member path without `$it`, calls or `$count`. */
export type ApplyPath = Extract<Expr, { t: "member" }>;

/** `expand(Nav[,filter(…)][,expand(…)]…)`. */
export interface ApplyExpand {
  readonly path: ApplyPath;
  readonly filter?: Expr;
  readonly expand: readonly ApplyExpand[];
}

/** One transformation of `$apply`. */
export type Transformation =
  | { readonly t: "aggregate"; readonly items: readonly AggregateItem[] }
  | { readonly t: "groupby"; readonly paths: readonly ApplyPath[]; readonly then: readonly Transformation[] }
  | { readonly t: "filter"; readonly expr: Expr }
  | { readonly t: "compute"; readonly items: readonly ComputeItem[] }
  | { readonly t: "expand"; readonly item: ApplyExpand }
  | { readonly t: "orderby"; readonly items: readonly OrderItem[] }
  | { readonly t: "top" | "skip"; readonly count: number }
  | { readonly t: "search"; readonly text: string }
  | { readonly t: "concat"; readonly sequences: readonly (readonly Transformation[])[] }
  | { readonly t: "identity" };

/** `$apply`, parsed: its transformations in order, and where it stands for messages. */
export interface Apply {
  /** `$apply`, or `$apply in $expand Items` for a nested one. */
  readonly label: string;
  readonly steps: readonly Transformation[];
}

/** A transformation name: lower-case letters (a qualified name, a service's function, is not analyzed). */
const TRANSFORMATION_NAME = /^[a-z]+$/;
const NUMBER = /^[0-9]{1,15}$/;

interface Context {
  readonly label: string;
  readonly dialect: Dialect;
  readonly budget: Budget;
}

function unsupported(name: string): never {
  invalid(`$apply transformation '${excerpt(name)}' is not supported`);
}

/** Parses the value of `$apply`; `label` names it in messages (`$apply`, `$apply in $expand Items`). */
export function parseApply(text: string, label: string, dialect: Dialect, budget: Budget): Apply {
  spend(budget, text.length);
  if (text.includes("§§")) invalid(`'§§' is not allowed in ${label}: a back end (SAP CAP's V2 adapter) marks function arguments with it`);
  refuseOutsideLiterals(text, label);
  const ctx: Context = { label, dialect, budget };
  return { label, steps: sequence(text, ctx) };
}

/** `trafo/trafo/…`. */
function sequence(text: string, ctx: Context): Transformation[] {
  if (text === "") invalid(`empty ${ctx.label}`);
  return splitTopLevel(text, "/", ctx.label).map((part) => transformation(part, ctx));
}

function transformation(text: string, ctx: Context): Transformation {
  spend(ctx.budget, 1);
  if (text === "") invalid(`empty transformation in ${ctx.label}`);
  const { name, args } = splitCall(text, ctx.label);
  if (!TRANSFORMATION_NAME.test(name)) {
    if (name.trim() !== name || name === "") invalid(`malformed transformation '${excerpt(text)}' in ${ctx.label}: no white space outside parentheses`);
    unsupported(name);
  }
  const what = `${name} in ${ctx.label}`;
  if (name === "identity") {
    if (args !== undefined) invalid(`identity takes no arguments in ${ctx.label}`);
    return { t: "identity" };
  }
  if (args === undefined) {
    if (KNOWN.has(name)) invalid(`${name} needs arguments in parentheses in ${ctx.label}`);
    unsupported(name);
  }
  switch (name) {
    case "aggregate":
      return { t: "aggregate", items: parseAggregate(args, what, ctx.dialect, ctx.budget) };
    case "groupby":
      return groupby(args, what, ctx);
    case "filter":
      return { t: "filter", expr: parseExpression(args, what, ctx.dialect, ctx.budget) };
    case "compute":
      return { t: "compute", items: parseCompute(args, what, ctx.dialect, ctx.budget) };
    case "orderby":
      return { t: "orderby", items: parseOrderBy(args, what, ctx.dialect, ctx.budget) };
    case "expand":
      return { t: "expand", item: expand(args, what, ctx) };
    case "top":
    case "skip": {
      const n = args.trim();
      if (!NUMBER.test(n)) invalid(`malformed ${what}: expected a non-negative integer, not '${excerpt(args)}'`);
      return { t: name, count: Number(n) };
    }
    case "search":
      // A search names no member; what could make back ends split it differently is refused.
      if (/[()'"[\]{};,/]/.test(args) || args.trim() === "") {
        invalid(`${what} may not be empty or hold quotes, brackets, parentheses, ',', ';' or '/': back ends disagree on where it ends`);
      }
      return { t: "search", text: args };
    case "concat": {
      const parts = splitTopLevel(args, ",", what).map((s) => s.trim());
      if (parts.length < 2) invalid(`concat needs at least two transformation sequences in ${ctx.label}`);
      return { t: "concat", sequences: parts.map((s) => sequence(s, ctx)) };
    }
    default:
      unsupported(name);
  }
}

/** The transformations analyzed (for messages on a malformed one). */
const KNOWN = new Set(["aggregate", "groupby", "filter", "compute", "orderby", "expand", "top", "skip", "search", "concat"]);

/** A member path of `groupby` or `expand`: names and type casts only. */
function memberPath(text: string, what: string, ctx: Context): ApplyPath {
  const t = text.trim();
  if (t === "") invalid(`empty path in ${what}`);
  if (/^rollup\s*\(/.test(t)) unsupported("rollup");
  const expr = parseExpression(t, what, ctx.dialect, ctx.budget);
  if (expr.t !== "member" || expr.from !== undefined || expr.segments.some((s) => s.args !== undefined || s.name === "$count")) {
    invalid(`'${excerpt(t)}' is not a property path in ${what}`);
  }
  return expr;
}

/** `groupby((path,…)[,trafo/…])`. */
function groupby(args: string, what: string, ctx: Context): Transformation {
  const parts = splitTopLevel(args, ",", what);
  const list = parts[0]!.trim();
  if (!list.startsWith("(") || !list.endsWith(")")) invalid(`${what} needs a parenthesized list of grouping properties first`);
  if (parts.length > 2) invalid(`${what} takes the grouping properties and one transformation sequence`);
  const inner = list.slice(1, -1);
  const paths = splitTopLevel(inner, ",", what).map((p) => memberPath(p, what, ctx));
  const then = parts.length === 2 ? sequence(parts[1]!.trim(), ctx) : [];
  return { t: "groupby", paths, then };
}

/** `expand(Nav[,filter(…)][,expand(…)]…)`. */
function expand(args: string, what: string, ctx: Context): ApplyExpand {
  const parts = splitTopLevel(args, ",", what).map((s) => s.trim());
  const path = memberPath(parts[0]!, what, ctx);
  let filter: Expr | undefined;
  const nested: ApplyExpand[] = [];
  parts.slice(1).forEach((part, i) => {
    const { name, args: inner } = splitCall(part, what);
    if (name === "filter" && inner !== undefined && i === 0) filter = parseExpression(inner, `filter in ${what}`, ctx.dialect, ctx.budget);
    else if (name === "expand" && inner !== undefined) nested.push(expand(inner, `expand in ${what}`, ctx));
    else invalid(`'${excerpt(part)}' is not allowed in ${what}: only a filter(…) first, then expand(…)`);
  });
  return { path, ...(filter !== undefined ? { filter } : {}), expand: nested };
}
