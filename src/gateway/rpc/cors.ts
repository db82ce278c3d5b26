/**
 * CORS for browser clients of the RPC endpoints (connect-web, grpc-web),
 * and for nothing else: only origins listed in `ERPLINK_CORS_ORIGINS`, only
 * on RPC paths, never with credentials. The RPC protocols authenticate by
 * the `Authorization` header alone (the session cookie is a REST facade
 * feature), so a page of a listed origin can call erplink only with a token
 * it holds itself; `/admin`, the dashboard and the data path never answer a
 * cross-origin caller, and the dashboard's cookie stays same-origin only.
 */
import { cors } from "@connectrpc/connect";

/** Methods the RPC protocols use (POST; GET for Connect calls without side effects). */
export const CORS_ALLOWED_METHODS: readonly string[] = cors.allowedMethods;

/** Request headers a browser client may send: the protocols' own, plus our bearer token and request id. */
export const CORS_ALLOWED_HEADERS: readonly string[] = [...cors.allowedHeaders, "Authorization", "X-Request-Id"];

/** Response headers a browser client may read: the protocols' status headers, our request id and the rate-limit headers. */
export const CORS_EXPOSED_HEADERS: readonly string[] = [
  ...cors.exposedHeaders,
  "X-Request-Id",
  "X-RateLimit-Limit",
  "X-RateLimit-Remaining",
  "X-RateLimit-Reset",
  "RateLimit",
  "RateLimit-Policy",
  "Retry-After",
];

/** How long a browser may cache a preflight answer (s); Chromium caps it at 7200. */
export const CORS_MAX_AGE_SECONDS = 7200;

/** The CORS decisions for one configuration. */
export interface CorsPolicy {
  /** Whether any origin is configured (otherwise no CORS header is ever sent). */
  readonly enabled: boolean;
  /** Whether `origin` (the request's `Origin` header, exactly) is allowed. */
  allows(origin: string | undefined): boolean;
  /** Headers answering an allowed preflight. */
  preflightHeaders(origin: string): Record<string, string>;
  /** Headers added to an actual response to an allowed origin. */
  responseHeaders(origin: string): Record<string, string>;
}

/** Builds the policy for a list of origins (already normalized by the configuration). */
export function createCorsPolicy(origins: readonly string[]): CorsPolicy {
  const allowed = new Set(origins);
  return {
    enabled: allowed.size > 0,
    allows: (origin) => origin !== undefined && allowed.has(origin),
    preflightHeaders: (origin) => ({
      "access-control-allow-origin": origin,
      "access-control-allow-methods": CORS_ALLOWED_METHODS.join(", "),
      "access-control-allow-headers": CORS_ALLOWED_HEADERS.join(", "),
      "access-control-max-age": String(CORS_MAX_AGE_SECONDS),
      vary: "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
    }),
    responseHeaders: (origin) => ({
      "access-control-allow-origin": origin,
      "access-control-expose-headers": CORS_EXPOSED_HEADERS.join(", "),
      vary: "Origin",
    }),
  };
}
