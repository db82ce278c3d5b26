/**
 * Binds a parsed resource path (`../parse/path.ts`) to the service model:
 * which entity set, singleton or import its first segment names, what each
 * further segment is (a key, a navigation, a property, a cast, a bound
 * operation, a `$`-segment), and that every key value is a literal of its
 * key property's type (`./literal.ts`). The result says what the path
 * addresses and which entity sets it passes; which operations that needs is
 * the access table's (`../accesses.ts`).
 *
 * Decisions:
 * - A name the key may not touch stops the binding (403) whether or not the
 *   service has it, and one it may touch that the service lacks with 404
 *   (the key's entity step is asked before the lookup: the answer never
 *   tells which sets exist).
 * - Names match exactly as the model spells them; another case is refused
 *   (a back end that matches exactly reads it as no name, and acts on what
 *   stands before it).
 * - A navigation whose entity set the document does not name leads to `*`
 *   (`./unbound.ts`): the path goes on at its target type, in no named set.
 * - A path after an operation, `$each`, `$filter` and `$query` segments are
 *   denied; anything the grammar or the model does not produce is invalid.
 * - A function is called with parentheses and GET; an action with POST;
 *   parameters are checked against their declared types. V2 function
 *   imports take their parameters as query options (`?SalesOrder='1'`).
 */
import type { Dialect } from "../parse/literal.js";
import { parseLiteral, LiteralError } from "../parse/literal.js";
import type { Expr } from "../parse/expression.js";
import type { Arguments, ArgumentValue, PathSegment } from "../parse/path.js";
import type { OperationInfo, Overload, Parameter, Position, Root, ServiceModel, Step } from "../metadata.js";
import { Stop, denied, excerpt, invalid, type EntityStep } from "../syntax.js";
import { literalMismatch } from "./literal.js";
import { unboundNavigation, unboundTarget } from "./unbound.js";

/** What a path (or a segment's result) is. */
export type Shape = "collection" | "entity" | "complex" | "complexCollection" | "primitive" | "primitiveCollection";

/** A call of a function or action that ends a path. */
export interface OperationCall {
  readonly operation: OperationInfo;
  /** The overloads that bind here and take the parameters given. */
  readonly overloads: readonly Overload[];
  /** Where a bound operation is bound (undefined for an import). */
  readonly binding?: Position;
  /** The shape of what it is bound to. */
  readonly bindingShape?: Shape;
}

/** What ends a path besides entities and properties. */
export type Tail = { readonly kind: "count" | "value" | "ref" } | { readonly kind: "operation"; readonly call: OperationCall };

/** A navigation crossed, as the last step before the target. */
export interface Crossing {
  readonly source: Position;
  readonly navigation: Extract<Step, { kind: "navigation" }>;
}

/**
 * A set a back end may read more of than the path addresses: a single-valued
 * navigation (SAP CAP finds its target by scanning the target's table), or a
 * segment a back end that does not know it reads as "the whole set here"
 * (SAP's mock server: a cast, a key as a segment, `$value`, `$ref`, a
 * segment after a property).
 */
export interface WiderRead {
  readonly entitySet: string;
  readonly reason: string;
  /** `scan`: a single-valued navigation, for any method; `unknown`: a segment SAP's mock server does not know, when reading. */
  readonly kind: "scan" | "unknown";
}

/** A bound resource path. */
export interface BoundPath {
  /** Entity sets reached, in order; the last is the target (an import reaches none). `*` past a navigation without an entity set. */
  readonly hops: string[];
  /** Sets a back end may read whole for the path (see {@link WiderRead}), in order. */
  readonly wider: WiderRead[];
  /** Whether the path goes on after its first segment. */
  beyondRoot: boolean;
  /** Whether the first segment addresses one entity (a key, or a singleton). */
  rootAddressed: boolean;
  position: Position | undefined;
  shape: Shape;
  /** Whether the last step addressed a property of the target (or its `$value`). */
  property: boolean;
  tail: Tail | undefined;
  /** The navigation the target was reached through, if it was. */
  via: Crossing | undefined;
  /** Whether the first segment names a singleton. */
  readonly singleton: boolean;
  /** The first navigation crossed that the metadata gives no entity set (`navigation 'Trips' of 'People'`): from there on the path is in `*`. */
  unbound: string | undefined;
}

