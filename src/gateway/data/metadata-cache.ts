/**
 * The `$metadata` models the analyzer authorizes with, per instance and
 * service root: fetched with the instance's credentials (and SAP client),
 * cached for `ttlMs`, one fetch at a time per service, a failure remembered
 * for {@link FAILURE_TTL_MS} so that a broken back end is not asked on
 * every request, at most {@link MAX_MODELS} entries. Without a model nothing
 * below the service root can be authorized, so a failure is the request's
 * answer: 502 (504 when the back end is too slow), naming the cause after
 * what could not be done (`cannot authorize the request: …`, or what the
 * caller names: the service catalog shares the cache).
 */
import { GatewayError } from "../errors.js";
import { parseMetadata, type ServiceModel } from "../odata/metadata.js";
import { isTimeout, type UpstreamSessions } from "../upstream-session.js";
import type { DataInstance } from "./ports.js";
import type { ServiceRoot } from "./service-root.js";

/** Most models kept; beyond it the cache starts over. */
export const MAX_MODELS = 1_000;

/** How long a failed `$metadata` fetch is remembered (ms). */
export const FAILURE_TTL_MS = 5_000;

/** Options of {@link MetadataCache}. */
export interface MetadataCacheOptions {
  readonly sessions: UpstreamSessions;
  /** How long a model is used before it is fetched again (ms). */
  readonly ttlMs: number;
  /** Timeout of one fetch (ms). */
  readonly timeoutMs: number;
}

/** A failed fetch: its status (502 or 504) and what went wrong. */
interface Failure {
  readonly status: 502 | 504;
  readonly cause: string;
}

type Entry = { readonly at: number; readonly model: ServiceModel } | { readonly at: number; readonly error: Failure };

/** What the data path could not do without the model. */
const AUTHORIZE = "cannot authorize the request";

/** `$metadata` models by instance and service root. */
export class MetadataCache {
  private readonly entries = new Map<string, Entry>();
  private readonly flights = new Map<string, Promise<Entry>>();

  constructor(private readonly options: MetadataCacheOptions) {}

  /**
   * The service's model; throws the {@link GatewayError} of a failed fetch,
   * its message starting with `purpose` (what cannot be done without it).
   */
  async model(instance: DataInstance, root: ServiceRoot, purpose = AUTHORIZE): Promise<ServiceModel> {
    // Keyed by the root too: a changed base URL, service path or SAP client is a new document.
    const key = `${instance.id}|${root.key}`;
    const hit = this.entries.get(key);
    if (hit !== undefined && Date.now() - hit.at < ("model" in hit ? this.options.ttlMs : FAILURE_TTL_MS)) {
      if ("model" in hit) return hit.model;
      throw refusal(hit.error, purpose);
    }
    let flight = this.flights.get(key);
    if (flight === undefined) {
      flight = this.fetch(instance, root)
        .then((entry) => {
          if (this.entries.size >= MAX_MODELS && !this.entries.has(key)) this.entries.clear();
          this.entries.set(key, entry);
          return entry;
        })
        .finally(() => this.flights.delete(key));
      this.flights.set(key, flight);
    }
    const entry = await flight;
    if ("model" in entry) return entry.model;
    throw refusal(entry.error, purpose);
  }

  private async fetch(instance: DataInstance, root: ServiceRoot): Promise<Entry> {
    const failed = (status: 502 | 504, cause: string): Entry => ({ at: Date.now(), error: { status, cause } });
    const headers: Record<string, string> = { accept: "application/xml" };
    const sessions = this.options.sessions;
    const auth = await sessions.authorization(instance);
    if (auth) headers.authorization = auth;
    let res: Response;
    try {
      res = await fetch(root.urlOf("$metadata"), { headers, redirect: "manual", signal: AbortSignal.timeout(this.options.timeoutMs) });
    } catch (err) {
      return isTimeout(err)
        ? failed(504, "the back end did not send the service's $metadata in time")
        : failed(502, "the back end could not be reached for the service's $metadata");
    }
    if (!res.ok) {
      await res.body?.cancel();
      if (res.status === 401) sessions.dropToken(instance, auth);
      return failed(502, `the back end answered HTTP ${res.status} to $metadata`);
    }
    try {
      return { at: Date.now(), model: parseMetadata(await res.text()) };
    } catch {
      return failed(502, "the service's $metadata could not be read");
    }
  }
}

function refusal(failure: Failure, purpose: string): GatewayError {
  return new GatewayError(failure.status, `${purpose}: ${failure.cause}`);
}
