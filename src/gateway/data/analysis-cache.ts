/**
 * The analyses of bodiless GET and HEAD requests, remembered by `$metadata`
 * model and raw request target, so that a repeated read is neither analyzed
 * nor verified (`./verify.ts`) again. The analyzer is a pure function of the
 * model, the method, the raw target, the instance's SAP client, four request
 * headers and the key's entity step; the cache holds only what does not
 * depend on the key:
 *
 * - a request with any of the headers that change the analysis
 *   (`X-HTTP-Method`, `X-HTTP-Method-Override`, `If-Match`, `If-None-Match`)
 *   is never cached;
 * - an entry records the entity sets the analysis asked the key's entity step
 *   about, in order, all allowed for the key that first made it; another key
 *   uses the entry only if its entity step allows every one of them too (then
 *   the analysis would have gone exactly the same way), else the request is
 *   analyzed afresh;
 * - only analyses that authorize accesses are kept (refusals and stops are
 *   answered as before, analyzed each time);
 * - an entry remembers the service roots for which the upstream target
 *   written from it passed the self-check, which depends on nothing else for
 *   such a request.
 *
 * Bounds: at most {@link MAX_ANALYSES_PER_MODEL} entries per model (the
 * oldest go first), each for a target of at most {@link MAX_CACHED_TARGET}
 * characters (longer ones are analyzed each time), and entries live only as long as their model is held by
 * the `$metadata` cache (`./metadata-cache.ts`, bounded itself): a new
 * version of a service's metadata starts with an empty cache.
 */
import type { ServiceModel } from "../odata/metadata.js";
import type { Analysis } from "../odata/request.js";

/** Most analyses kept per `$metadata` model. */
export const MAX_ANALYSES_PER_MODEL = 2000;
/** Longest request target (path and query, in characters) whose analysis is kept. */
export const MAX_CACHED_TARGET = 2048;
/** Most service roots an entry remembers as verified. */
const MAX_VERIFIED_ROOTS = 16;

/** Request headers that change how the analyzer reads a request (lower case). */
export const ANALYSIS_HEADERS: readonly string[] = ["x-http-method", "x-http-method-override", "if-match", "if-none-match"];

/** A remembered analysis. */
export interface CachedAnalysis {
  readonly analysis: Analysis;
  /** The entity sets the analysis asked the entity step about, in order. */
  readonly asked: readonly string[];
  /** Service roots (`ServiceRoot.key`) whose upstream target written from this analysis passed the self-check. */
  readonly verified: Set<string>;
}

/** Whether none of the headers that change the analysis is present. */
export function analysisNeutral(headers: Readonly<Record<string, string | string[] | undefined>>): boolean {
  for (const name of ANALYSIS_HEADERS) if (headers[name] !== undefined) return false;
  return true;
}

/** The cache (one per gateway). */
export class AnalysisCache {
  private readonly byModel = new WeakMap<ServiceModel, Map<string, CachedAnalysis>>();

  /**
   * The cache key of a request, or undefined when it may not be cached: not
   * a GET or HEAD, with a header that changes the analysis, or with a target
   * longer than {@link MAX_CACHED_TARGET}. (The caller
   * makes sure it has no body.)
   */
  keyOf(
    method: string,
    rawPath: string,
    rawQuery: string,
    sapClient: string | undefined,
    headers: Readonly<Record<string, string | string[] | undefined>>,
  ): string | undefined {
    if ((method !== "GET" && method !== "HEAD") || !analysisNeutral(headers)) return undefined;
    if (rawPath.length + rawQuery.length > MAX_CACHED_TARGET) return undefined;
    // A request target holds no line break.
    return `${method}\n${sapClient ?? ""}\n${rawPath}\n${rawQuery}`;
  }

  get(model: ServiceModel, key: string): CachedAnalysis | undefined {
    return this.byModel.get(model)?.get(key);
  }

  /** Remembers an analysis that authorizes accesses; returns the entry. */
  set(model: ServiceModel, key: string, analysis: Analysis, asked: readonly string[]): CachedAnalysis {
    let entries = this.byModel.get(model);
    if (entries === undefined) {
      entries = new Map();
      this.byModel.set(model, entries);
    }
    if (entries.size >= MAX_ANALYSES_PER_MODEL) entries.delete(entries.keys().next().value!);
    const entry: CachedAnalysis = { analysis, asked, verified: new Set() };
    entries.set(key, entry);
    return entry;
  }

  /** How many analyses are kept for `model` (for tests). */
  sizeOf(model: ServiceModel): number {
    return this.byModel.get(model)?.size ?? 0;
  }
}

/** Records that the target written from `entry` passed the self-check for `rootKey`. */
export function markVerified(entry: CachedAnalysis, rootKey: string): void {
  if (entry.verified.size >= MAX_VERIFIED_ROOTS) entry.verified.clear();
  entry.verified.add(rootKey);
}
