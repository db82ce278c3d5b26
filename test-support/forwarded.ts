/**
 * The differential check of the e2e suites: what the back end received for a
 * request (seen by the recording proxy, `./recording-proxy.ts`) must be
 * exactly what erplink authorized and says it sent (its request-log entry):
 * the same method and URL byte for byte, nothing at all when erplink refused,
 * and the received request, analyzed again with erplink's analyzer against
 * the service's `$metadata`, needs exactly the accesses erplink authorized.
 * For writes the body received is the one the client sent (or, for a
 * `$batch`, one that analyzes to the same accesses). Against CAP, what its
 * database did for the request (rows read and written, by operation and
 * entity set) is covered by what erplink authorized (./effects.ts).
 */
import * as assert from "uvu/assert";
import { analyzeBatch } from "../src/gateway/odata/batch.js";
import type { ServiceModel } from "../src/gateway/odata/metadata.js";
import { analyzeRequest } from "../src/gateway/odata/request.js";
import type { RequestLogRecord, Store } from "../src/store/index.js";
import type { CapBackend } from "./cap/index.js";
import { describeUncovered, fromCap, fromMockServer, uncovered, type AuthorizedAccess } from "./effects.js";
import type { MockServer } from "./mockserver/index.js";
import type { RecordingProxy } from "./recording-proxy.js";

/** Where the request log is read: a store, and a flush of the log writer when the test can reach it (else it is polled). */
export interface LogSource {
  readonly store: Store;
  readonly flush?: () => Promise<void>;
}

/** The request-log entry of `requestId`, flushed or waited for (entries are written within about a second). */
async function entryOf(logs: LogSource, requestId: string): Promise<RequestLogRecord | undefined> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    await logs.flush?.();
    const entry = (await logs.store.logs.query({ limit: 1000 })).items.find((e) => e.requestId === requestId);
    if (entry !== undefined || Date.now() > deadline) return entry;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** What the check needs to know of the instance the request went to. */
export interface ForwardedService {
  /** The service root's path at the back end (`/odata/v4/api-business-partner`). */
  readonly upstreamRoot: string;
  /** The service root as clients address it through erplink (`/odata/s4/API_BUSINESS_PARTNER`). */
  readonly clientRoot: string;
  readonly model: ServiceModel;
  /**
   * A CAP back end (its effect oracle) and the CAP service the root serves:
   * everything CAP's database did for the request must be covered by what
   * erplink authorized.
   */
  readonly cap?: { readonly backend: Pick<CapBackend, "effects">; readonly service: string };
  /** SAP's mock server (its effect oracle): everything its data layer did for the request must be covered likewise. */
  readonly mock?: Pick<MockServer, "effects">;
}

/**
 * Asserts the differential property for the request answered with
 * `requestId`; `clientBody` is the body the client sent, if any (not for a
 * batch). Returns the log entry.
 */