/** What binding a path needs besides the model. */
export interface PathContext {
  readonly model: ServiceModel;
  readonly dialect: Dialect;
  /** The request's parameter aliases, parsed: key values and parameters may name them. */
  readonly aliases: ReadonlyMap<string, Expr>;
  readonly entityStep?: EntityStep | undefined;
  /** Where the path stands, for stops (`resource path`, `bind Customer`, `$id`). */
  readonly reason: string;
}

/**
 * What the first segment names, looked up only after the key's entity step:
 * see the module comment.
 */
export function resolveRoot(name: string, ctx: PathContext): Root {
  const step = ctx.entityStep ?? (() => undefined);
  const root = ctx.model.root(name);
  if (root !== undefined && step(root.name) === undefined) return root;
  const denial = step(name);
  if (denial !== undefined) throw new Stop(403, name, ctx.reason, denial);
  throw new Stop(404, name, ctx.reason, `entity set '${name}' not found`);
}

/** Binds the parsed segments of a resource path (at least one). */
export function bindPath(segments: readonly PathSegment[], ctx: PathContext): BoundPath {
  const first = segments[0]!;
  if (first.kind !== "name" || first.name.includes(".")) {
    invalid(`'${excerpt(first.text)}' is not an entity set name`);
  }
  const root = resolveRoot(first.name, ctx);
  let state: BoundPath;
  if ("operation" in root) {
    state = { hops: [], wider: [], beyondRoot: false, rootAddressed: false, position: undefined, shape: "entity", property: false, tail: undefined, via: undefined, singleton: false, unbound: undefined };
    state.tail = { kind: "operation", call: callOf(root.operation, root.operation.overloads, first.args, undefined, undefined, ctx, `${root.name}`) };
  } else {
    state = {
      hops: [root.name],
      wider: [],
      beyondRoot: segments.length > 1,
      rootAddressed: root.kind === "singleton" || first.args !== undefined,
      position: root.position,
      shape: root.kind === "singleton" ? "entity" : "collection",
      property: false,
      tail: undefined,
      via: undefined,
      singleton: root.kind === "singleton",
      unbound: undefined,
    };
    if (first.args !== undefined) {
      if (state.shape !== "collection") invalid(`singleton '${root.name}' cannot take a key`);
      bindKey(first.args, root.position, `the key of ${root.name}`, ctx);
      addressOne(state);
    }
  }
  let links = false;
  for (let i = 1; i < segments.length; i++) links = step(state, segments[i]!, links, ctx);
  if (links) invalid("$links must be followed by a navigation property");
  return state;
}

/** A key was applied: one entity of the collection is addressed. */
function addressOne(state: BoundPath): void {
  state.shape = "entity";
  if (state.position !== undefined) state.position = Object.assign({}, state.position, { collection: false });
}

