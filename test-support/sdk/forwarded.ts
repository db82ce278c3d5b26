/**
 * The differential check of test-support/forwarded.ts applied to what the
 * SAP Cloud SDK sent through the recording proxy (./recording-proxy.ts):
 * every exchange erplink answered with an `X-Request-Id` on a data path is
 * judged by {@link assertForwardedAsAuthorized} — what the back end received
 * is exactly what erplink authorized and logged as sent (nothing when it
 * refused), and, with the service's `cap` or `mock` oracle, everything the
 * back end's data layer did is covered by what erplink authorized. The SDK's
 * CSRF `HEAD`s are judged like any other request.
 */
import { assertForwardedAsAuthorized, type ForwardedService, type LogSource } from "../forwarded.js";
import type { RecordingProxy as BackendProxy } from "../recording-proxy.js";
import type { RequestLogRecord } from "../../src/store/index.js";
import type { Exchange } from "./recording-proxy.js";

/** Where the exchanges are judged. */
export interface ExchangeJudge {
  /** erplink's request log. */
  readonly logs: LogSource;
  /** The recording proxy between erplink and the back end. */
  readonly backend: BackendProxy;
  /** The service an exchange's path addresses (by its client root), or undefined to leave it unjudged. */
  serviceOf(path: string): ForwardedService | undefined;
}

/**
 * Judges each exchange with a request id whose path lies below a service's
 * client root. The body the client sent is compared for single requests
 * that carry one (not for `$batch`, which erplink writes anew, nor for GET,
 * HEAD and DELETE). Returns how many exchanges were judged.
 */
export async function assertExchangesForwardedAsAuthorized(exchanges: readonly Exchange[], judge: ExchangeJudge): Promise<number> {
  let judged = 0;
  for (const ex of exchanges) {
    const requestId = ex.responseHeaders["x-request-id"];
    if (typeof requestId !== "string") continue;
    const service = judge.serviceOf(ex.path);
    if (service === undefined) continue;
    const batchOrBodiless = /\/\$batch(\?|$)/.test(ex.path) || ["GET", "HEAD", "DELETE"].includes(ex.method);
    await assertForwardedAsAuthorized(judge.logs, judge.backend, service, requestId, batchOrBodiless ? undefined : ex.requestBody);
    judged++;
  }
  return judged;
}

/** erplink's request-log entry of `requestId` (flushed first; polled for up to 5 s where the log cannot be flushed). */
export async function logEntryOf(logs: LogSource, requestId: string): Promise<RequestLogRecord> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    await logs.flush?.();
    const entry = (await logs.store.logs.query({ limit: 1000 })).items.find((e) => e.requestId === requestId);
    if (entry !== undefined) return entry;
    if (Date.now() > deadline) throw new Error(`no request-log entry for ${requestId}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
