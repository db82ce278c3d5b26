/**
 * Binds a parsed `$apply` (`../parse/apply.ts`) at the collection it
 * applies to. Aggregation reads the collection (`list` of its entity set);
 * every path and expression inside is bound as `$filter`'s are
 * (`./expression.ts`), so a path through a navigation reads its target set
 * (`list`), and only OData's built-in functions may be called.
 *
 * Aliases introduced by `aggregate` and `compute` are names later
 * transformations (and `$filter`, `$orderby`, `$select`, `$compute` after
 * `$apply`) may use alone; inside `groupby(…, trafos)` and each sequence of
 * `concat` they are scoped like the transformations. Names are resolved
 * against the collection's entity type throughout, never against the
 * narrower shape a `groupby` leaves: a name that no longer exists there is
 * the back end's to refuse, and every navigation a path crosses is read
 * whatever the shape.
 *
 * Aggregation methods: `sum`, `min`, `max`, `average`, `countdistinct`;
 * a custom aggregation method is refused (invalid), as is `expand` of
 * anything but a navigation.
 */
import type { Apply, ApplyExpand, Transformation } from "../parse/apply.js";
import type { Expr } from "../parse/expression.js";
import { excerpt, denied, invalid } from "../syntax.js";
import { bindExpression, environment, followPath, itemScope, type ExpressionContext, type Scope } from "./expression.js";

const METHODS = new Set(["sum", "min", "max", "average", "countdistinct"]);

/**
 * Binds `apply` at `scope` (a collection), reporting its reads; returns the
 * aliases its transformations leave for the options after it.
 */
export function bindApply(ctx: ExpressionContext, scope: Scope, apply: Apply): Set<string> {
  const { label } = apply;
  if (scope.position === undefined) {
    if (scope.missing === "function") denied(`cannot authorize ${label}: the result of an operation has no known entity set`);
    invalid(`cannot apply ${label} to a primitive value`);
  }
  if (!scope.position.collection) invalid(`${label} applies to collections, and it stands at one entity`);
  if (scope.position.entitySet !== "*") ctx.read(scope.position.entitySet, true, label);
  const it = itemScope(scope);
  return steps(ctx, it, apply.steps, new Set(), label);
}

/** Binds a sequence of transformations from the aliases in `aliases`; returns the aliases after it. */
function steps(ctx: ExpressionContext, it: Scope, list: readonly Transformation[], aliases: ReadonlySet<string>, label: string): Set<string> {
  const names = new Set(aliases);
  for (const step of list) {
    const what = `${label} ${step.t}`;
    const expr = (e: Expr): void => bindExpression(ctx, e, environment(it, names), what);
    switch (step.t) {
      case "aggregate":
        for (const item of step.items) {
          if (item.t === "expr") {
            if (item.method !== undefined) method(item.method, what);
            expr(item.expr);
            for (const from of item.from) {
              if (from.method !== undefined) method(from.method, what);
              expr(from.path);
            }
          }
        }
        // Aliases of one aggregate are not visible inside it.
        for (const item of step.items) alias(ctx, it, item.alias, names, what);
        break;
      case "groupby":
        for (const path of step.paths) followPath(ctx, it, path.segments, what, names);
        for (const name of steps(ctx, it, step.then, names, label)) names.add(name);
        break;
      case "filter":
        expr(step.expr);
        break;
      case "compute":
        for (const item of step.items) expr(item.expr);
        for (const item of step.items) alias(ctx, it, item.alias, names, what);
        break;
      case "orderby":
        for (const item of step.items) expr(item.expr);
        break;
      case "expand":
        expand(ctx, it, step.item, what);
        break;
      case "concat": {
        const after = step.sequences.map((sequence) => steps(ctx, it, sequence, names, label));
        for (const set of after) for (const name of set) names.add(name);
        break;
      }
      case "top":
      case "skip":
      case "search":
      case "identity":
        break;
    }
  }
  return names;
}

/**
 * Adds an alias to `names`. One named like a navigation is refused: a
 * back end that takes a later `Alias` for the navigation reads its target,
 * which the alias hid from the analysis.
 */
function alias(ctx: ExpressionContext, it: Scope, name: string, names: Set<string>, what: string): void {
  if (it.position !== undefined && ctx.model.step(it.position, name).kind === "navigation") {
    invalid(`alias '${excerpt(name)}' in ${what} is the name of a navigation property: back ends disagree on which one a later '${excerpt(name)}' means`);
  }
  names.add(name);
}

function method(name: string, what: string): void {
  if (!METHODS.has(name)) invalid(`aggregation method '${excerpt(name)}' is not supported in ${what}: only sum, min, max, average and countdistinct`);
}

/** `expand(Nav, filter(…), expand(…))`: the navigation is read, the filter and nested expands bound at its target. */
function expand(ctx: ExpressionContext, it: Scope, item: ApplyExpand, what: string): void {
  const reached = followPath(ctx, it, item.path.segments, what);
  const path = item.path.segments.map((s) => s.name).join("/");
  if (!reached.crossed || reached.scope.position === undefined) invalid(`'${excerpt(path)}' is not a navigation in ${what}`);
  const target = itemScope(reached.scope);
  if (item.filter !== undefined) bindExpression(ctx, item.filter, environment(target), `${what} ${path} filter`);
  for (const nested of item.expand) expand(ctx, target, nested, what);
}
