/**
 * `last_used_at` of API keys without a store write per request: uses are
 * noted in memory and written in one batch per interval (and at shutdown).
 */
import type { ApiKeyStore } from "../store/index.js";
import { BatchedUses } from "./batched-uses.js";

/** Options of {@link UsageRecorder}. */
export interface UsageRecorderOptions {
  readonly store: ApiKeyStore;
  readonly clock: () => Date;
  /** Reports a failed flush (the uses are kept for the next one). */
  readonly onError: (err: unknown) => void;
}

/** Batches API key usage times. */
export class UsageRecorder extends BatchedUses {
  constructor(options: UsageRecorderOptions) {
    super({ write: (keyId, at) => options.store.update(keyId, { lastUsedAt: at }), clock: options.clock, onError: options.onError });
  }
}
