/**
 * The OData request analyzer: maps one request below a service root to
 * every (entity set, operation) pair it needs, so that the gateway can
 * authorize each one before anything is forwarded. Pure: no Fastify, no
 * I/O; the caller passes the service's parsed `$metadata`.
 *
 * It runs three passes, each knowing only what it must:
 * 1. **parse** (`./parse/`): the path and the query string, decoded once,
 *    are parsed by the OData ABNF into syntax trees (path segments with key
 *    predicates and parameters; expressions; `$select`/`$expand` items),
 *    knowing nothing of the model. What the grammar does not produce is
 *    refused (400).
 * 2. **bind** (`./bind/`): the trees are resolved against `$metadata`:
 *    entity sets, keys and the EDM types of their values, navigations and
 *    their target sets, casts, operations. A literal that does not fit its
 *    type, a name that does not resolve, is refused (400); a call erplink
 *    cannot authorize is denied (403); a navigation whose set the document
 *    does not name is read as one on `*`, every entity set
 *    (`./bind/unbound.ts`). Request bodies are bound by `./body.ts`.
 * 3. **accesses** (`./accesses.ts`): the bound request becomes the
 *    (entity set, operation) pairs it needs, by one table.
 *
 * Decisions the protocol leaves open, taken here (the access table holds
 * the rest):
 * - Without the service's `$metadata` nothing below the service root can be
 *   bound, so nothing there is authorized (the gateway fails closed before).
 * - `PUT` or `PATCH` of an entity may create it (upsert). Unless the request
 *   already carries `If-Match`, the analysis names the entity set in
 *   `upsertEntitySet`, and the gateway adds `If-Match: *` for a key without
 *   `create` (a blank `If-Match` counts as none).
 * - An update's answer is a read of what it changed (see `answer`): the
 *   gateway authorizes it when the key may, else asks for `return=minimal`.
 * - Bulk and cross-entity-set constructs (`$each`, `$filter` path segments,
 *   `$all`, `$crossjoin`, `$entity`, `$query`, `$root`, and `$apply` on V2)
 *   and collection-wide `PUT`/`PATCH`/`DELETE` are denied with a message
 *   naming them; `$apply` on V4 is analyzed (`./bind/apply.ts`). `$batch` is handed back as its own kind, for the batch module.
 */
import type { Operation } from "../data/ports.js";
import { AccessList, pathAccesses, removalDeletes, type Access } from "./accesses.js";
import { analyzeBody, isBindAnnotation, isObject, type BodyTarget, type RequestBody } from "./body.js";
import { bindOptions } from "./bind/options.js";
import { bindPath, checkParameter, type BoundPath, type PathContext } from "./bind/path.js";
import { UNBOUND_WHY } from "./bind/unbound.js";
import type { Position, ServiceModel } from "./metadata.js";
import type { Budget } from "./parse/expression.js";
import { LiteralError, parseLiteral, type Dialect } from "./parse/literal.js";
import { parsePathSegment, type PathSegment } from "./parse/path.js";
import { parseAliases, parseOptions, parseQuery, type OptionContext, type RawQuery } from "./parse/query.js";
import { serializePath, serializeTarget, type Target } from "./target.js";
import { Refusal, Stop, decodeOnce, denied, excerpt, hasControlCharacter, invalid, type EntityStep } from "./syntax.js";

export type { Access } from "./accesses.js";
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
      /** Set when the request may create the entity it updates (upsert): a key without `create` gets `If-Match: *` added. */
      readonly upsertEntitySet?: string;
      /**
       * What the back end reads to answer an update with the entity it
       * changed (OData's default `return=representation`): `get` of the
       * target (also for a property or its `$value`), `get` of the entity
       * the path starts from when the write is below it, `list` of every set
       * a nested entity was written in. Whatever the client's own `Prefer`
       * says: the gateway authorizes them when the key may; otherwise it
       * replaces that header with `Prefer: return=minimal` (and drops an
       * answer's body), so that the row is not read back for a key that may
       * not read it; in a V2 `$batch`, which has no such preference, the key
       * must be allowed them. (A create's answer is what the request
       * created: its `create` covers reading it back.)
       */
      readonly answer?: readonly Access[];
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

