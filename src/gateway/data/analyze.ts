/**
 * Stage 3, analyze: turns the client's bytes into the canonical request
 * (`./exchange.ts`) with erplink's OData analyzer (`../odata/`): the target
 * decoded once and re-encoded by our own encoder, the accesses it implies
 * (path, query, body, every `$batch` part), the headers and the body that
 * will be forwarded. Refusals: 400 for what is malformed or cannot be
 * forwarded unambiguously, 403 (`NOT_ALLOWED`) for what the gateway never
 * lets through, 415 for bodies it cannot read as the back end would, and
 * the `$metadata` fetch's 502/504 (fail closed: without the model nothing
 * below the service root is authorized).
 *
 * The key's entity step is asked for every name the request looks up among
 * the service's entity sets (`../odata/request.ts`, `entityStep`), before
 * the lookup: a name the key may not touch stops the analysis, whether or
 * not the set exists, and so does one it may touch that the service lacks;
 * the stop travels with the accesses read before it to `authorize`, which
 * checks those first and then answers it (403 at the entity step, or 404).
 *
 * Bodies: GET, HEAD and DELETE (tunnelled ones too) may not have one, since
 * erplink does not analyze it and forwards none (400). A `Content-Encoding`
 * other than `identity` is refused (415): the back end would decode another
 * body than the one analyzed. JSON bodies are parsed strictly (duplicate
 * members refused) and must be UTF-8; a body of any type that parses as a
 * JSON object or array is analyzed as JSON, since some back ends (CAP) read
 * it so, and one that reads as an Atom entry or feed as Atom (which entity
 * writes refuse); JSON behind a byte order mark is refused (back ends
 * disagree on whether the mark belongs to it). The bytes forwarded are the
 * bytes analyzed.
 */
import { GatewayError } from "../errors.js";
import { analyzeBatch, bodyUrlRelative } from "../odata/batch.js";
import { jsonValue, parseJson } from "../odata/json.js";
import { UTF8, isJsonType, isUtf8, parseMediaType, sniffBytes } from "../odata/media-type.js";
import { analyzeRequest, type Analysis, type RequestBody } from "../odata/request.js";
import { Refusal } from "../odata/syntax.js";
import { decisionOf } from "./authorize.js";
import { BODILESS, extend, type AnalysisStop, type Analyzed, type CanonicalRequest, type Incoming, type Resolved } from "./exchange.js";
import { forwardedRequestHeaders } from "./headers.js";
import type { AnalysisCache } from "./analysis-cache.js";
import type { MetadataCache } from "./metadata-cache.js";
import type { DataKey, DataPort, Decision, Operation } from "./ports.js";

/**
 * Analyzes a resolved request. With `analyses`, a bodiless GET or HEAD is
 * looked up there first and remembered after (`./analysis-cache.ts`).
 */
