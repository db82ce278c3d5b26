/**
 * Maps an OData request to every (entity set, operation) pair it touches, so
 * that the gateway can authorize each one with `evaluate` before anything is
 * forwarded. Pure: no Fastify, no I/O; the caller passes the service's
 * parsed `$metadata` (or nothing when it cannot be had).
 *
 * Decisions the protocol leaves open, taken here:
 * - Every entity the resource path passes through is read (`get`), and so is
 *   every navigation target in `$expand`, `$select`, `$filter`, `$orderby`
 *   and `$compute` (`list` when collection-valued, `get` when single-valued).
 * - A contained entity (V4 `ContainsTarget`) belongs to the entity set that
 *   contains it: `POST /SalesOrders(1)/Items` needs `create` on SalesOrders.
 *   A singleton is authorized under its own name, like an entity set.
 * - Writing a property (`PUT /E(1)/Name`, `DELETE /E(1)/Name`, a media
 *   `$value`) is `update` of the entity. Changing a link (`$ref`, V2
 *   `$links`) is `update` of the source and `get` of the target.
 * - A bound function is `get` of its binding entity set (`list` when bound
 *   to a collection); a bound action is `update`, whatever it is bound to.
 * - `PUT` or `PATCH` of an entity may create it (upsert). Unless the request
 *   already carries `If-Match`, the analysis names the entity set in
 *   `upsertEntitySet`, and {@link needsIfMatchStar} tells the gateway whether
 *   to add `If-Match: *` for a key without `create` (a blank `If-Match` counts
 *   as none). With `If-None-Match: *` the request is meant to create only, but
 *   back ends may ignore the header and update, so it needs `create` and `update`.
 * - Without metadata, only requests that cannot navigate are analyzed:
 *   anything after a key, `$expand`, and member paths (`A/B`) in expressions
 *   are denied. With metadata, names the model does not know are invalid
 *   (a lone unknown name in an expression passes: it may be an enum member
 *   or a `$compute` alias), and navigations whose entity set the document
 *   does not name are denied.
 * - Names are matched exactly, then case-insensitively (4.01 services may
 *   do so); access is always reported under the model's spelling.
 * - Request bodies are authorized too (`./body.ts`): a deep insert needs
 *   `create` in the nested entity's set, a bind or entity reference `get` of
 *   every set its URL names; a `$ref` body names the linked entity. Bodies
 *   of bound actions are left alone. Entity writes need JSON bodies, except
 *   a media entity create: a `POST` of the media itself (any content type
 *   but none or Atom) to a collection whose entity type has a stream
 *   (`HasStream`) is `create` of its entity set, like any `POST`.
 * - Bulk and cross-entity-set constructs (`$each`, `$filter` path segments,
 *   `$all`, `$crossjoin`, `$entity`, `$query`, `$apply`, `$root`), unbound
 *   function and action imports, and collection-wide `PUT`/`PATCH`/`DELETE`
 *   are denied with a message naming them. `$batch` is handed back as its
 *   own kind, for the batch module.
 */
import type { Operation } from "../data/ports.js";
import { analyzeBody, isBindAnnotation, isObject, type BodyTarget, type RequestBody } from "./body.js";
import type { Position, Root, ServiceModel } from "./metadata.js";
import { AccessList, applyOptions, parseQuery, scanAliasValue, type Access, type QueryContext, type Scope } from "./query.js";
import { encodeSegment, serializePath, serializeTarget, type Target } from "./target.js";
import {
  Refusal,
  Stop,
  checkTypedLiteral,
  decodeOnce,
  denied,
  excerpt,
  hasControlCharacter,
  invalid,
  isQualifiedName,
  isSimpleIdentifier,
  skipSingleQuoted,
  splitCall,
  splitTopLevel,
  walkTopLevel,
  type EntityStep,
} from "./syntax.js";

export type { Access } from "./query.js";
export type { RequestBody } from "./body.js";
export type { EntityStep } from "./syntax.js";
export type { Target } from "./target.js";

/**
 * SAP headers a client may not send: the instance decides the SAP client
 * (tenant), and session contexts are the gateway's. The gateway strips them
 * from requests; the batch module refuses them in parts.
 */
export const SAP_SESSION_HEADERS: readonly string[] = ["sap-client", "sap-contextid", "sap-contextid-accept"];

/** Longest resource path accepted, in characters (before decoding). */
export const MAX_PATH_LENGTH = 8 * 1024;

/** Most segments in a resource path. */
const MAX_SEGMENTS = 64;

/** A request as the gateway sees it, below the service root. */
export interface RequestInput {
  /** The HTTP method, as received (`GET`, `POST`, `MERGE`, …). */
  readonly method: string;
  /** The path after the service root, raw (still percent-encoded); may be `""` or `"/"`. */
  readonly path: string;
  /** The raw query string, without `?`. */
  readonly query: string;
  /** Request headers; names are matched case-insensitively. */
  readonly headers: Readonly<Record<string, string | undefined>>;
  /** The service's parsed `$metadata`; undefined when it is unavailable. */
  readonly model?: ServiceModel;
  /**
   * The request body, as the gateway read it; absent when there is none (or
   * it is empty). Entity creates and updates are authorized from it too
   * (deep inserts, binds; the media of a media entity create passes as it
   * is); see `./body.ts`.
   */
  readonly body?: RequestBody;
  /**
   * Maps an absolute URL (or absolute path) found in the body, such as an
   * `@odata.bind` value, to the resource path below this service's root
   * (`Customers('C1')`); undefined when it leaves the service root. Without
   * it, absolute URLs in bodies are denied.
   */
  readonly resolveReference?: (url: string) => string | undefined;
  /**
   * The instance's SAP client, which the gateway adds to every upstream
   * request: a `sap-client` query option with this value is accepted and left
   * out of the target (any other is denied).
   */
  readonly sapClient?: string | undefined;
  /**
   * The key's entity step (see {@link EntityStep}), asked for every name the
   * request looks up among the service's entity sets, singletons and imports
   * (the first segment of the resource path and of every URL in the body)
   * before the lookup: a name the key may not touch stops the analysis
   * (403) whether or not the service has it, and one it may touch that the
   * service lacks stops it with 404. Absent: every name may be looked up.
   */
  readonly entityStep?: EntityStep | undefined;
}