/** Applies one segment after the first; returns whether the next must be a `$links` navigation. */
function step(state: BoundPath, segment: PathSegment, links: boolean, ctx: PathContext): boolean {
  const { tail } = state;
  if (tail !== undefined) {
    if (tail.kind === "operation") denied(`path segments after ${tail.call.operation.bound ? "bound operation" : "operation"} '${tail.call.operation.name}' are not allowed`);
    invalid(`$${tail.kind} must be the last path segment`);
  }
  // SAP's mock server reads a property's value and then, for any segment
  // after it (`$value`, a member of a complex value), the whole set.
  if (state.property && !(segment.kind === "dollar" && segment.text === "$count")) widerRead(state, "a segment after a property");
  if (segment.kind === "dollar") {
    if (links) invalid("$links must be followed by a navigation property");
    return dollarSegment(state, segment.text, ctx);
  }
  if (state.shape === "collection" && !links) {
    collectionSegment(state, segment, ctx);
    return false;
  }
  if (segment.kind === "value") invalid(`'${excerpt(segment.text)}' cannot follow ${state.shape === "entity" ? "an entity" : `a ${state.shape} value`}`);
  if (state.shape !== "entity" && state.shape !== "complex") {
    invalid(`'${excerpt(segment.text)}' cannot follow a ${state.shape === "primitive" ? "primitive value" : "collection property"}`);
  }
  const position = state.position!;
  const found = ctx.model.step(position, segment.name);
  const { args } = segment;
  if (links && found.kind !== "navigation") invalid("$links must be followed by a navigation property");
  switch (found.kind) {
    case "property":
      if (args !== undefined) invalid(`property '${found.name}' cannot take a key`);
      if (found.dynamic) widerRead(state, `dynamic property '${found.name}'`);
      state.property = true;
      if (found.position !== undefined) {
        state.position = found.position;
        state.shape = found.collection ? "complexCollection" : "complex";
      } else {
        state.position = undefined;
        state.shape = found.collection ? "primitiveCollection" : "primitive";
      }
      return false;
    case "navigation": {
      let target = found.target;
      if (target === undefined) {
        target = unboundTarget(found, found.name, position);
        state.unbound ??= unboundNavigation(found.name, position);
      }
      state.via = { source: position, navigation: found };
      state.hops.push(target.entitySet);
      // SAP CAP finds a single-valued navigation's target by scanning its table for the row that refers back.
      if (!found.collection) state.wider.push({ entitySet: target.entitySet, reason: `navigation '${found.name}' (a back end may scan the set for it)`, kind: "scan" });
      state.position = target;
      state.property = false;
      state.shape = found.collection ? "collection" : "entity";
      if (args !== undefined) {
        if (!found.collection) invalid(`single-valued navigation '${found.name}' cannot take a key`);
        bindKey(args, target, `the key of ${found.name}`, ctx);
        addressOne(state);
      }
      if (links) state.tail = { kind: "ref" };
      return false;
    }
    case "cast":
      if (args !== undefined) invalid(`type cast '${found.name}' cannot take a key here`);
      widerRead(state, `type cast '${found.name}'`);
      state.position = found.position;
      return false;
    case "function":
    case "action":
      state.tail = { kind: "operation", call: callOf(found.operation, found.overloads, args, position, state.shape, ctx, found.name) };
      return false;
    case "unknown":
      if (found.derivedNavigation !== undefined) {
        invalid(`'${excerpt(segment.name)}' is a navigation property of a type derived from '${position.type}': cast to it first ('${excerpt(found.derivedNavigation)}')`);
      }
      invalid(`'${excerpt(segment.name)}' is not a property or navigation of '${position.type}'`);
  }
}

