/**
 * The body half of the OData authorizer: finds every entity set a request
 * body would create in, update, link to or read, so that a deep insert
 * (`POST /SalesOrders` with `{"Customer": {...}}`) or a bind
 * (`{"Customer@odata.bind": "Customers('C1')"}`) cannot reach entity sets
 * the key may not touch. Pure, like the rest of `src/gateway/odata/`; the
 * request analyzer decides which bodies are looked at and passes the
 * position the body describes.
 *
 * Which bodies:
 * - An entity create (`POST` to a collection, contained and navigation
 *   collections included) or update (`PUT`, `PATCH`, `MERGE`, tunnelled or
 *   not) must be a JSON object; any other content type is denied. So is a
 *   complex property write (`PATCH /SalesOrders(1)/ShipTo`): V4 complex
 *   types may contain navigation properties. (V2 complex types cannot, so
 *   V2 complex values are only walked when the model says otherwise.)
 * - Except a media entity create: a `POST` to a collection whose entity
 *   type is a media entity type (`HasStream`, V2 `m:HasStream`, per the
 *   model) carrying a body that is not JSON is the media itself (a PDF, an
 *   image; SAP attachments). It is opaque and can name no entity, so the
 *   request's own `create` covers it. Two content types are still denied:
 *   none at all (the back end would have to guess), and Atom
 *   (`application/atom+xml`), which a back end may read as an entity with
 *   inline entries and links rather than as media. A JSON body to a media
 *   entity set is walked as an entity, as any JSON body is. The media of an
 *   existing media entity is replaced at its `$value`, so `PUT`, `PATCH`
 *   and `MERGE` of the entity itself still need JSON.
 * - A primitive property, a `$value` (media resource or raw value) or a
 *   stream takes any body and any content type: it cannot name an entity.
 * - A link change (`POST`/`PUT` to `$ref`, V2 `$links`) names the linked
 *   entity in `{"@odata.id": url}` (V2 `{"uri": url}`); the URL is
 *   resolved as a bind value is, below. Other content types are denied.
 * - Bound action parameters are left alone: the action is authorized as
 *   `update` of its binding set, and what it does with its parameters is
 *   the action's business. Bodies of reads and deletes are ignored.
 *
 * How a JSON entity is walked, at the model position of the request target:
 * - A declared structural property: primitive values pass whatever they are
 *   (geography values are objects); complex values are walked at the
 *   complex type's position.
 * - A name the model does not know (or a dynamic property of an open type):
 *   a primitive or null value passes, the back end decides; an object or
 *   array is denied, since it cannot be told apart from an entity.
 * - A navigation property holding an entity (object) or entities (array;
 *   V2 also `{"results": [...]}`) is a deep insert: `create` on its target
 *   entity set, and the nested entity is walked at the target. In an update
 *   request the nested entity may update an existing one (4.01 deep
 *   update): `create` and `update`. A nested collection in an update
 *   replaces the related set, and `null` removes the related entity: the
 *   entities left out are unlinked (`get` of the target, as for a `$ref`
 *   change) or, when contained or deleted with their source (`OnDelete
 *   Action="Cascade"`, as CAP declares compositions), deleted (`delete`).
 *   A nested object that only carries a reference (`@odata.id` or `@id`,
 *   spelled so, and other instance annotations; V2 `__metadata` with only
 *   `uri`, or `__deferred`) is a link: `get` on the target. Anything else
 *   is an entity (an id spelled otherwise, or V4 control information in a
 *   V2 body, may be ignored by the service, which would then create). A
 *   nested entity that carries an id besides its data may update the
 *   entity it names: `update` too.
 * - Bind annotations (`Nav@odata.bind`, 4.01 `Nav@bind`, in any case) are
 *   `get` on the navigation's target; the request's own operation covers
 *   the source; a `null` value removes the relationship, as a nested
 *   `null` does. The annotated name must be a navigation property (else
 *   invalid) with a known target (else denied).
 * - Every URL naming an entity (bind values, `@odata.id`, V2 `uri`) is
 *   resolved: `$<Content-ID>` references are left to the caller (the batch
 *   module) unchecked; an absolute URL or absolute path goes through the
 *   caller's `resolveReference` (none, or outside the service root: denied);
 *   the relative path left is walked like a resource path, and every entity
 *   set it passes is read (`get`). It must address one entity.
 * - An `@odata.context` other than `$metadata…` changes the base of
 *   relative URLs, so it must resolve to this service's `$metadata`.
 * - Delta payloads (`Nav@odata.delta`, `@odata.removed`, a `$delta`
 *   context) are denied. `@odata.type` (and V2 `__metadata.type`, and
 *   `Prop@odata.type` on complex and navigation properties) must name the
 *   type or a derived type the model can cast to (else invalid); the walk
 *   continues at the derived type. Other control information and
 *   annotations pass; ids of the top-level entity are ignored, as services
 *   ignore them.
 * - Member names are matched as the model matches them (exact, then a
 *   unique case-insensitive match); annotation terms case-insensitively,
 *   with or without `odata.` and a `#qualifier`. A name with several `@`
 *   of which one is a term above is invalid: parsers may split it either
 *   way.
 * - V2 bodies may be wrapped as `{"d": {...}}`.
 * - Without metadata nothing can be walked: any object or array value and
 *   any bind annotation is denied; primitive values pass.
 * - Bodies nested deeper than {@link MAX_NESTING} levels, or costing more
 *   than {@link MAX_BODY_WORK} members, are refused (invalid), so hostile
 *   bodies answer quickly; only `Refusal` is ever thrown, and `Stop` for
 *   a URL whose first segment the key may not touch or the service lacks.
 */