/**
 * What every analysis that may be forwarded carries: the request target in
 * canonical form (decoded once, system options under their canonical names)
 * and as erplink writes it for the back end (see `./target.ts`). Nothing of
 * the client's raw path or query is forwarded; only this.
 */
export interface Forwardable {
  readonly target: Target;
  /** {@link target} serialized, relative to the service root: `A_Currency('EUR')?$select=Currency`. */
  readonly forward: string;
}

/** The outcome of {@link analyzeRequest}. */
export type Analysis =
  /** Authorize every access (in order); the first denial answers 403 and nothing is forwarded. */
  | (Forwardable & {
      readonly kind: "access";
      readonly accesses: readonly Access[];
      /** The method the back end will act on: the request's, or the one tunnelled with `X-HTTP-Method`. */
      readonly effectiveMethod: string;
      /** Set when the request may create the entity it updates (upsert); see {@link needsIfMatchStar}. */
      readonly upsertEntitySet?: string;
      /**
       * The resource path (no leading slash, in the canonical encoding of
       * {@link Forwardable.forward}) of the one entity the request yields, so that a `$batch`
       * part can be referred to as `$<Content-ID>`: for a `POST` creating in
       * a collection, the request path plus a placeholder key naming every
       * key property (`SalesOrders(ID=0)`, `PriceConditions(OrderID=0,Type=0)`;
       * `(0)` without metadata); for a request addressing one entity
       * (`SalesOrders(1)`, `Me`, `SalesOrders(1)/Customer`), the path itself.
       * Absent otherwise (collections, properties, `$value`, `$ref`,
       * `$count`, bound operations).
       */
      readonly entityPath?: string;
      /**
       * How a `$batch` part may refer to this one's entity (`$<Content-ID>`),
       * given that back ends such as CAP resolve a reference by writing the
       * entity's address, from its stored key and unescaped, into the
       * referring URL: `address` when {@link entityPath} is the entity's
       * real address (the batch module writes it in place of the reference,
       * so the back end resolves nothing); `created` when this request
       * creates the entity and every key value the body gives is plain
       * (letters, digits, `_ . : + -`; others are generated), so the back
       * end's own substitution stays that entity (and the body nests or
       * binds no entity, which could feed a key). Absent: no reference.
       */
      readonly referable?: "address" | "created";
    })
  /** `$metadata` or the service document: allowed when the key has any permission on the service. */
  | (Forwardable & { readonly kind: "metadata" })
  /** A `POST $batch`: each part must be analyzed by the batch module. */
  | (Forwardable & { readonly kind: "batch" })
  /**
   * Stopped at an entity set named in the request (see {@link Stop}):
   * `accesses` are those read before it, and the named set's own when the
   * path alone says which operation (`GET X`, `X(1)`, `POST X`, …). The
   * gateway authorizes them in order, then answers `status` (403 at the
   * entity step with `message`, or 404 `NOT_FOUND` with `message`).
   */
  | (Forwardable & {
      readonly kind: "stopped";
      readonly status: 403 | 404;
      readonly entitySet: string;
      readonly reason: string;
      readonly message: string;
      readonly accesses: readonly Access[];
    })
  /** Well-formed but not allowed through the gateway (403). */
  | { readonly kind: "denied"; readonly message: string }
  /** Malformed path or query (400). */
  | { readonly kind: "invalid"; readonly message: string };

/**
 * Whether the gateway must add `If-Match: *` to the forwarded request so that
 * it cannot create the entity it updates: true for an upserting request
 * (see {@link Analysis}) when the key may not `create` in that entity set.
 */
export function needsIfMatchStar(analysis: Analysis, mayCreate: (entitySet: string) => boolean): boolean {
  return analysis.kind === "access" && analysis.upsertEntitySet !== undefined && !mayCreate(analysis.upsertEntitySet);
}

/**
 * Analyzes one request. Never throws: malformed input is `invalid`, anything
 * the gateway will not let through is `denied`.
 */
export function analyzeRequest(input: RequestInput): Analysis {
  const progress: Progress = { accesses: new AccessList(), forwardable: undefined };
  try {
    return analyze(input, progress);
  } catch (error) {
    if (error instanceof Refusal) return { kind: error.kind, message: error.message };
    if (error instanceof Stop && progress.forwardable !== undefined) {
      const { status, entitySet, reason, message } = error;
      return { kind: "stopped", ...progress.forwardable, status, entitySet, reason, message, accesses: progress.accesses.items };
    }
    // A bug here must not let the request through.
    return { kind: "denied", message: "the request could not be analyzed" };
  }
}

/** What an analysis has found so far: kept when it stops at an entity set. */
interface Progress {
  readonly accesses: AccessList;
  forwardable: Forwardable | undefined;
}

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "MERGE", "DELETE"]);
const TUNNELLED = new Set(["MERGE", "PUT", "PATCH", "DELETE"]);

