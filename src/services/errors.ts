/**
 * Translation of store errors into Connect errors, and the validation error
 * with its field details. Services throw nothing else.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { settled } from "../schema/settled.js";
import { kRequestId } from "../schema/call-facts.js";
import { BadRequestSchema, FieldViolationSchema } from "../gen/erplink/errors/v1/bad_request_pb.js";
import { ETAG_MISMATCH_METADATA, formatEtag, shownEtag } from "../schema/etag.js";
import { DuplicateKeyError, NotFoundError, RevisionMismatchError, StoreUnavailableError } from "../store/index.js";

/** One failing field. */
export interface Violation {
  readonly field: string;
  readonly description: string;
}

/** Most violations one error lists; a huge bad document must not make a huge error. */
const MAX_VIOLATIONS = 100;

/** An `invalid_argument` error carrying every violation (up to 100) as a BadRequest detail. */
export function validationError(all: readonly Violation[]): ConnectError {
  const violations = all.slice(0, MAX_VIOLATIONS);
  const first = violations[0];
  const message =
    violations.length === 1 && first
      ? `${first.field}: ${first.description}`
      : `${all.length} fields are invalid${all.length > MAX_VIOLATIONS ? ` (the first ${MAX_VIOLATIONS} are listed)` : ""}`;
  return new ConnectError(message, Code.InvalidArgument, undefined, [
    {
      desc: BadRequestSchema,
      value: create(BadRequestSchema, {
        fieldViolations: violations.map((v) => create(FieldViolationSchema, v)),
      }),
    },
  ]);
}

/**
 * The `aborted` error of a write whose etag is stale (or not one erplink
 * gave): the resource changed since the client read it. Marked with
 * {@link ETAG_MISMATCH_METADATA} (the etag now), which the REST facade
 * answers as 412 `PRECONDITION_FAILED`.
 */
export function etagMismatch(resource: ResourceNames, given: string, currentRevision: number): ConnectError {
  const now = formatEtag(currentRevision);
  return new ConnectError(
    `the ${resource.singular} changed since it was read (etag ${shownEtag(given)}, now ${now}): read it again and retry`,
    Code.Aborted,
    new Headers({ [ETAG_MISMATCH_METADATA]: now }),
  );
}

/** How each aggregate is named in messages. */
export interface ResourceNames {
  /** Singular, for messages: "system". */
  readonly singular: string;
}

/**
 * Maps any error thrown while serving a call to a ConnectError. Unexpected
 * errors become `internal` with the original kept as `cause` for the log,
 * never in the message.
 */
export function toConnectError(err: unknown, resource: ResourceNames): ConnectError {
  if (err instanceof ConnectError) return err;
  if (err instanceof DuplicateKeyError) {
    return new ConnectError(
      `another ${resource.singular} already has this ${err.field}`,
      Code.AlreadyExists,
      undefined,
      [
        {
          desc: BadRequestSchema,
          value: create(BadRequestSchema, {
            fieldViolations: [create(FieldViolationSchema, { field: err.field, description: "already in use" })],
          }),
        },
      ],
    );
  }
  if (err instanceof NotFoundError) return new ConnectError(`${resource.singular} not found`, Code.NotFound);
  if (err instanceof RevisionMismatchError) return etagMismatch(resource, formatEtag(err.expected), err.actual);
  if (err instanceof StoreUnavailableError) {
    return new ConnectError("the store is unavailable; try again later", Code.Unavailable, undefined, undefined, err);
  }
  return new ConnectError("internal error", Code.Internal, undefined, undefined, err);
}

/** Runs a service method body, translating whatever it throws. */
export async function translate<T>(resource: ResourceNames, body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (err) {
    throw toConnectError(err, resource);
  }
}

/** Where the services report errors they mask. */
export interface ErrorLog {
  error(fields: Record<string, unknown>, message: string): void;
}

/**
 * A server-side interceptor that logs the cause of every `internal` or
 * `unknown` error (the client sees only "internal error").
 */
export function createErrorLogInterceptor(log: ErrorLog): Interceptor {
  // A rejection handler, not an async frame: a call that succeeds passes through untouched.
  return (next) => (req) =>
    settled(next, req).catch((err: unknown) => {
      const ce = ConnectError.from(err);
      if (ce.code === Code.Internal || ce.code === Code.Unknown) {
        log.error(
          {
            err: ce.cause ?? err,
            rpc: `${req.service.typeName}/${req.method.name}`,
            // The id the gateway answered with (a fresh one when the client sent none or a malformed one).
            requestId: req.contextValues.get(kRequestId) || req.header.get("x-request-id") || undefined,
          },
          "rpc failed",
        );
      }
      throw err;
    });
}