export async function analyze<K extends DataKey>(
  r: Resolved<K>,
  port: DataPort<K>,
  metadata: MetadataCache,
  analyses?: AnalysisCache,
): Promise<Analyzed<K>> {
  const { req } = r;
  const raw = Buffer.isBuffer(req.body) && req.body.length > 0 ? req.body : undefined;
  const contentType = req.headers["content-type"];
  // Fastify reads no body for GET and HEAD: a declared one counts as well.
  const length = req.headers["content-length"];
  const declared = raw !== undefined || (length !== undefined && length !== "0") || req.headers["transfer-encoding"] !== undefined;
  if (declared && BODILESS.has(req.method)) throw new GatewayError(400, `a ${req.method} request cannot have a body`);
  const encoding = req.headers["content-encoding"];
  if (encoding !== undefined && encoding.trim().toLowerCase() !== "identity") {
    throw new GatewayError(415, "request bodies with a Content-Encoding are not supported: send them unencoded");
  }
  const isServiceRoot = r.rawPath === "" || r.rawPath === "/" || /^\/?\$metadata$/.test(r.rawPath);
  const model = isServiceRoot ? undefined : await metadata.model(r.instance, r.root);
  const isBatch = /^\/?\$batch$/.test(r.rawPath);
  const analyzedBody = isBatch ? undefined : bodyOf(raw, contentType);
  // Closures made per request come from helpers (see `referenceResolverOf`).
  const resolveReference = referenceResolverOf(r.client.path);
  const decide = decisionOf(r, port);
  const may = mayOf(decide);
  const entityStep = entityStepOf(decide);
  const cacheKey =
    analyses === undefined || model === undefined || declared || isBatch
      ? undefined
      : analyses.keyOf(req.method, r.rawPath, r.rawQuery, r.instance.sapClient, req.headers);
  let cached = cacheKey === undefined ? undefined : analyses!.get(model!, cacheKey);
  // Another key's analysis holds for this one only if its entity step allows every set that one asked about.
  if (cached !== undefined && cached.asked.some((name) => entityStep(name) !== undefined)) cached = undefined;
  let analysis: Analysis;
  if (cached !== undefined) {
    analysis = cached.analysis;
  } else {
    const asked: string[] = [];
    analysis = analyzeRequest({
      method: req.method,
      path: r.rawPath,
      query: r.rawQuery,
      headers: req.headers as Record<string, string | undefined>,
      model,
      // A $batch body is the batch module's to read (once).
      body: analyzedBody,
      resolveReference,
      sapClient: r.instance.sapClient,
      entityStep: cacheKey === undefined ? entityStep : (name) => (asked.push(name), entityStep(name)),
    });
    if (cacheKey !== undefined && analysis.kind === "access") cached = analyses!.set(model!, cacheKey, analysis, asked);
  }
  if (analysis.kind === "invalid" || analysis.kind === "denied") refuse(r, analysis);
  const method = analysis.kind === "access" ? analysis.effectiveMethod : req.method;
  const shared: Shared = { method, target: analysis.target, forward: analysis.forward, headers: forwardedRequestHeaders(req.headers), model, resolveReference };
  if (analysis.kind === "stopped") {
    // Nothing after the stop was read: what was read before it is authorized, then the stop answered; nothing is forwarded.
    const request = canonical(shared, { kind: "access", accesses: analysis.accesses, body: undefined, analyzedBody: undefined, upsertEntitySet: undefined, answer: [], partUrls: [], cached: undefined });
    return extend(r, { request, stop: stopOf(analysis) });
  }
  if (raw !== undefined && BODILESS.has(method)) throw new GatewayError(400, `a ${method} request cannot have a body`);
  if (analysis.kind === "batch") {
    const batch = analyzeBatch({
      contentType: contentType ?? "",
      body: raw ?? Buffer.alloc(0),
      clientRoot: r.client.path,
      model,
      may,
      sapClient: r.instance.sapClient,
      entityStep,
    });
    if (batch.kind === "invalid" || batch.kind === "denied") refuse(r, batch);
    if (batch.kind === "stopped") {
      const stopped = canonical(shared, { kind: "batch", accesses: batch.accesses, body: undefined, analyzedBody: undefined, upsertEntitySet: undefined, answer: [], partUrls: [], cached: undefined });
      return extend(r, { request: stopped, stop: stopOf(batch) });
    }
    const request = canonical(shared, {
      kind: "batch",
      accesses: batch.accesses,
      body: { bytes: batch.body, contentType: batch.contentType },
      analyzedBody,
      upsertEntitySet: undefined,
      answer: [],
      partUrls: batch.partUrls,
      cached,
    });
    return extend(r, { request });
  }
  const request = canonical(shared, {
    kind: analysis.kind,
    accesses: analysis.kind === "access" ? analysis.accesses : [],
    body: raw === undefined ? undefined : { bytes: raw, contentType: contentType ?? "application/octet-stream" },
    analyzedBody,
    upsertEntitySet: analysis.kind === "access" ? analysis.upsertEntitySet : undefined,
    answer: analysis.kind === "access" ? (analysis.answer ?? []) : [],
    partUrls: [],
    cached,
  });
  return extend(r, { request });
}

/** What every canonical request of one analysis has in common. */
type Shared = Pick<CanonicalRequest, "method" | "target" | "forward" | "headers" | "model" | "resolveReference">;

/**
 * The canonical request, written out field by field: one object shape
 * whatever the kind, and no object spread. On this V8 (Node 20) a spread
 * with further members (`{ ...shared, kind, … }`) takes the slow path,
 * some 3 µs per request on the data path (bench/README.md).
 */
function canonical(s: Shared, v: Omit<CanonicalRequest, keyof Shared>): CanonicalRequest {
  return {
    kind: v.kind,
    method: s.method,
    target: s.target,
    forward: s.forward,
    accesses: v.accesses,
    headers: s.headers,
    body: v.body,
    analyzedBody: v.analyzedBody,
    resolveReference: s.resolveReference,
    upsertEntitySet: v.upsertEntitySet,
    answer: v.answer,
    partUrls: v.partUrls,
    model: s.model,
    cached: v.cached,
  };
}