function lowerCaseHeaders(headers: Readonly<Record<string, string | undefined>>): Map<string, string> {
  const out = new Map<string, string>();
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out.set(name.toLowerCase(), value);
  }
  return out;
}

function effectiveMethodOf(method: string, headers: ReadonlyMap<string, string>): string {
  const tunnel = headers.get("x-http-method");
  const override = headers.get("x-http-method-override");
  if (tunnel !== undefined && override !== undefined && tunnel.trim().toUpperCase() !== override.trim().toUpperCase()) {
    invalid("X-HTTP-Method and X-HTTP-Method-Override disagree");
  }
  const tunnelled = tunnel ?? override;
  if (tunnelled !== undefined) {
    if (method !== "POST") denied(`X-HTTP-Method is only allowed on POST, not on ${excerpt(method)}`);
    const upper = tunnelled.trim().toUpperCase();
    if (!TUNNELLED.has(upper)) denied(`X-HTTP-Method '${excerpt(tunnelled)}' is not allowed`);
    return upper;
  }
  if (!METHODS.has(method)) denied(`method ${excerpt(method)} is not allowed`);
  return method;
}

/**
 * Splits the raw path on `/`, then decodes each segment exactly once. One
 * trailing `/` after a segment is dropped (`E/` is `E`: clients such as the
 * SAP Cloud SDK write it); any other empty segment is invalid.
 */
function decodeSegments(path: string): string[] {
  if (path.length > MAX_PATH_LENGTH) invalid(`path is longer than ${MAX_PATH_LENGTH} characters`);
  let body = path.startsWith("/") ? path.slice(1) : path;
  if (body.endsWith("/") && body.length > 1 && !body.endsWith("//")) body = body.slice(0, -1);
  if (body === "") return [];
  const raw = body.split("/");
  if (raw.length > MAX_SEGMENTS) invalid(`path has more than ${MAX_SEGMENTS} segments`);
  return raw.map((r, i) => {
    if (r === "") invalid(`empty path segment at position ${i + 1}`);
    const s = decodeOnce(r);
    if (s === undefined) invalid(`malformed percent-encoding in path segment '${excerpt(r)}'`);
    if (hasControlCharacter(s)) invalid(`control character in path segment ${i + 1}`);
    if (s === "." || s === "..") invalid("dot segments are not allowed in the path");
    return s;
  });
}

// Unquoted key values, each as the OData ABNF writes it (V2's type suffixes
// included): numbers, GUIDs, dates, times of day, date-times, booleans,
// `null`. Anything else unquoted is refused rather than passed as a token:
// back ends read a malformed one (`1..`, `0x1`, `1a`) differently (CAP
// answers "invalid resource path"; a lenient reader might drop the segment).
const NUMBER_LITERAL = String.raw`[+-]?(?:\d+(?:\.\d+)?(?:e[+-]?\d+)?[lmdf]?|INF|NaN)`;
const GUID_LITERAL = String.raw`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`;
const DATE_LITERAL = String.raw`-?\d{4,}-\d{2}-\d{2}`;
const TIME_LITERAL = String.raw`\d{2}:\d{2}(?::\d{2}(?:\.\d{1,12})?)?`;
const BARE_KEY_VALUE = new RegExp(
  `^(?:${NUMBER_LITERAL}|${GUID_LITERAL}|${DATE_LITERAL}(?:T${TIME_LITERAL}(?:Z|[+-]\\d{2}:\\d{2})?)?|${TIME_LITERAL}|true|false|null)$`,
  "i",
);
// V2 typed literals (guid'…', datetime'…', X'…') and V4 enum/duration literals.
const TYPED_PREFIX = /^[A-Za-z][A-Za-z0-9_.]*$/;

function checkKeyValue(value: string, what: string): void {
  const v = value.trim();
  if (v === "") invalid(`empty key value in ${what}`);
  const quote = v.indexOf("'");
  if (quote >= 0) {
    if (quote > 0 && !TYPED_PREFIX.test(v.slice(0, quote))) invalid(`malformed key value '${excerpt(v)}' in ${what}`);
    if (skipSingleQuoted(v, quote) !== v.length) invalid(`malformed string literal '${excerpt(v)}' in ${what}`);
    if (quote > 0) checkTypedLiteral(v.slice(quote), what);
    return;
  }
  if (v.startsWith("@")) {
    if (!isSimpleIdentifier(v.slice(1))) invalid(`malformed parameter alias '${excerpt(v)}' in ${what}`);
    return;
  }
  if (!BARE_KEY_VALUE.test(v)) invalid(`malformed key value '${excerpt(v)}' in ${what}`);
}

/**
 * Checks a key predicate (the text between the parentheses): one unnamed
 * value, or `Name=value` pairs; with a model, its names must be exactly the
 * key properties of the type at `position`.
 */
function checkKeyPredicate(args: string, what: string, model: ServiceModel | undefined, position: Position | undefined): void {
  const parts = splitTopLevel(args, ",", what);
  const named = new Map<string, string>();
  for (const part of parts) {
    let eq = -1;
    walkTopLevel(part, what, (i) => {
      if (part[i] === "=" && eq < 0) eq = i;
    });
    if (eq < 0) {
      if (parts.length > 1) invalid(`a composite key must name every value in ${what}`);
      checkKeyValue(part, what);
      if (model && position && model.keyOf(position).length !== 1) {
        invalid(`${what} needs a named value for each key property (${model.keyOf(position).join(", ")})`);
      }
      return;
    }
    const name = part.slice(0, eq).trim();
    if (!name.split("/").every(isSimpleIdentifier)) invalid(`malformed key property name '${excerpt(name)}' in ${what}`);
    if (named.has(name)) invalid(`key property '${excerpt(name)}' is given twice in ${what}`);
    checkKeyValue(part.slice(eq + 1), what);
    named.set(name, part);
  }
  if (model && position) {
    const keys = model.keyOf(position);
    const lower = new Set([...named.keys()].map((k) => k.toLowerCase()));
    if (keys.length !== named.size || !keys.every((k) => named.has(k) || lower.has(k.toLowerCase()))) {
      invalid(`${what} must name exactly the key properties ${keys.join(", ")}`);
    }
  }
}

