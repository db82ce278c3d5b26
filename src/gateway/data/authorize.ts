/**
 * Stage 4, authorize: every access of the canonical request against the
 * key's permissions, in order; the first denial answers 403 with its step's
 * message (in a batch followed by the part, `… (batch part 2: resource
 * path)`). An update that may create the entity (upsert) gets `If-Match: *`
 * when the key may not `create` in its entity set.
 */
import { GatewayError } from "../errors.js";
import type { Analyzed, Authenticated, Authorized } from "./exchange.js";
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
  return { ...a, ifMatchStar: needsIfMatchStar(a, port) };
}

/** Whether an update that may create its entity (upsert) gets `If-Match: *`: the key may not `create` there. */
export function needsIfMatchStar<K extends DataKey>(a: Analyzed<K>, port: DataPort<K>): boolean {
  const upsert = a.request.upsertEntitySet;
  return upsert !== undefined && !decisionOf(a, port)(upsert, "create").allowed;
}
