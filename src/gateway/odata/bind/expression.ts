/**
 * Binds expression trees (`../parse/expression.ts`) to the service model:
 * every member path is resolved name by name from where it starts (the
 * resource the option applies to, `$it`, a lambda variable), and every
 * navigation it crosses is reported as a read of its target entity set
 * (`many` when collection-valued). Which operation a read needs is the
 * access table's (`../accesses.ts`).
 *
 * Decisions:
 * - Every name must resolve: a property, a navigation, a type cast, a
 *   `$compute` alias of the same level, a dynamic property of an open type;
 *   anything else is invalid (400). A navigation only a derived type
 *   declares needs the cast first (a lenient back end would follow it
 *   anyway), and one whose entity set the document does not name is read
 *   as `*` (`./unbound.ts`).
 * - Only OData's built-in functions may be called. Any other call (a
 *   function the model declares, bound or unbound, qualified or not, an
 *   action, a bound operation named without parentheses) is denied (403):
 *   what it reads cannot be authorized from the expression.
 * - `$root` is denied.
 * - Inside a lambda, back ends disagree on where a path that does not start
 *   with its variable starts: the standard says at `$it`, SAP CAP reads it
 *   from the lambda's collection (and a path from an outer lambda's
 *   variable from the innermost collection too). So there a path must
 *   start with the innermost variable (or `$it`), and a lone name is read
 *   from both places. A lambda body that compares its variable itself
 *   (`Tags/any(t:t eq 'x')`) may name nothing else: CAP rewrites it into
 *   `contains` and reads the rest one level up.
 * - A lambda needs a collection (CAP runs one over a single entity, but
 *   reads its body from one level up).
 * - Parameter aliases are bound where they are used, as the expression
 *   they hold.
 */
import type { Position, ServiceModel, Step } from "../metadata.js";
import type { Expr, MemberSegment } from "../parse/expression.js";
import { spend, type Budget } from "../parse/expression.js";
import { MAX_NESTING, Refusal, denied, excerpt, invalid } from "../syntax.js";
import { unboundNavigation, unboundTarget } from "./unbound.js";

/** Where an expression (or a path in it) stands: a position in the model, or why there is none. */
export interface Scope {
  readonly position: Position | undefined;
  /** Why there is no position: no entity there (`primitive`), or a result erplink cannot place (`function`). */
  readonly missing?: "function" | "primitive";
  /** Navigation path from the request's target to here, for reasons (`""` or `Items/`). */
  readonly label: string;
  /**
   * Whether the scope stands for several entities (a collection, or one
   * entity of one): a navigation followed from it reads a row of its
   * target for each of them, which is a `list` of the target, however
   * each row is found.
   */
  readonly many?: boolean;
}

/**
 * Receives every navigation read an expression (or an option) needs;
 * `unbound` names a navigation without an entity set, read as `*`.
 */
export type ReadSink = (entitySet: string, many: boolean, reason: string, unbound?: string) => void;

/** What binding expressions needs. */
export interface ExpressionContext {
  readonly model: ServiceModel;
  readonly aliases: ReadonlyMap<string, Expr>;
  readonly read: ReadSink;
  readonly budget: Budget;
  /** Aliases or nested options already bound at a scope: binding them again would find the same reads. */
  readonly applied: Set<string>;
}

/** Most parameter aliases followed inside one another. */
const MAX_ALIAS_DEPTH = 8;

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

/** The innermost lambda around a node: its variable and the collection it ranges over. */
interface Lambda {
  readonly variable: string;
  readonly collection: Scope;
}

/** The names in scope where an expression is bound. */
export interface Environment {
  /** The resource the option applies to (`$it`, `$this`, and where names start). */
  readonly it: Scope;
  /** Lambda variables in scope. */
  readonly variables: ReadonlyMap<string, Scope>;
  readonly lambda?: Lambda;
  /** `$compute` aliases of this level. */
  readonly computed: ReadonlySet<string>;
}

/** A fresh environment at `scope`, with the `$compute` aliases of its level. */
export function environment(scope: Scope, computed: ReadonlySet<string> = new Set()): Environment {
  return { it: scope, variables: new Map(), computed };
}