import type { Position, ServiceModel, Step } from "./metadata.js";
import type { AccessList } from "./accesses.js";
import { MAX_NESTING, Refusal, Stop, denied, excerpt, invalid } from "./syntax.js";

/**
 * A request body as the gateway hands it over: parsed JSON (content types
 * `application/json` and `application/*+json`, any parameters), or only the
 * content type of anything else.
 */
export type RequestBody =
  | { readonly kind: "json"; readonly value: unknown }
  | { readonly kind: "other"; readonly contentType: string };

/**
 * Work units one body may cost (a member or array item is one, a type
 * annotation on a property four, a URL one per 32 characters); beyond it the
 * request is invalid.
 */
export const MAX_BODY_WORK = 200_000;

/** What the request body describes, as decided from the resource path and method. */
export type BodyTarget =
  /** An entity create (`update: false`) or update, at `position` (undefined without metadata). */
  | { readonly kind: "entity"; readonly position: Position | undefined; readonly update: boolean }
  /** A complex property (or complex collection property) write; `update` unless it appends (`POST`). */
  | { readonly kind: "complex"; readonly position: Position; readonly collection: boolean; readonly update: boolean }
  /** A link change: the body names the linked entity, which must lie in `entitySet`, the navigation's target. */
  | { readonly kind: "reference"; readonly entitySet: string };

/** What {@link analyzeBody} needs from the request analyzer. */
export interface BodyContext {
  readonly model: ServiceModel | undefined;
  /** Where the accesses found are recorded. */
  readonly accesses: AccessList;
  /** Maps an absolute URL or path to the resource path below the service root; undefined when it leaves it. */
  readonly resolveReference?: ((url: string) => string | undefined) | undefined;
  /**
   * Walks a resource path below the service root (raw, percent-encoded) that
   * must address one entity, and returns the entity sets it passes, the
   * target last. Throws `Refusal`, or `Stop` at a first segment the key
   * may not touch (403) or the service lacks (404); `reason` is where the
   * URL stands, for the stop.
   */
  readonly walkReference: (path: string, reason: string) => readonly string[];
}

/**
 * Records the accesses the body of a request needs, or throws `Refusal`
 * (`denied` or `invalid`). An absent body needs nothing.
 */
export function analyzeBody(body: RequestBody | undefined, target: BodyTarget, ctx: BodyContext): void {
  if (body === undefined) return;
  if (body.kind === "other") {
    otherBody(body.contentType, target, ctx.model);
    return;
  }
  const walker = new Walker(ctx, target.kind !== "reference" && target.update);
  switch (target.kind) {
    case "entity":
      walker.topEntity(body.value, target.position);
      return;
    case "complex":
      walker.complexProperty(body.value, target.position, target.collection);
      return;
    case "reference":
      walker.linkBody(body.value, target.entitySet);
  }
}