/**
 * Resolves a body's reference against where the client addressed the service.
 * A closure returned by a helper rather than an arrow bound to a `const` in
 * the request's function: tsx compiles with esbuild's `keepNames`, which
 * renames every such arrow (an `Object.defineProperty`) each time it is
 * made, about 0.5 µs a closure (bench/README.md).
 */
function referenceResolverOf(clientPath: string): (url: string) => string | undefined {
  return (url) => bodyUrlRelative(url, clientPath);
}

/** Whether the key may do an operation on an entity set (`$batch` asks, for upserts and answers); see `referenceResolverOf` for why a helper. */
function mayOf(decide: (entity: string, operation: Operation) => Decision): (entity: string, operation: Operation) => boolean {
  return (entity, operation) => decide(entity, operation).allowed;
}

/** The key's entity step, from its decisions: the instance and service steps have passed, so only the entity step is operation-free. */
function entityStepOf(decide: (entity: string, operation: "get") => Decision): (entity: string) => string | undefined {
  return (entity) => {
    const decision = decide(entity, "get");
    return !decision.allowed && decision.step === "entity" ? decision.message : undefined;
  };
}

function stopOf(s: { readonly status: 403 | 404; readonly entitySet: string; readonly reason: string; readonly message: string }): AnalysisStop {
  return { status: s.status, entitySet: s.entitySet, reason: s.reason, message: s.message };
}

/** Answers a refused analysis: 400 for what is malformed, 403 (`NOT_ALLOWED`) for what the gateway never lets through. */
function refuse(r: Incoming, outcome: { readonly kind: "invalid" | "denied"; readonly message: string }): never {
  if (outcome.kind === "invalid") throw new GatewayError(400, outcome.message);
  r.fact.denialStep = "NOT_ALLOWED";
  throw new GatewayError(403, outcome.message);
}

/**
 * The body as the analyzer sees it: parsed JSON for JSON content types (and
 * for any body that parses as a JSON object or array), otherwise only its
 * content type; undefined when there is none. Throws 400 on malformed JSON
 * and 415 on a charset other than UTF-8.
 */
function bodyOf(raw: Buffer | undefined, contentType: string | undefined): RequestBody | undefined {
  if (raw === undefined) return undefined;
  const declared = isJsonType((contentType ?? "").split(";")[0]!.trim().toLowerCase());
  const other: RequestBody = { kind: "other", contentType: (contentType ?? "").split(";")[0]!.trim() };
  const sniffed = sniffBytes(raw);
  if (sniffed === "json-behind-mark" || (declared && raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf)) {
    throw new GatewayError(
      400,
      raw[0] === 0xef
        ? "a request body that reads as JSON may not start with a byte order mark: back ends disagree on whether it belongs to the JSON"
        : "a request body that reads as JSON may not start with whitespace JSON does not allow: back ends disagree on whether it belongs to the JSON",
    );
  }
  // An Atom entry sent as something else is still read as one by some back ends.
  if (!declared && sniffed === "atom") return { kind: "other", contentType: "application/atom+xml" };
  if (!declared && sniffed !== "json") return other;
  let text: string;
  try {
    text = UTF8.decode(raw);
  } catch {
    if (!declared) return other;
    throw new GatewayError(400, "request body is not valid UTF-8");
  }
  let value: unknown;
  try {
    // Strict: a duplicate member would be read one way here and maybe another way by the back end.
    value = jsonValue(parseJson(text, "request body"));
  } catch (err) {
    if (!declared) return other;
    throw new GatewayError(400, err instanceof Refusal ? err.message : "request body is not valid JSON");
  }
  // The back end decodes with the charset the client names (even UTF-7):
  // anything but UTF-8 could read as another body than the one authorized.
  // A parameter given twice is refused (back ends disagree on which counts).
  let charset: string | undefined;
  try {
    charset = contentType === undefined ? undefined : parseMediaType(contentType, "the request's Content-Type").params.get("charset");
  } catch (err) {
    throw new GatewayError(400, err instanceof Refusal ? err.message : "the request's Content-Type is malformed");
  }
  if (charset !== undefined && !isUtf8(charset)) {
    throw new GatewayError(415, `JSON request bodies must be UTF-8, not '${charset.slice(0, 40)}'`);
  }
  return { kind: "json", value };
}
