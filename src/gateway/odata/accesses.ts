/**
 * The access table: from a bound request (`./bind/`) to the (entity set,
 * operation) pairs a key needs for it, each with why. The authorize stage
 * reads only these. Every line is a decision about what the back end will
 * do, judged by effect: what it reads and writes, operation by operation.
 *
 * | what the request does | needs |
 * | --- | --- |
 * | passes an entity on its path (`Orders(1)/Items`) | `get` of its set |
 * | reads the target: a collection, `$count` / one entity, a property, `$value` | `list` / `get` |
 * | follows a single-valued navigation in the path (`Items(1)/Order`) | `list` of its target besides: SAP CAP scans the target's table for it |
 * | has a segment SAP's mock server does not know (a cast, a key as a segment, `$value`, `$ref` of an entity, a segment after a property, a dynamic property), when reading | `list` of the set it stands in: the mock server reads that whole set |
 * | follows a navigation in an option (`$expand`, `$filter`, …) | `list` when collection-valued or followed from several entities / `get` from one entity to one |
 * | `POST` to a collection | `create` |
 * | `PUT`/`PATCH`/`MERGE` of an entity, or writes one of its properties | `update` (and `create` for an upsert, unless `If-Match: *` is added) |
 * | `DELETE` of an entity | `delete`, and `delete` of every set its cascading navigations reach |
 * | writes below the path's first entity (a property, a navigation, `$value`, `$ref`) | that operation on the first entity besides (SAP's mock server updates or deletes it, whatever follows), and `list` of its set when the first segment names no key |
 * | reads links (`GET …/$ref`, V2 `…/$links/…`) | `list` of both sets: a back end may read all of them (SAP's mock server does) |
 * | adds or changes a link (`$ref`, V2 `$links`) | `update` of the side holding the foreign key (both when the document does not say), `get` and `create` of the linked set (SAP's mock server creates from a V2 `$links` body); adding one, `list` of the source's set |
 * | removes a link | `delete` of the source (SAP's mock server deletes it), and of a composition child (`OnDelete Cascade`, containment: SAP CAP deletes it) or else `update` as above |
 * | adds a link to a composition | `create` of the child's set besides: a back end may insert a child rather than link one |
 * | calls a function or action | `invoke` of the operation by name, `get`/`list` of what it is bound to, `get`/`list` of every entity set its result lies in |
 * | any of the above through a navigation the metadata gives no entity set (`./bind/unbound.ts`) | the same operation on `*`, the entry that covers every entity set of the service |
 *
 * An operation does what its implementation does: erplink cannot see what a
 * function reads beside its result or what an action writes. Such effects
 * are covered by the explicit `invoke` grant alone, which names the
 * operation; a `*` entry never includes it.
 */
import type { Operation } from "../data/ports.js";
import type { ServiceModel } from "./metadata.js";
import type { BoundPath } from "./bind/path.js";
import type { ReadSink, Scope } from "./bind/expression.js";
import { EVERY_ENTITY_SET, UNBOUND_WHY, unboundNavigation } from "./bind/unbound.js";
import { denied, invalid } from "./syntax.js";

/** One (entity set, operation) pair a request needs, with why. */
export interface Access {
  /** The entity set, singleton or, for `invoke`, the operation's name as permissions grant it. */
  readonly entitySet: string;
  readonly operation: Operation;
  /** What in the request needs it, e.g. `resource path` or `$expand Items/Product`. */
  readonly reason: string;
  /**
   * For an access on `*` that a navigation without an entity set needs
   * (`./bind/unbound.ts`): that navigation, `navigation 'Trips' of 'People'`.
   */
  readonly unbound?: string;
}

/** Where accesses are recorded. */
export interface AccessSink {
  add(entitySet: string, operation: Operation, reason: string, unbound?: string): void;
}

/** Collects accesses in order of discovery, keeping the first of equal (entity set, operation) pairs. */
export class AccessList implements AccessSink {
  readonly items: Access[] = [];
  readonly #seen = new Set<string>();

