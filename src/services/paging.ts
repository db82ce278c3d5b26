/**
 * Cursor pagination (AIP-158): page sizes and opaque page tokens.
 */
import { idOfPageToken, pageTokenOf } from "../schema/resource-ids.js";
import type { Page } from "../store/index.js";
import { validationError } from "./errors.js";
import { isId, type IdPrefix } from "./ids.js";

/** Page size when the request leaves it at zero. */
export const DEFAULT_PAGE_SIZE = 50;
/** Largest page size a request may ask for. */
export const MAX_PAGE_SIZE = 500;

/** Validates page_size and page_token; returns the store's paging arguments. */
export function readPaging(
  pageSize: number,
  pageToken: string,
  prefix: IdPrefix,
  sizes: { readonly default: number; readonly max: number } = { default: DEFAULT_PAGE_SIZE, max: MAX_PAGE_SIZE },
): { limit: number; afterId: string | undefined } {
  const violations = [];
  if (pageSize < 0 || pageSize > sizes.max) {
    violations.push({ field: "page_size", description: `must be between 1 and ${sizes.max}` });
  }
  let afterId: string | undefined;
  if (pageToken !== "") {
    // Any well-formed token continues after the id it names, whether or not
    // that item still exists (ids sort by creation time).
    const id = idOfPageToken(pageToken) ?? "";
    if (!isId(prefix, id)) {
      violations.push({ field: "page_token", description: "is not a token this list returned" });
    } else {
      afterId = id;
    }
  }
  if (violations.length > 0) throw validationError(violations);
  return { limit: pageSize === 0 ? sizes.default : pageSize, afterId };
}

/** The token of the page after `page`, or "" when it is the last. */
export function nextPageToken(page: Page<{ id: string }>): string {
  const last = page.items[page.items.length - 1];
  return page.more && last ? pageTokenOf(last.id) : "";
}