/** The scope of an entity (not the collection) at `scope`: expressions are evaluated per entity. */
export function itemScope(scope: Scope): Scope {
  if (scope.position === undefined || !scope.position.collection) return scope;
  // Object.assign and literals, not spreads with further members: V8 (Node 20) takes a slow path for those.
  const position: Position = Object.assign({}, scope.position, { collection: false });
  return scope.missing === undefined ? { position, label: scope.label, many: true } : { position, label: scope.label, missing: scope.missing, many: true };
}

/** Why an expression's member cannot be followed from `scope`. */
function cannotFollow(scope: Scope, what: string): never {
  if (scope.missing === "function") denied(`cannot authorize ${what}: the result of an operation has no known entity set`);
  invalid(`cannot apply ${what} to a primitive value`);
}

/** Why a call of anything but a built-in function in an expression is refused. */
function uncallable(name: string, what: string, parenthesized: boolean): string {
  return `'${excerpt(name)}${parenthesized ? "(…)" : ""}' in ${what} calls a function erplink cannot authorize: only OData's built-in functions may be called in an expression`;
}

/**
 * Follows member `segs` from `scope`, reporting a read for every navigation
 * crossed; returns where the path ends and whether it crossed one.
 * `computed` names that may stand alone (`$compute` aliases).
 */
export function followPath(
  ctx: ExpressionContext,
  scope: Scope,
  segs: readonly MemberSegment[],
  what: string,
  computed: ReadonlySet<string> = new Set(),
): { scope: Scope; crossed: boolean } {
  let { position, label } = scope;
  let missing = scope.missing;
  let crossed = false;
  let many = scope.many === true || position?.collection === true;
  for (let k = 0; k < segs.length; k++) {
    const { name, args } = segs[k]!;
    spend(ctx.budget, 1);
    if (name === "$count") break; // the parser lets it end a path only
    if (position === undefined) {
      cannotFollow({ position, label, ...(missing ? { missing } : {}) }, `'${excerpt(segs.map((s) => s.name).join("/"))}' in ${what}`);
    }
    if (k === 0 && segs.length === 1 && args === undefined && computed.has(name)) return { scope: { position: undefined, missing: "primitive", label }, crossed };
    const step: Step = ctx.model.step(position, name);
    if (args !== undefined && step.kind !== "function" && step.kind !== "action") denied(uncallable(name, what, true));
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
        many ||= step.collection;
        if (step.target === undefined) {
          // No entity set named: read as `*`, every set (`./unbound.ts`).
          const target = unboundTarget(step, navLabel, position);
          ctx.read(target.entitySet, many, `${what} ${navLabel}`, unboundNavigation(step.name, position));
          position = target;
        } else {
          ctx.read(step.target.entitySet, many, `${what} ${navLabel}`);
          position = step.target;
        }
        crossed = true;
        label = `${navLabel}/`;
        break;
      }
      case "cast":
        position = step.position;
        label = `${label}${step.name}/`;
        break;
      case "function":
      case "action":
        // Named with or without parentheses, a bound operation is called (OData's dotted-identifier binding).
        denied(uncallable(segs.slice(0, k + 1).map((s) => s.name).join("/"), what, args !== undefined));
      case "unknown":
        if (step.derivedNavigation !== undefined) {
          invalid(`'${excerpt(name)}' is a navigation property of a type derived from '${position.type}': cast to it first ('${excerpt(step.derivedNavigation)}') in ${what}`);
        }
        // A bound operation on the entity, named where the scope is its collection.
        if (position.collection) {
          const kind = ctx.model.step({ ...position, collection: false }, name).kind;
          if (kind === "function" || kind === "action") denied(uncallable(name, what, false));
        }
        invalid(`'${excerpt(name)}' is not a property or navigation of '${position.type}' in ${what}`);
    }
  }
  const reached: Scope = missing !== undefined && position === undefined ? { position, label, missing, many } : { position, label, many };
  return { scope: reached, crossed };
}