/** Work units (characters parsed, names resolved) one request may cost; beyond it the request is refused. */
const MAX_WORK = 200_000;

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

/** The reason of the accesses of the resource path, and of a stop at its first segment. */
const PATH_REASON = "resource path";

function analyze(input: RequestInput, progress: Progress): Analysis {
  const headers = lowerCaseHeaders(input.headers);
  const method = effectiveMethodOf(input.method, headers);
  const segments = decodeSegments(input.path);
  const { model } = input;
  const raw = parseQuery(input.query, model?.version, input.sapClient);
  // Written here, before anything else: what cannot be written unambiguously
  // for the back end is refused, whatever it would mean.
  const target: Target = { segments, query: raw.entries };
  const forwardable: Forwardable = { target, forward: serializeTarget(target) };
  progress.forwardable = forwardable;

  if (segments.length === 0) {
    refuseMisspelled(raw);
    if (method !== "GET" && method !== "HEAD") denied(`${method} is not allowed on the service document`);
    onlyOptions(raw.options, ["format"], "the service document");
    return { kind: "metadata", ...forwardable };
  }
  const first = segments[0]!;
  if (first.startsWith("$")) {
    if (first === "$metadata" || first === "$batch") {
      refuseMisspelled(raw);
      if (segments.length > 1) invalid(`${first} cannot be followed by another path segment`);
      if (first === "$batch") {
        if (method !== "POST") denied(`$batch requires POST, not ${method}`);
        onlyOptions(raw.options, [], "$batch");
        return { kind: "batch", ...forwardable };
      }
      if (method !== "GET" && method !== "HEAD") denied(`${method} is not allowed on $metadata`);
      onlyOptions(raw.options, ["format", "schemaversion"], "$metadata");
      return { kind: "metadata", ...forwardable };
    }
    const name = first.split("(")[0];
    if (name === "$all" || name === "$crossjoin" || name === "$entity") denied(`${name} is not allowed`);
    invalid(`unknown path segment '${excerpt(first)}'`);
  }
  if (model === undefined) denied(`cannot authorize '${excerpt(first)}': the service metadata is unavailable`);

  // 1. parse
  const dialect: Dialect = model.version;
  const budget: Budget = { spent: 0, limit: MAX_WORK };
  const optionContext: OptionContext = { dialect, budget };
  if (raw.options.has("levels")) invalid("$levels is only allowed inside $expand");
  const options = parseOptions(raw.options, "", optionContext);
  const aliases = parseAliases(raw.aliases, optionContext);
  const parsed = segments.map((s) => parsePathSegment(s, dialect));

  // 2. bind the path, and 3. its accesses
  const { accesses } = progress;
  const { entityStep } = input;
  const pathContext: PathContext = { model, dialect, aliases, entityStep, reason: PATH_REASON };
  let path: BoundPath;
  try {
    path = bindPath(parsed, pathContext);
  } catch (error) {
    // A set the key may not touch: the access the path alone asks for is recorded, whether or not the set exists.
    if (error instanceof Stop && error.status === 403) recordAsked(parsed, method, headers, model.root(error.entitySet)?.kind === "singleton", accesses);
    throw error;
  }
  const scope = pathAccesses(path, method, headers, model, accesses);
  const v2Import = path.tail?.kind === "operation" && path.tail.call.operation.httpMethod !== undefined ? path.tail.call : undefined;
  refuseMisspelled(raw, v2Import?.overloads.flatMap((o) => o.parameters.map((p) => p.name)));
  if (v2Import !== undefined) v2ImportParameters(path, raw.entries, { model, dialect });
  const bodyTarget = bodyTargetOf(path, method);
  if (bodyTarget !== undefined) {
    analyzeBody(input.body, bodyTarget, {
      model,
      accesses,
      resolveReference: input.resolveReference,
      walkReference: (url, reason) => walkReference(url, { ...pathContext, reason }, accesses),
    });
  }
  if (path.shape === "entity" && path.tail === undefined) {
    // Paging and ordering need a collection; back ends fail on them otherwise (SAP's mock server sorts one entity: a 500).
    const forCollections = COLLECTION_OPTIONS.find((name) => raw.options.has(name));
    if (forCollections !== undefined) invalid(`$${forCollections} applies to collections, and the resource path addresses one entity`);
  }
  bindOptions({ model, aliases, read: accesses.reads(), budget, applied: new Set() }, scope, options);
  const id = raw.options.get("id");
  if (id !== undefined) idOption(id, path, method, input, pathContext, accesses);

  const upsert =
    (method === "PUT" || method === "PATCH") &&
    path.tail === undefined &&
    !path.property &&
    path.shape === "entity" &&
    // A blank If-Match is no precondition: back ends ignore it (CAP tests its truthiness).
    !headers.get("if-match")?.trim() &&
    headers.get("if-none-match")?.trim() !== "*";
  // What the answer reads, whatever the client's own Prefer says: back ends
  // read a Prefer header differently (SAP CAP honours its first `return=`,
  // SAP's mock server only a header that is exactly `return=minimal`), so a
  // key that may not read it has the header replaced (see `answer`).
  const answer = answerOf(path, method, accesses.items);
  const entityPath = entityPathOf(segments, path, method, model);
  const referable =
    entityPath === undefined
      ? undefined
      : path.shape === "entity"
        ? "address"
        : plainPath(segments) && plainKeys(input.body, model, path.position)
          ? "created"
          : undefined;
  return {
    kind: "access",
    ...forwardable,
    accesses: accesses.items,
    effectiveMethod: method,
    ...(upsert ? { upsertEntitySet: path.hops[path.hops.length - 1] } : {}),
    ...(answer.length > 0 ? { answer } : {}),
    ...(entityPath !== undefined ? { entityPath } : {}),
    ...(referable !== undefined ? { referable } : {}),
  };
}