type Shape = "collection" | "entity" | "complex" | "complexCollection" | "primitive" | "primitiveCollection";

type Tail =
  | { readonly kind: "count" | "value" | "ref" }
  | { readonly kind: "function" | "action"; readonly name: string };

/** Where the walk along the resource path stands. */
interface PathState {
  /** Entity sets reached, in order; the last is the target. */
  readonly hops: string[];
  position: Position | undefined;
  shape: Shape;
  /** Whether the last step addressed a property of the target (or its `$value`). */
  property: boolean;
  tail: Tail | undefined;
  /** Set after V2 `$links`: the next segment must be a navigation. */
  links: boolean;
}

function analyze(input: RequestInput, progress: Progress): Analysis {
  const headers = lowerCaseHeaders(input.headers);
  const method = effectiveMethodOf(input.method, headers);
  const segments = decodeSegments(input.path);
  const { model } = input;
  const query = parseQuery(input.query, model?.version, input.sapClient);
  // Written here, before anything else: what cannot be written unambiguously
  // for the back end is refused, whatever it would mean.
  const target: Target = { segments, query: query.entries };
  const forwardable: Forwardable = { target, forward: serializeTarget(target) };
  progress.forwardable = forwardable;

  if (segments.length === 0) {
    if (method !== "GET" && method !== "HEAD") denied(`${method} is not allowed on the service document`);
    onlyOptions(query.options, ["format"], "the service document");
    return { kind: "metadata", ...forwardable };
  }
  const first = segments[0];
  if (first.startsWith("$")) {
    if (first === "$metadata" || first === "$batch") {
      if (segments.length > 1) invalid(`${first} cannot be followed by another path segment`);
      if (first === "$batch") {
        if (method !== "POST") denied(`$batch requires POST, not ${method}`);
        onlyOptions(query.options, [], "$batch");
        return { kind: "batch", ...forwardable };
      }
      if (method !== "GET" && method !== "HEAD") denied(`${method} is not allowed on $metadata`);
      onlyOptions(query.options, ["format", "schemaversion"], "$metadata");
      return { kind: "metadata", ...forwardable };
    }
    const name = first.split("(")[0];
    if (name === "$all" || name === "$crossjoin" || name === "$entity") denied(`${name} is not allowed`);
    invalid(`unknown path segment '${excerpt(first)}'`);
  }

  const { accesses } = progress;
  const { entityStep } = input;
  let state: PathState;
  try {
    state = walkPath(segments, model, entityStep, PATH_REASON);
  } catch (error) {
    // A set the key may not touch: the access the path alone asks for is recorded, whether or not the set exists.
    if (error instanceof Stop && error.status === 403) recordWithoutModel(segments, method, headers, model?.root(error.entitySet)?.kind === "singleton", accesses);
    throw error;
  }
  const scope = finish(state, method, headers, model, accesses);
  const bodyTarget = bodyTargetOf(state, method);
  if (bodyTarget !== undefined) {
    analyzeBody(input.body, bodyTarget, {
      model,
      accesses,
      resolveReference: input.resolveReference,
      walkReference: (path, reason) => walkReference(path, model, entityStep, reason),
    });
  }
  const ctx: QueryContext = { model, aliases: query.aliases, accesses, work: 0, applied: new Set() };
  applyOptions(ctx, scope, query.options);
  const id = query.options.get("id");
  if (id !== undefined) idOption(id, state, method, input, accesses);
  // Aliases used by keys and function parameters in the path are expressions too.
  for (const alias of aliasesIn(segments.join("/"))) scanAliasValue(ctx, scope, alias);

  const upsert =
    (method === "PUT" || method === "PATCH") &&
    state.tail === undefined &&
    !state.property &&
    state.shape === "entity" &&
    // A blank If-Match is no precondition: back ends ignore it (CAP tests its truthiness).
    !headers.get("if-match")?.trim() &&
    headers.get("if-none-match")?.trim() !== "*";
  const entityPath = entityPathOf(segments, state, method, model);
  const referable =
    entityPath === undefined
      ? undefined
      : state.shape === "entity"
        ? "address"
        : plainPath(segments) && plainKeys(input.body, model, state.position)
          ? "created"
          : undefined;
  return {
    kind: "access",
    ...forwardable,
    accesses: accesses.items,
    effectiveMethod: method,
    ...(upsert ? { upsertEntitySet: state.hops[state.hops.length - 1] } : {}),
    ...(entityPath !== undefined ? { entityPath } : {}),
    ...(referable !== undefined ? { referable } : {}),
  };
}

// A key value a back end may write into a URL unescaped without it reading as anything but that value.
const PLAIN_KEY_VALUE = /^[A-Za-z0-9_.:+-]*$/;

