/**
 * The small protocol between the gateway and the services about one RPC
 * call, for the request log: the gateway hands each Connect/gRPC call a
 * `CallFacts` object in its context values; the services' interceptor fills
 * in who the caller was and how the call ended; the gateway logs it after
 * the response. Shared by both layers, owned by neither.
 */
import { createContextKey, type Code } from "@connectrpc/connect";

/** What the services report of one call. */
export interface CallFacts {
  /** `master`, a key id, or "" when no credential was recognised. */
  principalId: string;
  /** The session (`ses_…`) the call came through, if any. */
  sessionId?: string;
  /** The call's error code; undefined when it succeeded. */
  code: Code | undefined;
  /** The call's error message (as answered); undefined when it succeeded. */
  message?: string;
}

/** The context key under which the gateway passes a call's {@link CallFacts}. */
export const kCallFacts = createContextKey<CallFacts | undefined>(undefined, { description: "erplink call facts" });

/**
 * Error metadata naming the caller an admission refused (a data key on an
 * admin service, a spent budget), so that the refusal is logged as that caller.
 */
export const PRINCIPAL_METADATA = "erplink-principal";

/**
 * The context key under which the gateway passes a call's request id (its
 * `X-Request-Id`), so that what a service records of the call (the audit
 * trail) can be found in the request log.
 */
export const kRequestId = createContextKey<string>("", { description: "erplink request id" });