export async function assertForwardedAsAuthorized(
  logs: LogSource,
  proxy: RecordingProxy,
  service: ForwardedService,
  requestId: string,
  clientBody?: string,
): Promise<RequestLogRecord> {
  const entry = await entryOf(logs, requestId);
  assert.ok(entry, `no request-log entry for ${requestId}`);
  // erplink's own fetches ($metadata, CSRF tokens) carry no request id.
  const got = proxy.received.filter((r) => r.headers["x-request-id"] === requestId);
  if (entry!.upstreamUrl === "") {
    assert.is(got.length, 0, `erplink refused ${requestId} (${entry!.status}), but the back end received ${got.map((r) => `${r.method} ${r.target}`).join(", ")}`);
    return entry!;
  }
  assert.is(got.length, 1, `the back end received ${got.length} requests for ${requestId}`);
  const r = got[0]!;
  assert.is(`${r.method} ${proxy.baseUrl}${r.target}`, `${entry!.upstreamMethod} ${entry!.upstreamUrl}`, "what was sent is what the request log says was sent");
  assert.ok(r.target.startsWith(`${service.upstreamRoot}/`), `${r.target} is not below ${service.upstreamRoot}`);
  const rest = r.target.slice(service.upstreamRoot.length + 1);
  const q = rest.indexOf("?");
  const headers = Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : v]));
  const text = r.body.toString("utf8");
  const contentType = String(r.headers["content-type"] ?? "");
  let accesses: readonly { entitySet: string; operation: string }[];
  if (rest.split("?")[0] === "$batch") {
    const again = analyzeBatch({ contentType, body: r.body, clientRoot: service.clientRoot, model: service.model, may: () => true });
    assert.is(again.kind, "access", again.kind === "access" ? "" : again.message);
    // Read again with every access allowed, a part's answer is authorized; erplink asked for none (`Prefer:
    // return=minimal`) where the key may not read it, which the effects below judge.
    const logged = (a: { entitySet: string; operation: string }) => entry!.accesses.some((x) => x.entity === a.entitySet && x.operation === a.operation);
    accesses = again.kind === "access" ? again.accesses.filter((a) => !/: the answer/.test(a.reason) || logged(a)) : [];
  } else {
    if (clientBody !== undefined) assert.is(text, clientBody, "the body the back end received is the client's");
    else assert.is(r.body.length, 0, "no body was sent");
    const again = analyzeRequest({
      method: r.method,
      path: q < 0 ? rest : rest.slice(0, q),
      query: q < 0 ? "" : rest.slice(q + 1),
      headers,
      model: service.model,
      ...(text !== "" && /json/.test(contentType) ? { body: { kind: "json" as const, value: JSON.parse(text) } } : {}),
    });
    assert.ok(again.kind === "access" || again.kind === "metadata", `read again, the request is ${again.kind}: ${"message" in again ? again.message : ""}`);
    // What erplink let the key do besides shows in what it sent: an upsert without If-Match: * may create; an update
    // is answered with what it changed unless its Prefer is exactly erplink's `return=minimal`.
    // (A key that may read the answer has a client's own `return=minimal` forwarded as it is: then it may be either.)
    const minimal = headers["prefer"]?.trim() === "return=minimal";
    const logged = (a: { entitySet: string; operation: string }) => entry!.accesses.some((x) => x.entity === a.entitySet && x.operation === a.operation);
    const answer = again.kind === "access" ? (again.answer ?? []).filter((a) => !minimal || logged(a)) : [];
    const granted = again.kind !== "access" ? [] : [...(again.upsertEntitySet !== undefined ? [{ entitySet: again.upsertEntitySet, operation: "create" }] : []), ...answer];
    accesses = again.kind === "access" ? again.accesses : [];
    for (const g of granted) if (!accesses.some((a) => a.entitySet === g.entitySet && a.operation === g.operation)) accesses = [...accesses, g];
  }
  assert.equal(
    accesses.map((a) => ({ entity: a.entitySet, operation: a.operation })),
    entry!.accesses,
    "read again, what the back end received needs exactly the accesses erplink authorized",
  );
  if (service.cap !== undefined) await assertCapEffectsCovered(service.cap, requestId, entry!.accesses);
  if (service.mock !== undefined) {
    const left = uncovered(fromMockServer(await service.mock.effects(requestId)), entry!.accesses);
    assert.equal(left, [], `the mock server did for ${requestId} what erplink did not authorize:\n${describeUncovered(left, entry!.accesses)}`);
  }
  return entry!;
}

/**
 * Asserts that everything CAP's database did for `requestId` (its effects:
 * rows read and written, by operation and entity set) is covered by what
 * erplink authorized (test-support/effects.ts).
 */
async function assertCapEffectsCovered(cap: NonNullable<ForwardedService["cap"]>, requestId: string, authorized: readonly AuthorizedAccess[]): Promise<void> {
  const left = uncovered(fromCap(await cap.backend.effects(requestId), cap.service), authorized);
  assert.equal(left, [], `CAP did for ${requestId} what erplink did not authorize:\n${describeUncovered(left, authorized)}`);
}