/** System query options that apply to collections only (without `$`). */
const COLLECTION_OPTIONS: readonly string[] = ["top", "skip", "orderby", "count", "inlinecount", "skiptoken", "search", "apply"];

/** The reason of the reads an update's answer makes (see `answer` in {@link Analysis}). */
const ANSWER_REASON = "the answer";

/**
 * See `answer` in {@link Analysis}: the reads of an update's answer, from
 * the accesses found: `get` of the target, `list` of every set a nested
 * navigation the body writes leads to (back ends answer with it expanded).
 */
function answerOf(path: BoundPath, method: string, found: readonly Access[]): Access[] {
  const { tail, hops } = path;
  if ((method !== "PUT" && method !== "PATCH" && method !== "MERGE") || tail?.kind === "operation" || tail?.kind === "count" || hops.length === 0) return [];
  const out: Access[] = [];
  // A property's or a media entity's `$value` is answered with the entity too (SAP's mock server does).
  if (tail?.kind !== "ref") out.push({ entitySet: hops[hops.length - 1]!, operation: "get", reason: ANSWER_REASON });
  // A write below the path's first entity is answered with that entity (SAP's mock server writes and returns it).
  if (path.beyondRoot && !out.some((o) => o.entitySet === hops[0])) {
    out.push({ entitySet: hops[0]!, operation: "get", reason: `${ANSWER_REASON} (the entity the path starts from)` });
  }
  for (const a of found) {
    // A nested navigation the body writes (deep insert or update, or its related set replaced) is answered with the entity.
    if (/^(?:deep |unlink )/.test(a.reason) && !out.some((o) => o.entitySet === a.entitySet && o.operation === "list")) {
      out.push({ entitySet: a.entitySet, operation: "list", reason: `${ANSWER_REASON} (${a.reason})` });
    }
  }
  return out;
}

