/**
 * One data request on its way through the pipeline
 * (`authenticate -> resolve instance -> analyze -> authorize -> admit ->
 * forward -> record`). Each stage takes what the previous one produced and
 * returns it enriched, or throws a {@link GatewayError} (a refusal, with the
 * log facts already set); the types say what is known at each point.
 */
import type { FastifyRequest } from "fastify";
import type { Access } from "../odata/accesses.js";
import type { ServiceModel } from "../odata/metadata.js";
import type { RequestBody } from "../odata/request.js";
import type { Target } from "../odata/target.js";
import type { CachedAnalysis } from "./analysis-cache.js";
import type { ClientRoot } from "./headers.js";
import type { DataAdmission, DataInstance, DataKey, DataLogFacts } from "./ports.js";
import type { ServiceRoot } from "./service-root.js";

/**
 * The next stage's view of a request: `a` with `more` added, in place. The
 * pipeline hands each stage's result to the next and never reads an earlier
 * view again, so the stages extend one object rather than copy it at every
 * step (the copies were a measurable share of the data path's CPU time,
 * bench/README.md). A caller that needs an earlier view unchanged, or a variant of
 * it (the Envoy check's other target), copies it itself.
 */
export function extend<A extends object, B extends object>(a: A, more: B): A & B {
  return Object.assign(a, more);
}

/** Methods that carry no body: one is refused on the way in (400) and none is sent upstream. */
export const BODILESS: ReadonlySet<string> = new Set(["GET", "HEAD", "DELETE"]);

/**
 * What the stages read of the client's request: Fastify's request on the
 * data path, a described one when a request is explained
 * (`./diagnostics.ts`). The body is a Buffer, or undefined when none was sent.
 */
export type ClientRequest = Pick<FastifyRequest, "id" | "ip" | "method" | "headers" | "body">;

/** A request as it arrived: `/odata/<instance>/<service><raw path>?<raw query>`. */
export interface Incoming {
  readonly req: ClientRequest;
  /** The request log's facts, filled in stage by stage. */
  readonly fact: DataLogFacts;
  readonly instanceName: string;
  readonly serviceName: string;
  /** The resource path below the service root, raw (still percent-encoded), `""` or starting with `/`. */
  readonly rawPath: string;
  /** The raw query string, without `?`. */
  readonly rawQuery: string;
  /** Where the client addressed the service (for absolute URLs in bodies and batches, and for rewriting answers). */
  readonly client: ClientRoot;
}

/** After `authenticate`: the data key. */
export interface Authenticated<K extends DataKey> extends Incoming {
  readonly key: K;
}

/** After `resolve instance`: the instance and the service's root on its back end. */
export interface Resolved<K extends DataKey> extends Authenticated<K> {
  readonly instance: DataInstance;
  readonly root: ServiceRoot;
}

/**
 * The canonical request: everything erplink forwards, decided from the
 * client's bytes once. Nothing after `analyze` reads the client's request
 * again.
 */
export interface CanonicalRequest {
  /** `access` (entity data), `metadata` (`$metadata`, the service document) or `batch`. */
  readonly kind: "access" | "metadata" | "batch";
  /** The method the back end acts on (a tunnel's, from `X-HTTP-Method`). */
  readonly method: string;
  /** The request target below the service root, decoded (`../odata/target.ts`). */
  readonly target: Target;
  /** {@link target} as erplink writes it, relative to the service root. */
  readonly forward: string;
  /** Every (entity set, operation) the request needs, in order; for a batch every part's. */
  readonly accesses: readonly Access[];
  /** The client's headers that are forwarded (`./headers.ts`). */
  readonly headers: Readonly<Record<string, string>>;
  /** The body as forwarded (exactly the bytes analyzed), or undefined. */
  readonly body: { readonly bytes: Buffer; readonly contentType: string } | undefined;
  /** The body as the analyzer read it (not for a batch, whose parts carry theirs). */
  readonly analyzedBody: RequestBody | undefined;
  /** How the analyzer resolved absolute URLs in the body (for reading it again). */
  readonly resolveReference: (url: string) => string | undefined;
  /** Set when the request may create the entity it updates (upsert): a key without `create` adds `If-Match: *`. */
  readonly upsertEntitySet: string | undefined;
  /** The reads an update's answer makes: authorized when the key may, else `Prefer: return=minimal` is sent. */
  readonly answer: readonly Access[];
  /** A batch's part URLs as forwarded, relative to the service root. */
  readonly partUrls: readonly string[];
  /** The model the request was analyzed with (undefined for `$metadata` and the service document). */
  readonly model: ServiceModel | undefined;
  /**
   * The remembered analysis this request uses or made (a bodiless GET or
   * HEAD on the data path, `./analysis-cache.ts`): where its upstream target
   * was already verified.
   */
  readonly cached?: CachedAnalysis | undefined;
}

/**
 * Where the analysis stopped: at an entity set the request names (a first
 * path segment, a batch part's, a URL in a body) that the key may not touch
 * (403 at the entity step, whether or not it exists) or that the service
 * lacks (404). `authorize` checks the accesses read before it first.
 */
export interface AnalysisStop {
  readonly status: 403 | 404;
  /** The name as the request wrote it. */
  readonly entitySet: string;
  /** Where it was named (`resource path`, `part 2: bind Customer`). */
  readonly reason: string;
  /** 403: the entity step's message; 404: the whole message. */
  readonly message: string;
}

/** After `analyze`: the canonical request (with `stop`, only what was read before the stop, never forwarded). */
export interface Analyzed<K extends DataKey> extends Resolved<K> {
  readonly request: CanonicalRequest;
  readonly stop?: AnalysisStop;
}

/** After `authorize`: every access allowed. */
export interface Authorized<K extends DataKey> extends Analyzed<K> {
  /** Whether `If-Match: *` is added so that an update cannot create (the key may not). */
  readonly ifMatchStar: boolean;
  /** Whether `Prefer: return=minimal` is sent so that an update's answer reads nothing the key may not read. */
  readonly preferMinimal: boolean;
}

/** After `admit`: counted against the key's rate limit. */
export interface Admitted<K extends DataKey> extends Authorized<K> {
  readonly admission: DataAdmission;
}