/**
 * Whether the entity a create's body describes may be referred to by a
 * later `$batch` part (`$<Content-ID>`). Back ends such as CAP resolve the
 * reference by writing the new entity's address, from its stored key values,
 * unescaped, into the referring URL (with `String.replace`, where `$'` even
 * re-inserts the rest of that URL). So every key value the back end could
 * store must be known here and plain: a number, a boolean, or a string of
 * letters, digits and `_ . : + -`, whatever it comes from. From the body: key
 * members (matched ignoring case) plain, no nested entity (a navigation can
 * feed a key through a referential constraint: CAP fills a child's
 * `parent_ID` from `"parent": {"ID": …}`; flat complex values may stay), and
 * every bind's key values plain once decoded (CAP decodes a bind and may take
 * a key from it). From the path: see {@link plainPath}. Key properties the
 * body leaves out are generated. Without a model every top-level string
 * counts as a key. V2 control information (`__metadata`) may stay.
 */
function plainKeys(body: RequestBody | undefined, model: ServiceModel | undefined, position: Position | undefined): boolean {
  if (body === undefined || body.kind !== "json") return true; // none, or media: the back end generates the key
  let value = body.value;
  // V2: CAP's V2 adapter takes `d` as the entity whenever it is an object, whatever else is there.
  if (isObject(value) && isObject(value.d)) value = value.d;
  if (!isObject(value)) return true; // not an entity: refused elsewhere
  const keys = model && position ? new Set(model.keyOf(position).map((k) => k.toLowerCase())) : undefined;
  for (const [name, v] of Object.entries(value)) {
    if (name === "__metadata") continue;
    if (name.includes("@")) {
      if (isBindAnnotation(name) && !(Array.isArray(v) ? v : [v]).every((u) => u === null || (typeof u === "string" && plainUrl(u)))) return false;
      continue; // other annotations name no entity
    }
    if (v !== null && typeof v === "object") {
      // A flat complex value (or primitive collection) is data; anything else may nest an entity.
      const found = model && position ? model.step(position, name) : undefined;
      const flat = Object.values(v).every((x) => x === null || typeof x !== "object");
      if (found?.kind !== "property" || !flat) return false;
      continue;
    }
    if (keys !== undefined && !keys.has(name.toLowerCase())) continue;
    if (typeof v === "string" && !PLAIN_KEY_VALUE.test(v)) return false;
  }
  return true;
}

/**
 * Whether a create's path leaves the back end no key value but plain ones:
 * a POST to an entity set, or to a collection navigation directly under an
 * entity addressed by its key (whose key the child may inherit; a parent
 * reached through a single-valued navigation has a stored key no one here
 * has seen), with every key value in the path plain.
 */
function plainPath(segments: readonly string[]): boolean {
  if (segments.length > 2) return false;
  if (segments.length === 2 && !segments[0]!.endsWith(")")) return false;
  return segments.every((seg) => {
    const open = seg.indexOf("(");
    return open < 0 || plainKeyPredicate(seg.slice(open + 1, -1));
  });
}

/** Whether every value in a key predicate (`'a'`, `ID=1,Type='x'`) is plain once unquoted. */
function plainKeyPredicate(args: string): boolean {
  return args.split(",").every((part) => {
    const eq = part.indexOf("=");
    let value = (eq < 0 ? part : part.slice(eq + 1)).trim();
    if (value.startsWith("'") && value.endsWith("'") && value.length >= 2) value = value.slice(1, -1);
    return value !== "" && PLAIN_KEY_VALUE.test(value);
  });
}

/**
 * Whether every key value a bind URL names is plain once decoded (and it
 * holds no `$`, which `String.replace` would interpret): `Customers('C1')`,
 * `https://host/…/Customers('C1')`. An undecodable URL is not.
 */
function plainUrl(url: string): boolean {
  let decoded: string;
  try {
    decoded = decodeURIComponent(url);
  } catch {
    return false;
  }
  if (decoded.includes("$")) return false;
  for (const m of decoded.matchAll(/\(([^()]*)\)/g)) if (!plainKeyPredicate(m[1]!)) return false;
  return !/[()]/.test(decoded.replace(/\([^()]*\)/g, ""));
}

/**
 * Refuses system query options other than `allowed` on a resource that
 * reads no entity data: they are not analyzed there, so none may reach the
 * back end (custom options pass).
 */
function onlyOptions(options: ReadonlyMap<string, string>, allowed: readonly string[], what: string): void {
  for (const name of options.keys()) if (!allowed.includes(name)) invalid(`system query option $${name} is not allowed on ${what}`);
}

/**
 * What the body of a request describes, for `./body.ts`; undefined when the
 * body cannot name an entity (reads, deletes, primitive properties, `$value`
 * and streams) or is left alone (bound action parameters). A `POST` to a
 * collection is an entity create whatever its body: `./body.ts` tells a
 * media entity create (media to a `HasStream` type) from the rest.
 */
function bodyTargetOf(state: PathState, method: string): BodyTarget | undefined {
  if (method === "GET" || method === "HEAD" || method === "DELETE") return undefined;
  const { tail } = state;
  if (tail?.kind === "ref") return { kind: "reference" };
  if (tail !== undefined) return undefined;
  if (state.property) {
    if ((state.shape === "complex" || state.shape === "complexCollection") && state.position !== undefined) {
      return { kind: "complex", position: state.position, collection: state.shape === "complexCollection", update: method !== "POST" };
    }
    return undefined;
  }
  if (method === "POST") return { kind: "entity", position: state.position, update: false };
  return { kind: "entity", position: state.position, update: true };
}

/**
 * Walks the resource path of a URL found in a body (a bind value, an
 * `@odata.id`): it must address one entity. Returns the entity sets passed,
 * the target last.
 */
