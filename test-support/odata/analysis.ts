/**
 * Expected values for the OData authorizer's table tests (request, body and
 * batch analysis): one access, an allowed analysis, the common reasons.
 */
import type { Access, Analysis } from "../../src/gateway/odata/request.js";
import type { Operation } from "../../src/services/permissions.js";

/** The reason of an access the resource path itself needs. */
export const PATH = "resource path";
/** The reason of an entity set the resource path navigates through. */
export const SOURCE = "navigation source in resource path";

/** Why a single-valued navigation's target set is listed (SAP CAP scans it). */
export const scan = (navigation: string): string => `navigation '${navigation}' (a back end may scan the set for it)`;
/** Why the set a path stands at is listed where SAP's mock server reads it whole. */
export const whole = (what: string): string => `${what} (a back end may read the whole set there)`;
/** Why a write below a path's first entity needs that operation on it (SAP's mock server writes it). */
export const ROOT = "the entity the path starts from (a back end may write it)";
/** Why such a write needs `list` of the first set when its first segment names no key. */
export const ROOT_BY_NO_KEY = "the entity the path starts from, by no key (a back end may look for it in the whole set)";
/** Why a link change needs `create` of the linked set (SAP's mock server creates from a V2 $links body). */
export const LINK_CREATES = "link change (a back end may create the linked entity)";
/** Why adding a link needs `list` of the source set. */
export const LINK_SOURCE = "link added (a back end may look for the source in the whole set)";

/** One (entity set, operation) access with its reason. */
export function acc(entitySet: string, operation: Operation, reason: string): Access {
  return { entitySet, operation, reason };
}

/**
 * An access on `*` that a navigation the metadata gives no entity set needs
 * (src/gateway/odata/bind/unbound.ts); `navigation` as the analyzer names it,
 * `navigation 'Trips' of 'People'`.
 */
export function every(operation: Operation, reason: string, navigation: string): Access {
  return { entitySet: "*", operation, reason: `${reason}; ${navigation}: the service metadata does not say which entity set it leads to, so '*' covers it`, unbound: navigation };
}

/**
 * An analysis as the table tests state it: without the canonical target
 * (`target`, `forward`; test/gateway/odata/target.test.ts covers it),
 * without `referable` (covered by the batch reference tests) and without
 * an update's `answer` (covered by request.test.ts, "an update's answer").
 */
export type Expected = Analysis extends infer A ? (A extends unknown ? Omit<A, "target" | "forward" | "referable" | "answer"> : never) : never;

/** `analysis` without its canonical target, for comparing with an {@link Expected}. */
export function withoutTarget(analysis: Analysis): Expected {
  if (analysis.kind === "denied" || analysis.kind === "invalid") return analysis;
  const { target: _target, forward: _forward, ...rest } = analysis;
  if ("referable" in rest) delete (rest as { referable?: unknown }).referable;
  if ("answer" in rest) delete (rest as { answer?: unknown }).answer;
  return rest as Expected;
}

/** An allowed analysis of a request with `method` and these accesses, in order. */
export function ok(method: string, ...accesses: Access[]): Expected {
  return { kind: "access", accesses, effectiveMethod: method };
}

/**
 * An analysis stopped at an entity set named in the request: 403 (the key
 * may not touch it; `message` is the entity step's) or 404 (the service
 * lacks it), after `accesses`.
 */
export function stopped(status: 403 | 404, entitySet: string, reason: string, message: string, ...accesses: Access[]): Expected {
  return { kind: "stopped", status, entitySet, reason, message, accesses };
}

/** The entity step's message for `entitySet` (src/services/permissions.ts). */
export function noAccess(entitySet: string): string {
  return `API key has no access to entity '${entitySet}'`;
}

/**
 * Time bound of the hostile-input tests: a guard against super-linear work,
 * not a speed test (that is bench/'s business). Their inputs take well under
 * 100 ms when the work is linear and seconds to minutes when it is not, so a
 * bound this wide holds on a loaded CI machine and still fails on a blowup.
 */
export const LINEAR_BOUND_MS = 2_000;
