/**
 * The `$batch` half of the OData authorizer: parses a batch request body
 * (multipart, OData V2 and V4; or the V4.01 JSON format), analyzes every
 * individual request with {@link analyzeRequest}, and writes the body the
 * back end receives. Pure: no Fastify, no I/O; the gateway buffers the body
 * (within its body limit), authorizes the reported accesses itself and
 * forwards only on `kind: "access"`.
 *
 * What the back end receives is written from what was parsed here, never
 * passed through as received, so that it cannot read the batch differently.
 * Back ends are lenient in ways that matter: SAP CAP reads a multipart batch
 * as text through regular expressions and Node's HTTP parser (any line
 * starting with `--` is a boundary, a PUT/POST/PATCH body ends at the first
 * blank line, GET/DELETE/HEAD get no body at all, `content-length: <n>` CRLF
 * is deleted wherever it occurs, the boundary is the first `boundary=`
 * anywhere in a Content-Type, and Content-IDs are read from MIME headers
 * only); its V2 adapter splits lines at CRLF and takes `boundary` only as the
 * first parameter. So:
 * - Every part's request line is written from its canonical request
 *   (`./target.ts`): the method the back end acts on (a tunnel's), and the
 *   URL relative to the service root in erplink's strict encoding, with a
 *   `$<Content-ID>` reference kept as such; never the client's bytes.
 * - Multipart: the delimiter lines are written anew (`--b` CRLF … CRLF
 *   `--b--`), so preambles, epilogues, transport padding and bare-LF line
 *   endings of the framing are dropped; the header lines of allowed headers
 *   (see the part headers below) are written as parsed, joined with CRLF,
 *   and all others are left out. The forwarded Content-Type is
 *   written here, `multipart/mixed; boundary=<b>` (quoted only when it must
 *   be), and so is every MIME Content-Type: `multipart/mixed; boundary=<cs>`
 *   for a change set, `application/http` for a request. Every
 *   `Content-Length` (MIME-level or the request's) is written exact for what
 *   is forwarded, as `Name: <n>`. On a V4 service a Content-ID given only in
 *   the request's headers is also written to its MIME headers (CAP V4 reads
 *   it there only); on a V2 service it stays where it is (V2 back ends read
 *   the request's, and CAP's V2 adapter would see it twice). With CRLF input, canonical
 *   header lines and nothing to rewrite, every part comes out byte-identical.
 * - `--<boundary>` may not occur anywhere in its multipart body except as
 *   a delimiter line (RFC 2046 §5.1.1 chooses boundaries so), and no other
 *   line (header line, request line, body) may start with `--`. Boundaries
 *   must consist of RFC 2046 bchars. Folded header lines, duplicate headers,
 *   control and non-ASCII characters in header lines, header lines other
 *   than `Content-Length` that mention content-length, non-ASCII request
 *   lines, non-identity `Content-Transfer-Encoding`, `Transfer-Encoding` and
 *   a `Content-Length` beyond the body are refused (invalid).
 * - Part bodies: GET, HEAD and DELETE parts may not have one. A JSON body is
 *   forwarded compacted (the whitespace outside strings dropped from its own
 *   text, numbers as written; U+2028/U+2029 escaped), so it holds no line
 *   break; any other body must be one line (no CR, LF, U+2028, U+2029), not
 *   starting with `--` nor ending in `content-length: <digits>`, and is
 *   forwarded as received: a multi-line media upload must be sent as a
 *   request of its own.
 * - Charsets: a `charset` on the batch, a change set or a JSON request
 *   Content-Type (either format) must be `utf-8` (any case, quoted or not):
 *   back ends decode with the charset named. A JSON batch's Content-Type,
 *   forwarded as given, may only have token parameter values: back ends
 *   read it as text (CAP takes any containing `multipart/mixed` for multipart). JSON part bodies are decoded
 *   with a fatal UTF-8 decoder.
 * - JSON: duplicate member names are refused at every level (bodies
 *   included); the batch is written anew: members in a fixed order, `url`
 *   canonical, header names in lower case (CAP uses the object as its
 *   request headers, where `If-Match` would go unseen; names differing only
 *   in case are refused), `if-match` added, only allowed headers kept,
 *   each body as the text that was analyzed (compacted); annotations of the
 *   batch itself are dropped. Method tunnels are refused (JSON has `method`).
 *
 * Decisions the protocols leave open, taken here:
 * - Part URLs may be relative to the service root, absolute paths or
 *   absolute `http(s)` URLs. An absolute one must lie below the service root
 *   the client addressed (`clientRoot`); every URL is forwarded in the
 *   relative form, since the back end has another root. The host of an absolute URL
 *   is not compared: the part reaches this service whatever it names, as
 *   the relative form is all that is forwarded. An absolute path that is
 *   not below it is read relative to the service root (`/Customers('1')`:
 *   the SAP Cloud SDK writes part URLs so, and SAP back ends read them so),
 *   unless it is another erplink path (its first segment is the client
 *   root's, `/odata/…`). Anything else (other erplink paths, dot segments,
 *   other schemes, network-path references, query-only URLs) is denied as
 *   leaving the service root; the service document itself cannot be
 *   requested in a batch.
 * - `$<id>` (first segment) refers to an earlier part: in multipart to a
 *   preceding part of the same change set (4.0 rules; references across
 *   change sets are refused), in JSON to any preceding request named, or
 *   whose atomicity group is named, in `dependsOn`. The part is analyzed
 *   with `$<id>` replaced by the `entityPath` the referenced part's analysis
 *   reports; it is forwarded as `$<id>` followed by the rest in canonical form. `$<id>[/…]` URLs in part bodies
 *   (`@odata.bind`, `@odata.id`) resolve the same way, under the same rules;
 *   one that does not resolve is denied. Request ids must satisfy the ABNF
 *   `request-id` rule and may not be the name of a system resource
 *   (`$metadata`, `$batch`, …), so a reference cannot be read as one; a
 *   multipart Content-ID used twice in the batch cannot be referred to.
 * - Part headers follow an allowlist, as the request's own headers do: a
 *   part's request headers are forwarded only when named in
 *   `FORWARDED_PART_HEADERS` (`./forwarded-headers.ts`: the data path's
 *   allowlist for requests, but for the headers that mean nothing in a
 *   part, plus `Content-Type`); a multipart request also keeps `Content-ID`
 *   and `Content-Length`, and a body part's MIME headers only
 *   `Content-Type`, `Content-Transfer-Encoding`, `Content-ID` and
 *   `Content-Length`. Every other header is read (the analyzer sees it) and
 *   dropped silently: the client's credentials (`Authorization`,
 *   `Proxy-Authorization`, `Cookie`: clients that copy common headers into
 *   every part send them; the back end's credentials are the gateway's
 *   business), method tunnels, URL overrides (`X-Original-URL`,
 *   `X-Rewrite-URL`), `Host`, `X-Forwarded-*`, `sap-language`, custom
 *   headers. The headers the protocol forbids in parts (`Expect`, `From`,
 *   `Max-Forwards`, `Range`, `TE`) and the SAP session headers are refused
 *   (invalid), not dropped. So is JSON's conditional `if` member (denied):
 *   it evaluates an expression against data.
 * - Structure first: the whole body is parsed and checked before the first
 *   part is analyzed; then the parts are analyzed in order and the first
 *   denied or invalid one answers for the batch, naming the part
 *   (`batch part 2 (POST Customers): …`). Parts are numbered from 1 in
 *   document order, requests inside change sets included.
 * - Upserting `PUT`/`PATCH` parts get `If-Match: *` when the key may not
 *   create in the entity set, in place of a blank `If-Match` of their own;
 *   updating parts whose answer would read what the key may not get
 *   `Prefer: return=minimal` in place of their own `Prefer` (see `answer`
 *   of the request analyzer). What the key may of either is added to the
 *   batch's accesses.
 */
import type { ServiceModel } from "./metadata.js";
import { AccessList, type Access } from "./accesses.js";
import type { Operation } from "../data/ports.js";
import { SAP_SESSION_HEADERS, analyzeRequest, type Analysis, type RequestBody } from "./request.js";
import { jsonValue, parseJson, type JsonNode } from "./json.js";
import { TOKEN, UTF8, isJsonType, isUtf8, parseMediaType, sniffBody, sniffBytes, type MediaType } from "./media-type.js";
import { Refusal, Stop, decodeOnce, denied, excerpt, hasControlCharacter, invalid, skipDoubleQuoted, type EntityStep } from "./syntax.js";
import { serializeTarget } from "./target.js";
import { FORWARDED_PART_HEADERS } from "./forwarded-headers.js";

