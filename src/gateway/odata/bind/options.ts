/**
 * Binds the parsed system query options (`../parse/query.ts`) at the scope
 * the request's path leads to: `$expand` items (with `*`, `$levels` and
 * nested options), `$select` paths through navigations, and the
 * expressions of `$filter`, `$orderby` and `$compute` (`./expression.ts`).
 * Every navigation followed is reported as a read of its target entity
 * set (`many` when collection-valued; `*` when the document names none).
 *
 * Options apply in a fixed order (expand, select, filter, orderby, compute),
 * after `$apply` (`./apply.ts`), whose aliases they may use, so that equal
 * queries give equal answers whatever their order. `$levels` repeats an
 * expanded item from each target until no new target appears.
 */
import type { ServiceModel } from "../metadata.js";
import type { ExpandItem, QueryOptions, SelectItem } from "../parse/query.js";
import { spend } from "../parse/expression.js";
import { MAX_NESTING, denied, excerpt, invalid } from "../syntax.js";
import { bindApply } from "./apply.js";
import { bindExpression, environment, followPath, itemScope, positionKey, type ExpressionContext, type Scope } from "./expression.js";

/** Most rounds of `$levels` followed before giving up (invalid) when new targets still appear. */
const MAX_LEVELS = 32;

function cannotAuthorize(scope: Scope, what: string): never {
  if (scope.missing === "function") denied(`cannot authorize ${what}: the result of an operation has no known entity set`);
  invalid(`cannot apply ${what} to a primitive value`);
}

/** Binds a level of options (the request's, or an item's nested ones) at `scope`. */
export function bindOptions(ctx: ExpressionContext, scope: Scope, options: QueryOptions, depth = 0): void {
  // `$apply` is evaluated first; its aliases are names the other options may use.
  const computed = options.apply !== undefined ? bindApply(ctx, scope, options.apply) : new Set<string>();
  for (const c of options.compute ?? []) computed.add(c.alias);
  if (options.expand !== undefined) bindExpand(ctx, scope, options.expand, depth);
  if (options.select !== undefined) bindSelect(ctx, scope, options.select, computed, depth);
  const needsScope = options.filter !== undefined || options.orderby !== undefined || options.compute !== undefined;
  if (!needsScope) return;
  if (scope.position === undefined) {
    const first = options.filter !== undefined ? "$filter" : options.orderby !== undefined ? "$orderby" : "$compute";
    cannotAuthorize(scope, first);
  }
  const env = environment(itemScope(scope), computed);
  if (options.filter !== undefined) bindExpression(ctx, options.filter, env, "$filter");
  for (const item of options.orderby ?? []) bindExpression(ctx, item.expr, env, "$orderby");
  for (const item of options.compute ?? []) bindExpression(ctx, item.expr, env, "$compute");
}

/** The options nested in an item, bound at the item's target once per target. */
function bindNested(ctx: ExpressionContext, scope: Scope, options: QueryOptions, depth: number): void {
  if (Object.keys(options).length === 0) return;
  if (scope.position !== undefined) {
    const key = `${positionKey(scope.position)}\u0000${JSON.stringify(options, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v))}`;
    if (ctx.applied.has(key)) return;
    ctx.applied.add(key);
  }
  bindOptions(ctx, scope, options, depth + 1);
}