/**
 * Refuses the options of a V2 request named like a system option but not
 * spelled as V2 spells it (`top`, `$TOP`; see `misspelled` in RawQuery),
 * naming the spelling to use: a V2 back end reads them as custom options,
 * so neither reading them as the system option (OData 4.01's reading) nor
 * passing them on unread would keep the request's meaning for both erplink
 * and the back end. The parameters of the V2 function import called
 * (`parameters`) are what they say, not options.
 */
function refuseMisspelled(raw: RawQuery, parameters: readonly string[] = []): void {
  const wrong = raw.misspelled.find((m) => !parameters.includes(m.name));
  if (wrong === undefined) return;
  invalid(
    `query option '${excerpt(wrong.name)}' is not $${wrong.canonical} on an OData V2 service, which reads it as a custom option: ` +
      `write '$${wrong.canonical}' for the system query option`,
  );
}

/**
 * A V2 function import's parameters, given as query options named after
 * them (`releaseApprovalRequest?SalesOrder='1'`): each must be a literal of
 * its declared type. Other custom options pass as they do elsewhere.
 */
function v2ImportParameters(path: BoundPath, entries: readonly { readonly name: string; readonly value: string | undefined }[], ctx: Pick<PathContext, "model" | "dialect">): void {
  const call = (path.tail as Extract<NonNullable<BoundPath["tail"]>, { kind: "operation" }>).call;
  const parameters = call.overloads.flatMap((o) => o.parameters);
  for (const { name, value } of entries) {
    const parameter = parameters.find((p) => p.name === name);
    if (parameter === undefined) continue;
    if (value === undefined) invalid(`parameter '${name}' of '${call.operation.name}' has no value`);
    let literal;
    try {
      literal = parseLiteral(value, ctx.dialect);
    } catch (error) {
      if (error instanceof LiteralError) invalid(`malformed value of parameter '${name}' of '${call.operation.name}': ${error.message}`);
      throw error;
    }
    checkParameter(parameter, literal, call.operation.name, ctx);
  }
}

/**
 * Records the accesses a path names when it stops at its first segment, as
 * far as that segment alone says: `GET X` is `list` (`get` for a singleton
 * or with a key), `POST X` `create`, `DELETE X(1)` `delete`, and so on;
 * nothing when it goes on into properties or navigations, which only the
 * model could tell. What is recorded decides nothing (the key may not touch
 * the set at all); it tells the request log and explain what was asked.
 */