export { MAX_JSON_DEPTH } from "./json.js";

/** Most individual requests in one batch (change set members included). */
export const MAX_BATCH_PARTS = 1000;

/** Most header lines in one header block (a part's MIME headers, or a request's headers). */
export const MAX_HEADER_LINES = 100;

/** Longest header or request line, in characters. */
export const MAX_LINE_LENGTH = 64 * 1024;

/** Longest request id (`Content-ID`, JSON `id` and `atomicityGroup`). */
export const MAX_REQUEST_ID_LENGTH = 128;


/** What the gateway knows of a `$batch` request. */
export interface BatchInput {
  /** The `Content-Type` of the `$batch` request. */
  readonly contentType: string;
  /** The whole body, already buffered by the gateway (which limits its size). */
  readonly body: Buffer;
  /** The service root as the client addressed it, raw, e.g. `/odata/prod/API_BP` (a trailing slash is ignored). */
  readonly clientRoot: string;
  /** The service's parsed `$metadata`; undefined when it is unavailable. */
  readonly model: ServiceModel | undefined;
  /**
   * Whether the key may do an operation on an entity set: upserting parts
   * without `create` get `If-Match: *`; updates whose answer would read what
   * it may not get `Prefer: return=minimal`. What it may of both is added to
   * the batch's accesses.
   */
  readonly may: (entitySet: string, operation: Operation) => boolean;
  /** The instance's SAP client (see `sapClient` of the request analyzer). */
  readonly sapClient?: string | undefined;
  /** The key's entity step (see `entityStep` of the request analyzer), for every part. */
  readonly entityStep?: EntityStep | undefined;
}

/** The outcome of {@link analyzeBatch}. */
export type BatchAnalysis =
  /** Authorize every access; when all are allowed, forward `body` with `contentType`. */
  | {
      readonly kind: "access";
      /** What all parts need, first occurrence of each (entity set, operation) pair, in part order; reasons name the part. */
      readonly accesses: readonly Access[];
      /** How many individual requests the batch holds. */
      readonly parts: number;
      /** Every part's URL as forwarded (relative to the service root, canonical), in part order. */
      readonly partUrls: readonly string[];
      /** The body to forward, written as the module comment says (relative URLs, `If-Match: *` added where needed, JSON part bodies compacted, …). */
      readonly body: Buffer;
      /**
       * The content type to forward: for multipart, written here
       * (`multipart/mixed; boundary=<the batch boundary>`, nothing else); for
       * JSON, the request's.
       */
      readonly contentType: string;
    }
  /**
   * A part stopped at an entity set the key may not touch (403) or the
   * service lacks (404), see `stopped` of the request analyzer: `accesses`
   * are every part's before it (and its own read before the stop, with the
   * named set's when its path says which operation), to be authorized
   * first; `reason` names the part (`part 2: resource path`); a 404's
   * `message` names the part too.
   */
  | {
      readonly kind: "stopped";
      readonly status: 403 | 404;
      readonly entitySet: string;
      readonly reason: string;
      readonly message: string;
      readonly accesses: readonly Access[];
    }
  /** A part is well-formed but not allowed through the gateway (403); the message names it. */
  | { readonly kind: "denied"; readonly message: string }
  /** The batch or a part is malformed (400); the message names the part where there is one. */
  | { readonly kind: "invalid"; readonly message: string };

/**
 * Analyzes a `$batch` request body. Never throws: malformed input is
 * `invalid`, anything the gateway will not let through is `denied`.
 */
export function analyzeBatch(input: BatchInput): BatchAnalysis {
  // Every part's accesses, kept when a part stops the analysis.
  const accesses = new AccessList();
  try {
    return analyze(input, accesses);
  } catch (error) {
    if (error instanceof Refusal) return { kind: error.kind, message: error.message };
    if (error instanceof Stop) {
      const { status, entitySet, reason, message } = error;
      return { kind: "stopped", status, entitySet, reason, message, accesses: accesses.items };
    }
    // A bug here must not let the batch through.
    return { kind: "denied", message: "the batch could not be analyzed" };
  }
}

function analyze(input: BatchInput, accesses: AccessList): BatchAnalysis {
  const media = parseMediaType(input.contentType, "the batch Content-Type");
  if (media.type === "multipart/mixed") {
    const boundary = media.params.get("boundary");
    if (boundary === undefined) invalid("the batch Content-Type has no boundary parameter");
    checkBoundary(boundary, "the batch Content-Type");
    checkCharset(media, "the batch Content-Type");
    return analyzeMultipart(input, boundary, accesses);
  }
  if (media.type === "application/json") {
    checkCharset(media, "the batch Content-Type");
    // The Content-Type is forwarded as given: a quoted value could hold what back ends look for in it as text (CAP
    // reads any POST whose Content-Type contains `multipart/mixed` as multipart), and OData's JSON format parameters
    // (`odata.metadata`, `odata.streaming`, `IEEE754Compatible`, `charset`) are all tokens.
    for (const [name, value] of media.params) {
      if (!TOKEN.test(value)) invalid(`the batch Content-Type's parameter '${excerpt(name)}' must be a token, as OData's JSON format parameters are: '${excerpt(value)}'`);
    }
    return analyzeJsonBatch(input, accesses);
  }
  invalid(`unsupported batch Content-Type '${excerpt(input.contentType)}': expected multipart/mixed or application/json`);
}

// ---------------------------------------------------------------------------
// Shared: media types, headers, URLs, the analysis of one part

function checkCharset(media: MediaType, what: string): void {
  const charset = media.params.get("charset");
  if (charset !== undefined && !isUtf8(charset)) invalid(`${what} names charset '${excerpt(charset)}'; only UTF-8 is supported`);
}


// RFC 2046 §5.1.1: 1 to 70 characters, not ending with a space.
const BOUNDARY = /^[0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?]$/;

function checkBoundary(boundary: string, what: string): void {
  if (!BOUNDARY.test(boundary)) invalid(`${what} has a malformed boundary '${excerpt(boundary)}'`);
}

/** The only Content-Type written for a batch or change set: the boundary as its one parameter, quoted only when it must be. */
function multipartType(boundary: string): string {
  return `multipart/mixed; boundary=${TOKEN.test(boundary) ? boundary : `"${boundary}"`}`;
}

// OData ABNF `request-id = 1*unreserved`.
const REQUEST_ID = /^[A-Za-z0-9\-._~]+$/;

// Top-level system resources and other `$` names: `$<name>` must never be
// read as a reference to a request, so no request may be named so.
const RESERVED_IDS = new Set(["all", "batch", "count", "crossjoin", "each", "entity", "filter", "id", "it", "links", "metadata", "query", "ref", "root", "this", "value"]);

function checkRequestId(id: string, what: string): void {
  if (id.length > MAX_REQUEST_ID_LENGTH) invalid(`${what} is longer than ${MAX_REQUEST_ID_LENGTH} characters`);
  if (!REQUEST_ID.test(id)) invalid(`${what} '${excerpt(id)}' must consist of letters, digits, '-', '.', '_' and '~'`);
  if (RESERVED_IDS.has(id.toLowerCase())) invalid(`${what} '${id}' is reserved: $${id} names a system resource`);
}

/** Headers an individual request may not carry (OData 4.01 Protocol §11.7.7.1, plus the SAP session). */
const FORBIDDEN_HEADERS = new Set([
  "expect",
  "from",
  "max-forwards",
  "range",
  "te",
  ...SAP_SESSION_HEADERS,
]);

/** One part's request headers: as given (for the analyzer), and by lower-case name. */
interface PartHeaders {
  readonly record: Record<string, string>;
  readonly byName: ReadonlyMap<string, string>;
}

/**
 * The request headers of a multipart part that are forwarded: those of
 * either format ({@link FORWARDED_PART_HEADERS}, the data path's allowlist
 * for parts), plus `Content-ID` (V2 back ends read a request's id there) and
 * `Content-Length` (written exact). All others are read here (the analyzer
 * sees every header: a method tunnel names the method forwarded) and left
 * out: the client's credentials, which clients that copy common headers
 * into every part send, method tunnels, URL overrides, `Host`, custom
 * headers. In JSON the request id is `id` and a body has no length.
 */