/** A segment after a collection of entities: a cast, a bound operation, or a key (key-as-segment). */
function collectionSegment(state: BoundPath, segment: Exclude<PathSegment, { kind: "dollar" }>, ctx: PathContext): void {
  const position = state.position!;
  if (segment.kind === "name") {
    const found = ctx.model.step(position, segment.name);
    switch (found.kind) {
      case "cast":
        widerRead(state, `type cast '${found.name}'`);
        state.position = found.position;
        if (segment.args !== undefined) {
          bindKey(segment.args, found.position, `the key of ${found.name}`, ctx);
          addressOne(state);
        }
        return;
      case "function":
      case "action":
        state.tail = { kind: "operation", call: callOf(found.operation, found.overloads, segment.args, position, state.shape, ctx, found.name) };
        return;
      case "property":
      case "navigation":
        if (found.kind === "property" && found.dynamic) break; // open type: not a declared name
        invalid(`'${excerpt(segment.name)}' cannot follow a collection: address one entity with a key first`);
    }
    if (segment.args !== undefined) invalid(`'${excerpt(segment.name)}' is not a type cast or bound operation of '${position.type}'`);
  }
  // Key-as-segment (OData 4.01): the whole segment is the key value.
  if (ctx.dialect === "2.0") invalid(`'${excerpt(segment.text)}' cannot follow a collection: OData V2 addresses an entity with a key in parentheses`);
  const keys = ctx.model.keyTypes(position);
  if (keys.length !== 1) invalid(`key-as-segment '${excerpt(segment.text)}' needs a single key property, but the key is ${keys.map((k) => k.name).join(", ")}`);
  const key = keys[0]!;
  let mismatch: string | undefined;
  if (key.type === "Edm.String") {
    mismatch = literalMismatch({ kind: "string", value: segment.text }, key.type, ctx.dialect, ctx.model, { ...(key.maxLength !== undefined ? { maxLength: key.maxLength } : {}), key: true });
  } else {
    try {
      mismatch = literalMismatch(parseLiteral(segment.text, ctx.dialect), key.type, ctx.dialect, ctx.model, { key: true });
    } catch (error) {
      if (!(error instanceof LiteralError)) throw error;
      mismatch = `${key.type} takes ${key.type === "" ? "a value" : "a literal of its type"}, not '${excerpt(segment.text)}'`;
    }
  }
  if (mismatch !== undefined) invalid(`malformed key segment '${excerpt(segment.text)}': ${mismatch}`);
  widerRead(state, "a key as a segment");
  addressOne(state);
}

/**
 * Records that a back end may read the whole set the path stands at: SAP's
 * mock server reads it for a segment it does not know (a cast, a key as a
 * segment, `$value`, `$ref`, a segment after a property).
 */
function widerRead(state: BoundPath, what: string): void {
  const set = state.hops[state.hops.length - 1];
  if (set !== undefined) state.wider.push({ entitySet: set, reason: `${what} (a back end may read the whole set there)`, kind: "unknown" });
}

function dollarSegment(state: BoundPath, segment: string, ctx: PathContext): boolean {
  const isEntityTyped = state.shape === "collection" || state.shape === "entity";
  switch (segment) {
    case "$count":
      if (state.shape !== "collection" && state.shape !== "complexCollection" && state.shape !== "primitiveCollection") {
        invalid("$count must follow a collection");
      }
      state.tail = { kind: "count" };
      return false;
    case "$value":
      if (state.shape !== "entity" && state.shape !== "primitive") invalid("$value must follow an entity or a primitive property");
      // An entity's $value is its media stream: only media entity types have one (CAP shuts down on the others).
      if (state.shape === "entity" && state.position !== undefined && !ctx.model.hasStream(state.position)) {
        invalid(`$value must follow a media entity or a primitive property: '${state.position.type}' has no stream`);
      }
      if (state.shape === "entity") widerRead(state, "$value");
      state.tail = { kind: "value" };
      return false;
    case "$ref":
      if (!isEntityTyped || state.property) invalid("$ref must follow an entity or a collection of entities");
      widerRead(state, "$ref");
      state.tail = { kind: "ref" };
      return false;
    case "$links":
      if (state.shape !== "entity") invalid("$links must follow an entity");
      return true;
    case "$each":
      denied("$each bulk operations are not allowed");
  }
  const name = segment.split("(")[0];
  if (name === "$filter") denied("$filter path segments are not allowed");
  if (name === "$query") denied("$query is not allowed");
  invalid(`unknown path segment '${excerpt(segment)}'`);
}

/** The value of a key property or parameter given as a literal or an alias (whose value must then be a literal). */
function literalOf(value: ArgumentValue, what: string, ctx: PathContext): Expr & { t: "literal" } {
  if (value.kind === "literal") return { t: "literal", literal: value.literal };
  const aliased = ctx.aliases.get(value.name);
  if (aliased === undefined) invalid(`parameter alias '${excerpt(value.name)}' in ${what} has no value`);
  if (aliased.t !== "literal") invalid(`parameter alias '${excerpt(value.name)}' in ${what} must be a literal`);
  return aliased;
}

