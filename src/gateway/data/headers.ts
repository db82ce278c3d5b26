/**
 * Header hygiene of the data path, both ways.
 *
 * Requests: only the client headers an OData back end needs to answer the
 * request it was authorized for are forwarded (an allowlist, as Envoy's
 * and Kong's hardened setups do): content negotiation, preconditions
 * (analyzed), OData versions and preferences, media upload names, idempotency
 * and tracing. Everything else is dropped, so that no header can change what
 * the back end does behind the analyzer's back: method overrides
 * (`X-HTTP-Method`, `X-Method-Override`; the method they name is forwarded
 * instead), URL overrides (`X-Original-URL`, `X-Rewrite-URL`), the client's
 * credentials and cookies, SAP session and client headers, `Expect`
 * (erplink answers `100 Continue` itself and buffers the body), and
 * hop-by-hop headers. `Content-Type` and `Content-Length` are written from
 * the body erplink forwards. The individual requests of a `$batch`, which
 * erplink writes itself (`../odata/batch.ts`), follow the same allowlist,
 * less what means nothing in a part. Both lists are in
 * `../odata/forwarded-headers.ts`, where the `$batch` writer reads them too.
 *
 * Answers: the back end's headers pass but for hop-by-hop ones, its session
 * (`Set-Cookie`, `X-CSRF-Token`, `sap-contextid`), challenges for
 * erplink's credentials (`WWW-Authenticate`), its `X-Request-Id` and its
 * rate-limit headers (see {@link isRateLimitHeader}); URLs under the back end's
 * service root name erplink's instead. Every answer is also marked
 * {@link DATA_ANSWER_HEADERS}: a back end's page (an HTML error, a media
 * `$value`) is served on erplink's origin, where the dashboard's readable
 * CSRF cookie lives, so a browser must never run it as a page of that origin.
 */
import { createHash } from "node:crypto";
import { FORWARDED_REQUEST_HEADERS } from "../odata/forwarded-headers.js";
import type { ServiceRoot } from "./service-root.js";

/**
 * Headers of an answer never passed back (RFC 9110 §7.6.1 hop-by-hop, and
 * `HTTP2-Settings`, connection-specific too: RFC 9113 §8.2.2; plus the back
 * end's session and challenges). Node's HTTP/2 refuses every
 * connection-specific header in an answer, by throwing.
 */
const DROPPED_RESPONSE_HEADERS: ReadonlySet<string> = new Set([
  "connection",
  "http2-settings",
  "keep-alive",
  "proxy-authenticate",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "set-cookie",
  "x-csrf-token",
  "sap-contextid",
  "www-authenticate",
  // Not a header anyone sends: undici hands it over as an own key, and written
  // into a plain object it would set that object's prototype, not a header.
  "__proto__",
]);

/**
 * Answer headers that hold one value (RFC 9110 defines them as singletons):
 * those Node's HTTP/2 refuses several values for, by throwing from the
 * response's `writeHead` (`kSingleValueHeaders` in Node's
 * `lib/internal/http2/util.js`, less the pseudo-headers and those only
 * requests carry). undici hands a repeated header over as an array; of these
 * the first value passes, as Node's own HTTP parser keeps for most of them,
 * so that clients of either protocol get the same answer.
 */
const SINGLE_VALUE_RESPONSE_HEADERS: ReadonlySet<string> = new Set([
  "access-control-allow-credentials",
  "access-control-max-age",
  "age",
  "content-encoding",
  "content-language",
  "content-length",
  "content-location",
  "content-md5",
  "content-range",
  "content-type",
  "date",
  "etag",
  "expires",
  "last-modified",
  "location",
  "retry-after",
  "tk",
  "x-content-type-options",
]);

/**
 * Whether an answer header is a rate-limit header: `RateLimit`,
 * `RateLimit-*` (the IETF drafts, `RateLimit-Policy` and the older
 * `RateLimit-Limit`/`-Remaining`/`-Reset`), `X-RateLimit`, `X-RateLimit-*`,
 * `X-Rate-Limit` and `X-Rate-Limit-*`. A back end's never reach the client, whether or not
 * erplink sends its own: they describe the limits of erplink's shared
 * back-end credentials, and a client would take them for its key's.
 * `Retry-After` is not one: it belongs to the answer it comes with (a back
 * end's 503 or 429) and passes; erplink sends its own only on its 429,
 * which forwards nothing.
 */
function isRateLimitHeader(name: string): boolean {
  return (
    name === "ratelimit" ||
    name === "x-ratelimit" ||
    name === "x-rate-limit" ||
    name.startsWith("ratelimit-") ||
    name.startsWith("x-ratelimit-") ||
    name.startsWith("x-rate-limit-")
  );
}

/**
 * Added to every back-end answer passed to a client: a sandboxed document
 * that loads nothing (a page opened from it runs in a unique origin, without
 * erplink's cookies), and no content sniffing. A back end's own
 * `Content-Security-Policy` stays beside it (a browser enforces both).
 */
export const DATA_ANSWER_HEADERS = {
  "content-security-policy": "sandbox; default-src 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
} as const;

/** Response headers holding URLs of the back end (`Location` of a created entity, its OData id). */
const URL_HEADERS = ["location", "content-location", "odata-entityid", "entityid"];

/** The client's headers to forward, from the allowlist; repeated ones as Node joined them. */
export function forwardedRequestHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || !FORWARDED_REQUEST_HEADERS.has(name)) continue;
    out[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return out;
}