const MULTIPART_REQUEST_HEADERS: ReadonlySet<string> = new Set([...FORWARDED_PART_HEADERS, "content-id", "content-length"]);

/**
 * The MIME headers of a multipart body part (request or change set) that
 * are forwarded: `Content-Type` (written anew), `Content-Transfer-Encoding`
 * (OData keeps it for historic reasons; only identity encodings pass),
 * `Content-ID` (CAP reads a request's id there only) and `Content-Length`
 * (written exact). Any other is left out.
 */
const MIME_HEADERS: ReadonlySet<string> = new Set(["content-type", "content-transfer-encoding", "content-id", "content-length"]);

/** Adds one header; refuses duplicates (case-insensitive) and forbidden headers. */
function addHeader(into: { record: Record<string, string>; byName: Map<string, string> }, name: string, value: string, forbid: boolean): void {
  const lower = name.toLowerCase();
  if (into.byName.has(lower)) invalid(`header '${excerpt(name)}' is given twice`);
  if (forbid && FORBIDDEN_HEADERS.has(lower)) invalid(`header '${name}' is not allowed in a batch part`);
  into.byName.set(lower, value);
  into.record[name] = value;
}

function newHeaders(): { record: Record<string, string>; byName: Map<string, string> } {
  // No prototype: a header named `__proto__` must stay a header.
  return { record: Object.create(null) as Record<string, string>, byName: new Map() };
}

/** Where a part's URL points, below the service root. */
interface PartTarget {
  /** The URL relative to the service root (path and query), still percent-encoded, as it is analyzed. */
  readonly relative: string;
}

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;

/**
 * Resolves a part's URL against the service root the client addressed;
 * refuses (denied) anything that leaves it. With `serviceRelative` (part
 * URLs, not URLs in bodies), an absolute path that is neither below the
 * client's root nor another erplink path (same first segment) is read
 * relative to the service root: the SAP Cloud SDK writes `/Entity(…)` so,
 * and SAP back ends read it so.
 */
function resolveTarget(url: string, clientRoot: string, serviceRelative = false): PartTarget {
  if (url.includes("#")) invalid("the URL has a fragment");
  if (url.includes("\\")) invalid("the URL contains a backslash");
  let path = url;
  if (SCHEME.test(url)) {
    const m = /^https?:\/\/([^/?]*)(.*)$/i.exec(url);
    if (m === null) denied("URL leaves the service root");
    // URLs in bodies are forwarded as written: to a back end that decodes a URL before parsing it, an encoded '/',
    // '\', '?' or '#' in the authority starts another path there ('http://..%5CEmployees%23h/…').
    if (m[1].includes("%")) invalid("the URL's authority is percent-encoded");
    path = m[2];
  }
  if (path.startsWith("/")) {
    const q = path.indexOf("?");
    const p = q < 0 ? path : path.slice(0, q);
    if (p === clientRoot || p === `${clientRoot}/`) denied("the service document cannot be requested in a batch");
    if (path.startsWith(`${clientRoot}/`)) path = path.slice(clientRoot.length + 1);
    else if (serviceRelative && path === url && !path.startsWith("//") && path.split("/")[1] !== clientRoot.split("/")[1]) path = path.slice(1);
    else denied("URL leaves the service root");
  }
  const q = path.indexOf("?");
  const p = q < 0 ? path : path.slice(0, q);
  if (p === "") denied("URL leaves the service root: it addresses no resource below it");
  for (const raw of p.split("/")) {
    // Decoded once, as the analyzer and most back ends do; `%2F` may split a segment.
    const decoded = decodeOnce(raw) ?? raw;
    if (decoded.split(/[/\\]/).some((s) => s === "." || s === "..")) denied("URL leaves the service root");
  }
  return { relative: path };
}

/**
 * A URL a client wrote in a request body outside a batch (`@odata.bind`,
 * `@odata.id`, `__metadata.uri`), relative to the service root by the rules
 * of part URLs ({@link resolveTarget}): the body is forwarded as written, so
 * what is authorized must be the URL as written, not a parser's cleaned-up
 * form. Undefined when it leaves the service root (a dot segment, another
 * scheme than http(s), another path, a `$` reference); throws the invalid
 * refusal of a fragment or a backslash.
 */
export function bodyUrlRelative(url: string, clientRoot: string): string | undefined {
  // Content-ID references name requests of a batch; there is none here.
  if (url.startsWith("$")) return undefined;
  try {
    return resolveTarget(url, clientRoot).relative;
  } catch (error) {
    if (error instanceof Refusal && error.kind === "denied") return undefined;
    if (error instanceof Refusal) throw new Refusal(error.kind, `'${excerpt(url)}' in the body: ${error.message}`);
    throw error;
  }
}

/** A request of the batch, as both formats describe it. */
interface Part {
  /** 1-based, in document order. */
  readonly no: number;
  /** As given (JSON: upper-cased). */
  readonly method: string;
  /** As given. */
  readonly url: string;
  readonly headers: PartHeaders;
  readonly body: RequestBody | undefined;
  /** The request id (`Content-ID`, JSON `id`). */
  readonly id: string | undefined;
}

function labelOf(part: { no: number; method?: string; url?: string }): string {
  if (part.method === undefined || part.url === undefined) return `batch part ${part.no}`;
  return `batch part ${part.no} (${excerpt(part.method)} ${excerpt(part.url)})`;
}

/** Runs `fn`, prefixing the message of any refusal with `label`. */
function within<T>(label: string, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof Refusal) throw new Refusal(error.kind, `${label}: ${error.message}`);
    throw error;
  }
}

/** The entity a `$<id>` reference stands for (see `referable` of the request analyzer). */
interface Referent {
  /** Its entity path, canonical: its address, or a placeholder for an entity created in the batch. */
  readonly path: string;
  /** `address`: erplink writes the path in place of the reference; `created`: `$<id>` is forwarded. */
  readonly referable: "address" | "created";
}

/** What the analysis of one part leaves for the rewrite. */
interface PartResult {
  readonly analysis: Analysis;
  /** How a later part may refer to this one; undefined when none may. */
  readonly referable: "address" | "created" | undefined;
  /**
   * The part's URL as forwarded: relative to the service root, written from
   * its canonical target (`./target.ts`); a reference to an entity created in
   * the batch kept as `$<id>`, one to an address written as that address.
   */
  readonly forwardUrl: string;
  /** The method the back end acts on (a tunnel's, see `X-HTTP-Method`). */
  readonly method: string;
  /** Whether `If-Match: *` must be added. */
  readonly ifMatchStar: boolean;
  /** Whether `Prefer: return=minimal` must replace the part's own `Prefer`. */
  readonly preferMinimal: boolean;
}

/**
 * Analyzes one part: resolves its URL (and a `$<id>` reference through
 * `referentOf`), runs {@link analyzeRequest}, and records its accesses.
 * Refuses (with the part named) anything denied or invalid.
 */
