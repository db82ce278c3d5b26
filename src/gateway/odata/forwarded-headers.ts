/**
 * The client headers a request forwarded to an OData back end may carry (an
 * allowlist; `../data/headers.ts` says why each kind of header is left out),
 * at the top level and in the requests of a `$batch`. Here, beside the
 * parser, because the `$batch` writer (`./batch.ts`) applies them to the
 * parts it writes, and the data path to the requests it writes.
 */

/** Client headers forwarded to the back end (lower case). */
export const FORWARDED_REQUEST_HEADERS: ReadonlySet<string> = new Set([
  "accept",
  "accept-charset",
  "accept-encoding",
  "accept-language",
  "cache-control",
  "content-disposition",
  "content-language",
  "dataserviceversion",
  "if-match",
  "if-modified-since",
  "if-none-match",
  "if-range",
  "if-unmodified-since",
  "maxdataserviceversion",
  "odata-isolation",
  "odata-maxversion",
  "odata-version",
  "pragma",
  "prefer",
  "range",
  "repeatability-client-id",
  "repeatability-first-sent",
  "repeatability-origin",
  "repeatability-request-id",
  "slug",
  "traceparent",
  "tracestate",
  "user-agent",
  "x-requested-with",
]);

/**
 * Top-level headers that mean nothing for one request inside a `$batch`:
 * `Accept-Encoding` (the answers of parts are not content-coded inside the
 * batch's answer, whose own coding the batch request negotiates),
 * `Cache-Control` and `Pragma` (no cache sees a part), `Range` (refused in
 * parts: OData 4.01 Part 1 §11.7.7.1) and `If-Range` (nothing without it),
 * `User-Agent` and `X-Requested-With` (they describe the client, which the
 * batch request's own say), and the repeatable-request headers (a batch is
 * repeated as a whole, by the batch request's own; at the top level erplink
 * scopes their ids to the key, which it does not do inside a batch).
 */
const NOT_IN_PARTS: ReadonlySet<string> = new Set([
  "accept-encoding",
  "cache-control",
  "pragma",
  "range",
  "if-range",
  "user-agent",
  "x-requested-with",
  "repeatability-client-id",
  "repeatability-first-sent",
  "repeatability-origin",
  "repeatability-request-id",
]);

/**
 * Request headers of a `$batch` part forwarded to the back end (lower case),
 * in both formats: {@link FORWARDED_REQUEST_HEADERS} but for those that
 * mean nothing in a part (see `NOT_IN_PARTS`), plus `Content-Type` (a part's
 * body is forwarded as received, so its type is too; at the top level
 * erplink writes it from the body). A multipart request also keeps
 * `Content-ID` and `Content-Length` (framing: `./batch.ts`). Every
 * other header of a part is dropped, as at the top level.
 */
export const FORWARDED_PART_HEADERS: ReadonlySet<string> = new Set([
  ...[...FORWARDED_REQUEST_HEADERS].filter((name) => !NOT_IN_PARTS.has(name)),
  "content-type",
]);
