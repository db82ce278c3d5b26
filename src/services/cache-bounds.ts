/**
 * What keeps the hot path's caches (API keys, sessions) bounded under
 * hostile traffic: a size cap per map, and a budget of store reads for
 * tokens not in memory, since anyone can forge well-formed tokens.
 */

/** Evicts the oldest entry of a full map before an insert; returns the map. */
export function bounded<K, V>(map: Map<K, V>, max: number): Map<K, V> {
  if (map.size >= max) {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }
  return map;
}

/** A token bucket over cold store reads: at most `perSecond` a second, refilled continuously. */
export class ColdReadBudget {
  private tokens = 0;
  private refilledAt = 0;

  constructor(
    private readonly perSecond: number,
    private readonly clock: () => Date,
  ) {}

  /** Takes one read from the budget; false when it is spent. */
  take(): boolean {
    const now = this.clock().getTime();
    this.tokens = Math.min(this.perSecond, this.tokens + ((now - this.refilledAt) / 1000) * this.perSecond);
    this.refilledAt = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