function analyzePart(
  part: Part,
  input: BatchInput,
  clientRoot: string,
  referentOf: (id: string) => Referent,
  accesses: AccessList,
): PartResult {
  return within(labelOf(part), () => {
    const target = resolveTarget(part.url, clientRoot, true);
    const q = target.relative.indexOf("?");
    let path = q < 0 ? target.relative : target.relative.slice(0, q);
    const query = q < 0 ? "" : target.relative.slice(q + 1);
    const first = path.split("/")[0];
    const id = referenceId(first);
    // Segments the reference stands for: written back as `$<id>` for a created entity.
    let referenced = 0;
    let referent: Referent | undefined;
    if (id !== undefined) {
      referent = referentOf(id);
      const entityPath = referent.path.replace(/^\//, "");
      referenced = entityPath.split("/").length;
      path = `${entityPath}${path.slice(first.length)}`;
    }
    const analysis = analyzeRequest({
      method: part.method,
      path,
      query,
      headers: part.headers.record,
      ...(input.model ? { model: input.model } : {}),
      ...(part.body ? { body: part.body } : {}),
      resolveReference: (url) => bodyReference(url, clientRoot, referentOf),
      sapClient: input.sapClient,
      entityStep: input.entityStep,
    });
    if (analysis.kind === "batch") denied("a batch cannot contain another batch");
    if (analysis.kind === "denied" || analysis.kind === "invalid") throw new Refusal(analysis.kind, analysis.message);
    if (analysis.kind === "stopped") {
      // What the part read before it is authorized first, as the other parts' are.
      for (const a of analysis.accesses) accesses.add(a.entitySet, a.operation, `part ${part.no}: ${a.reason}`);
      const message = analysis.status === 404 ? `${labelOf(part)}: ${analysis.message}` : analysis.message;
      throw new Stop(analysis.status, analysis.entitySet, `part ${part.no}: ${analysis.reason}`, message);
    }
    let ifMatchStar = false;
    let preferMinimal = false;
    if (analysis.kind === "access") {
      for (const a of analysis.accesses) accesses.add(a.entitySet, a.operation, `part ${part.no}: ${a.reason}`);
      // What an update may do besides, as the key decides (see `conditionsOf` of the data path).
      const upsert = analysis.upsertEntitySet;
      if (upsert !== undefined) {
        if (input.may(upsert, "create")) accesses.add(upsert, "create", `part ${part.no}: resource path (upsert)`);
        else ifMatchStar = true;
      }
      const answer = analysis.answer ?? [];
      // OData V2 has no `return=minimal`: V2 back ends answer an update in a
      // batch with the entity whatever a part asks (SAP's mock server does),
      // and erplink does not rewrite a batch's answer, so there the key must
      // be allowed to read it.
      const allowed = answer.every((a) => input.may(a.entitySet, a.operation));
      if (answer.length > 0 && (allowed || input.model?.version === "2.0")) {
        const why = allowed ? "" : " (OData V2 answers an update with the entity)";
        for (const a of answer) accesses.add(a.entitySet, a.operation, `part ${part.no}: ${a.reason}${why}`);
      } else if (answer.length > 0) preferMinimal = true;
    }
    // A reference to an entity erplink knows the address of is replaced by
    // that address (the back end would resolve it from stored data, which a
    // key value could turn into another URL); one to an entity created in
    // the batch is the back end's to resolve.
    let forwardUrl = analysis.forward;
    let referable = analysis.kind === "access" ? analysis.referable : undefined;
    if (id !== undefined && referent?.referable === "created") {
      const rest = serializeTarget({ segments: analysis.target.segments.slice(referenced), query: analysis.target.query });
      forwardUrl = `$${id}${rest === "" || rest.startsWith("?") ? "" : "/"}${rest}`;
      // Its path holds the placeholder: only what it creates in turn is referable.
      if (referable === "address") referable = undefined;
    }
    return {
      analysis,
      referable,
      forwardUrl,
      method: analysis.kind === "access" ? analysis.effectiveMethod : part.method.toUpperCase(),
      ifMatchStar,
      preferMinimal,
    };
  });
}

/** The request id a first path segment refers to (`$1` → `1`), or undefined when it is no reference. */
function referenceId(segment: string): string | undefined {
  if (!segment.startsWith("$")) return undefined;
  const id = segment.slice(1);
  if (!REQUEST_ID.test(id) || RESERVED_IDS.has(id.toLowerCase())) return undefined;
  return id;
}

/**
 * `resolveReference` for part bodies: an absolute URL below the service
 * root, or a `$<id>[/…]` reference to a request this part may refer to
 * (the same rules as for part URLs, through `referentOf`), as a resource
 * path; undefined for anything else.
 */
function bodyReference(url: string, clientRoot: string, referentOf: (id: string) => Referent): string | undefined {
  let target: PartTarget;
  try {
    target = resolveTarget(url, clientRoot);
  } catch {
    return undefined;
  }
  if (target.relative.includes("?")) return undefined;
  const first = target.relative.split("/")[0];
  const id = referenceId(first);
  if (id === undefined) return first.startsWith("$") ? undefined : target.relative;
  let referent: Referent;
  try {
    referent = referentOf(id);
  } catch {
    return undefined;
  }
  // Bodies are forwarded as written, so the back end resolves `$<id>` there
  // itself: only an entity created in the batch is safe to name so.
  if (referent.referable !== "created") {
    denied(`'${excerpt(url)}' in a body may only refer to an entity created in the batch; name this one by its address`);
  }
  return `${referent.path.replace(/^\//, "")}${target.relative.slice(first.length)}`;
}

/**
 * Refuses a part whose URL, as forwarded, starts with the id of a request of
 * the batch without its `$`: CAP takes a first segment that names a request,
 * `$` or not, for a reference, and writes that request's Location over the
 * first `$<id>` anywhere in the URL (a query value included).
 */
function checkNoIdsAsSegments(parts: readonly { readonly part: Part; readonly forwardUrl: string }[], ids: ReadonlySet<string>): void {
  for (const { part, forwardUrl } of parts) {
    const first = forwardUrl.split("/")[0]!;
    if (first.startsWith("$")) continue;
    const name = first.split("?")[0]!;
    if (ids.has(first) || ids.has(name)) {
      invalid(`${labelOf(part)}: its URL starts with '${excerpt(name)}', the id of a request of this batch: a back end would take it for a reference`);
    }
  }
}

/** The referenced part's entity, or a refusal saying why it cannot be referred to. */
function referentFrom(id: string, result: PartResult): Referent {
  const { analysis, referable } = result;
  if (analysis.kind !== "access" || analysis.entityPath === undefined) invalid(`$${id} refers to a request that does not yield a single entity`);
  if (referable === undefined) {
    invalid(
      `$${id} cannot be referred to: back ends resolve a reference by writing the entity's address, from its stored key, ` +
        "into the URL unescaped, and erplink cannot vouch for it (the request creates the entity with key values that are not " +
        "plain: letters, digits, '_', '.', ':', '+', '-'; or reaches it through another reference)",
    );
  }
  return { path: analysis.entityPath, referable };
}

function normalizeRoot(clientRoot: string): string {
  return clientRoot.replace(/\/+$/, "");
}

// ---------------------------------------------------------------------------
// Multipart

/** Where one body part of a multipart body lies: `[start, end)` in the latin1 text. */
type Range = readonly [number, number];

interface Multipart {
  readonly parts: readonly Range[];
  /** Whether the close delimiter line ended with a line break. */
  readonly closeTerminated: boolean;
}

/**
 * Splits `text[start, end)` at the delimiter lines of `boundary`. Every
 * occurrence of `--boundary` must be a delimiter line: at the start of the
 * range or of a line, followed by `--` (close), optional padding and a line
 * break (or the end of the range, after the close delimiter); anything after
 * the close delimiter is an epilogue and may not contain it either.
 */
function splitMultipart(text: string, start: number, end: number, boundary: string, what: string): Multipart {
  const dash = `--${boundary}`;
  // Searched within the range only (indices below are relative to it): a
  // search running on past a change set would make the batch quadratic.
  const region = start === 0 && end === text.length ? text : text.slice(start, end);
  const n = region.length;
  const parts: Range[] = [];
  let partStart = -1;
  let closed = false;
  let closeTerminated = false;
  for (let pos = 0; ; ) {
    const i = region.indexOf(dash, pos);
    if (i < 0) break;
    if (closed) invalid(`${what}: the boundary '${excerpt(boundary)}' appears after the close delimiter`);
    let j = i + dash.length;
    const close = region.startsWith("--", j);
    if (close) j += 2;
    while (j < n && (region[j] === " " || region[j] === "\t")) j++;
    let next = -1;
    if (region[j] === "\n") next = j + 1;
    else if (region[j] === "\r" && region[j + 1] === "\n") next = j + 2;
    const atLineStart = i === 0 || region[i - 1] === "\n";
    if (!atLineStart || (next < 0 && !(close && j === n))) {
      invalid(`${what}: the boundary '${excerpt(boundary)}' appears inside a body part (offset ${start + i})`);
    }
    if (partStart >= 0) {
      if (parts.length >= MAX_BATCH_PARTS) invalid(`the batch has more than ${MAX_BATCH_PARTS} parts`);
      // The line break before a delimiter belongs to the delimiter.
      const partEnd = i > partStart && region[i - 1] === "\n" ? (i - 1 > partStart && region[i - 2] === "\r" ? i - 2 : i - 1) : i;
      parts.push([start + partStart, start + partEnd]);
    }
    if (close) {
      closed = true;
      closeTerminated = next >= 0;
      pos = next >= 0 ? next : n;
      continue;
    }
    partStart = next;
    pos = next;
  }
  if (partStart < 0 && !closed) invalid(`${what} has no delimiter line '--${excerpt(boundary)}'`);
  if (!closed) invalid(`${what} is not terminated: the close delimiter '--${excerpt(boundary)}--' is missing`);
  return { parts, closeTerminated };
}

/** A header block: lines (without line breaks), and how it ended. */
interface Head {
  readonly lines: string[];
  /** Whether the last line ended with a line break. */
  terminated: boolean;
  /** Whether an empty line ended the block. */
  readonly blank: boolean;
  /** Where the content after the block starts. */
  readonly next: number;
}

/** Reads lines from `text[from, to)` up to the first empty line (either CRLF or LF ends a line). */
function readHead(text: string, from: number, to: number, maxLines: number): Head {
  const lines: string[] = [];
  let pos = from;
  while (pos < to) {
    let nl = text.indexOf("\n", pos);
    if (nl >= to) nl = -1;
    const lineEnd = nl < 0 ? to : nl > pos && text[nl - 1] === "\r" ? nl - 1 : nl;
    if (lineEnd - pos > MAX_LINE_LENGTH) invalid(`a header line is longer than ${MAX_LINE_LENGTH} characters`);
    const line = text.slice(pos, lineEnd);
    if (nl >= 0 && line === "") return { lines, terminated: true, blank: true, next: nl + 1 };
    if (lines.length >= maxLines) invalid(`more than ${MAX_HEADER_LINES} header lines`);
    lines.push(line);
    if (nl < 0) return { lines, terminated: false, blank: false, next: to };
    pos = nl + 1;
  }
  return { lines, terminated: true, blank: false, next: to };
}

function writeHead(head: Head): string {
  if (head.lines.length === 0) return head.blank ? "\r\n" : "";
  return head.lines.join("\r\n") + (head.terminated ? "\r\n" : "") + (head.blank ? "\r\n" : "");
}

// Any control character but HT (a bare CR would be a line break to some parsers).
const VALUE_CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f]/;

