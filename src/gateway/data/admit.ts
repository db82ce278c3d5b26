/**
 * Stage 5, admit: counts the request against the key's rate limits (a
 * `$batch` counts once) and puts the rate-limit headers on the answer,
 * whatever it will be; over the limit it is 429 and nothing is forwarded.
 */
import { GatewayError } from "../errors.js";
import { extend, type Admitted, type Authorized } from "./exchange.js";
import type { DataAdmission, DataKey, DataLogFacts, DataPort } from "./ports.js";

/**
 * Where the rate-limit headers go: the data path's Fastify reply, or the
 * headers of an Envoy check's answer (`../ext-authz/`).
 */
export interface HeaderSink {
  headers(values: Readonly<Record<string, string>>): unknown;
}

/** The refusal of a request over the key's rate limit (the denial step recorded). */
export function overLimit(fact: DataLogFacts): GatewayError {
  fact.denialStep = "RATE_LIMITED";
  return new GatewayError(429, "rate limit exceeded for this API key", { code: "RATE_LIMITED" });
}

export async function admit<K extends DataKey>(a: Authorized<K>, port: DataPort<K>, reply: HeaderSink): Promise<Admitted<K>> {
  return extend(a, { admission: await count(a, port, reply) });
}

/**
 * Counts a request of `a.key` and puts the rate-limit headers on its answer;
 * 429 over the limit. What `admit` does, also for a request answered before
 * analysis (a client's CSRF token fetch, `./client-csrf.ts`).
 */
export async function count<K extends DataKey>(a: { readonly key: K; readonly fact: DataLogFacts }, port: DataPort<K>, reply: HeaderSink): Promise<DataAdmission> {
  const admission = await port.admit(a.key);
  reply.headers(admission.headers);
  if (!admission.allowed) throw overLimit(a.fact);
  return admission;
}