/** `$expand`: every item's navigations are read; `*` expands every navigation of the type. */
function bindExpand(ctx: ExpressionContext, scope: Scope, items: readonly ExpandItem[], depth: number): void {
  if (depth > MAX_NESTING) invalid(`$expand is nested more than ${MAX_NESTING} levels deep`);
  for (const item of items) {
    const pathText = item.path.join("/");
    const levels = item.options.levels === undefined ? 1 : item.options.levels === "max" ? Infinity : item.options.levels;
    const { levels: _levels, ...nested } = item.options;
    let frontier: Scope[] = [scope];
    const seen = new Set<string>();
    for (let level = 1; level <= levels && frontier.length > 0; level++) {
      if (level > MAX_LEVELS) invalid(`$levels in $expand ${excerpt(pathText)} reaches new targets beyond ${MAX_LEVELS} levels`);
      const next: Scope[] = [];
      for (const from of frontier) {
        // Repeating an item stops quietly where the target type lacks its first name.
        if (level > 1 && from.position !== undefined && item.path[0] !== "*" && ctx.model.step(from.position, item.path[0]!).kind === "unknown") continue;
        for (const target of expandTargets(ctx, from, item.path)) {
          if (target.position === undefined) continue;
          const key = positionKey(target.position);
          if (seen.has(key)) continue;
          seen.add(key);
          bindNested(ctx, target, nested, depth);
          next.push(target);
        }
      }
      frontier = next;
    }
  }
}

/** The scopes one `$expand` item reaches from `scope`, reporting their reads. */
function expandTargets(ctx: ExpressionContext, scope: Scope, path: readonly string[]): Scope[] {
  if (scope.position === undefined) cannotAuthorize(scope, `$expand ${excerpt(path.join("/"))}`);
  const segs = path.map((name) => ({ name }));
  if (path[path.length - 1] === "*") {
    const at = followPath(ctx, scope, segs.slice(0, -1), "$expand").scope;
    if (at.position === undefined) cannotAuthorize(at, "$expand *");
    const model: ServiceModel = ctx.model;
    const out: Scope[] = [];
    // A derived type's navigations too: a back end may expand them on entities of that type.
    for (const navPath of [...model.navigationPaths(at.position), ...model.derivedNavigationPaths(at.position)]) {
      spend(ctx.budget, navPath.length);
      out.push(followPath(ctx, at, navPath.map((name) => ({ name })), "$expand").scope);
    }
    return out;
  }
  const reached = followPath(ctx, scope, segs, "$expand");
  // Expanding a property (a stream, or a V2 complex property) reaches no entity.
  return reached.crossed ? [reached.scope] : [];
}

/** `$select`: paths through navigations (V2 `Nav/Prop`) are reads; nested options (4.01) apply at the item. */
function bindSelect(ctx: ExpressionContext, scope: Scope, items: readonly SelectItem[], computed: ReadonlySet<string>, depth: number): void {
  for (const item of items) {
    const last = item.path[item.path.length - 1]!;
    // `*` and `NS.*` select properties or operations, never a navigation.
    const path = last === "*" || last.endsWith(".*") ? item.path.slice(0, -1) : item.path;
    if (path.length === 0) continue;
    if (scope.position === undefined) cannotAuthorize(scope, `$select ${excerpt(item.path.join("/"))}`);
    const reached = selectPath(ctx, scope, path, computed);
    if (item.options !== undefined) bindNested(ctx, reached, item.options, depth);
  }
}

/** Follows a `$select` path; a selected bound operation only advertises it, so it reads nothing. */
function selectPath(ctx: ExpressionContext, scope: Scope, path: readonly string[], computed: ReadonlySet<string>): Scope {
  const lastName = path[path.length - 1]!;
  if (path.length >= 1 && lastName.includes(".")) {
    // `Sales.GetTotal` (or `Nav/Sales.GetTotal`): selecting an operation advertises it, nothing is called.
    const before = followPath(ctx, scope, path.slice(0, -1).map((name) => ({ name })), "$select").scope;
    if (before.position !== undefined) {
      const kind = ctx.model.step(itemScope(before).position!, lastName).kind;
      if (kind === "function" || kind === "action") return { position: undefined, missing: "function", label: before.label };
      const onCollection = ctx.model.step(before.position, lastName).kind;
      if (onCollection === "function" || onCollection === "action") return { position: undefined, missing: "function", label: before.label };
    }
  }
  return followPath(ctx, scope, path.map((name) => ({ name })), "$select", computed).scope;
}