function recordAsked(segments: readonly PathSegment[], method: string, headers: ReadonlyMap<string, string>, singleton: boolean, accesses: AccessList): void {
  const [first, second] = segments;
  // A call (`Search()`) is an operation's, which only the model could tell.
  if (first?.kind !== "name" || segments.length > 2 || first.args?.kind === "empty") return;
  if (second !== undefined && !(second.kind === "dollar" && (second.name === "$count" || (second.name === "$value" && first.args !== undefined)))) return;
  const one = singleton || first.args !== undefined;
  const add = (operation: Operation): void => accesses.add(first.name, operation, PATH_REASON);
  if (method === "GET" || method === "HEAD") add(one && second?.name !== "$count" ? "get" : "list");
  else if (second !== undefined) return;
  else if (method === "POST" && !one) add("create");
  else if (method === "DELETE" && one) add("delete");
  else if (one && method !== "POST" && method !== "DELETE") {
    if (headers.get("if-none-match")?.trim() === "*") {
      accesses.add(first.name, "create", "resource path (If-None-Match: *)");
      accesses.add(first.name, "update", "resource path (If-None-Match: *)");
    } else add("update");
  }
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
function plainKeys(body: RequestBody | undefined, model: ServiceModel, position: Position | undefined): boolean {
  if (body === undefined || body.kind !== "json") return true; // none, or media: the back end generates the key
  let value = body.value;
  // V2: CAP's V2 adapter takes `d` as the entity whenever it is an object, whatever else is there.
  if (isObject(value) && isObject(value.d)) value = value.d;
  if (!isObject(value)) return true; // not an entity: refused elsewhere
  const keys = position ? new Set(model.keyOf(position).map((k) => k.toLowerCase())) : undefined;
  for (const [name, v] of Object.entries(value)) {
    if (name === "__metadata") continue;
    if (name.includes("@")) {
      if (isBindAnnotation(name) && !(Array.isArray(v) ? v : [v]).every((u) => u === null || (typeof u === "string" && plainUrl(u)))) return false;
      continue; // other annotations name no entity
    }
    if (v !== null && typeof v === "object") {
      // A flat complex value (or primitive collection) is data; anything else may nest an entity.
      const found = position ? model.step(position, name) : undefined;
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
 * and streams) or is left alone (operation parameters: the operation's grant
 * covers what it does with them). A `POST` to a collection is an entity
 * create whatever its body: `./body.ts` tells a media entity create (media
 * to a `HasStream` type) from the rest.
 */
function bodyTargetOf(path: BoundPath, method: string): BodyTarget | undefined {
  if (method === "GET" || method === "HEAD" || method === "DELETE") return undefined;
  const { tail } = path;
  if (tail?.kind === "ref") return { kind: "reference", entitySet: path.hops[path.hops.length - 1]! };
  if (tail !== undefined) return undefined;
  if (path.property) {
    if ((path.shape === "complex" || path.shape === "complexCollection") && path.position !== undefined) {
      return { kind: "complex", position: path.position, collection: path.shape === "complexCollection", update: method !== "POST" };
    }
    return undefined;
  }
  if (method === "POST") return { kind: "entity", position: path.position, update: false };
  return { kind: "entity", position: path.position, update: true };
}

/**
 * Binds the resource path of a URL found in a body (a bind value, an
 * `@odata.id`) or in `$id`: it must address one entity. Returns the entity
 * sets it passes, the target last.
 */
function walkReference(path: string, ctx: PathContext, accesses: AccessList): readonly string[] {
  const segments = decodeSegments(path);
  // The URL is forwarded as written: it must read the same to a back end
  // that decodes first and splits after, so no decoded segment may hold what
  // would split or end it, inside a literal or not.
  for (const s of segments) {
    if (/[/\\#?%]/.test(s)) invalid(`body URLs are forwarded as written: '${excerpt(path)}' may not encode '/', '\\', '#', '?' or '%'`);
    // Nor may a quoted literal hold what a key parser that splits before it
    // unquotes reads as structure (SAP's mock server splits a key at ',' and
    // '=' and between the first '(' and the last ')'): it would look up
    // another key, or none, and read the whole set.
    for (const literal of s.match(/'(?:[^']|'')*'/g) ?? []) {
      if (/[=,()]/.test(literal.slice(1, -1))) invalid(`body URLs are forwarded as written: a quoted value in '${excerpt(path)}' may not hold '=', ',' or parentheses`);
    }
    serializePath([s]);
  }
  if (segments.length === 0 || segments[0]!.startsWith("$")) invalid(`'${excerpt(path)}' does not address one entity`);
  const bound = bindPath(segments.map((s) => parsePathSegment(s, ctx.dialect)), ctx);
  if (bound.tail !== undefined || bound.property || bound.shape !== "entity" || bound.hops.length === 0) invalid(`'${excerpt(path)}' does not address one entity`);
  // An entity reached through a navigation without an entity set can be referred to by no set's key: a back end would look it up anywhere.
  if (bound.unbound !== undefined) denied(`cannot authorize '${excerpt(path)}' in ${ctx.reason}: it passes ${bound.unbound}, and ${UNBOUND_WHY}`);
  // Back ends may resolve a reference by reading its URL (SAP's mock server
  // runs a GET of it): a segment that would read a whole set there is
  // refused; a single-valued navigation is a `list` of its target, as in a
  // resource path (SAP CAP scans for it).
  for (const wider of bound.wider) {
    if (wider.kind === "scan") accesses.add(wider.entitySet, "list", `${ctx.reason}: ${wider.reason}`);
    else invalid(`'${excerpt(path)}' must address its entity by key, not through ${wider.reason.replace(/ \(.*\)$/, "")}: a back end that resolves it by reading it would read the whole set '${wider.entitySet}'`);
  }
  return bound.hops;
}

/**
 * `$id`: the entity whose link a `DELETE` of a collection-valued
 * navigation's `$ref` removes. It means nothing on any other request
 * (`$entity` is refused), so there it is refused: a back end that honoured it
 * would read an entity nobody authorized. The entity it names is read, as a
 * body reference is (`get` on every entity set its path passes), and deleted
 * when the link is a composition's; an absolute URL or path must lie below
 * the service root, a `$<Content-ID>` refer to an earlier part of the batch
 * (`resolveReference`).
 */
function idOption(value: string, path: BoundPath, method: string, input: RequestInput, ctx: PathContext, accesses: AccessList): void {
  if (method !== "DELETE" || path.tail?.kind !== "ref" || path.shape !== "collection") {
    denied("$id is only allowed on a DELETE of a collection-valued navigation's $ref");
  }
  let target = value;
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(value) || value.startsWith("/") || value.startsWith("$")) {
    const resolved = input.resolveReference?.(value);
    if (resolved === undefined) {
      denied(`'${excerpt(value)}' in $id ${value.startsWith("$") ? "does not refer to an earlier request of this batch" : "leaves the service root"}`);
    }
    target = resolved.startsWith("/") ? resolved.slice(1) : resolved;
  }
  if (target.includes("?") || target.includes("#")) invalid(`'${excerpt(value)}' in $id must not have a query or fragment`);
  const hops = walkReference(target, { ...ctx, reason: "$id" }, accesses);
  const linked = path.hops[path.hops.length - 1]!;
  // A back end unlinks by the key it names, whatever set the URL says: it must be where the link leads.
  if (hops[hops.length - 1] !== linked) invalid(`'${excerpt(value)}' in $id is not an entity of '${linked}', where the link leads`);
  hops.forEach((entitySet, i) => accesses.add(entitySet, i === hops.length - 1 && removalDeletes(path) ? "delete" : "get", "$id"));
}

/** See `entityPath` in {@link Analysis}. */
function entityPathOf(segments: readonly string[], path: BoundPath, method: string, model: ServiceModel): string | undefined {
  if (path.tail !== undefined || path.property) return undefined;
  const raw = serializePath(segments);
  if (path.shape === "entity") return raw;
  if (path.shape !== "collection" || method !== "POST" || path.position === undefined) return undefined;
  const keys = model.keyTypes(path.position);
  if (keys.length === 0) return undefined;
  const values = keys.map((k) => placeholderOf(k.type, model));
  if (values.some((v) => v === undefined)) return undefined;
  return `${raw}(${keys.map((k, i) => `${encodeURIComponent(k.name)}=${values[i]}`).join(",")})`;
}

/**
 * A literal of a key property's type that stands for a key not known yet
 * (a created entity's), in erplink's encoding: it only has to be read as a
 * key of that type, whatever its value.
 */
function placeholderOf(type: string, model: ServiceModel): string | undefined {
  const v2 = model.version === "2.0";
  switch (type) {
    case "Edm.String":
      return "'0'";
    case "Edm.Byte":
    case "Edm.SByte":
    case "Edm.Int16":
    case "Edm.Int32":
    case "Edm.Int64":
    case "Edm.Decimal":
    case "Edm.Double":
    case "Edm.Single":
      return "0";
    case "Edm.Boolean":
      return "false";
    case "Edm.Guid":
      return v2 ? "guid'00000000-0000-0000-0000-000000000000'" : "00000000-0000-0000-0000-000000000000";
    case "Edm.Date":
      return v2 ? "datetime'2000-01-01T00:00'" : "2000-01-01";
    case "Edm.DateTime":
      return "datetime'2000-01-01T00:00'";
    case "Edm.DateTimeOffset":
      return v2 ? "datetimeoffset'2000-01-01T00:00Z'" : "2000-01-01T00:00Z";
    case "Edm.TimeOfDay":
      return "00:00";
    case "Edm.Time":
      return "time'PT0S'";
    default:
      return undefined;
  }
}