/** Binds an expression at `env`, reporting the reads it needs. */
export function bindExpression(ctx: ExpressionContext, expr: Expr, env: Environment, what: string, aliasDepth = 0): void {
  switch (expr.t) {
    case "literal":
      if (expr.literal.kind === "enum" && ctx.model.enumType(expr.literal.type) === undefined) {
        invalid(`'${excerpt(expr.literal.type)}' is not an enumeration type of the service in ${what}`);
      }
      return;
    case "alias": {
      const value = ctx.aliases.get(expr.name);
      if (value === undefined) return; // an alias without a value is null
      if (aliasDepth >= MAX_ALIAS_DEPTH) invalid(`parameter aliases are nested more than ${MAX_ALIAS_DEPTH} levels deep`);
      // Outside lambdas an alias means the same wherever it is used: bind it once per scope.
      if (env.variables.size === 0 && env.it.position !== undefined) {
        const key = `${expr.name}\u0000${positionKey(env.it.position)}`;
        if (ctx.applied.has(key)) return;
        ctx.applied.add(key);
      }
      bindExpression(ctx, value, env, what, aliasDepth + 1);
      return;
    }
    case "member":
      bindMember(ctx, expr, env, what);
      return;
    case "call": {
      const lower = expr.name.toLowerCase();
      if (!BUILT_IN_FUNCTIONS.has(lower)) denied(uncallable(expr.name, what, true));
      expr.args.forEach((arg, i) => {
        // The type argument of isof and cast names a type, not a member.
        if ((lower === "isof" || lower === "cast") && i === expr.args.length - 1 && isTypeName(ctx.model, arg)) return;
        bindExpression(ctx, arg, env, what, aliasDepth);
      });
      return;
    }
    case "lambda":
      bindLambda(ctx, expr, env, what, aliasDepth);
      return;
    case "unary":
      bindExpression(ctx, expr.operand, env, what, aliasDepth);
      return;
    case "binary":
      bindExpression(ctx, expr.left, env, what, aliasDepth);
      bindExpression(ctx, expr.right, env, what, aliasDepth);
      return;
    case "list":
      for (const item of expr.items) bindExpression(ctx, item, env, what, aliasDepth);
      return;
  }
}

/** Whether `expr` names a type (`Edm.String`, `Sales.SpecialOrder`): the last argument of isof and cast. */
function isTypeName(model: ServiceModel, expr: Expr): boolean {
  if (expr.t !== "member" || expr.from !== undefined || expr.segments.length !== 1) return false;
  const name = expr.segments[0]!.name;
  return expr.segments[0]!.args === undefined && (/^Edm\.[A-Za-z]+$/.test(name) || (name.includes(".") && (model.isStructuredType(name) || model.enumType(name) !== undefined || model.underlyingType(name) !== name)));
}

function bindMember(ctx: ExpressionContext, expr: Extract<Expr, { t: "member" }>, env: Environment, what: string): void {
  const segs = expr.segments;
  if (expr.from === "$root") denied(`$root is not allowed in ${what}`);
  if (expr.from !== undefined) {
    followPath(ctx, env.it, segs, what, env.computed);
    return;
  }
  const first = segs[0]!.name;
  const { lambda } = env;
  if (lambda !== undefined && first !== lambda.variable) {
    if (segs.length > 1) {
      invalid(
        `inside a lambda, a path must start with its variable '${excerpt(lambda.variable)}' or $it in ${what}: ` +
          `back ends disagree on where '${excerpt(segs.map((s) => s.name).join("/"))}' starts`,
      );
    }
    if (env.variables.has(first)) return; // an outer variable alone: a value
    // A lone name: a property of $it to some back ends, of the lambda's collection to others; read both where they resolve.
    readBoth(ctx, segs, env, lambda, what);
    return;
  }
  const variable = env.variables.get(first);
  if (variable !== undefined) {
    followPath(ctx, variable, segs.slice(1), what);
    return;
  }
  followPath(ctx, env.it, segs, what, env.computed);
}