/** The idempotency headers (OData's repeatable requests, SAP RAP) whose ids a back end may replay answers by. */
const REPEATABILITY_IDS = ["repeatability-request-id", "repeatability-client-id"] as const;

/**
 * Scopes a client's repeatable-request ids (`Repeatability-Request-ID`,
 * `-Client-ID`) to its API key, in place: each becomes a UUID derived from
 * the key's id and the client's value (SHA-256). Every key of an instance
 * reaches the back end as the same user, so a back end that replays a stored
 * answer by request id would otherwise hand one key another key's answer;
 * derived so, a retry with the same id by the same key still replays, and
 * no key can name another's request.
 */
export function scopeRepeatability(headers: Record<string, string>, keyId: string): void {
  for (const name of REPEATABILITY_IDS) {
    const value = headers[name];
    if (value === undefined) continue;
    const hash = createHash("sha256").update(`${name}\u0000${keyId}\u0000${value}`).digest();
    // An RFC 9562 UUID of version 8 (custom): the version nibble and the variant bits set.
    hash[6] = (hash[6]! & 0x0f) | 0x80;
    hash[8] = (hash[8]! & 0x3f) | 0x80;
    const hex = hash.subarray(0, 16).toString("hex");
    headers[name] = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }
}

/** Where the client reached the service, for rewriting the back end's URLs. */
export interface ClientRoot {
  /** `http(s)://<host>` as the client addressed erplink (`ERPLINK_PUBLIC_URL`'s, when configured). */
  readonly origin: string;
  /** The scheme of {@link origin}, `http` or `https`. */
  readonly proto: string;
  /** The host (and port) of {@link origin}. */
  readonly host: string;
  /** `/odata/<instance>/<service>` as the client wrote it (raw), after the public URL's path, if any. */
  readonly path: string;
}

/**
 * The back end's answer headers as passed to the client (see the module
 * comment). `X-Request-Id` and the rate-limit headers are left out: erplink
 * has put its own on the answer already (the request id when the request
 * came in, the key's rate-limit headers when it has limits), and the back
 * end's must neither replace them nor stand in for them. Header names are
 * lower case (undici's).
 */
export function clientResponseHeaders(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  root: ServiceRoot,
  client: ClientRoot,
): Record<string, string | string[]> {
  const listed = connectionListed(headers.connection);
  const out: Record<string, string | string[]> = {};
  // for…in, not Object.entries: undici's headers are a plain object, and no pair arrays per answer (bench/README.md).
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || DROPPED_RESPONSE_HEADERS.has(name) || listed?.has(name) === true || name === "x-request-id" || isRateLimitHeader(name)) continue;
    out[name] = typeof value !== "string" && SINGLE_VALUE_RESPONSE_HEADERS.has(name) ? value[0]! : value;
  }
  for (const name of URL_HEADERS) {
    const value = out[name];
    // A repeated header (undici: an array) is rewritten value by value: none may name the back end.
    if (value !== undefined) out[name] = Array.isArray(value) ? value.map((v) => clientUrl(v, root, client)) : clientUrl(value, root, client);
  }
  const csp = out["content-security-policy"];
  const ours = DATA_ANSWER_HEADERS["content-security-policy"];
  out["content-security-policy"] = csp === undefined ? ours : [...(Array.isArray(csp) ? csp : [csp]), ours];
  out["x-content-type-options"] = DATA_ANSWER_HEADERS["x-content-type-options"];
  return out;
}

/** The header names an answer's `Connection` lists (hop-by-hop by that listing), lower case; undefined when it lists only `keep-alive` (dropped anyway). */
function connectionListed(connection: string | string[] | undefined): Set<string> | undefined {
  if (connection === undefined) return undefined;
  const values = Array.isArray(connection) ? connection : [connection];
  if (values.length === 1 && /^\s*keep-alive\s*$/i.test(values[0]!)) return undefined;
  const listed = new Set<string>();
  for (const v of values) for (const name of v.split(",")) listed.add(name.trim().toLowerCase());
  return listed;
}

/**
 * A URL of the back end's answer as the client must follow it: one under the
 * back end's service root path, whether it names the back end's origin
 * (`Location` as the back end knows itself), the client's (a back end that
 * honoured `X-Forwarded-Host` but not the path) or none, is rewritten under
 * erplink's (`<client origin>/odata/<instance>/<service>/…`), without the
 * instance's `sap-client`, which erplink adds itself. Anything else passes.
 */
export function clientUrl(value: string, root: ServiceRoot, client: ClientRoot): string {
  let url: URL;
  try {
    url = new URL(value, `${root.origin}/`);
  } catch {
    return value;
  }
  const absolute = /^[A-Za-z][A-Za-z0-9+.-]*:/.test(value);
  if (absolute && url.origin !== root.origin && url.origin !== client.origin) return value;
  if (!absolute && !value.startsWith("/")) return value; // relative to the request: stays right
  if (url.pathname !== root.path && !url.pathname.startsWith(`${root.path}/`)) return value;
  if (root.instanceQuery !== "") {
    const params = url.search.slice(1).split("&").filter((p) => p !== "" && p !== root.instanceQuery);
    url.search = params.length > 0 ? `?${params.join("&")}` : "";
  }
  return `${client.origin}${client.path}${url.pathname.slice(root.path.length)}${url.search}${url.hash}`;
}