function walkReference(path: string, model: ServiceModel | undefined, entityStep: EntityStep | undefined, reason: string): readonly string[] {
  const segments = decodeSegments(path);
  // The URL is forwarded as written: it must read the same to a back end
  // that decodes first and splits after, so no decoded segment may hold what
  // would split or end it, inside a literal or not.
  for (const s of segments) {
    if (/[/\\#?%]/.test(s)) invalid(`body URLs are forwarded as written: '${excerpt(path)}' may not encode '/', '\\', '#', '?' or '%'`);
    encodeSegment(s);
  }
  if (segments.length === 0 || segments[0].startsWith("$")) invalid(`'${excerpt(path)}' does not address one entity`);
  const state = walkPath(segments, model, entityStep, reason);
  if (state.tail !== undefined || state.property || state.shape !== "entity") invalid(`'${excerpt(path)}' does not address one entity`);
  return state.hops;
}

/**
 * `$id`: the entity whose link a `DELETE` of a collection-valued
 * navigation's `$ref` removes. It means nothing on any other request
 * (`$entity` is refused), so there it is refused: a back end that honoured it
 * would read an entity nobody authorized. The entity it names is read, as a
 * body reference is (`get` on every entity set its path passes); an absolute
 * URL or path must lie below the service root, a `$<Content-ID>` refer to an
 * earlier part of the batch (`resolveReference`).
 */
function idOption(value: string, state: PathState, method: string, input: RequestInput, accesses: AccessList): void {
  if (method !== "DELETE" || state.tail?.kind !== "ref" || state.shape !== "collection") {
    denied("$id is only allowed on a DELETE of a collection-valued navigation's $ref");
  }
  let path = value;
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(value) || value.startsWith("/") || value.startsWith("$")) {
    const resolved = input.resolveReference?.(value);
    if (resolved === undefined) {
      denied(`'${excerpt(value)}' in $id ${value.startsWith("$") ? "does not refer to an earlier request of this batch" : "leaves the service root"}`);
    }
    path = resolved.startsWith("/") ? resolved.slice(1) : resolved;
  }
  if (path.includes("?") || path.includes("#")) invalid(`'${excerpt(value)}' in $id must not have a query or fragment`);
  for (const entitySet of walkReference(path, input.model, input.entityStep, "$id")) accesses.add(entitySet, "get", "$id");
}

/** See `entityPath` in {@link Analysis}. */
function entityPathOf(segments: readonly string[], state: PathState, method: string, model: ServiceModel | undefined): string | undefined {
  if (state.tail !== undefined || state.property) return undefined;
  const raw = serializePath(segments);
  if (state.shape === "entity") return raw;
  if (state.shape !== "collection" || method !== "POST") return undefined;
  if (!model || state.position === undefined) return `${raw}(0)`;
  const keys = model.keyOf(state.position);
  if (keys.length === 0) return undefined;
  return `${raw}(${keys.map((k) => `${encodeURIComponent(k)}=0`).join(",")})`;
}

/** The parameter aliases (`@p`) a text refers to outside string literals. */
function aliasesIn(text: string): Set<string> {
  let unquoted = "";
  for (let i = 0; i < text.length; ) {
    const quote = text.indexOf("'", i);
    if (quote < 0) {
      unquoted += text.slice(i);
      break;
    }
    unquoted += `${text.slice(i, quote)} `;
    const end = skipSingleQuoted(text, quote);
    i = end < 0 ? text.length : end;
  }
  return new Set(unquoted.match(/@[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Nd}\p{Mn}\p{Mc}\p{Pc}\p{Cf}]*/gu) ?? []);
}

/** The reason of the accesses of the resource path, and of a stop at its first segment. */
const PATH_REASON = "resource path";

/**
 * What the first segment of a path names, looked up only after the key's
 * entity step (see {@link RequestInput.entityStep}): a name the key may not
 * touch stops the analysis with 403 whether or not the service has it (so
 * the answer never tells), and a name it may touch that the service lacks
 * with 404. A case-insensitive match counts only when the key may touch the
 * set it matches; otherwise the name is looked at as written. Undefined
 * without a model (the name is taken for an entity set).
 */
function resolveRoot(name: string, model: ServiceModel | undefined, entityStep: EntityStep | undefined, reason: string): Root | undefined {
  const step = entityStep ?? (() => undefined);
  const root = model?.root(name);
  if (root !== undefined && step(root.name) === undefined) return root;
  const denial = step(name);
  if (denial !== undefined) throw new Stop(403, name, reason, denial);
  if (model) throw new Stop(404, name, reason, `entity set '${name}' not found`);
  return undefined;
}

/**
 * Records the accesses a path names when it stops at its first segment,
 * as far as the path alone says (without the model): `GET X` is `list`
 * (`get` for a singleton), `DELETE X(1)` `delete`, and so on; nothing when
 * it goes on into properties or navigations, which only the model could
 * tell. What is recorded decides nothing (the key may not touch the set
 * at all); it tells the request log and explain what was asked.
 */
function recordWithoutModel(segments: readonly string[], method: string, headers: ReadonlyMap<string, string>, singleton: boolean, accesses: AccessList): void {
  const found = new AccessList();
  try {
    const state = walkPath(segments, undefined, undefined, PATH_REASON);
    if (singleton && segments.length === 1 && state.shape === "collection") state.shape = "entity";
    finish(state, method, headers, undefined, found);
  } catch (error) {
    if (error instanceof Refusal) return;
    throw error;
  }
  for (const a of found.items) accesses.add(a.entitySet, a.operation, a.reason);
}