// CAP reads the batch as text with regular expressions: it deletes every
// `content-length: <digits>` CRLF wherever it occurs (joining a header line
// that ends so with the next one, which it then never sees), and adds no
// length to a request whose head mentions content-length anywhere.
const CONTENT_LENGTH_TEXT = /content-length/i;

/** Parses multipart header lines (`Name: value`, printable ASCII) into `into`. */
function parseHeaderLines(lines: readonly string[], into: { record: Record<string, string>; byName: Map<string, string> }, forbid: boolean): void {
  for (const line of lines) {
    if (line.startsWith(" ") || line.startsWith("\t")) invalid("folded header lines are not supported");
    // Any line starting with `--` is a boundary to CAP and the V2 adapter.
    if (line.startsWith("--")) invalid(`header line '${excerpt(line)}' starts with '--', as only delimiter lines may`);
    const colon = line.indexOf(":");
    const name = colon < 0 ? "" : line.slice(0, colon);
    if (!TOKEN.test(name)) invalid(`malformed header line '${excerpt(line)}'`);
    const value = trimSpace(line.slice(colon + 1));
    if (VALUE_CONTROL.test(value)) invalid(`control character in header '${excerpt(name)}'`);
    // Decoded as UTF-8, U+2028 and U+2029 start a new line for JavaScript's `^` and `$`.
    if (/[^\x00-\x7f]/.test(value)) invalid(`non-ASCII character in header '${excerpt(name)}'`);
    if (name.toLowerCase() !== "content-length" && CONTENT_LENGTH_TEXT.test(line)) {
      invalid(`header '${excerpt(name)}' cannot mention content-length: only the Content-Length header may`);
    }
    addHeader(into, name, value, forbid);
  }
}

/** `s` without leading and trailing spaces and tabs (a loop: `/[ \t]+$/` is quadratic on long runs of spaces). */
function trimSpace(s: string): string {
  let from = 0;
  let to = s.length;
  while (from < to && (s[from] === " " || s[from] === "\t")) from++;
  while (to > from && (s[to - 1] === " " || s[to - 1] === "\t")) to--;
  return s.slice(from, to);
}

/** `Content-Length`, when given, may not promise more than the body holds. */
function checkContentLength(headers: ReadonlyMap<string, string>, length: number): void {
  const given = headers.get("content-length");
  if (given === undefined) return;
  if (!/^[0-9]{1,15}$/.test(given)) invalid(`malformed Content-Length '${excerpt(given)}'`);
  if (Number(given) > length) invalid(`Content-Length ${given} exceeds the ${length} bytes of the body`);
}

/** An individual request of a multipart batch. */
interface HttpPart extends Part {
  readonly mime: Head;
  /** Whether the part's MIME headers carry the Content-ID (else it is written there from the request's). */
  readonly mimeId: boolean;
  /** The request line and the request's headers. */
  readonly head: Head;
  readonly version: string;
  /** The body as forwarded, one latin1 character per byte: JSON compacted, anything else as received. */
  readonly forwardBody: string;
  /** The index of the change set it belongs to, if any. */
  readonly changeSet: number | undefined;
}

interface ChangeSet {
  readonly mime: Head;
  readonly boundary: string;
  readonly parts: HttpPart[];
  readonly closeTerminated: boolean;
}

type Item = { readonly kind: "request"; readonly part: HttpPart } | { readonly kind: "changeSet"; readonly changeSet: ChangeSet };

const IDENTITY_ENCODINGS = new Set(["binary", "8bit", "7bit"]);

/** A body part's MIME headers. */
interface Mime {
  readonly mime: Head;
  readonly headers: ReadonlyMap<string, string>;
  readonly contentType: MediaType;
}

/** Parses one body part's MIME headers. */
function readMime(text: string, range: Range): Mime {
  if (range[0] >= range[1]) invalid("the body part is empty");
  const mime = readHead(text, range[0], range[1], MAX_HEADER_LINES);
  const into = newHeaders();
  parseHeaderLines(mime.lines, into, true);
  const ct = into.byName.get("content-type");
  if (ct === undefined) invalid("the body part has no Content-Type (expected application/http)");
  if (!mime.blank) invalid("the body part's headers are not followed by an empty line");
  checkContentLength(into.byName, range[1] - mime.next);
  const cte = into.byName.get("content-transfer-encoding");
  if (cte !== undefined && !IDENTITY_ENCODINGS.has(cte.toLowerCase())) {
    invalid(`Content-Transfer-Encoding '${excerpt(cte)}' is not supported (only binary)`);
  }
  return { mime, headers: into.byName, contentType: parseMediaType(ct, "the body part's Content-Type") };
}

/** Parses an `application/http` body part: the request line, its headers and its body. */
function readHttpPart(text: string, raw: Buffer, range: Range, { mime, headers: mimeHeaders }: Mime, no: number, changeSet: number | undefined): HttpPart {
  let label = labelOf({ no });
  try {
    const head = readHead(text, mime.next, range[1], MAX_HEADER_LINES + 1);
    if (head.lines.length === 0) invalid("the body part holds no request line");
    const line = head.lines[0];
    if (line.startsWith("--")) invalid("the request line starts with '--', as only delimiter lines may");
    const m = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) ([\x21-\x7e]+) (HTTP\/[0-9]\.[0-9])$/.exec(line);
    if (m === null) {
      if (hasControlCharacter(line) || /[^\x20-\x7e]/.test(line)) invalid("the request line has a control or non-ASCII character");
      invalid(`malformed request line '${excerpt(line)}' (expected 'METHOD URL HTTP/1.1')`);
    }
    const [, method, url, version] = m;
    label = labelOf({ no, method, url });
    if (version !== "HTTP/1.1") invalid(`unsupported HTTP version '${version}'`);
    const into = newHeaders();
    parseHeaderLines(head.lines.slice(1), into, true);
    if (into.byName.has("transfer-encoding")) invalid("Transfer-Encoding is not supported in batch parts");
    const bodyRange: Range = [head.next, range[1]];
    checkContentLength(into.byName, bodyRange[1] - bodyRange[0]);
    if (changeSet !== undefined && (method.toUpperCase() === "GET" || method.toUpperCase() === "HEAD")) {
      invalid("a change set cannot contain GET requests");
    }
    const id = contentIdOf(mimeHeaders.get("content-id"), into.byName.get("content-id"));
    const { body, forward } = bodyOf(text, raw, bodyRange, method, into.byName.get("content-type"));
    return {
      no,
      method,
      url,
      version,
      headers: into,
      body,
      id,
      mime,
      mimeId: mimeHeaders.has("content-id"),
      head,
      forwardBody: forward,
      changeSet,
    };
  } catch (error) {
    if (error instanceof Refusal) throw new Refusal(error.kind, `${label}: ${error.message}`);
    throw error;
  }
}

