/**
 * The `$metadata` models the analyzer authorizes with, per instance and
 * service root: fetched with the instance's credentials (and SAP client),
 * cached for `ttlMs`, one fetch at a time per service, a failure remembered
 * for {@link FAILURE_TTL_MS} so that a broken back end is not asked on
 * every request, at most {@link MAX_MODELS} entries, each document at most
 * {@link MAX_METADATA_BYTES} (read as it arrives, and given up beyond it). Without a model nothing
 * below the service root can be authorized, so a failure is the request's
 * answer: 502 (504 when the back end is too slow), naming the cause after
 * what could not be done (`cannot authorize the request: …`, or what the
 * caller names: the service catalog shares the cache).
 */
import type { DataPathMetrics, FetchResult } from "../../metrics/port.js";
import { GatewayError } from "../errors.js";
import { parseMetadata, type ServiceModel } from "../odata/metadata.js";
import { isTimeout, type UpstreamSessions } from "../upstream-session.js";
import { Deadline, type ConnectionGate, type NoSlot, type Release } from "./connection-gate.js";
import type { DataInstance } from "./ports.js";
import type { ServiceRoot } from "./service-root.js";

/**
 * Largest `$metadata` document read (bytes): the largest SAP documents are a
 * few MiB; a back end sending more is refused (502) after this many bytes,
 * rather than held in memory whole.
 */
export const MAX_METADATA_BYTES = 32 * 1024 * 1024;

/** A `$metadata` answer larger than {@link MAX_METADATA_BYTES}. */
export class MetadataTooLarge extends Error {
  constructor() {
    super(`the service's $metadata is larger than ${MAX_METADATA_BYTES / 1024 / 1024} MiB`);
  }
}

/**
 * An answer's body as UTF-8 text (a BOM dropped, as `Response.text()`
 * does), read as it arrives; throws {@link MetadataTooLarge} as soon as it
 * passes {@link MAX_METADATA_BYTES}, and what the read throws (the fetch's
 * timeout) otherwise.
 */
export async function readMetadataText(res: Response): Promise<string> {
  const declared = Number(res.headers.get("content-length") ?? "");
  if (declared > MAX_METADATA_BYTES) {
    await res.body?.cancel();
    throw new MetadataTooLarge();
  }
  if (res.body === null) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_METADATA_BYTES) {
      await reader.cancel();
      throw new MetadataTooLarge();
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}

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
  /** Where lookups and fetches are counted (default: nowhere). */
  readonly metrics?: Pick<DataPathMetrics, "metadataLookup" | "metadataFetch">;
  /**
   * The gate of an instance's connections (the forwarder's): a fetch takes
   * one of them like a data request, so that a burst of requests naming
   * services not yet read cannot open more connections to the back end than
   * the instance allows.
   */
  readonly gate?: (instance: DataInstance) => ConnectionGate;
}

/** A failed fetch: its status (502, 503 or 504), what went wrong, and how it counts. */
interface Failure {
  readonly status: 502 | 503 | 504;
  readonly cause: string;
  readonly result: FetchResult;
  /** Not remembered: no connection to the back end came free (the back end itself said nothing). */
  readonly transient?: true;
}

type Entry = { readonly at: number; readonly model: ServiceModel } | { readonly at: number; readonly error: Failure };

/** What the data path could not do without the model. */
const AUTHORIZE = "cannot authorize the request";

/** `$metadata` models by instance and service root. */
export class MetadataCache {
  private readonly entries = new Map<string, Entry>();
  private readonly flights = new Map<string, Promise<Entry>>();

  constructor(private readonly options: MetadataCacheOptions) {}