/** Walks the resource path: entity sets crossed, and what the last segment addresses. */
function walkPath(segments: readonly string[], model: ServiceModel | undefined, entityStep: EntityStep | undefined, reason: string): PathState {
  const { name, args } = splitCall(segments[0], "the first path segment");
  if (!isSimpleIdentifier(name)) invalid(`'${excerpt(name)}' is not an entity set name`);
  let state: PathState;
  const root = resolveRoot(name, model, entityStep, reason);
  if (model && root !== undefined) {
    if (root.kind === "functionImport" || root.kind === "actionImport") {
      denied(`unbound ${root.kind === "functionImport" ? "function" : "action"} import '${root.name}' is not allowed`);
    }
    state = {
      hops: [root.name],
      position: root.position,
      shape: root.kind === "singleton" ? "entity" : "collection",
      property: false,
      tail: undefined,
      links: false,
    };
  } else {
    state = { hops: [name], position: undefined, shape: "collection", property: false, tail: undefined, links: false };
  }
  if (args !== undefined) {
    if (state.shape !== "collection") invalid(`singleton '${name}' cannot take a key`);
    checkKeyPredicate(args, `the key of ${name}`, model, state.position);
    addressOne(state);
  }
  for (let i = 1; i < segments.length; i++) step(state, segments[i], model);
  if (state.links) invalid("$links must be followed by a navigation property");
  return state;
}

/** A key was applied: one entity of the collection is addressed. */
function addressOne(state: PathState): void {
  state.shape = "entity";
  if (state.position !== undefined) state.position = { ...state.position, collection: false };
}

function metadataUnavailable(segment: string): never {
  denied(`cannot authorize '${excerpt(segment)}': the service metadata is unavailable`);
}

/** Applies one path segment after the first to `state`. */
function step(state: PathState, segment: string, model: ServiceModel | undefined): void {
  if (state.tail !== undefined) {
    if (state.tail.kind === "function" || state.tail.kind === "action") {
      denied(`path segments after bound operation '${state.tail.name}' are not allowed`);
    }
    invalid(`$${state.tail.kind} must be the last path segment`);
  }
  if (segment.startsWith("$")) {
    dollarSegment(state, segment, model);
    return;
  }
  const { name, args } = splitCall(segment, `path segment '${excerpt(segment)}'`);
  if (state.shape === "collection" && !state.links) {
    collectionSegment(state, segment, name, args, model);
    return;
  }
  if (state.shape !== "entity" && state.shape !== "complex") {
    invalid(`'${excerpt(segment)}' cannot follow a ${state.shape === "primitive" ? "primitive value" : "collection property"}`);
  }
  if (!model || state.position === undefined) metadataUnavailable(segment);
  const found = model.step(state.position, name);
  if (state.links && found.kind !== "navigation") invalid("$links must be followed by a navigation property");
  switch (found.kind) {
    case "property":
      if (args !== undefined) invalid(`property '${found.name}' cannot take a key`);
      state.property = true;
      if (found.position !== undefined) {
        state.position = found.position;
        state.shape = found.collection ? "complexCollection" : "complex";
      } else {
        state.position = undefined;
        state.shape = found.collection ? "primitiveCollection" : "primitive";
      }
      return;
    case "navigation": {
      if (found.target === undefined) {
        denied(
          `cannot authorize navigation '${found.name}' of '${state.hops[state.hops.length - 1]}': ` +
            "the service metadata does not say which entity set it leads to",
        );
      }
      state.hops.push(found.target.entitySet);
      state.position = found.target;
      state.property = false;
      state.shape = found.collection ? "collection" : "entity";
      if (args !== undefined) {
        if (!found.collection) invalid(`single-valued navigation '${found.name}' cannot take a key`);
        checkKeyPredicate(args, `the key of ${found.name}`, model, found.target);
        addressOne(state);
      }
      if (state.links) {
        state.links = false;
        state.tail = { kind: "ref" };
      }
      return;
    }
    case "cast":
      if (args !== undefined) invalid(`type cast '${found.name}' cannot take a key here`);
      state.position = found.position;
      return;
    case "function":
      state.tail = { kind: "function", name: found.name };
      return;
    case "action":
      if (args !== undefined) invalid(`bound action '${found.name}' cannot take parameters in the path`);
      state.tail = { kind: "action", name: found.name };
      return;
    case "unknown":
      invalid(`'${excerpt(name)}' is not a property or navigation of '${state.position.type}'`);
  }
}

/** A segment after a collection of entities: a cast, a bound operation, or a key (key-as-segment). */
function collectionSegment(state: PathState, segment: string, name: string, args: string | undefined, model: ServiceModel | undefined): void {
  if (!model || state.position === undefined) {
    // Only a value that cannot be a name is surely a key.
    if (args !== undefined || isSimpleIdentifier(name) || isQualifiedName(name) || /^[\p{L}_@]/u.test(name)) {
      metadataUnavailable(segment);
    }
    checkKeySegment(segment);
    addressOne(state);
    return;
  }
  const found = model.step(state.position, name);
  switch (found.kind) {
    case "cast":
      state.position = found.position;
      if (args !== undefined) {
        checkKeyPredicate(args, `the key of ${found.name}`, model, found.position);
        addressOne(state);
      }
      return;
    case "function":
      state.tail = { kind: "function", name: found.name };
      return;
    case "action":
      if (args !== undefined) invalid(`bound action '${found.name}' cannot take parameters in the path`);
      state.tail = { kind: "action", name: found.name };
      return;
    case "property":
    case "navigation":
      if (found.kind === "property" && found.dynamic) break; // open type: not a declared name
      invalid(`'${excerpt(name)}' cannot follow a collection: address one entity with a key first`);
  }
  if (args !== undefined) invalid(`'${excerpt(name)}' is not a type cast or bound operation of '${state.position.type}'`);
  const keys = model.keyOf(state.position);
  if (keys.length !== 1) invalid(`key-as-segment '${excerpt(segment)}' needs a single key property, but the key is ${keys.join(", ")}`);
  checkKeySegment(segment);
  addressOne(state);
}