/** Entity formats other than JSON: a back end may read such a body to a media entity set as an entity. */
const ENTITY_FORMATS = new Set(["application/atom+xml"]);

/**
 * A body that is not JSON: allowed only as the media of a media entity
 * create (the request analyzer has recorded its `create`); denied otherwise,
 * saying why.
 */
function otherBody(contentType: string, target: BodyTarget, model: ServiceModel | undefined): void {
  const type = contentType.split(";")[0].trim().toLowerCase();
  const got = contentType.trim() === "" ? "no content type" : quote(contentType);
  if (target.kind === "reference") denied(`only JSON request bodies can be authorized for link changes; got ${got}`);
  const position = target.kind === "entity" ? target.position : undefined;
  if (position === undefined || model === undefined || !model.hasStream(position)) {
    denied(`only JSON request bodies can be authorized for entity writes; got ${got}`);
  }
  const { entitySet } = position;
  if (target.update) {
    denied(`only JSON request bodies can be authorized for entity writes; got ${got} (the media of an entity in '${entitySet}' is written at its $value)`);
  }
  if (type === "") denied(`a media entity create in '${entitySet}' needs a Content-Type naming the media type`);
  if (ENTITY_FORMATS.has(type)) {
    denied(`only JSON request bodies can be authorized for entity writes; got ${got} (a media entity in '${entitySet}' is created from the media itself, not an Atom entry)`);
  }
}

type JsonObject = Record<string, unknown>;

/** Whether a navigation is a composition: its targets are contained, or deleted with their source. */
function isComposition(step: Extract<Step, { kind: "navigation" }>): boolean {
  return step.cascade || step.contained;
}

/** Whether a JSON value is an object (not an array, not null). */
export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}

// Names echoed in messages come from the client: no control characters, and short.
function quote(s: string): string {
  return excerpt(s.replace(/[\u0000-\u001f\u007f]/g, "?"));
}

/**
 * The term of an annotation (the text after `@`), lower-cased, without a
 * `#qualifier` and without the `odata.` prefix that 4.01 lets clients omit:
 * `bind`, `type`, `id`, …
 */
function termOf(annotation: string): string {
  const lower = annotation.toLowerCase().split("#")[0];
  return lower.startsWith("odata.") ? lower.slice("odata.".length) : lower;
}

/** Whether a member name is a bind annotation (`Nav@odata.bind`, `Nav@bind`, any case, any qualifier), as the walk reads it. */
export function isBindAnnotation(name: string): boolean {
  const sign = name.indexOf("@");
  return sign >= 0 && name.slice(sign + 1).split("@").some((part) => termOf(part) === "bind");
}

/** Terms that change what a body does, wherever they appear in a name. */
const ACTIVE_TERMS = new Set(["bind", "delta", "removed", "id", "type", "context"]);

/**
 * Splits a member name into the property it annotates (`""` for an instance
 * annotation, the whole name for a property) and the annotation term. A name
 * with several `@` is refused when any of its parts is a term that matters:
 * parsers may read it either way.
 */
function splitName(key: string, label: string): { readonly name: string; readonly term?: string } {
  const sign = key.indexOf("@");
  if (sign < 0) return { name: key };
  const parts = key.slice(sign + 1).split("@");
  if (parts.length > 1 && parts.some((p) => ACTIVE_TERMS.has(termOf(p)))) invalid(`malformed annotation '${quote(join(label, key))}'`);
  return { name: key.slice(0, sign), term: termOf(parts[0]) };
}

/** The type name in an `@odata.type` value (`#Sales.T`, `Sales.T`, `…$metadata#Sales.T`), without `Collection(…)`. */
function typeNameOf(value: string): string {
  const name = value.slice(value.lastIndexOf("#") + 1);
  const m = /^Collection\((.*)\)$/.exec(name);
  return m ? m[1] : name;
}

const ABSOLUTE = /^[A-Za-z][A-Za-z0-9+.-]*:/;

function join(label: string, name: string): string {
  return label === "" ? name : `${label}/${name}`;
}

class Walker {
  #work = 0;
  readonly #model: ServiceModel | undefined;
  /** Lower-cased names of the navigation properties of each type, by type name. */
  readonly #navigationNames = new Map<string, Set<string>>();