/**
 * Checks a key predicate against the key of the type at `position`: one
 * unnamed value for a single key, or exactly the key properties by name
 * (as the model spells them), each a literal of its type.
 */
export function bindKey(args: Arguments, position: Position, what: string, ctx: PathContext): void {
  const keys = ctx.model.keyTypes(position);
  if (args.kind === "empty") invalid(`empty key in ${what}`);
  let given: readonly (readonly [string, ArgumentValue])[];
  if (args.kind === "positional") {
    if (keys.length !== 1) invalid(`${what} needs a named value for each key property (${keys.map((k) => k.name).join(", ")})`);
    given = [[keys[0]!.name, args.value]];
  } else {
    given = args.pairs;
    const names = new Set(given.map(([n]) => n));
    if (names.size !== given.length || keys.length !== given.length || !keys.every((k) => names.has(k.name))) {
      invalid(`${what} must name exactly the key properties ${keys.map((k) => k.name).join(", ")}`);
    }
  }
  for (const [name, value] of given) {
    const key = keys.find((k) => k.name === name)!;
    const literal = literalOf(value, what, ctx).literal;
    const mismatch = literalMismatch(literal, key.type, ctx.dialect, ctx.model, { ...(key.maxLength !== undefined ? { maxLength: key.maxLength } : {}), key: true });
    if (mismatch !== undefined) invalid(`malformed key value for ${name} in ${what}: ${mismatch}`);
  }
}

/**
 * A call of `operation` with the arguments of its segment: a function
 * needs parentheses (V2 function imports take none in the path), an action
 * none; the parameters named must be declared by some overload, each a
 * literal of its type.
 */
function callOf(
  operation: OperationInfo,
  overloads: readonly Overload[],
  args: Arguments | undefined,
  binding: Position | undefined,
  bindingShape: Shape | undefined,
  ctx: PathContext,
  label: string,
): OperationCall {
  const v2Import = operation.httpMethod !== undefined;
  if (v2Import) {
    if (args !== undefined) invalid(`function import '${label}' takes its parameters as query options, not in parentheses`);
  } else if (operation.kind === "action") {
    if (args !== undefined) invalid(`${operation.bound ? "bound " : ""}action '${label}' cannot take parameters in the path`);
  } else if (args === undefined) {
    invalid(`function '${label}' must be called with parentheses: '${label}()'`);
  }
  const named = args === undefined || args.kind === "empty" ? [] : args.kind === "named" ? args.pairs : invalid(`the parameters of '${label}' must be named`);
  const fitting = overloads.filter((o) => named.every(([name]) => o.parameters.some((p) => p.name === name)));
  if (fitting.length === 0) invalid(`'${label}' has no parameter ${named.map(([n]) => `'${excerpt(n)}'`).join(", ")}`);
  for (const [name, value] of named) {
    const parameter = fitting.flatMap((o) => o.parameters).find((p) => p.name === name)!;
    checkParameter(parameter, literalOf(value, `the parameters of ${label}`, ctx).literal, label, ctx);
  }
  return { operation, overloads: fitting, ...(binding !== undefined ? { binding } : {}), ...(bindingShape !== undefined ? { bindingShape } : {}) };
}

/** Checks one parameter value (a literal) against its declared type. */
export function checkParameter(parameter: Parameter, literal: Extract<Expr, { t: "literal" }>["literal"], label: string, ctx: Pick<PathContext, "model" | "dialect">): void {
  if (parameter.collection || ctx.model.isStructuredType(parameter.type)) {
    invalid(`parameter '${parameter.name}' of '${label}' is a ${parameter.collection ? "collection" : "structured value"}: erplink cannot check it in a URL`);
  }
  const mismatch = literalMismatch(literal, ctx.model.underlyingType(parameter.type), ctx.dialect, ctx.model);
  if (mismatch !== undefined) invalid(`malformed value of parameter '${parameter.name}' of '${label}': ${mismatch}`);
}