/** The part's Content-ID: from its MIME headers or its request headers; they may not disagree. */
function contentIdOf(mime: string | undefined, request: string | undefined): string | undefined {
  if (mime !== undefined && request !== undefined && mime !== request) {
    invalid(`Content-ID '${excerpt(mime)}' of the part and '${excerpt(request)}' of its request disagree`);
  }
  const id = mime ?? request;
  if (id !== undefined) checkRequestId(id, "Content-ID");
  return id;
}


/** A part body: as the analyzer sees it, and as it is forwarded (latin1, one character per byte). */
interface PartBody {
  readonly body: RequestBody | undefined;
  readonly forward: string;
}

// Line breaks to CAP's parser, which reads the batch as text (U+2028 and
// U+2029 in UTF-8 are line terminators to JavaScript's regular expressions).
const LINE_BREAK = /[\r\n]|\u00e2\u0080[\u00a8\u00a9]/;

const NOT_ALONE = "send it as a request of its own";

/**
 * Reads a part body. Back ends that parse a batch as a stream of HTTP
 * requests end a body at the first blank line, or give GET, HEAD and
 * DELETE none at all, and take any line starting with `--` for a boundary:
 * so those methods may not have a body, a JSON body is forwarded compacted
 * (JSON strings hold no raw line break), and any other body must be one line.
 */
function bodyOf(text: string, raw: Buffer, range: Range, method: string, contentType: string | undefined): PartBody {
  if (range[0] >= range[1]) return { body: undefined, forward: "" };
  // Blank lines before the next delimiter are no body, whatever the method:
  // the SAP Cloud SDK writes a function import's missing payload as one empty
  // line. They are dropped, so the back end sees no body, as was analyzed.
  if (/^[\r\n \t]*$/.test(text.slice(range[0], range[1]))) return { body: undefined, forward: "" };
  const upper = method.toUpperCase();
  if (upper === "GET" || upper === "HEAD" || upper === "DELETE") invalid(`a ${upper} request cannot have a body`);
  const media = contentType === undefined ? undefined : parseMediaType(contentType, "the request's Content-Type");
  if (media !== undefined && isJsonType(media.type)) {
    checkCharset(media, "the request's Content-Type");
    let decoded: string;
    try {
      decoded = UTF8.decode(raw.subarray(range[0], range[1]));
    } catch {
      invalid("the request body is not valid UTF-8");
    }
    const value = jsonValue(parseJson(decoded, "the request body"));
    return { body: { kind: "json", value }, forward: Buffer.from(compactJson(decoded), "utf8").toString("latin1") };
  }
  const forward = text.slice(range[0], range[1]);
  if (LINE_BREAK.test(forward)) invalid(`a non-JSON body in a multipart batch cannot contain line breaks; ${NOT_ALONE}`);
  if (forward.startsWith("--")) invalid(`a non-JSON body in a multipart batch cannot start with '--'; ${NOT_ALONE}`);
  if (/content-length: *[0-9]+$/i.test(forward)) invalid(`a non-JSON body in a multipart batch cannot end in 'content-length: <digits>'; ${NOT_ALONE}`);
  // CAP cuts a part at the first line starting with `Group ID`, then waits for the rest forever.
  if (forward.startsWith("Group ID")) invalid(`a non-JSON body in a multipart batch cannot start with 'Group ID'; ${NOT_ALONE}`);
  // CAP reads every part body as JSON, whatever its Content-Type: a body
  // that parses as a JSON object or array is analyzed as one, so that, say,
  // a "media" create cannot carry a deep insert past the analyzer; one that
  // reads as Atom is analyzed as Atom; JSON behind a byte order mark is
  // refused (back ends disagree on whether the mark belongs to it).
  const sniffed = sniffBody(forward);
  if (sniffed === "json-behind-mark") invalid("a body that reads as JSON may not start with a byte order mark or whitespace JSON does not allow");
  if (sniffed === "atom") return { body: { kind: "other", contentType: "application/atom+xml" }, forward };
  if (sniffed === "json") {
    try {
      const value = jsonValue(parseJson(UTF8.decode(raw.subarray(range[0], range[1])), "the request body"));
      return { body: { kind: "json", value }, forward };
    } catch {
      // Not JSON after all: opaque.
    }
  }
  return { body: { kind: "other", contentType: media?.type ?? "" }, forward };
}

/**
 * Valid JSON text without the whitespace outside strings, from the text
 * itself (numbers stay as written); U+2028 and U+2029, which only strings
 * can hold, are escaped. The result holds no line break of any kind.
 */
function compactJson(json: string): string {
  const out: string[] = [];
  let from = 0;
  for (let i = 0; i < json.length; ) {
    const c = json.charCodeAt(i);
    if (c === 0x22) {
      const next = skipDoubleQuoted(json, i);
      if (next < 0) break; // not after parseJson
      i = next;
      continue;
    }
    if (isJsonSpace(c)) {
      out.push(json.slice(from, i));
      while (i < json.length && isJsonSpace(json.charCodeAt(i))) i++;
      from = i;
      continue;
    }
    i++;
  }
  out.push(json.slice(from));
  return out.join("").replace(/[\u2028\u2029]/g, (c) => (c === "\u2028" ? "\\u2028" : "\\u2029"));
}

function isJsonSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

function analyzeMultipart(input: BatchInput, boundary: string, accesses: AccessList): BatchAnalysis {
  const text = input.body.toString("latin1");
  const outer = splitMultipart(text, 0, text.length, boundary, "the batch body");
  if (outer.parts.length === 0) invalid("the batch body has no body parts");

  // Structure first: every part parsed and checked before any is analyzed.
  const items: Item[] = [];
  const idCount = new Map<string, number>();
  let no = 0;
  const nextNo = (): number => {
    if (++no > MAX_BATCH_PARTS) invalid(`the batch has more than ${MAX_BATCH_PARTS} parts`);
    return no;
  };
  const countId = (part: HttpPart) => {
    if (part.id !== undefined) idCount.set(part.id, (idCount.get(part.id) ?? 0) + 1);
  };
  for (const range of outer.parts) {
    const outerMime = within(labelOf({ no: no + 1 }), () => readMime(text, range));
    const { mime, contentType } = outerMime;
    if (contentType.type === "application/http") {
      const part = readHttpPart(text, input.body, range, outerMime, nextNo(), undefined);
      countId(part);
      items.push({ kind: "request", part });
      continue;
    }
    const label = `${labelOf({ no: no + 1 })}: change set`;
    if (contentType.type !== "multipart/mixed") {
      invalid(`${labelOf({ no: no + 1 })}: unsupported Content-Type '${excerpt(contentType.type)}' (expected application/http or multipart/mixed)`);
    }
    const csBoundary = contentType.params.get("boundary");
    if (csBoundary === undefined) invalid(`${label}: its Content-Type has no boundary parameter`);
    within(label, () => checkBoundary(csBoundary, "its Content-Type"));
    within(label, () => checkCharset(contentType, "its Content-Type"));
    if (csBoundary === boundary) invalid(`${label}: its boundary must differ from the batch boundary`);
    const nested = splitMultipart(text, mime.next, range[1], csBoundary, label);
    if (nested.parts.length === 0) invalid(`${label} is empty`);
    const index = items.length;
    const changeSet: ChangeSet = { mime, boundary: csBoundary, parts: [], closeTerminated: nested.closeTerminated };
    const ids = new Set<string>();
    for (const inner of nested.parts) {
      const innerMime = within(labelOf({ no: no + 1 }), () => readMime(text, inner));
      const innerType = innerMime.contentType;
      if (innerType.type === "multipart/mixed") invalid(`${labelOf({ no: no + 1 })}: a change set cannot contain another change set`);
      if (innerType.type !== "application/http") {
        invalid(`${labelOf({ no: no + 1 })}: unsupported Content-Type '${excerpt(innerType.type)}' in a change set (expected application/http)`);
      }
      const part = readHttpPart(text, input.body, inner, innerMime, nextNo(), index);
      if (part.id !== undefined) {
        if (ids.has(part.id)) invalid(`${labelOf(part)}: Content-ID '${part.id}' is used twice in the change set`);
        ids.add(part.id);
      }
      countId(part);
      changeSet.parts.push(part);
    }
    items.push({ kind: "changeSet", changeSet });
  }

  // Then every part, in order.
  const results = new Map<HttpPart, PartResult>();
  for (const item of items) {
    const members = item.kind === "request" ? [item.part] : item.changeSet.parts;
    const seen = new Map<string, PartResult>();
    for (const part of members) {
      const referentOf = (id: string): Referent => {
        const target = seen.get(id);
        if (target === undefined) {
          if (!idCount.has(id)) invalid(`$${id} does not refer to a request of this batch`);
          invalid(`$${id} must refer to a preceding request in the same change set`);
        }
        if ((idCount.get(id) ?? 0) > 1) invalid(`$${id} is ambiguous: Content-ID '${id}' is used more than once in the batch`);
        return referentFrom(id, target);
      };
      const result = analyzePart(part, input, normalizeRoot(input.clientRoot), referentOf, accesses);
      results.set(part, result);
      if (part.id !== undefined && item.kind === "changeSet") seen.set(part.id, result);
    }
  }
  const all = items.flatMap((item) => (item.kind === "request" ? [item.part] : item.changeSet.parts));
  checkNoIdsAsSegments(all.map((part) => ({ part, forwardUrl: results.get(part)!.forwardUrl })), new Set(idCount.keys()));

  return {
    kind: "access",
    accesses: accesses.items,
    parts: no,
    partUrls: all.map((p) => results.get(p)!.forwardUrl),
    // V4 back ends (CAP) read a Content-ID from the MIME headers only, so one
    // given in the request's headers is copied there; V2 back ends (SAP
    // Gateway, CAP's V2 adapter) read it from the request's headers and would
    // see it twice.
    body: Buffer.from(writeMultipart(boundary, items, outer.closeTerminated, results, input.model?.version !== "2.0"), "latin1"),
    contentType: multipartType(boundary),
  };
}

