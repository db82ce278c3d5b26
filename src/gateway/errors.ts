/**
 * The error model of the REST facade: one table from Connect codes to HTTP
 * statuses and envelope codes, and the gateway's own errors.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { BadRequestSchema } from "../gen/erplink/errors/v1/bad_request_pb.js";
import { BAD_GATEWAY_METADATA } from "../schema/diagnostics.js";
import { ETAG_MISMATCH_METADATA } from "../schema/etag.js";

/** One failing field, as the envelope's `error.details` lists it. */
export interface ErrorDetail {
  readonly field: string;
  readonly message: string;
}

/** An HTTP status and the envelope code that goes with it. */
export interface HttpError {
  readonly status: number;
  readonly code: string;
}

/** Connect code -> HTTP status and envelope code. */
export const CODE_TABLE: Readonly<Record<Code, HttpError>> = {
  [Code.Canceled]: { status: 499, code: "CANCELLED" },
  [Code.Unknown]: { status: 500, code: "INTERNAL" },
  [Code.InvalidArgument]: { status: 400, code: "VALIDATION_ERROR" },
  [Code.DeadlineExceeded]: { status: 504, code: "GATEWAY_TIMEOUT" },
  [Code.NotFound]: { status: 404, code: "NOT_FOUND" },
  [Code.AlreadyExists]: { status: 409, code: "CONFLICT" },
  [Code.PermissionDenied]: { status: 403, code: "FORBIDDEN" },
  [Code.ResourceExhausted]: { status: 429, code: "RATE_LIMITED" },
  [Code.FailedPrecondition]: { status: 409, code: "CONFLICT" },
  [Code.Aborted]: { status: 409, code: "CONFLICT" },
  [Code.OutOfRange]: { status: 400, code: "VALIDATION_ERROR" },
  [Code.Unimplemented]: { status: 501, code: "NOT_IMPLEMENTED" },
  [Code.Internal]: { status: 500, code: "INTERNAL" },
  [Code.Unavailable]: { status: 503, code: "UNAVAILABLE" },
  [Code.DataLoss]: { status: 500, code: "INTERNAL" },
  [Code.Unauthenticated]: { status: 401, code: "UNAUTHORIZED" },
};

/** An exchange's outcome as the request log names it, with what happened. */
export interface Outcome extends HttpError {
  readonly message: string;
}

/**
 * The request log's outcome of an exchange whose client went away before
 * its answer was complete (before it began, or midway): 499, as nginx and
 * Envoy log it. Never answered: there is no one left to answer.
 */
export const CLIENT_CLOSED_REQUEST: Outcome = {
  status: 499,
  code: "CLIENT_CLOSED_REQUEST",
  message: "the client went away before the answer was complete",
};

/** Envelope code for each status the gateway answers by itself. */
const STATUS_CODES: Readonly<Record<number, string>> = {
  400: "VALIDATION_ERROR",
  401: "UNAUTHORIZED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  405: "METHOD_NOT_ALLOWED",
  408: "REQUEST_TIMEOUT",
  409: "CONFLICT",
  412: "PRECONDITION_FAILED",
  413: "PAYLOAD_TOO_LARGE",
  414: "URI_TOO_LONG",
  415: "UNSUPPORTED_MEDIA_TYPE",
  429: "RATE_LIMITED",
  431: "HEADERS_TOO_LARGE",
  500: "INTERNAL",
  501: "NOT_IMPLEMENTED",
  502: "BAD_GATEWAY",
  503: "UNAVAILABLE",
  504: "GATEWAY_TIMEOUT",
};

/** An error the gateway answers with, in the envelope. */
export class GatewayError extends Error {
  override readonly name = "GatewayError";
  readonly code: string;
  readonly details: readonly ErrorDetail[] | undefined;
  readonly headers: Readonly<Record<string, string>> | undefined;
  constructor(
    readonly status: number,
    message: string,
    options: {
      readonly details?: readonly ErrorDetail[];
      readonly headers?: Readonly<Record<string, string>>;
      readonly code?: string;
    } = {},
  ) {
    super(message);
    this.code = options.code ?? STATUS_CODES[status] ?? (status >= 500 ? "INTERNAL" : "VALIDATION_ERROR");
    this.details = options.details;
    this.headers = options.headers;
  }
}

/** Headers of a service error that reach the REST client (rate limiting). */
const PASSED_HEADERS = [
  "retry-after",
  "x-ratelimit-limit",
  "x-ratelimit-remaining",
  "x-ratelimit-reset",
  "ratelimit",
  "ratelimit-policy",
] as const;

/** Whether an error's message was meant for the client (else it is masked). */
function isInternal(status: number): boolean {
  return status >= 500 && status !== 502 && status !== 503 && status !== 504;
}

/** Converts a ConnectError from a service into the gateway's error. */
export function fromConnectError(err: ConnectError): GatewayError {
  // A back end that failed a call that reaches it (the service catalog) is a bad gateway, not an unavailable store.
  const badGateway = err.code === Code.Unavailable && err.metadata.get(BAD_GATEWAY_METADATA) !== null;
  // A stale etag is a failed precondition of HTTP's (If-Match), not a conflict: other `aborted` errors stay 409.
  const staleEtag = err.code === Code.Aborted && err.metadata.get(ETAG_MISMATCH_METADATA) !== null;
  const mapped = badGateway
    ? { status: 502, code: "BAD_GATEWAY" }
    : staleEtag
      ? { status: 412, code: "PRECONDITION_FAILED" }
      : (CODE_TABLE[err.code] ?? CODE_TABLE[Code.Internal]);
  if (isInternal(mapped.status)) return new GatewayError(500, "internal error");
  const details = err
    .findDetails(BadRequestSchema)
    .flatMap((b) => b.fieldViolations.map((v) => ({ field: v.field, message: v.description })));
  const headers: Record<string, string> = {};
  if (mapped.status === 401) headers["www-authenticate"] = "Bearer";
  for (const name of PASSED_HEADERS) {
    const value = err.metadata.get(name);
    if (value !== null) headers[name] = value;
  }
  return new GatewayError(mapped.status, err.rawMessage, {
    details: details.length > 0 ? details : undefined,
    headers: Object.keys(headers).length > 0 ? headers : undefined,
    code: mapped.code,
  });
}
