/**
 * The store's own error types. Services translate them into Connect codes;
 * nothing above the store ever sees a driver error.
 */

/** A write would break a unique constraint. `field` names the constrained field. */
export class DuplicateKeyError extends Error {
  override readonly name = "DuplicateKeyError";
  constructor(
    readonly collection: string,
    readonly field: string,
  ) {
    super(`duplicate value for ${collection}.${field}`);
  }
}

/** The document to change or delete does not exist. */
export class NotFoundError extends Error {
  override readonly name = "NotFoundError";
  constructor(
    readonly collection: string,
    readonly id: string,
  ) {
    super(`${collection} ${id} not found`);
  }
}

/**
 * A write expected the document at one revision and it is at another (it
 * changed since it was read): nothing was written.
 */
export class RevisionMismatchError extends Error {
  override readonly name = "RevisionMismatchError";
  constructor(
    readonly collection: string,
    readonly id: string,
    /** The revision the write expected. */
    readonly expected: number,
    /** The revision the document is at. */
    readonly actual: number,
  ) {
    super(`${collection} ${id} is at revision ${actual}, not ${expected}`);
  }
}

/** The database cannot be reached (network, server selection, closed client). */
export class StoreUnavailableError extends Error {
  override readonly name = "StoreUnavailableError";
  constructor(options?: { cause?: unknown }) {
    super("the store is unavailable", options);
  }
}
