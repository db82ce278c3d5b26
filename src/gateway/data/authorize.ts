/**
 * Stage 4, authorize: every access of the canonical request against the
 * key's permissions, in order; the first denial answers 403 with its step's
 * message (in a batch followed by the part, `… (batch part 2: resource
 * path)`). An update that may create the entity (upsert) gets `If-Match: *`
 * when the key may not `create` in its entity set.
 *
 * When the analysis stopped at an entity set the request names (see
 * `./analyze.ts`), the accesses read before it are checked all the same, in
 * order, and then the stop is the answer: 403 at the entity step (a name the
 * key may not touch, whether or not the service has it) or 404 `NOT_FOUND`
 * (one it may touch that the service lacks).
 */
import { GatewayError } from "../errors.js";
import { extend, type Analyzed, type Authenticated, type Authorized } from "./exchange.js";
import type { DataKey, DataPort, Decision, Operation } from "./ports.js";
import { STEP_NAMES } from "./record.js";

/** The key's decision on an (entity set, operation) of the request's instance and service. */
export function decisionOf<K extends DataKey>(a: Authenticated<K>, port: DataPort<K>): (entity: string, operation: Operation) => Decision {
  return (entity, operation) => port.decide(a.key, { instance: a.instanceName, service: a.serviceName, entity, operation });
}

export function authorize<K extends DataKey>(a: Analyzed<K>, port: DataPort<K>): Authorized<K> {
  const decide = decisionOf(a, port);
  const batched = a.request.kind === "batch";
  for (const access of a.request.accesses) {
    a.fact.accesses.push({ entity: access.entitySet, operation: access.operation });
    const decision = decide(access.entitySet, access.operation);
    if (!decision.allowed) {
      a.fact.denialStep = STEP_NAMES[decision.step] ?? "";
      throw new GatewayError(403, batched ? `${decision.message} (batch ${access.reason})` : decision.message);
    }
  }
  if (a.stop !== undefined) throw stopRefusal(a, batched);
  return extend(a, { ifMatchStar: needsIfMatchStar(a, port) });
}

/** The answer to an analysis that stopped at an entity set, once the accesses before it passed (the log's facts set). */
function stopRefusal<K extends DataKey>(a: Analyzed<K>, batched: boolean): GatewayError {
  const stop = a.stop!;
  if (stop.status === 404) return new GatewayError(404, stop.message);
  a.fact.denialStep = "ENTITY";
  return new GatewayError(403, batched ? `${stop.message} (batch ${stop.reason})` : stop.message);
}

/** Whether an update that may create its entity (upsert) gets `If-Match: *`: the key may not `create` there. */
export function needsIfMatchStar<K extends DataKey>(a: Analyzed<K>, port: DataPort<K>): boolean {
  const upsert = a.request.upsertEntitySet;
  return upsert !== undefined && !decisionOf(a, port)(upsert, "create").allowed;
}