  constructor(
    readonly ctx: BodyContext,
    /** Whether the request is an update (PUT/PATCH/MERGE): nested entities may also update. */
    readonly update: boolean,
  ) {
    this.#model = ctx.model;
  }

  #charge(units: number): void {
    this.#work += units;
    if (this.#work > MAX_BODY_WORK) invalid(`the request body is too large to authorize (more than ${MAX_BODY_WORK} members)`);
  }

  #enter(depth: number): void {
    if (depth > MAX_NESTING) invalid(`the request body is nested more than ${MAX_NESTING} levels deep`);
  }

  /** Whether `name` is a declared (not dynamic) structural or navigation property at `position`. */
  #declared(position: Position | undefined, name: string): boolean {
    if (!this.#model || position === undefined) return false;
    const step = this.#model.step(position, name);
    return step.kind === "navigation" || (step.kind === "property" && step.dynamic === undefined);
  }

  /**
   * Whether `name` may be a navigation property at `position` (a superset:
   * names are compared case-insensitively). Lets primitive values skip the
   * model lookup, which costs more for names the model does not know.
   */
  #mayNavigate(position: Position, name: string): boolean {
    let names = this.#navigationNames.get(position.type);
    if (names === undefined) {
      names = new Set(
        [
          ...this.#model!.navigationPaths(position)
            .filter((path) => path.length === 1)
            .map((path) => path[0].toLowerCase()),
          // A derived type's navigation, which a lenient back end may set without the cast (refused in #member).
          ...this.#model!.derivedNavigations(position).keys(),
        ],
      );
      this.#navigationNames.set(position.type, names);
    }
    return names.has(name.toLowerCase());
  }

  /** V2 verbose JSON wraps a request body as `{"d": {...}}`. */
  #unwrap(value: unknown, position: Position | undefined): unknown {
    if (this.#model?.version !== "2.0" || !isObject(value)) return value;
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === "d" && isObject(value.d) && !this.#declared(position, "d")) return value.d;
    return value;
  }

  topEntity(value: unknown, position: Position | undefined): void {
    const body = this.#unwrap(value, position);
    if (!isObject(body)) invalid(`the request body must be a JSON object, not ${describe(body)}`);
    this.#entity(body, position, "", 1);
  }

  complexProperty(value: unknown, position: Position, collection: boolean): void {
    const body = this.#unwrap(value, position);
    // V2 complex types cannot hold navigation properties; the V2 wrapping of
    // a property value (`{"d": {"Address": {...}}}`) is then left alone.
    if (this.#model?.version === "2.0" && this.#model.navigationPaths(position).length === 0) return;
    if (body === null) return;
    if (collection && Array.isArray(body)) {
      this.#complexItems(body, position, "", 1);
      return;
    }
    if (!isObject(body)) invalid(`the request body must be a JSON object, not ${describe(body)}`);
    if (collection && Array.isArray(body.value) && !this.#declared(position, "value")) {
      // A whole collection (`{"value": [...]}`) rather than one item appended.
      this.#checkAnnotationsOnly(body, ["value"]);
      this.#complexItems(body.value, position, "", 1);
      return;
    }
    this.#entity(body, position, "", 1);
  }

  /** Only control information besides `except` (the wrapper of a collection). */
  #checkAnnotationsOnly(body: JsonObject, except: readonly string[]): void {
    for (const key of Object.keys(body)) {
      if (except.includes(key)) continue;
      if (!key.startsWith("@")) invalid(`unexpected '${quote(key)}' beside 'value' in the request body`);
      this.#instanceAnnotation(key, body[key], "");
    }
  }

  #complexItems(items: readonly unknown[], position: Position, label: string, depth: number): void {
    this.#enter(depth);
    this.#charge(items.length);
    for (const item of items) {
      if (isObject(item)) this.#entity(item, position, label, depth + 1);
      else if (Array.isArray(item)) invalid(`${label === "" ? "the request body" : `'${quote(label)}'`} must hold complex values, not arrays`);
    }
  }

  linkBody(value: unknown, entitySet: string): void {
    const body = this.#unwrap(value, undefined);
    if (!isObject(body)) invalid(`the request body of a link change must be a JSON object, not ${describe(body)}`);
    const keys = Object.keys(body);
    this.#charge(keys.length);
    let url: unknown;
    let where = "";
    for (const key of keys) {
      const { name, term } = splitName(key, "");
      const isId = term === undefined ? this.#model?.version === "2.0" && key === "uri" : name === "" && term === "id";
      if (isId) {
        if (where !== "") invalid(`the request body of a link change names the entity twice ('${quote(where)}', '${quote(key)}')`);
        url = body[key];
        where = key;
      } else if (name === "" && term !== undefined) {
        this.#instanceAnnotation(key, body[key], "");
      } else {
        invalid(`unexpected '${quote(key)}' in the request body of a link change`);
      }
    }
    if (where === "") invalid(`the request body of a link change must name the entity in '${this.#model?.version === "2.0" ? "uri" : "@odata.id"}'`);
    if (typeof url !== "string") invalid(`'${quote(where)}' must be a URL`);
    const hops = this.#reference(url, where, "get", "link target");
    // A back end links what the key names, whatever set the URL says: it must be the navigation's.
    if (hops[hops.length - 1] !== entitySet) invalid(`'${quote(url)}' in '${quote(where)}' is not an entity of '${entitySet}', where the link leads`);
  }

  /** Walks one entity (or complex value) at `position`. */
  #entity(obj: JsonObject, position: Position | undefined, label: string, depth: number): void {
    this.#enter(depth);
    const keys = Object.keys(obj);
    this.#charge(keys.length);
    const model = this.#model;
    const names = keys.map((key) => splitName(key, label));
    // `__metadata` is V2 control information unless the type declares such a property.
    const metadata = (model === undefined || model.version === "2.0") && Object.hasOwn(obj, "__metadata") && !this.#declared(position, "__metadata");

    // First the type: members are looked up at the type it names.
    let at = position;
    const typeAnnotations: [string, unknown][] = [];
    keys.forEach((key, i) => {
      if (names[i].name === "" && names[i].term === "type") typeAnnotations.push([key, obj[key]]);
    });
    if (metadata) {
      if (!isObject(obj.__metadata)) invalid(`'${quote(join(label, "__metadata"))}' must be a JSON object`);
      if (obj.__metadata.type !== undefined) typeAnnotations.push(["__metadata/type", obj.__metadata.type]);
    }
    if (typeAnnotations.length > 1) invalid(`${label === "" ? "the request body" : `'${quote(label)}'`} names its type more than once`);
    if (typeAnnotations.length === 1 && model && position !== undefined) {
      const [key, value] = typeAnnotations[0];
      at = this.#cast(position, value, join(label, key));
    }

    // The types `Prop@odata.type` gives complex and navigation properties.
    const propertyTypes = new Map<string, Position>();
    if (model && at !== undefined) {
      keys.forEach((key, i) => {
        const { name, term } = names[i];
        if (name === "" || term !== "type") return;
        this.#charge(4);
        const step = model.step(at, name);
        const base = step.kind === "property" ? step.position : step.kind === "navigation" ? step.target : undefined;
        if (base === undefined || (step.kind !== "property" && step.kind !== "navigation")) return;
        if (propertyTypes.has(step.name)) invalid(`'${quote(join(label, step.name))}' is given a type more than once`);
        propertyTypes.set(step.name, this.#cast(base, obj[key], join(label, key)));
      });
    }

    keys.forEach((key, i) => {
      const { name, term } = names[i];
      const value = obj[key];
      if (term === undefined) {
        // The uri of a nested entity is read by the caller; the type is done.
        if (!(metadata && key === "__metadata")) this.#member(key, value, at, label, depth, propertyTypes);
      } else if (name === "") {
        this.#instanceAnnotation(key, value, label);
      } else {
        this.#propertyAnnotation(name, term, key, value, at, label);
      }
    });
  }

  /** The position of the (derived) type named by a type annotation at `position`. */
  #cast(position: Position, value: unknown, where: string): Position {
    if (typeof value !== "string") invalid(`'${quote(where)}' must be a type name`);
    const name = typeNameOf(value);
    const step = this.#model!.step(position, name);
    if (step.kind !== "cast") invalid(`'${quote(value)}' in '${quote(where)}' is not '${position.type}' or a type derived from it`);
    return step.position;
  }

  #instanceAnnotation(key: string, value: unknown, label: string): void {
    const where = join(label, key);
    const term = splitName(key, label).term;
    if (term === "removed" || term === "delta") denied(`delta payloads are not allowed ('${quote(where)}')`);
    if (term === "bind") invalid(`'${quote(where)}' must annotate a navigation property`);
    if (term === "context") this.#context(value, where);
    if (term === "id" && typeof value !== "string") invalid(`'${quote(where)}' must be a URL`);
    // Other control information (`@odata.type` is read by the caller, `@odata.etag`, …) and custom annotations pass.
  }

  /** Relative URLs in the body are relative to the context URL: it must be this service's `$metadata`. */
  #context(value: unknown, where: string): void {
    if (typeof value !== "string") invalid(`'${quote(where)}' must be a URL`);
    if (/\$delta/i.test(value)) denied(`delta payloads are not allowed ('${quote(where)}')`);
    // `$metadata` itself (a fragment after it changes no base): what follows it would be read as written
    // (`$metadata/../../OTHER/$metadata` is another service's root to a back end that resolves it).
    if (/^\$metadata(?:#|$)/.test(value)) return;
    if (!ABSOLUTE.test(value) && !value.startsWith("/")) invalid(`'${quote(where)}' must point to this service's $metadata`);
    const resolve = this.ctx.resolveReference;
    if (resolve === undefined) denied(`cannot authorize '${quote(value)}' in '${quote(where)}': absolute URLs cannot be resolved here`);
    const path = resolve(value);
    if (path === undefined) denied(`'${quote(value)}' in '${quote(where)}' leaves the service root`);
    if (!path.replace(/^\//, "").startsWith("$metadata")) invalid(`'${quote(where)}' must point to this service's $metadata`);
  }

  #propertyAnnotation(name: string, term: string, key: string, value: unknown, position: Position | undefined, label: string): void {
    const where = join(label, key);
    if (term === "delta" || term === "removed") denied(`delta payloads are not allowed ('${quote(where)}')`);
    if (term !== "bind") return; // `Prop@odata.type` is read by the caller; other annotations do nothing
    const model = this.#model;
    if (!model || position === undefined) denied(`cannot authorize '${quote(where)}': the service metadata is unavailable`);
    this.#charge(4);
    const step = model.step(position, name);
    if (step.kind !== "navigation") invalid(`'${quote(where)}' does not annotate a navigation property of '${position.type}'`);
    const target = this.#target(step, position);
    const navLabel = join(label, step.name);
    const reason = `bind ${navLabel}`;
    if (value === null) {
      this.#unlink(step, target, navLabel);
      return;
    }
    const urls = Array.isArray(value) ? value : [value];
    this.#charge(urls.length);
    this.ctx.accesses.add(target.entitySet, "get", reason);
    // A composition's children belong to it: a back end may insert one rather than link what the URL names.
    if (isComposition(step)) this.ctx.accesses.add(target.entitySet, "create", `${reason} (a composition)`);
    // Replacing a single-valued composition deletes the child it held.
    if (this.update && isComposition(step) && !step.collection) this.ctx.accesses.add(target.entitySet, "delete", `${reason} (replaces a composition's child)`);
    for (const url of urls) {
      if (typeof url !== "string") invalid(`'${quote(where)}' must be a URL or an array of URLs`);
      this.#reference(url, where, "get", reason);
    }
  }

  /** The target of a navigation, or denied when the model does not say which entity set it leads to. */
  #target(step: Extract<Step, { kind: "navigation" }>, position: Position): Position {
    if (step.target === undefined) {
      denied(
        `cannot authorize navigation '${step.name}' of '${position.entitySet}': ` +
          "the service metadata does not say which entity set it leads to",
      );
    }
    return { ...step.target, collection: false };
  }

  /**
   * A relationship removed (null, or left out of a replaced collection):
   * unlinked, or deleted when contained or deleted with its source (a CAP
   * composition, `OnDelete Action="Cascade"`).
   */
  #unlink(step: Extract<Step, { kind: "navigation" }>, target: Position, navLabel: string): void {
    this.ctx.accesses.add(target.entitySet, step.cascade ? "delete" : "get", `unlink ${navLabel}`);
  }

  #member(key: string, value: unknown, position: Position | undefined, label: string, depth: number, types: ReadonlyMap<string, Position>): void {
    const structured = typeof value === "object" && value !== null;
    const model = this.#model;
    if (!model || position === undefined) {
      if (structured) denied(`cannot authorize property '${quote(join(label, key))}': the service metadata is unavailable`);
      return;
    }
    // A primitive or null value only matters on a navigation property.
    if (!structured && !this.#mayNavigate(position, key)) return;
    const step = model.step(position, key);
    if (step.kind === "navigation") {
      this.#navigation(step, value, position, label, depth, types.get(step.name));
      return;
    }
    if (step.kind === "property" && step.dynamic === undefined) {
      const complex = types.get(step.name) ?? step.position;
      if (complex !== undefined && structured) this.#complexValue(value, complex, step, join(label, step.name), depth);
      return;
    }
    // Unknown, dynamic (open type), or the name of a cast or operation.
    if (structured) {
      denied(`cannot authorize property '${quote(join(label, key))}' of '${position.type}': only declared properties may hold objects or arrays`);
    }
    if (step.kind === "unknown" && step.derivedNavigation !== undefined) {
      // `{"Courier": null}` could unlink (or delete) the related entity on a back end that finds the derived type's navigation.
      invalid(`'${quote(join(label, key))}' is a navigation property of a type derived from '${position.type}' ('${quote(step.derivedNavigation)}'): give the entity's type with '@odata.type'`);
    }
  }

  #complexValue(value: object, position: Position, step: Extract<Step, { kind: "property" }>, label: string, depth: number): void {
    let items: readonly unknown[] | undefined;
    if (Array.isArray(value)) items = value;
    else if (step.collection && this.#model?.version === "2.0" && Array.isArray((value as JsonObject).results)) items = (value as JsonObject).results as unknown[];
    if (items === undefined) {
      this.#entity(value as JsonObject, position, label, depth + 1);
      return;
    }
    this.#complexItems(items, position, label, depth + 1);
  }

  #navigation(
    step: Extract<Step, { kind: "navigation" }>,
    value: unknown,
    position: Position,
    label: string,
    depth: number,
    typed: Position | undefined,
  ): void {
    const navLabel = join(label, step.name);
    const declared = this.#target(step, position);
    const target = typed === undefined ? declared : { ...typed, collection: false };
    if (value === null) {
      this.#unlink(step, target, navLabel);
      return;
    }
    let items: readonly unknown[];
    let replaces = false;
    if (Array.isArray(value)) {
      items = value;
      replaces = true;
    } else if (isObject(value) && step.collection && this.#model?.version === "2.0" && Array.isArray(value.results)) {
      items = value.results as unknown[];
      replaces = true;
    } else if (isObject(value)) {
      items = [value];
    } else {
      invalid(`'${quote(navLabel)}' must hold an entity, a collection of entities or null, not ${describe(value)}`);
    }
    this.#enter(depth + 1);
    this.#charge(items.length);
    // In an update, a nested collection is the full set to be related: the others are removed;
    // a single-valued composition's child is replaced, the old one deleted.
    if (this.update && (replaces || (!step.collection && isComposition(step)))) this.#unlink(step, target, navLabel);
    for (const item of items) {
      if (!isObject(item)) invalid(`'${quote(navLabel)}' must hold JSON objects, not ${describe(item)}`);
      this.#nested(item, target, navLabel, depth + 1, isComposition(step));
    }
  }

  /**
   * One entity (or entity reference) nested in a navigation property. In a
   * composition a reference is no link: the back end may ignore it and insert
   * a new child (SAP CAP does), so it needs `create` there too.
   */
  #nested(item: JsonObject, target: Position, navLabel: string, depth: number, composition: boolean): void {
    const keys = Object.keys(item);
    const accesses = this.ctx.accesses;
    const v2 = this.#model?.version === "2.0";
    if (v2 && keys.length === 1 && keys[0] === "__deferred") {
      accesses.add(target.entitySet, "get", `link ${navLabel}`);
      return;
    }
    // The id that names an existing entity: V4 `@odata.id` / `@id`, V2 `__metadata.uri`.
    let id: string | undefined;
    let idKey = "";
    let referenceOnly: boolean;
    if (v2) {
      const metadata = item.__metadata;
      const uri = isObject(metadata) ? metadata.uri : undefined;
      if (uri !== undefined) {
        if (typeof uri !== "string") invalid(`'${quote(join(navLabel, "__metadata/uri"))}' must be a URL`);
        id = uri;
        idKey = "__metadata/uri";
      }
      referenceOnly = id !== undefined && keys.length === 1 && Object.keys(metadata as JsonObject).length === 1;
    } else {
      for (const key of keys) {
        if (key !== "@odata.id" && key !== "@id") continue;
        if (id !== undefined) invalid(`'${quote(navLabel)}' names an entity twice ('${idKey}', '${key}')`);
        const value = item[key];
        if (typeof value !== "string") invalid(`'${quote(join(navLabel, key))}' must be a URL`);
        id = value;
        idKey = key;
      }
      referenceOnly = id !== undefined && keys.every((k) => k.startsWith("@"));
    }
    const where = join(navLabel, idKey);
    if (referenceOnly) {
      accesses.add(target.entitySet, "get", `link ${navLabel}`);
      if (composition) accesses.add(target.entitySet, "create", `link ${navLabel} (a composition)`);
      this.#reference(id!, where, "get", `link ${navLabel}`);
      for (const key of keys) if (key.startsWith("@")) this.#instanceAnnotation(key, item[key], navLabel);
      return;
    }
    const reason = `${this.update ? "deep update" : "deep insert"} ${navLabel}`;
    accesses.add(target.entitySet, "create", reason);
    // A nested entity that names an existing one, or any in an update, may update it.
    if (this.update || id !== undefined) accesses.add(target.entitySet, "update", reason);
    if (id !== undefined) this.#reference(id, where, "update", reason);
    this.#entity(item, target, navLabel, depth + 1);
  }

  /**
   * Resolves a URL naming an entity: `get` on every entity set its path
   * passes, and `last` on the entity set it ends in.
   */
  #reference(url: string, where: string, last: "get" | "update", reason: string): readonly string[] {
    this.#charge(1 + (url.length >> 5));
    // Forwarded as written (erplink cannot re-encode a client's JSON): a
    // backslash (a `/` to URL parsers) or a control character may not be in
    // it; `?` and `#` are refused below, encoded delimiters by `walkReference`.
    if (/[\\\u0000-\u001f\u007f]/.test(url)) {
      invalid(`'${quote(url)}' in '${quote(where)}' must not contain '\\' or control characters: body URLs are forwarded as written`);
    }
    let path = url;
    // A Content-ID reference (`$1`, `$1/Items(2)`) is resolved by the caller
    // (the batch module) like an absolute URL; elsewhere it names nothing.
    const contentId = url.startsWith("$");
    if (contentId || ABSOLUTE.test(url) || url.startsWith("/")) {
      const resolve = this.ctx.resolveReference;
      if (resolve === undefined) denied(`cannot authorize '${quote(url)}' in '${quote(where)}': ${contentId ? "Content-ID references" : "absolute URLs"} cannot be resolved here`);
      const resolved = resolve(url);
      if (resolved === undefined) {
        denied(
          contentId
            ? `'${quote(url)}' in '${quote(where)}' does not refer to an earlier request of this batch`
            : `'${quote(url)}' in '${quote(where)}' leaves the service root`,
        );
      }
      path = resolved.startsWith("/") ? resolved.slice(1) : resolved;
    }
    if (path.includes("?") || path.includes("#")) invalid(`'${quote(url)}' in '${quote(where)}' must not have a query or fragment`);
    if (path === "" || path.startsWith("$")) invalid(`'${quote(url)}' in '${quote(where)}' does not address one entity`);
    let hops: readonly string[];
    try {
      hops = this.ctx.walkReference(path, reason);
    } catch (error) {
      if (error instanceof Refusal) throw new Refusal(error.kind, `${error.message} in '${quote(where)}'`);
      if (error instanceof Stop) {
        if (error.status === 404) throw new Stop(404, error.entitySet, error.reason, `${error.message} in '${quote(where)}'`);
        // A set the key may not touch, whether or not it exists: recorded as the URL names it.
        this.ctx.accesses.add(error.entitySet, path.includes("/") ? "get" : last, reason);
      }
      throw error;
    }
    hops.forEach((entitySet, i) => {
      this.ctx.accesses.add(entitySet, i === hops.length - 1 ? last : "get", reason);
    });
    return hops;
  }
}
