/**
 * The effect oracle's judgement: what a back end's data layer did for one
 * request (its reads and writes, each an operation on an entity set) must
 * be covered by the accesses erplink authorized for that request (its
 * request-log entry). Both test back ends record effects per request id:
 * SAP CAP from SQLite (test-support/cap, `effects`), SAP's mock server from
 * its data layer (test-support/mockserver, `effects`).
 *
 * An effect is covered when erplink authorized, on the same entity set:
 * - `create`, `update`, `delete`: the same operation;
 * - `get` (one row read by its full key): `get` or `list` (a key that may
 *   list a set may read any row of it), or `update` or `delete` (a write
 *   addressed by key finds its row first, and its answer tells whether the
 *   row exists whatever the back end: SAP CAP checks that it exists, SAP's
 *   mock server reads it; what of the row reaches the client is the
 *   answer's, which erplink authorizes as `get` or asks the back end for
 *   none);
 * - `list` (any other read): `list`;
 * - a read a write statement makes to find the rows it writes (a cascade
 *   finds a parent's children through the parent; `locates`): any access,
 *   since nothing of it reaches the client;
 * - any read of a set the request was authorized to `create` in: a create
 *   is answered with what it created (the back end reads it back, a deep
 *   insert's nested entities too), which is the client's own data. An
 *   update's answer is no such thing: erplink authorizes it as `get` or
 *   asks the back end for none.
 * An access on `*` (erplink records one for a navigation the metadata gives
 * no entity set) stands for every entity set of the service: it covers an
 * effect on any of them, and on rows of the service that belong to no entity
 * set (SAP's mock server's `(Type)` rows), by the same rules.
 * In a `$batch`, the parts' effects are judged against the parts' accesses
 * together: the key was authorized for each of them.
 *
 * A request that invokes an operation (an authorized `invoke`) is judged by
 * its grant alone: erplink cannot see what a function reads beside its
 * result or what an action writes, and the admin who grants `invoke` trusts
 * the operation with it. Every other request is judged by the rules above,
 * whatever the client sent and however the back end read it. (The back ends
 * record a batch's effects together, SAP CAP's without telling the parts
 * apart, so a batch with one such part is judged by its grant as a whole;
 * the forwarding fuzzer's oracle still reads each of its other parts.)
 */
import type { CapEffect } from "./cap/index.js";
import type { Effect as MockEffect } from "./mockserver/index.js";

/** One effect to judge: an operation on an entity set (or on one of several sets a table stands for). */
export interface JudgedEffect {
  readonly operation: "get" | "list" | "create" | "update" | "delete";
  /** The entity sets of the request's service the effect may stand for; empty when it stands for none. */
  readonly entitySets: readonly string[];
  /** A read a write statement made to find the rows it writes. */
  readonly locates?: boolean;
  /** Rows of the service that belong to no entity set (which only an access on `*` covers). */
  readonly setless?: boolean;
  /** What the back end said of it (a table, a statement, a plan), for reports. */
  readonly detail: string;
}

/** One access erplink authorized, as its request log records it. */
export interface AuthorizedAccess {
  readonly entity: string;
  readonly operation: string;
}

/** CAP's effects for a request, on the entity sets of `service` (the CAP service the root serves). */
export function fromCap(effects: readonly CapEffect[], service: string): JudgedEffect[] {
  return effects.map((e) => ({
    operation: e.operation,
    entitySets: e.touches.filter((t) => t.service === service).map((t) => t.entity),
    ...(e.locates ? { locates: true } : {}),
    detail: `${e.table}: ${e.sql.slice(0, 200)}${e.plan ? ` [${e.plan.join(" | ").slice(0, 300)}]` : ""}`,
  }));
}

/**
 * The mock server's effects for a request. Its data layer reads the row an
 * update or delete writes before writing it (by the same key): that read
 * locates the row, as a write statement's subquery does in SQL.
 */
export function fromMockServer(effects: readonly MockEffect[]): JudgedEffect[] {
  const written = new Set(effects.filter((e) => e.operation === "update" || e.operation === "delete").map((e) => `${e.entitySet}\u0000${e.detail ?? ""}`));
  return effects.map((e) => ({
    operation: e.operation,
    // Rows with no entity set stand for an entity of the sets their type lives in.
    entitySets: e.entitySets ?? [e.entitySet],
    ...(e.entitySet.startsWith("(") ? { setless: true } : {}),
    ...(e.operation === "get" && written.has(`${e.entitySet}\u0000${e.detail ?? ""}`) ? { locates: true } : {}),
    detail: `${e.entitySet} ${e.detail ?? ""}`,
  }));
}

/** Whether `authorized` covers `effect` (see the module comment). */
function covers(effect: JudgedEffect, authorized: readonly AuthorizedAccess[]): boolean {
  return authorized.some((a) => {
    const onSet = a.entity === EVERY_SET ? effect.setless === true || effect.entitySets.length > 0 : effect.entitySets.includes(a.entity);
    if (!onSet) return false;
    if (effect.locates) return true;
    switch (effect.operation) {
      case "get":
        return ["get", "list", "create", "update", "delete"].includes(a.operation);
      case "list":
        return a.operation === "list" || a.operation === "create";
      default:
        return a.operation === effect.operation;
    }
  });
}

/** The entity set an access on every entity set of the service names. */
const EVERY_SET = "*";

/** The effects `authorized` does not cover; none when the request invoked an operation by its grant. */
export function uncovered(effects: readonly JudgedEffect[], authorized: readonly AuthorizedAccess[]): JudgedEffect[] {
  if (authorized.some((a) => a.operation === "invoke")) return [];
  return effects.filter((e) => !covers(e, authorized));
}

/** A report line per uncovered effect. */
export function describeUncovered(effects: readonly JudgedEffect[], authorized: readonly AuthorizedAccess[]): string {
  const granted = authorized.map((a) => `${a.operation} ${a.entity}`).join(", ") || "nothing";
  return effects
    .map((e) => `the back end did ${e.operation}${e.locates ? " (to locate)" : ""} on ${e.entitySets.join(" or ") || "a set outside the service"} (${e.detail}), but erplink authorized ${granted}`)
    .join("\n");
}