/** A lone name inside a lambda: followed from `$it` and from the lambda's collection, wherever it resolves (at least one). */
function readBoth(ctx: ExpressionContext, segs: readonly MemberSegment[], env: Environment, lambda: Lambda, what: string): void {
  let resolved = false;
  let refusal: unknown;
  for (const scope of [env.it, lambda.collection]) {
    if (scope.position === undefined) continue;
    try {
      followPath(ctx, scope, segs, what, env.computed);
      resolved = true;
    } catch (error) {
      // A denial (a navigation without a set, an operation) stands wherever the name is read.
      if (!(error instanceof Refusal) || error.kind !== "invalid") throw error;
      refusal ??= error;
    }
  }
  if (!resolved) {
    if (refusal !== undefined) throw refusal;
    invalid(`'${excerpt(segs[0]!.name)}' cannot be resolved in ${what}`);
  }
}

function bindLambda(ctx: ExpressionContext, expr: Extract<Expr, { t: "lambda" }>, env: Environment, what: string, aliasDepth: number): void {
  const start = expr.collection.from === undefined ? env.variables.get(expr.collection.segments[0]!.name) : undefined;
  if (expr.collection.from === "$root") denied(`$root is not allowed in ${what}`);
  if (env.lambda !== undefined && expr.collection.from === undefined && expr.collection.segments[0]!.name !== env.lambda.variable) {
    invalid(
      `inside a lambda, a path must start with its variable '${excerpt(env.lambda.variable)}' or $it in ${what}: ` +
        `back ends disagree on where '${excerpt(expr.collection.segments.map((s) => s.name).join("/"))}' starts`,
    );
  }
  const collection =
    start !== undefined
      ? followPath(ctx, start, expr.collection.segments.slice(1), what).scope
      : followPath(ctx, env.it, expr.collection.segments, what).scope;
  const path = expr.collection.segments.map((s) => s.name).join("/");
  // SAP CAP runs a lambda over a single entity, but reads its body from one level up.
  if (collection.position !== undefined && !collection.position.collection) {
    invalid(`${expr.operator} needs a collection, '${excerpt(path)}' is a single entity in ${what}`);
  }
  if (expr.variable === undefined || expr.body === undefined) return;
  checkBareVariable(expr.body, expr.variable, what);
  const item = itemScope(collection);
  const variables = new Map(env.variables);
  variables.set(expr.variable, item);
  if (variables.size > MAX_NESTING) invalid(`lambda expressions are nested too deeply in ${what}`);
  bindExpression(ctx, expr.body, { it: env.it, variables, lambda: { variable: expr.variable, collection: item }, computed: env.computed }, what, aliasDepth);
}

/**
 * Refuses a lambda whose body uses its variable alone (`Tags/any(t:t eq 'x')`,
 * for collections of primitive values) beside any other member: SAP CAP
 * rewrites such a lambda into `contains` and reads the rest of its body one
 * level up, the variable's paths included.
 */
function checkBareVariable(body: Expr, variable: string, what: string): void {
  let bare = false;
  let other: string | undefined;
  const visit = (node: Expr): void => {
    switch (node.t) {
      case "member": {
        const names = node.segments.map((s) => s.name);
        if (node.from === undefined && names.length === 1 && names[0] === variable) bare = true;
        else other ??= `${node.from !== undefined ? `${node.from}/` : ""}${names.join("/")}`;
        for (const s of node.segments) for (const a of s.args ?? []) visit(a);
        return;
      }
      case "lambda":
        visit(node.collection);
        if (node.body !== undefined) visit(node.body);
        return;
      case "call":
        node.args.forEach(visit);
        return;
      case "unary":
        visit(node.operand);
        return;
      case "binary":
        visit(node.left);
        visit(node.right);
        return;
      case "list":
        node.items.forEach(visit);
        return;
      default:
        return;
    }
  };
  visit(body);
  if (bare && other !== undefined) {
    invalid(`a lambda that compares its variable '${excerpt(variable)}' itself may not name '${excerpt(other)}' in ${what}: back ends disagree on where that is read`);
  }
}

/** A key for a position, for the `applied` set. */
export function positionKey(p: Position): string {
  return `${p.entitySet}\u0000${p.type}\u0000${p.bindingPath.join("/")}\u0000${p.collection}`;
}