/** Writes the multipart body the back end receives (see the module comment). */
function writeMultipart(
  boundary: string,
  items: readonly Item[],
  closeTerminated: boolean,
  results: ReadonlyMap<HttpPart, PartResult>,
  copyContentIds: boolean,
): string {
  const writePart = (part: HttpPart): string => {
    const result = results.get(part);
    const body = part.forwardBody;
    const lines = [`${result!.method} ${result!.forwardUrl} ${part.version}`];
    for (const l of part.head.lines.slice(1)) {
      const name = headerName(l);
      const lower = name.toLowerCase();
      if (!MULTIPART_REQUEST_HEADERS.has(lower)) continue;
      // A blank If-Match (no precondition) is replaced by the one added below, never sent beside it; so is a Prefer.
      if (lower === "if-match" && result?.ifMatchStar) continue;
      if (lower === "prefer" && result?.preferMinimal) continue;
      lines.push(lower === "content-length" ? `${name}: ${body.length}` : l);
    }
    const head: Head = { ...part.head, lines };
    if (result?.ifMatchStar) {
      lines.push("If-Match: *");
      head.terminated = true;
    }
    if (result?.preferMinimal) {
      lines.push("Prefer: return=minimal");
      head.terminated = true;
    }
    const extra = !copyContentIds || part.mimeId || part.id === undefined ? [] : [`Content-ID: ${part.id}`];
    return writeMime(part.mime, "application/http", extra, writeHead(head) + body);
  };
  // The allowed MIME headers as parsed, but for the Content-Type written here and an exact Content-Length.
  const writeMime = (mime: Head, contentType: string, extra: readonly string[], content: string): string => {
    const lines: string[] = [];
    for (const l of mime.lines) {
      const name = headerName(l);
      const lower = name.toLowerCase();
      if (!MIME_HEADERS.has(lower)) continue;
      lines.push(lower === "content-type" ? `${name}: ${contentType}` : lower === "content-length" ? `${name}: ${content.length}` : l);
    }
    return writeHead({ ...mime, lines: [...lines, ...extra] }) + content;
  };
  const writeMulti = (b: string, bodies: readonly string[], terminated: boolean): string =>
    `--${b}\r\n${bodies.join(`\r\n--${b}\r\n`)}\r\n--${b}--${terminated ? "\r\n" : ""}`;
  const bodies = items.map((item) =>
    item.kind === "request"
      ? writePart(item.part)
      : writeMime(
          item.changeSet.mime,
          multipartType(item.changeSet.boundary),
          [],
          writeMulti(item.changeSet.boundary, item.changeSet.parts.map(writePart), item.changeSet.closeTerminated),
        ),
  );
  return writeMulti(boundary, bodies, closeTerminated);
}

/** The name of a header line already checked by {@link parseHeaderLines}. */
function headerName(line: string): string {
  return line.slice(0, line.indexOf(":"));
}

// ---------------------------------------------------------------------------
// JSON

/** An individual request of a JSON batch. */
interface JsonPart extends Part {
  readonly bodyNode: JsonNode | undefined;
  readonly group: string | undefined;
  readonly dependsOn: ReadonlySet<string>;
}

const JSON_METHODS = new Set(["DELETE", "GET", "PATCH", "POST", "PUT"]);

function analyzeJsonBatch(input: BatchInput, accesses: AccessList): BatchAnalysis {
  let text: string;
  try {
    text = UTF8.decode(input.body);
  } catch {
    invalid("the batch body is not valid UTF-8");
  }
  const root = parseJson(text, "the batch body");
  if (root.type !== "object") invalid("a JSON batch must be an object with a member 'requests'");
  let requests: JsonNode | undefined;
  for (const m of root.members) {
    if (m.name === "requests") requests = m.value;
    else if (!m.name.startsWith("@")) invalid(`unknown member '${excerpt(m.name)}' in the batch`);
  }
  if (requests === undefined || requests.type !== "array") invalid("a JSON batch needs an array 'requests'");
  if (requests.items.length > MAX_BATCH_PARTS) invalid(`the batch has more than ${MAX_BATCH_PARTS} parts`);

  // Structure first.
  const parts: JsonPart[] = [];
  const ids = new Map<string, number>();
  const groups = new Map<string, number>(); // group -> index of its last request so far
  requests.items.forEach((node, index) => {
    const part = readJsonPart(node, index + 1);
    within(labelOf(part), () => {
      if (part.id !== undefined && ids.has(part.id)) invalid(`request id '${part.id}' is used twice`);
      for (const d of part.dependsOn) {
        if (!ids.has(d) && !groups.has(d)) invalid(`dependsOn names '${excerpt(d)}', which is not a preceding request or atomicity group`);
      }
      if (part.group !== undefined) {
        const last = groups.get(part.group);
        if (last !== undefined && last !== index - 1) invalid(`the requests of atomicity group '${part.group}' must be adjacent`);
        groups.set(part.group, index);
      }
      if (part.id !== undefined) ids.set(part.id, index);
    });
    parts.push(part);
  });
  for (const part of parts) {
    if (part.group !== undefined && ids.has(part.group)) invalid(`${labelOf(part)}: '${part.group}' names both a request and an atomicity group`);
  }

  // Then every part, in order.
  const results: PartResult[] = [];
  for (const [index, part] of parts.entries()) {
    const referentOf = (id: string): Referent => {
      const at = ids.get(id);
      if (at === undefined) invalid(`$${id} does not refer to a request of this batch`);
      if (at >= index) invalid(`$${id} must refer to a preceding request`);
      const target = parts[at];
      if (!part.dependsOn.has(id) && (target.group === undefined || !part.dependsOn.has(target.group))) {
        invalid(`$${id} needs '${id}'${target.group === undefined ? "" : ` or '${target.group}'`} in dependsOn`);
      }
      return referentFrom(id, results[at]!);
    };
    results.push(analyzePart(part, input, normalizeRoot(input.clientRoot), referentOf, accesses));
  }
  checkNoIdsAsSegments(
    parts.map((part, i) => ({ part, forwardUrl: results[i]!.forwardUrl })),
    new Set([...ids.keys(), ...groups.keys()]),
  );

  // Written anew from what was parsed, so that the back end cannot read it
  // differently: members in a fixed order, every url in canonical form,
  // header names in lower case (CAP uses the object as its request headers,
  // where only lower-case names are found), only allowed headers kept,
  // `if-match` added where needed, bodies as the text that was analyzed.
  const written = parts.map((part, index) => {
    const result = results[index];
    const members = [`"id":${JSON.stringify(part.id)}`, `"method":${JSON.stringify(result.method)}`, `"url":${JSON.stringify(result.forwardUrl)}`];
    if (part.group !== undefined) members.push(`"atomicityGroup":${JSON.stringify(part.group)}`);
    if (part.dependsOn.size > 0) members.push(`"dependsOn":${JSON.stringify([...part.dependsOn])}`);
    const headers: string[] = [];
    for (const [lower, value] of part.headers.byName) {
      // A blank If-Match is replaced by the one added below, not written beside it (a duplicate member).
      if (!FORWARDED_PART_HEADERS.has(lower) || (lower === "if-match" && result.ifMatchStar) || (lower === "prefer" && result.preferMinimal)) continue;
      headers.push(`${JSON.stringify(lower)}:${JSON.stringify(value)}`);
    }
    if (result.ifMatchStar) headers.push('"if-match":"*"');
    if (result.preferMinimal) headers.push('"prefer":"return=minimal"');
    if (headers.length > 0) members.push(`"headers":{${headers.join(",")}}`);
    const b = part.bodyNode;
    if (b !== undefined && !(b.type === "scalar" && b.value === null)) members.push(`"body":${compactJson(text.slice(b.start, b.end))}`);
    return `{${members.join(",")}}`;
  });
  const body = Buffer.from(`{"requests":[${written.join(",")}]}`, "utf8");
  return {
    kind: "access",
    accesses: accesses.items,
    parts: parts.length,
    partUrls: results.map((r) => r.forwardUrl),
    body,
    contentType: input.contentType,
  };
}

