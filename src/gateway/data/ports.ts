/**
 * What the data path needs from outside the gateway: the port into the
 * services (keys, instances, decisions, rate limits), implemented by
 * src/services/data-plane.ts and handed over by the composition root, and
 * the facts it reports for the request log. Types only.
 */
import type { Outcome } from "../errors.js";
import type { UpstreamCredentials } from "../upstream-session.js";

/** An operation on an entity set, as the permission engine names it. */
export type Operation = "list" | "get" | "create" | "update" | "delete" | "invoke";

/** A permission decision; a denial names the failing step and says why. */
export type Decision = { readonly allowed: true } | { readonly allowed: false; readonly step: string; readonly message: string };

/** An instance as the data path reaches it. */
export interface DataInstance {
  readonly id: string;
  /** The back end's OData root, without a trailing `/`. */
  readonly baseUrl: string;
  /** Path of a service under `baseUrl` (its name unless the instance maps it). */
  servicePath(service: string): string;
  readonly credentials: UpstreamCredentials;
  /** The SAP client (three digits) erplink selects on every upstream request, if any. */
  readonly sapClient?: string | undefined;
  /** Most requests in flight to the back end, or undefined for the process default. */
  readonly upstreamConnections?: number | undefined;
}

/** A data key, as far as the data path needs it. */
export interface DataKey {
  readonly id: string;
}

/** Rate-limit outcome with its response headers. */
export interface DataAdmission {
  readonly allowed: boolean;
  readonly headers: Readonly<Record<string, string>>;
}

/** The port through which the data path reaches the services (implemented by the service layer). */
export interface DataPort<K extends DataKey = DataKey> {
  /** The data key of an `Authorization` header; throws the services' ConnectError. */
  authenticate(authorization: string | undefined): Promise<K>;
  /**
   * Throws the ConnectError `authenticate` would throw for this key once
   * found (expired, not a data key); counts no use. For explanations, whose
   * key is named by its id.
   */
  checkKey(key: K): void;
  instance(name: string): Promise<DataInstance | undefined>;
  serviceDecision(key: K, instance: string, service: string): Decision;
  decide(key: K, access: { instance: string; service: string; entity: string; operation: Operation }): Decision;
  /** Counts the request; resolves to whether it may pass and the rate-limit headers. */
  admit(key: K): Promise<DataAdmission>;
}

/** What the data path reports of a request for the request log (filled in stage by stage). */
export interface DataLogFacts {
  apiKeyId: string;
  instance: string;
  service: string;
  /** What was authorized: every (entity set, operation) the request needs. */
  accesses: { entity: string; operation: string }[];
  denialStep: string;
  /** What was sent: the method and the full URL of the upstream request ("" when nothing was). */
  upstreamMethod: string;
  upstreamUrl: string;
  upstreamStatus: number;
  upstreamDurationMs: number;
  /**
   * Bytes of the back end's answer body passed on to the client as it
   * streamed (up to where the exchange ended); undefined when the answer was
   * not the back end's body (erplink's own, none).
   */
  answerBytes: number | undefined;
  /**
   * How the back end's answer failed once it had begun to stream to the
   * client (it broke off, or went silent for longer than the timeout): the
   * status and code the request log gives the exchange. Undefined otherwise.
   */
  answerFailure: Outcome | undefined;
  /** Whether the data path's handler still runs (an exchange that ends meanwhile is logged once it returns). */
  handling: boolean;
}
