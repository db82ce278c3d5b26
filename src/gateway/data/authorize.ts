/**
 * Stage 4, authorize: every access of the canonical request against the
 * key's permissions, in order; the first denial answers 403 with its step's
 * message (in a batch followed by the part, `… (batch part 2: resource
 * path)`). An update that may create the entity (upsert) gets `If-Match: *`
 * when the key may not `create` in its entity set; one whose answer would
 * read what the key may not (`get` of the entity) gets `Prefer:
 * return=minimal`.
 *
 * When the analysis stopped at an entity set the request names (see
 * `./analyze.ts`), the accesses read before it are checked all the same, in
 * order, and then the stop is the answer: 403 at the entity step (a name the
 * key may not touch, whether or not the service has it) or 404 `NOT_FOUND`
 * (one it may touch that the service lacks).
 *
 * An access on `*` that a navigation without an entity set needs (see
 * `../odata/bind/unbound.ts`) is decided as the key's grant on `*` at the
 * entity level; a refusal names the navigation and why only `*` covers it.
 */
import { GatewayError } from "../errors.js";
import { extend, type Analyzed, type Authenticated, type Authorized } from "./exchange.js";
import type { Access } from "../odata/accesses.js";
import { UNBOUND_WHY } from "../odata/bind/unbound.js";
import type { DataKey, DataPort, Decision, Operation } from "./ports.js";
import { STEP_NAMES } from "./record.js";

/** The key's decision on an (entity set, operation) of the request's instance and service. */
export function decisionOf<K extends DataKey>(a: Authenticated<K>, port: DataPort<K>): (entity: string, operation: Operation) => Decision {
  return (entity, operation) => port.decide(a.key, { instance: a.instanceName, service: a.serviceName, entity, operation });
}

/**
 * The key's decision on one access of the request. For an access on `*`
 * that a navigation without an entity set needs, a refusal says which
 * navigation, and why nothing but `*` covers it.
 */
export function accessDecision(decide: (entity: string, operation: Operation) => Decision, access: Access): Decision {
  const decision = decide(access.entitySet, access.operation);
  if (decision.allowed || access.unbound === undefined) return decision;
  switch (decision.step) {
    case "entity":
      return { allowed: false, step: "entity", message: `API key has no access to ${access.unbound}: ${UNBOUND_WHY}, so only a grant on every entity set ('*') covers it` };
    case "operation":
      return { allowed: false, step: "operation", message: `API key lacks permission '${access.operation}' for entity '*', which ${access.unbound} needs: ${UNBOUND_WHY}` };
    default:
      return decision;
  }
}

export function authorize<K extends DataKey>(a: Analyzed<K>, port: DataPort<K>): Authorized<K> {
  const decide = decisionOf(a, port);
  const batched = a.request.kind === "batch";
  for (const access of a.request.accesses) {
    a.fact.accesses.push({ entity: access.entitySet, operation: access.operation });
    const decision = accessDecision(decide, access);
    if (!decision.allowed) {
      a.fact.denialStep = STEP_NAMES[decision.step] ?? "";
      throw new GatewayError(403, batched ? `${decision.message} (batch ${access.reason})` : decision.message);
    }
  }
  if (a.stop !== undefined) throw stopRefusal(a, batched);
  const conditions = conditionsOf(a, port);
  // What the key turned out to be allowed besides (an upsert's create, an answer's reads) is what it authorized too.
  for (const access of conditions.granted) a.fact.accesses.push({ entity: access.entitySet, operation: access.operation });
  return extend(a, { ifMatchStar: conditions.ifMatchStar, preferMinimal: conditions.preferMinimal });
}

/**
 * What an update may do besides its accesses, decided by the key: create
 * the entity it updates (an upsert) unless `If-Match: *` is added, and read
 * the entity back to answer unless `Prefer: return=minimal` is sent.
 * `granted` is what the key is allowed of it beyond the request's accesses,
 * which the request log records with them.
 */
export function conditionsOf<K extends DataKey>(
  a: Analyzed<K>,
  port: DataPort<K>,
): { readonly ifMatchStar: boolean; readonly preferMinimal: boolean; readonly granted: readonly Access[] } {
  const { upsertEntitySet: upsert, answer } = a.request;
  if (upsert === undefined && answer.length === 0) return NO_CONDITIONS;
  const decide = decisionOf(a, port);
  const granted: Access[] = [];
  const creates = upsert !== undefined && decide(upsert, "create").allowed;
  if (creates) granted.push({ entitySet: upsert, operation: "create", reason: "resource path (upsert)" });
  const answers = answer.length > 0 && answer.every((x) => decide(x.entitySet, x.operation).allowed);
  if (answers) granted.push(...answer);
  const { accesses } = a.request;
  const beyond = granted.filter((g) => !accesses.some((x) => x.entitySet === g.entitySet && x.operation === g.operation));
  return { ifMatchStar: upsert !== undefined && !creates, preferMinimal: answer.length > 0 && !answers, granted: beyond };
}

const NO_CONDITIONS = { ifMatchStar: false, preferMinimal: false, granted: [] } as const;

/** The answer to an analysis that stopped at an entity set, once the accesses before it passed (the log's facts set). */
function stopRefusal<K extends DataKey>(a: Analyzed<K>, batched: boolean): GatewayError {
  const stop = a.stop!;
  if (stop.status === 404) return new GatewayError(404, stop.message);
  a.fact.denialStep = "ENTITY";
  return new GatewayError(403, batched ? `${stop.message} (batch ${stop.reason})` : stop.message);
}