  /** Cached models and remembered failures (for the metrics). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * The service's model; throws the {@link GatewayError} of a failed fetch,
   * its message starting with `purpose` (what cannot be done without it).
   */
  async model(instance: DataInstance, root: ServiceRoot, purpose = AUTHORIZE): Promise<ServiceModel> {
    // Keyed by the root too: a changed base URL, service path or SAP client is a new document.
    const key = `${instance.id}|${root.key}`;
    const hit = this.entries.get(key);
    if (hit !== undefined && Date.now() - hit.at < ("model" in hit ? this.options.ttlMs : FAILURE_TTL_MS)) {
      this.options.metrics?.metadataLookup("model" in hit ? "hit" : "negative_hit");
      if ("model" in hit) return hit.model;
      throw refusal(hit.error, purpose);
    }
    this.options.metrics?.metadataLookup("miss");
    let flight = this.flights.get(key);
    if (flight === undefined) {
      const started = performance.now();
      flight = this.fetch(instance, root)
        .then((entry) => {
          this.options.metrics?.metadataFetch("model" in entry ? "ok" : entry.error.result, (performance.now() - started) / 1000);
          if ("error" in entry && entry.error.transient === true) return entry;
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
    const gate = this.options.gate?.(instance);
    if (gate === undefined) return this.fetchNow(instance, root);
    const waitStarted = performance.now();
    const deadline = new Deadline();
    const timer = setTimeout(() => deadline.abort(), this.options.timeoutMs);
    let release: Release;
    try {
      // Counted as the service's own request: its $metadata is part of what it asks of the back end.
      const slot = gate.take(root.service, deadline);
      release = slot instanceof Promise ? await slot : slot;
    } catch (reason) {
      clearTimeout(timer);
      const full = (reason as NoSlot) === "full";
      return {
        at: Date.now(),
        error: {
          status: full ? 503 : 504,
          cause: full ? "too many requests are waiting for this instance's back end: retry shortly" : "no connection to the back end came free in time for the service's $metadata",
          result: full ? "refused" : "timeout",
          transient: true,
        },
      };
    }
    clearTimeout(timer);
    try {
      // What the wait left of the timeout (at least a millisecond: AbortSignal.timeout wants one).
      return await this.fetchNow(instance, root, Math.max(1, Math.floor(this.options.timeoutMs - (performance.now() - waitStarted))));
    } finally {
      release();
    }
  }

  private async fetchNow(instance: DataInstance, root: ServiceRoot, timeoutMs = this.options.timeoutMs): Promise<Entry> {
    const failed = (status: 502 | 504, cause: string, result: FetchResult = status === 504 ? "timeout" : "unreachable"): Entry => ({
      at: Date.now(),
      error: { status, cause, result },
    });
    const headers: Record<string, string> = { accept: "application/xml" };
    const sessions = this.options.sessions;
    const auth = await sessions.authorization(instance);
    if (auth) headers.authorization = auth;
    let res: Response;
    try {
      res = await fetch(root.urlOf("$metadata"), { headers, redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
    } catch (err) {
      return isTimeout(err)
        ? failed(504, "the back end did not send the service's $metadata in time")
        : failed(502, "the back end could not be reached for the service's $metadata");
    }
    if (!res.ok) {
      await res.body?.cancel();
      if (res.status === 401) sessions.dropToken(instance, auth);
      return failed(502, `the back end answered HTTP ${res.status} to $metadata`, "refused");
    }
    let text: string;
    try {
      text = await readMetadataText(res);
    } catch (err) {
      if (err instanceof MetadataTooLarge) return failed(502, err.message, "refused");
      // A document that trickles is as late as one that never starts.
      return isTimeout(err)
        ? failed(504, "the back end did not send the service's $metadata in time")
        : failed(502, "the back end could not be reached for the service's $metadata");
    }
    try {
      return { at: Date.now(), model: parseMetadata(text) };
    } catch {
      return failed(502, "the service's $metadata could not be read", "refused");
    }
  }
}

function refusal(failure: Failure, purpose: string): GatewayError {
  if (failure.status === 503) return new GatewayError(503, `${purpose}: ${failure.cause}`, { headers: { "retry-after": "1" } });
  return new GatewayError(failure.status, `${purpose}: ${failure.cause}`);
}