// A key-as-segment value is unquoted; quotes, parentheses and slashes would
// make it read differently elsewhere.
const KEY_SEGMENT = /^[^'"()\\/]+$/;

function checkKeySegment(segment: string): void {
  if (!KEY_SEGMENT.test(segment)) invalid(`malformed key segment '${excerpt(segment)}'`);
}

function dollarSegment(state: PathState, segment: string, model: ServiceModel | undefined): void {
  const isEntityTyped = state.shape === "collection" || state.shape === "entity";
  switch (segment) {
    case "$count":
      if (state.shape !== "collection" && state.shape !== "complexCollection" && state.shape !== "primitiveCollection") {
        invalid("$count must follow a collection");
      }
      state.tail = { kind: "count" };
      return;
    case "$value":
      if (state.shape !== "entity" && state.shape !== "primitive") invalid("$value must follow an entity or a primitive property");
      // An entity's $value is its media stream: only media entity types have one (CAP shuts down on the others).
      if (state.shape === "entity" && model && state.position !== undefined && !model.hasStream(state.position)) {
        invalid(`$value must follow a media entity or a primitive property: '${state.position.type}' has no stream`);
      }
      state.tail = { kind: "value" };
      return;
    case "$ref":
      if (!isEntityTyped || state.property) invalid("$ref must follow an entity or a collection of entities");
      state.tail = { kind: "ref" };
      return;
    case "$links":
      if (state.shape !== "entity") invalid("$links must follow an entity");
      if (!model) metadataUnavailable(segment);
      state.links = true;
      return;
    case "$each":
      denied("$each bulk operations are not allowed");
  }
  const name = segment.split("(")[0];
  if (name === "$filter") denied("$filter path segments are not allowed");
  if (name === "$query") denied("$query is not allowed");
  invalid(`unknown path segment '${excerpt(segment)}'`);
}

/**
 * Records the accesses of the resource path for `method`, and returns the
 * scope the query options apply to.
 */
function finish(state: PathState, method: string, headers: ReadonlyMap<string, string>, model: ServiceModel | undefined, accesses: AccessList): Scope {
  const { hops, tail } = state;
  const target = hops[hops.length - 1];
  for (let h = 0; h < hops.length - 1; h++) accesses.add(hops[h], "get", "navigation source in resource path");
  const read: Operation = state.shape === "collection" ? "list" : "get";
  const linkChange = (): void => {
    if (hops.length < 2) invalid("a link can only be changed through a navigation property");
    accesses.add(hops[hops.length - 2], "update", "link change");
    accesses.add(target, "get", "link target");
  };
  const isRead = method === "GET" || method === "HEAD";

  if (tail?.kind === "function") {
    if (!isRead) denied(`bound function '${tail.name}' must be called with GET, not ${method}`);
    accesses.add(target, read, `bound function ${tail.name}`);
    return { position: undefined, missing: "function", label: "" };
  }
  if (tail?.kind === "action") {
    if (method !== "POST") denied(`bound action '${tail.name}' must be called with POST, not ${method}`);
    accesses.add(target, "update", `bound action ${tail.name}`);
    return { position: undefined, missing: "function", label: "" };
  }

  const propertyLike = state.property || tail?.kind === "value";
  if (isRead) {
    accesses.add(target, read, "resource path");
  } else if (tail?.kind === "count") {
    denied(`${method} is not allowed on $count`);
  } else if (tail?.kind === "ref") {
    if (method === "POST" && state.shape !== "collection") denied("POST to $ref needs a collection-valued navigation");
    if (method !== "POST" && method !== "DELETE" && state.shape !== "entity") denied(`${method} to $ref needs a single-valued navigation`);
    linkChange();
  } else if (propertyLike) {
    if (method === "POST" && state.shape !== "complexCollection" && state.shape !== "primitiveCollection") {
      denied("POST is only allowed on collections");
    }
    accesses.add(target, "update", "resource path");
  } else if (method === "POST") {
    if (state.shape !== "collection") denied("POST is only allowed on collections");
    accesses.add(target, "create", "resource path");
  } else if (state.shape === "collection") {
    denied(`${method} on a whole collection is not allowed`);
  } else if (method === "DELETE") {
    accesses.add(target, "delete", "resource path");
    // What the back end deletes with it (CAP: the entities of its compositions).
    if (model && state.position !== undefined) {
      for (const { path, target: cascaded } of model.cascades(state.position)) {
        if (cascaded === undefined) denied(`cannot authorize deleting '${path}' with the entity: the service metadata does not say which entity set it leads to`);
        accesses.add(cascaded.entitySet, "delete", `cascade ${path}`);
      }
    }
  } else if (headers.get("if-none-match")?.trim() === "*") {
    // Meant to create only, but a back end may ignore it where entities have
    // no ETag (CAP does) and update instead: both are needed.
    accesses.add(target, "create", "resource path (If-None-Match: *)");
    accesses.add(target, "update", "resource path (If-None-Match: *)");
  } else {
    accesses.add(target, "update", "resource path");
  }

  if (!model || state.position === undefined) {
    return { position: undefined, missing: model ? "primitive" : "metadata", label: "" };
  }
  return { position: state.position, label: "" };
}