/**
 * A JSON batch part's string body of a non-JSON type, as a lenient back end
 * may read it: the text itself or the bytes a base64 decoder reads in it
 * (OData sends binary media in a JSON batch as base64url). Either reading
 * that sniffs as Atom is analyzed as Atom and one that parses as a JSON
 * object or array as that JSON, as for a multipart part or a request of
 * its own (a "media" create cannot carry an entry past the analyzer); two
 * readings that are different JSON are refused.
 */
function jsonPartStringBody(text: string, type: string): RequestBody {
  const readings = [Buffer.from(text, "utf8"), ...base64Readings(text)];
  let atom = false;
  const json = new Map<string, unknown>();
  for (const bytes of readings) {
    const sniffed = sniffBytes(bytes);
    if (sniffed === "json-behind-mark") invalid("a body that reads as JSON may not start with a byte order mark or whitespace JSON does not allow");
    if (sniffed === "atom") atom = true;
    if (sniffed === "json") {
      try {
        const decoded = UTF8.decode(bytes);
        json.set(decoded, jsonValue(parseJson(decoded, "the request body")));
      } catch {
        // Not JSON after all: opaque.
      }
    }
  }
  if (atom) return { kind: "other", contentType: "application/atom+xml" };
  if (json.size > 1) invalid("a string body that reads as different JSON as text and as the base64 it may encode cannot be authorized unambiguously");
  for (const value of json.values()) return { kind: "json", value };
  return { kind: "other", contentType: type };
}

/**
 * The bytes base64 decoders read in a string, which is not only the
 * readings of valid base64url: lenient decoders (Node's, Python's, `atob`,
 * MIME decoders) skip what is not of their alphabet (whitespace, line
 * breaks, the other alphabet's `-_` or `+/`), and stop at the first `=` or
 * skip it. Every such reading, both alphabets or one, `=` ending it or
 * skipped; distinct, none empty.
 */
function base64Readings(text: string): Buffer[] {
  const out: Buffer[] = [];
  for (const others of [/[^A-Za-z0-9+/_=-]/g, /[^A-Za-z0-9+/=]/g, /[^A-Za-z0-9_=-]/g]) {
    const kept = text.replace(others, "");
    const pad = kept.indexOf("=");
    for (const chars of [pad < 0 ? kept : kept.slice(0, pad), kept.replaceAll("=", "")]) {
      // Node's decoder reads both alphabets.
      const bytes = Buffer.from(chars, "base64");
      if (bytes.length > 0 && !out.some((b) => b.equals(bytes))) out.push(bytes);
    }
  }
  return out;
}

const JSON_MEMBERS = new Set(["id", "method", "url", "atomicityGroup", "dependsOn", "if", "headers", "body"]);

/** Reads and checks one request object of a JSON batch. */
function readJsonPart(node: JsonNode, no: number): JsonPart {
  if (node.type !== "object") invalid(`${labelOf({ no })}: a request must be a JSON object`);
  const member = new Map(node.members.map((m) => [m.name, m.value]));
  const str = (name: string): string | undefined => {
    const v = member.get(name);
    if (v === undefined) return undefined;
    if (v.type !== "string") invalid(`${labelOf({ no })}: '${name}' must be a string`);
    return v.value;
  };
  const method = str("method");
  const url = str("url");
  const label = labelOf({ no, ...(method !== undefined ? { method: method.toUpperCase() } : {}), url });
  return within(label, () => {
    for (const m of node.members) if (!JSON_MEMBERS.has(m.name)) invalid(`unknown member '${excerpt(m.name)}'`);
    const id = str("id");
    if (id === undefined) invalid("member 'id' is missing");
    if (method === undefined) invalid("member 'method' is missing");
    if (url === undefined) invalid("member 'url' is missing");
    checkRequestId(id, "request id");
    const upper = method.toUpperCase();
    if (!JSON_METHODS.has(upper)) invalid(`method '${excerpt(method)}' is not one of delete, get, patch, post, put`);
    if (member.has("if")) denied("conditional requests ('if') are not supported");
    const group = str("atomicityGroup");
    if (group !== undefined) checkRequestId(group, "atomicityGroup");
    const dependsOn = new Set<string>();
    const dep = member.get("dependsOn");
    if (dep !== undefined) {
      if (dep.type !== "array") invalid("'dependsOn' must be an array of strings");
      for (const d of dep.items) {
        if (d.type !== "string") invalid("'dependsOn' must be an array of strings");
        dependsOn.add(d.value);
      }
    }
    const headers = newHeaders();
    const headersNode = member.get("headers");
    if (headersNode !== undefined) {
      if (headersNode.type !== "object") invalid("'headers' must be an object of strings");
      for (const h of headersNode.members) {
        if (h.value.type !== "string") invalid(`header '${excerpt(h.name)}' must be a string`);
        if (!TOKEN.test(h.name)) invalid(`malformed header name '${excerpt(h.name)}'`);
        if (VALUE_CONTROL.test(h.value.value)) invalid(`control character in header '${excerpt(h.name)}'`);
        addHeader(headers, h.name, h.value.value, true);
      }
    }
    if (headers.byName.has("x-http-method") || headers.byName.has("x-http-method-override")) {
      invalid("method tunnelling (X-HTTP-Method) is not supported in a JSON batch: give the method in 'method'");
    }
    const bodyNode = member.get("body");
    let body: RequestBody | undefined;
    if (bodyNode !== undefined && !(bodyNode.type === "scalar" && bodyNode.value === null)) {
      if (upper === "GET" || upper === "DELETE") invalid(`a ${upper} request cannot have a body`);
      const ct = headers.byName.get("content-type");
      const media = ct === undefined ? undefined : parseMediaType(ct, "the request's Content-Type");
      if (media === undefined || isJsonType(media.type)) {
        if (media !== undefined) checkCharset(media, "the request's Content-Type");
        body = { kind: "json", value: jsonValue(bodyNode) };
      } else {
        if (bodyNode.type !== "string") invalid(`a body of type '${excerpt(media.type)}' must be a string`);
        body = jsonPartStringBody(bodyNode.value, media.type);
      }
    }
    return {
      no,
      method: upper,
      url,
      headers,
      body,
      id,
      bodyNode,
      group,
      dependsOn,
    };
  });
}