  /**
   * Records a pair unless an equal one is already recorded. `unbound` names
   * the navigation without an entity set that an access on `*` is for; the
   * reason then says so.
   */
  add(entitySet: string, operation: Operation, reason: string, unbound?: string): void {
    const key = `${operation}\u0000${entitySet}`;
    if (this.#seen.has(key)) return;
    this.#seen.add(key);
    if (unbound === undefined) this.items.push({ entitySet, operation, reason });
    else this.items.push({ entitySet, operation, reason: `${reason}; ${unbound}: ${UNBOUND_WHY}, so '*' covers it`, unbound });
  }

  /** A sink that records accesses on `*` as needed by the navigation `unbound` (see {@link add}). */
  through(unbound: string): AccessSink {
    return { add: (entitySet, operation, reason, own) => this.add(entitySet, operation, reason, own ?? (entitySet === EVERY_ENTITY_SET ? unbound : undefined)) };
  }

  /** A sink for the reads the binder reports: `list` when many entities are read, `get` for one. */
  reads(): ReadSink {
    return (entitySet, many, reason, unbound) => this.add(entitySet, many ? "list" : "get", reason, unbound);
  }
}

/**
 * Records the accesses of a bound resource path for `method`, and returns
 * the scope the query options apply to.
 */
export function pathAccesses(path: BoundPath, method: string, headers: ReadonlyMap<string, string>, model: ServiceModel, list: AccessList): Scope {
  const { hops, tail } = path;
  const accesses: AccessSink = path.unbound === undefined ? list : list.through(path.unbound);
  const last = hops.length - 1;
  for (let h = 0; h < last; h++) accesses.add(hops[h]!, "get", "navigation source in resource path");
  const isRead = method === "GET" || method === "HEAD";

  if (tail?.kind === "operation") {
    const scope = operationAccesses(path, method, model, accesses);
    widerAccesses(path, method, isRead, accesses);
    return scope;
  }

  const target = hops[last]!;
  const read: Operation = path.shape === "collection" ? "list" : "get";
  const propertyLike = path.property || tail?.kind === "value";
  if (isRead && tail?.kind === "ref" && path.via !== undefined) {
    // Reading links: a back end may read every entity of both sets for it (SAP's mock server does).
    accesses.add(path.hops[path.hops.length - 2]!, "list", "link read");
    accesses.add(target, "list", "link read");
  } else if (isRead) {
    accesses.add(target, read, "resource path");
  } else if (tail?.kind === "count") {
    denied(`${method} is not allowed on $count`);
  } else if (tail?.kind === "ref") {
    if (method === "POST" && path.shape !== "collection") denied("POST to $ref needs a collection-valued navigation");
    if (method !== "POST" && method !== "DELETE" && path.shape !== "entity") denied(`${method} to $ref needs a single-valued navigation`);
    linkAccesses(path, method, model, accesses);
  } else if (propertyLike) {
    if (method === "POST" && path.shape !== "complexCollection" && path.shape !== "primitiveCollection") {
      denied("POST is only allowed on collections");
    }
    accesses.add(target, "update", "resource path");
  } else if (method === "POST") {
    if (path.shape !== "collection") denied("POST is only allowed on collections");
    accesses.add(target, "create", "resource path");
  } else if (path.shape === "collection") {
    denied(`${method} on a whole collection is not allowed`);
  } else if (method === "DELETE") {
    accesses.add(target, "delete", "resource path");
    cascadeAccesses(path, model, accesses);
  } else if (headers.get("if-none-match")?.trim() === "*") {
    // Meant to create only, but a back end may ignore it where entities have
    // no ETag (CAP does) and update instead: both are needed.
    accesses.add(target, "create", "resource path (If-None-Match: *)");
    accesses.add(target, "update", "resource path (If-None-Match: *)");
  } else {
    accesses.add(target, "update", "resource path");
  }
  widerAccesses(path, method, isRead, accesses);
  if (path.position === undefined) return { position: undefined, missing: "primitive", label: "" };
  // A create's options apply to the one entity it creates.
  if (method === "POST" && path.shape === "collection" && tail === undefined) return { position: { ...path.position, collection: false }, label: "" };
  return { position: path.position, label: "" };
}

/**
 * What a back end may read or write beyond what the path addresses (see
 * `WiderRead` in `./bind/path.ts`): a single-valued navigation's whole target
 * set, for any method (SAP CAP scans it); when reading, the whole set where a
 * segment stands that SAP's mock server does not know; when writing below
 * the path's first segment, that first entity (SAP's mock server updates or
 * deletes it, whatever follows), and its whole set when the first segment
 * names no key (it looks for the entity there).
 */
function widerAccesses(path: BoundPath, method: string, isRead: boolean, accesses: AccessSink): void {
  // A link change reaches its target by the link's body or $id, not by scanning.
  const scans = isRead || path.tail?.kind !== "ref";
  // An operation reads its binding as a read does, whatever its method (SAP's mock server reads the whole set for a cast before it).
  const reads = isRead || path.tail?.kind === "operation";
  for (const wider of path.wider) if (reads || (scans && wider.kind === "scan")) accesses.add(wider.entitySet, "list", wider.reason);
  if (isRead || method === "POST" || !path.beyondRoot) return;
  const root = path.hops[0]!;
  accesses.add(root, method === "DELETE" ? "delete" : "update", "the entity the path starts from (a back end may write it)");
  if (!path.rootAddressed) accesses.add(root, "list", "the entity the path starts from, by no key (a back end may look for it in the whole set)");
}

/** What the back end deletes with the entity at the path's end (CAP: the entities of its compositions). */
function cascadeAccesses(path: BoundPath, model: ServiceModel, accesses: AccessSink): void {
  if (path.position === undefined) return;
  for (const { path: navPath, target: cascaded } of model.cascades(path.position)) {
    // What cascades through a navigation without an entity set is deleted wherever it lies: `*`.
    if (cascaded === undefined) accesses.add(EVERY_ENTITY_SET, "delete", `cascade ${navPath}`, unboundNavigation(navPath, path.position));
    else accesses.add(cascaded.entitySet, "delete", `cascade ${navPath}`);
  }
}

/**
 * A link change through the navigation the path ends in (`$ref`, V2
 * `$links`): see the module's table. The entity named by `$id` or a body
 * is read by its own walk (`get`, or `delete` for a composition removal).
 */
function linkAccesses(path: BoundPath, method: string, model: ServiceModel, accesses: AccessSink): void {
  const { via, hops } = path;
  if (via === undefined || hops.length < 2) invalid("a link can only be changed through a navigation property");
  const source = hops[hops.length - 2]!;
  const target = hops[hops.length - 1]!;
  const composition = via.navigation.cascade || via.navigation.contained;
  const removes = method === "DELETE";
  // A link removal is a DELETE, and back ends read it as one: SAP's mock server deletes the source entity.
  if (removes) accesses.add(source, "delete", "link removal (a back end may delete the source)");
  if (removes && composition) {
    // The back end deletes the child, and what cascades from it.
    accesses.add(target, "delete", "link removal from a composition");
    cascadeAccesses(path, model, accesses);
    return;
  }
  const holder = model.linkHolder(via.source, via.navigation.name);
  if (holder !== "target") accesses.add(source, "update", "link change");
  if (holder !== "source") accesses.add(target, "update", "link change (foreign key of the linked entity)");
  // A back end may create an entity from the link's body rather than link one
  // (SAP's mock server does for V2 $links, after reading the source's set).
  if (!removes) accesses.add(target, "create", composition ? "link to a composition (a back end may insert a child)" : "link change (a back end may create the linked entity)");
  if (method === "POST") accesses.add(source, "list", "link added (a back end may look for the source in the whole set)");
  accesses.add(target, "get", "link target");
}

/** Whether a link removal at the path's end deletes the linked entity (a composition child). */
export function removalDeletes(path: BoundPath): boolean {
  return path.via !== undefined && (path.via.navigation.cascade || path.via.navigation.contained);
}

/** The accesses of a call of a function or action, and the scope of its result. */
function operationAccesses(path: BoundPath, method: string, model: ServiceModel, accesses: AccessSink): Scope {
  const tail = path.tail as Extract<NonNullable<BoundPath["tail"]>, { kind: "operation" }>;
  const { operation, overloads, binding, bindingShape } = tail.call;
  const kind = operation.kind === "function" ? "function" : "action";
  const expected = operation.httpMethod ?? (operation.kind === "function" ? "GET" : "POST");
  const allowed = expected === "GET" ? method === "GET" || method === "HEAD" : method === expected;
  if (!allowed) denied(`${operation.bound ? "bound " : ""}${kind} '${operation.name}' must be called with ${expected}, not ${method}`);
  if (binding !== undefined) {
    accesses.add(path.hops[path.hops.length - 1]!, bindingShape === "collection" ? "list" : "get", `binding of ${operation.name}`);
  }
  accesses.add(operation.name, "invoke", `${kind} ${operation.name}`);
  let resultScope: Scope = { position: undefined, missing: "function", label: "" };
  for (const overload of overloads) {
    const sets = model.returnedSets(operation, overload, binding);
    if (sets === undefined) denied(`cannot authorize what '${operation.name}' returns: the service metadata does not say which entity set it lies in`);
    for (const set of sets) accesses.add(set.entitySet, set.collection ? "list" : "get", `result of ${operation.name}`);
    if (sets.length === 1 && overloads.length === 1) {
      const root = model.root(sets[0]!.entitySet);
      if (root !== undefined && "position" in root) resultScope = { position: { ...root.position, collection: sets[0]!.collection }, label: "" };
    }
  }
  return resultScope;
}
